"""Memory per idle session, and whether it comes back after the sessions close.

Starts the app with explicit unused-session settings (``testing.server``: Bokeh's defaults, 15 s lifetime,
checked every 17 s), warms it up, then opens ``--sessions`` idle sessions over Bokeh's protocol, closes
them all, waits for the server to discard them, and reads the server's resident memory (psutil) at each
step.

    python -m bench.memory --sessions 300
    python -m bench.memory --sessions 40 --open-tab Check     # each page with its Check tab opened

With ``--open-tab``, each session opens that tab as a learner's click does (the explorer's tabs' ``active``,
written by the page), and waits for the server to send the tab's contents, before memory is read.

The soak of the reliability checks: exits with status 3 when resident memory after the sessions close is
more than ``--max-after-close`` percent (10) above its start.

A class leaving, while another page stays: how long does one turn of the server's loop hold every page?

    python -m bench.memory --close-all --sessions 60          # 60 pages open, then close together
    python -m bench.memory --day 1000 --wave 50                # 1,000 sessions, 50 at a time opened and closed
    python -m bench.memory --close-all --code /an/older/checkout

Every turn of the server's loop is timed from outside the code (``testing/loop_watch.py``); a page that stays
presses a row key every 0.5 s throughout. Reported from the first close until the server has discarded every
closed session and its housekeeping has passed twice: the longest turn (ms), the turns over 50 ms, what the longest
ran, the staying page's key p95 and worst, and resident memory before the pages opened and at the end. With
``--day``, the next waves' pages are built while the last ones are discarded, and a page's build is a turn of its own
(``bench/page_load.py``): the longest turn that was not a page's build, and the longest after the last wave closed,
are reported too. ``EXPLORER_LOOP_WATCH_STACKS=1`` adds the stacks seen in the longest turn.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path

import psutil
from bokeh.protocol.messages.patch_doc import patch_doc

from bench.beside import KeyPresser
from bench.stats import summary_ms
from testing import loop_watch
from testing.protocol_client import Learner, find_objects
from testing.server import CHECK_UNUSED_MS, ROOT, UNUSED_SESSION_LIFETIME_MS, serve, ws_url

MB = 2**20
#: The server's housekeeping gives freed memory back to the system every 15 s (server/housekeeping.py): a reading
#: taken sooner after the warm-up's pages are discarded still holds them, which the pages opened next reuse.
TRIM_S = 15
#: Exit status when memory did not come back (an error exits with 1).
NOT_RETURNED = 3


def tab_index(doc_json: dict, title: str) -> tuple[str, int]:
    """The id of the explorer's tabs in a pulled document, and the index of the tab called ``title``."""
    panels = {o["id"]: o for o in find_objects(doc_json, "TabPanel")}
    for tabs in find_objects(doc_json, "Tabs"):
        titles = [panels.get(p.get("id"), p).get("attributes", {}).get("title") for p in tabs["attributes"]["tabs"]]
        if title in titles:
            return tabs["id"], titles.index(title)
    raise LookupError(f"no tab called {title!r} on the page")


async def open_tab(learner: Learner, title: str) -> None:
    """Show the tab ``title`` as the page does when it is clicked, and wait until its contents have come."""
    tabs_id, index = tab_index(learner.doc, title)
    learner.doc = None  # the client's copy, no longer needed
    event = {"kind": "ModelChanged", "model": {"id": tabs_id}, "attr": "active", "new": index}
    await patch_doc(patch_doc.create_header(), {}, {"events": [event]}).send(learner.sock)
    while True:  # the server answers with the tab's panel, its contents built
        msg = await learner._next_message("PATCH-DOC")
        if any(ev.get("kind") == "ModelChanged" and ev.get("model", {}).get("id") == tabs_id
               and ev.get("attr") == "tabs"
               for ev in msg.content.get("events", [])):
            return


