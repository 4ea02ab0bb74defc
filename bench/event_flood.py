"""One client sends the heaviest messages it can build: how long does another learner wait for an answer?

One server (``python app.py``), one learner pressing row keys and tapping q (each answer awaited, then a short
rest), and, from its own process, an attacking client that first makes its page as costly as it can (every tab
opened, d_k = 1024 on the √d_k tab, n = 4096 and four heads on the Heads · n² tab) and then sends, back to back,
messages of clicks on every button of a tab (the tab shown first in the same message, as it must be for its
buttons to be in the page), tab after tab, with the header's buttons and writes of d_k between them. Phases of
``--duration`` seconds each:

- ``alone``: the learner alone;
- ``batched``: messages of ``--batch`` events (300: the issue's attack);
- ``largest``: messages of the most events a page may send (``server.guard.PAGE_MESSAGE_EVENTS``).

Reported per phase: the learner's row key (key to the readout naming that row) and tap (to the readout showing
that q) p50 / p95 / max, the longest wait for any answer, answers lost (none within ``LOST_AFTER_S``); the
attacker's messages and events sent and whether, when, the server closed its connection; the server's CPU.

    python -m bench.event_flood --duration 20
    python -m bench.event_flood --duration 20 --code /path/to/an/older/checkout   # the same against other code
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sys
import time
from pathlib import Path

import psutil
from bokeh.protocol.messages.patch_doc import patch_doc

from bench.classroom import line_after, wait_for
from bench.stats import append_jsonl, median, summary_ms
from testing.protocol_client import Learner, changed, clicked
from testing.server import ROOT, Sampler, serve, ws_url

#: An answer that has not come after this long counts as lost (seconds).
LOST_AFTER_S = 30.0
#: The rows' names, in the order the keys 1, 2, 3 select them, and where the learner taps.
TOKENS = ("I", "love", "NLP")
TAPS = ((1.25, 0.5), (0.5, 1.25), (-0.5, 0.75), (1.5, 1.5))
#: The tabs the attack clicks through, by title, and the widgets it turns up first (title -> value).
ATTACKED_TABS = ("√d_k", "Projections", "Heads · n²", "Edit")
#: Buttons that end the page's own session or ask nothing of the server's loop: left alone.
SPARED = {"Present", "Start again", "Yes, clear my progress", "Keep it", "✕", "Add token"}


# --- the attacker (its own process) ------------------------------------------------------------------------------

async def _settled(page: Learner, quiet: float = 0.5, timeout: float = 60) -> None:
    """Wait until the server has sent nothing for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    seen, since = len(page.patches), time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if len(page.patches) != seen:
            seen, since = len(page.patches), time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


async def prepare(page: Learner) -> list[list[dict]]:
    """Make ``page`` as costly as it can be, and return, for each attacked tab, the events that show it and click
    each of its buttons (and the header's)."""
    tabs = next(o for o in page.objects("Tabs") if "explorer-tabs" in o["attributes"].get("css_classes", []))
    titles = [t["attributes"]["title"] for t in tabs["attributes"]["tabs"]]
    header = [o["id"] for o in page.objects("Button") if o["attributes"].get("label") in ("Reset example", "Next ▶")]
    rounds = []
    for title in ATTACKED_TABS:
        since = len(page.patches)
        await page.send(changed(tabs["id"], "active", titles.index(title)))
        await _settled(page)
        show = changed(tabs["id"], "active", titles.index(title))
        events = [clicked(o["id"]) for o in page.objects("Button", since) if o["attributes"].get("label") not in SPARED]
        for slider in page.objects("Slider", since):
            end = slider["attributes"].get("end")
            if slider["attributes"].get("title") == "d_k":  # the largest d_k, and a write of it in every round
                await page.send(changed(slider["id"], "value", end))
                events += [changed(slider["id"], "value", end - 1), changed(slider["id"], "value", end)]
            elif title.startswith("Heads") and end is not None:  # n = 4096 (the last of the sizes), once
                await page.send(changed(slider["id"], "value", end))
        for group in page.objects("RadioButtonGroup", since):  # four heads
            labels = group["attributes"].get("labels") or []
            if labels[-1:] == ["4"]:
                await page.send(changed(group["id"], "active", len(labels) - 1))
        await _settled(page, timeout=120)
        rounds.append([show, *events, *map(clicked, header)])
    return rounds


async def _send_flushed(page: Learner, events: list[dict]) -> None:
    """Send one ``PATCH-DOC`` of ``events`` and wait until the socket has taken it: a server that reads no more holds
    the attacker back (as the kernel would), instead of its messages piling up in this process."""
    message = patch_doc(patch_doc.create_header(), {}, {"events": events})
    for part in (message.header_json, message.metadata_json, message.content_json):
        await page.sock._socket.write_message(part)


async def attack(url: str, batch: int) -> None:
    """Prepare a page, then send messages of ``batch`` events until SIGTERM or until the server closes the socket;
    print what was sent."""
    page = Learner(url, compress=True, clock=time.monotonic)
    await page.connect(keep_doc=True)
    listening = asyncio.create_task(page.listen())
    rounds = await prepare(page)
    page.keep_patches = False  # what the tabs send back is large, and of no more use
    print("ready", flush=True)
    sent = {"messages": 0, "events": 0, "closed_after_s": None}
    start = time.monotonic()

    async def send_all():
        k = 0
        while True:
            round_ = rounds[sent["messages"] % len(rounds)]
            body = [round_[0]]  # the tab first, then its clicks over and over
            while len(body) < batch:
                body.append(round_[1 + k % (len(round_) - 1)])
                k += 1
            try:
                await _send_flushed(page, body[:batch])
            except Exception:  # noqa: BLE001  (the server has closed the connection)
                sent["closed_after_s"] = round(time.monotonic() - start, 3)
                return
            sent["messages"] += 1
            sent["events"] += len(body[:batch])

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    sending = asyncio.create_task(send_all())
    await stop.wait()
    sending.cancel()  # a send the server does not read never ends
    print(json.dumps(sent), flush=True)
    page.close()
    listening.cancel()


# --- the learner beside it ---------------------------------------------------------------------------------------

async def learner_alongside(url: str, duration: float, out: dict) -> None:
    """Press a row key and wait for its answer, rest, tap q and wait, rest; for ``duration`` seconds."""
    me = Learner(url)
    await me.connect()
    listening = asyncio.create_task(me.listen())
    rng = random.Random(1)
    end = time.perf_counter() + duration
    k = 0
    while time.perf_counter() < end:
        row = (k + 2) % 3  # NLP, I, love, …: never the row shown (the page opens on "love")
        seen = len(me.lines)
        pressed = time.perf_counter()
        await me.key(str(row + 1))
        answered = await wait_for(line_after(me, seen, f'Query of "{TOKENS[row]}"'), LOST_AFTER_S)
        out["keys"].append(None if answered is None else answered - pressed)
        await asyncio.sleep(rng.uniform(0.1, 0.3))
        x, y = TAPS[k % len(TAPS)]
        x, y = x + 0.001 * (k % 7), y  # never the same position twice in a row
        target = (f"{x:.3f}", f"{y:.3f}")
        seen = len(me.shown)
        tapped = time.perf_counter()
        await me.pointer("tap", x, y)

        def tap_shown(seen=seen, target=target):
            return next((t for p, t in me.shown[seen:] if p == target), None)

        answered = await wait_for(tap_shown, LOST_AFTER_S)
        out["taps"].append(None if answered is None else answered - tapped)
        await asyncio.sleep(rng.uniform(0.1, 0.3))
        k += 1
    me.close()
    await asyncio.gather(listening, return_exceptions=True)