async def open_sessions(url: str, n: int, tab: str | None = None) -> list[Learner]:
    learners = [Learner(ws_url(url)) for _ in range(n)]
    gate = asyncio.Semaphore(4)

    async def connect(learner):
        async with gate:
            await learner.connect(keep_doc=tab is not None)
            if tab is not None:
                await open_tab(learner, tab)

    await asyncio.gather(*(connect(learner) for learner in learners))
    return learners


def settle_rss(proc: psutil.Process, seconds: float) -> float:
    """Resident memory in MB after ``seconds``, the lowest of the last few samples."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        samples.append(proc.memory_info().rss / MB)
        time.sleep(0.5)
    return min(samples[-4:]) if samples else proc.memory_info().rss / MB


def run(app: str, n: int, lifetime_ms: int, check_ms: int, tab: str | None = None) -> dict:
    cleanup_s = (lifetime_ms + check_ms) / 1000 + 5
    with serve(app, unused_lifetime_ms=lifetime_ms, check_unused_ms=check_ms) as (url, proc):
        async def cycle(k):
            learners = await open_sessions(url, k, tab)
            for learner in learners:
                learner.close()
            await asyncio.sleep(0.5)

        asyncio.run(cycle(5))  # warm-up: imports, caches, first sessions
        rss_start = settle_rss(proc, cleanup_s + TRIM_S + 5)

        async def hold_open():
            learners = await open_sessions(url, n, tab)
            rss = settle_rss(proc, 3)
            for learner in learners:
                learner.close()
            await asyncio.sleep(0.5)
            return rss

        t = time.monotonic()
        rss_open = asyncio.run(hold_open())
        open_s = time.monotonic() - t
        gc.collect()
        rss_closed = settle_rss(proc, cleanup_s)
        rss_later = settle_rss(proc, cleanup_s)
    return {
        "bench": "memory", "sessions": n, "open_tab": tab, "open_s": round(open_s, 1),
        "unused_session_lifetime_ms": lifetime_ms, "check_unused_sessions_ms": check_ms,
        "rss_start_mb": rss_start, "rss_open_mb": rss_open, "rss_closed_mb": rss_closed,
        "rss_closed_later_mb": rss_later,
        "mb_per_idle_session": (rss_open - rss_start) / n,
        "after_close_vs_start_pct": 100 * (rss_later - rss_start) / rss_start,
        "load_avg": psutil.getloadavg(),
    }


#: What the loop watch names a turn that built a page (the build gate's paced build, server/build_gate.py, in
#: server/patches/bokeh_create_session.py).
PAGE_BUILD = "paced_page_build"

#: Turns over this long (ms) are counted as stalls: a key waits behind them beyond a frame's worth of slack.
STALL_MS = 50.0


def leaving(code: Path, sessions: int, wave: int | None, lifetime_ms: int, check_ms: int, out: Path) -> dict:
    """``sessions`` pages opened and closed (together, or ``wave`` at a time) beside a page that stays and presses
    keys; every turn of the server's loop timed. See the module's docstring."""
    watch = out / f"loop-{int(time.time())}.jsonl"
    settle_s = (lifetime_ms + check_ms) / 1000 + 2 * TRIM_S + 5
    with serve(code / "app.py", unused_lifetime_ms=lifetime_ms, check_unused_ms=check_ms, watch=watch) as (url, proc):
        rss_start = proc.memory_info().rss / MB

        async def scenario():
            async with KeyPresser(ws_url(url)) as keys:
                first_close, last_close, opened = None, None, 0
                while opened < sessions:
                    batch = min(wave or sessions, sessions - opened)
                    learners = await open_sessions(url, batch)
                    opened += batch
                    await asyncio.sleep(1)
                    last_close = time.monotonic()
                    first_close = first_close or last_close
                    for learner in learners:
                        learner.close()
                    await asyncio.sleep(0.5)
                await asyncio.sleep(settle_s)
                return first_close, last_close, keys.since(first_close)

        first_close, last_close, waits = asyncio.run(scenario())
        rss_end = settle_rss(proc, 3)
    turns = [t for t in loop_watch.read(watch) if t["t"] >= first_close]
    longest = max(turns, key=lambda t: t["ms"], default={"ms": 0.0, "what": None})
    # with --day, the next waves' pages are built while the last ones are discarded: a page's build is a turn of its
    # own (the build gate's, bench/page_load.py measures it), told apart here from what closing pages cost
    closing = [t for t in turns if PAGE_BUILD not in t["what"]]
    longest_closing = max(closing, key=lambda t: t["ms"], default={"ms": 0.0, "what": None})
    after = [t for t in turns if t["t"] >= last_close]
    longest_after = max(after, key=lambda t: t["ms"], default={"ms": 0.0, "what": None})
    return {
        "bench": "memory-leaving", "code": str(code), "sessions": sessions, "wave": wave or sessions,
        "unused_session_lifetime_ms": lifetime_ms, "check_unused_sessions_ms": check_ms,
        "longest_turn_ms": longest["ms"], "longest_turn_ran": longest.get("what"),
        "longest_turn_not_a_page_build_ms": longest_closing["ms"],
        "longest_turn_not_a_page_build_ran": longest_closing.get("what"),
        "longest_turn_not_a_page_build_stacks": longest_closing.get("stacks"),
        "longest_turn_after_the_last_close_ms": longest_after["ms"],
        "longest_turn_after_the_last_close_ran": longest_after.get("what"),
        "turns_over_50_ms": sum(1 for t in turns if t["ms"] > STALL_MS),
        "turns_over_50_ms_list": [t["ms"] for t in sorted(turns, key=lambda t: -t["ms"]) if t["ms"] > STALL_MS][:20],
        "staying_key_ms": summary_ms([w for w in waits if w is not None]),
        "staying_keys_lost": sum(1 for w in waits if w is None),
        "rss_start_mb": round(rss_start, 1), "rss_end_mb": round(rss_end, 1),
        "load_avg": [round(x, 2) for x in psutil.getloadavg()],
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--unused-session-lifetime", type=int, default=UNUSED_SESSION_LIFETIME_MS, help="ms")
    ap.add_argument("--check-unused-sessions", type=int, default=CHECK_UNUSED_MS, help="ms")
    ap.add_argument("--open-tab", metavar="TITLE", help="each session opens this tab first (e.g. Check)")
    ap.add_argument("--app", default=str(ROOT / "app.py"))
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    ap.add_argument("--max-after-close", type=float, default=10.0, metavar="PCT",
                    help="exit with status 3 if RSS after the sessions close exceeds the start by more (default 10)")
    ap.add_argument("--close-all", action="store_true",
                    help="the longest turn of the server's loop when the pages close together, beside a staying page")
    ap.add_argument("--day", type=int, metavar="N", help="the same for N sessions, opened and closed --wave at a time")
    ap.add_argument("--wave", type=int, default=50, help="pages opened and closed together with --day (default 50)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose app.py to serve (default this one)")
    args = ap.parse_args(argv)
    if args.close_all or args.day:
        out = ROOT / "bench" / "out"
        out.mkdir(parents=True, exist_ok=True)
        r = leaving(args.code.resolve(), args.day or args.sessions, args.wave if args.day else None,
                    args.unused_session_lifetime, args.check_unused_sessions, out)
        r["returned"] = True
        print(json.dumps(r), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(r) + "\n")
        return r
    r = run(args.app, args.sessions, args.unused_session_lifetime, args.check_unused_sessions, args.open_tab)
    r["returned_within_pct"] = args.max_after_close
    r["returned"] = r["after_close_vs_start_pct"] <= args.max_after_close
    print(json.dumps(r), flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "a") as f:
            f.write(json.dumps(r) + "\n")
    return r


if __name__ == "__main__":
    sys.exit(0 if main()["returned"] else NOT_RETURNED)