async def phase(url: str, name: str, batch: int, duration: float, server: psutil.Process) -> dict:
    attacker, sent = None, {}
    if name != "alone":
        # its own process: sharing this one's event loop would slow the learner's client, not the server
        attacker = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.event_flood", "--_attacker", ws_url(url), "--batch", str(batch),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=ROOT)
        line = await asyncio.wait_for(attacker.stdout.readline(), 600)  # "ready": its page is as costly as it gets
        if line.strip() != b"ready":
            raise RuntimeError(f"the attacking client did not get ready: {line!r}")
    out = {"keys": [], "taps": []}
    with Sampler(server) as sampler:
        await learner_alongside(ws_url(url), duration, out)
    if attacker is not None:
        attacker.terminate()
        try:
            tail = (await asyncio.wait_for(attacker.stdout.read(), 30)).decode().strip().splitlines()
        except asyncio.TimeoutError:
            attacker.kill()
            tail = []
        sent = json.loads(tail[-1]) if tail else {}
        await attacker.wait()
    answers = [t for t in out["keys"] + out["taps"] if t is not None]
    return {
        "phase": name, "events_per_message": batch if attacker else None, "duration_s": duration,
        "key_ms": summary_ms([t for t in out["keys"] if t is not None]),
        "tap_ms": summary_ms([t for t in out["taps"] if t is not None]),
        "longest_wait_ms": round(max(answers) * 1e3, 1) if answers else None,
        "lost": sum(1 for t in out["keys"] + out["taps"] if t is None),
        "attacker": sent,
        "server_cpu_cores_mean": round(sum(sampler.cpu) / max(len(sampler.cpu), 1), 2),
        "load_avg": [round(x, 2) for x in psutil.getloadavg()],
    }


def _three(summary: dict) -> str:
    return " / ".join("–" if summary[k] is None else f"{summary[k]:.0f}" for k in ("p50", "p95", "max"))


def table(results: list[dict]) -> str:
    """Each run's row, then each phase's medians over its runs."""
    rows = ["| phase | run | events a message | row key p50 / p95 / max (ms) | tap p50 / p95 / max (ms) | longest wait "
            "(ms) | lost | attacker's connection closed after | load |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        closed = r["attacker"].get("closed_after_s")
        rows.append(f"| {r['phase']} | {r['run']} | {r['events_per_message'] or '–'} | {_three(r['key_ms'])} | "
                    f"{_three(r['tap_ms'])} | {r['longest_wait_ms']} | {r['lost']} | "
                    f"{'–' if closed is None else f'{closed:.2f} s'} | {r['load_avg'][0]} |")
    for name in dict.fromkeys(r["phase"] for r in results):
        runs = [r for r in results if r["phase"] == name]

        def med(key, stat, runs=runs):
            return median([r[key][stat] for r in runs])

        key = {s: med("key_ms", s) for s in ("p50", "p95", "max")}
        tap = {s: med("tap_ms", s) for s in ("p50", "p95", "max")}
        rows.append(f"| **{name}** | median of {len(runs)} | {runs[0]['events_per_message'] or '–'} | {_three(key)} | "
                    f"{_three(tap)} | {median([r['longest_wait_ms'] for r in runs])} | "
                    f"{sum(r['lost'] for r in runs)} | | {median([r['load_avg'][0] for r in runs])} |")
    return "\n".join(rows)


def main(argv=None) -> list[dict]:
    from server.guard import PAGE_MESSAGE_EVENTS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per phase (default 20)")
    ap.add_argument("--runs", type=int, default=3, help="times each phase is run, a new server each (default 3)")
    ap.add_argument("--phases", nargs="+", default=["alone", "batched", "largest"],
                    choices=["alone", "batched", "largest"])
    ap.add_argument("--batch", type=int, default=300, help="events a message in the batched phase (default 300)")
    ap.add_argument("--largest", type=int, default=PAGE_MESSAGE_EVENTS,
                    help=f"events a message in the largest phase (default {PAGE_MESSAGE_EVENTS}, "
                         "the most a page sends)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose app.py to serve (default this one)")
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    ap.add_argument("--log", type=Path, help="write the server's log to this file (the last phase's)")
    ap.add_argument("--_attacker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._attacker:
        asyncio.run(attack(args._attacker, args.batch))
        return []
    results = []
    for run in range(1, args.runs + 1):
        for name in args.phases:
            batch = {"batched": args.batch, "largest": args.largest}.get(name, 0)
            with serve(args.code.resolve() / "app.py", log=args.log) as (url, proc):
                r = asyncio.run(phase(url, name, batch, args.duration, proc))
            r.update(run=run, code=str(args.code.resolve()))
            results.append(r)
            print(json.dumps(r), flush=True)
            if args.json:
                append_jsonl(args.json, {"bench": "event_flood", **r})
    print(table(results))
    return results


if __name__ == "__main__":
    main()
