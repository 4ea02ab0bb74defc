"""A class training at once on one server process, while another learner presses row keys.

Each simulated learner (:class:`testing.protocol_client.Learner`, Bokeh's own protocol, no browser) opens the
page, opens the Train tab (its first run) and presses Play, as the page reports it. Then, ``--rounds`` times,
every learner presses New seed in the same instant: a new run each, asked for together, computed by the server
(through its queue, server/train_queue.py) and sent to each page once. Meanwhile one more page, the observer,
presses a row key (1, 2, 3 in turn) every 0.25 s and times its answer: its readout naming that row.

Reported per class size: the observer's row key p50/p95/max before the class trains, while the class opens the
tab at once (every tab's view is built on the server the first time it is shown: that is the tab's cost, not
training's) and while the class trains (the issue's target: p95 at most 200 ms with 60 learners), each
learner's New seed to its new run on the page (p50/p95/max), the runs received, and the server's CPU per run
(the rounds' CPU over the runs sent: the click, the queue, the core, the payload), with the load averages.

    python -m bench.train_class                  # 60 learners, 3 rounds
    python -m bench.train_class --sessions 30 60 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time

from bench.classroom import FINAL_WAIT_S, TOKENS, Processes, line_after, wait_for
from bench.stats import summary_ms
from testing.protocol_client import Learner, _map, find_objects
from testing.server import serve, ws_url

#: The observer's key presses, seconds apart.
KEY_EVERY_S = 0.25
#: How long one round may take for every run to arrive (60 runs at ~25 ms, half the loop: ~3 s).
ROUND_WAIT_S = 60.0
#: How long the class may take to open the tab: sixty tabs built on the server, 17-46 s at load 2-6 on 2 cores.
OPEN_WAIT_S = 300.0


class TrainLearner(Learner):
    """A learner that also notes when each new run reaches its page (a change of the player's ``run``)."""

    runs: list

    async def listen(self) -> None:
        self.runs = []
        while True:
            try:
                msg = await self._next_message()
            except ConnectionError:
                return
            if msg.msgtype != "PATCH-DOC":
                continue
            now = self.clock()
            events = msg.content.get("events", [])
            self.patches.append(events)
            for ev in events:
                if ev.get("kind") == "ModelChanged" and ev.get("attr") == "run":
                    self.runs.append(now)
                elif ev.get("kind") == "ModelChanged" and ev.get("attr") == "text" and \
                        ev.get("model", {}).get("id") == self.readout_id:
                    self.lines.append((ev["new"].split("\n", 1)[0], now))

    def find_tab(self, title: str) -> tuple[str, int]:
        """The explorer's tabs model and the index of the tab ``title``."""
        panels = {o["id"]: o["attributes"].get("title") for o in find_objects(self.doc, "TabPanel")}
        tabs = next(o for o in find_objects(self.doc, "Tabs")
                    if "explorer-tabs" in (o["attributes"].get("css_classes") or []))
        ids = [t["id"] for t in tabs["attributes"]["tabs"]]
        return tabs["id"], [panels.get(i) for i in ids].index(title)

    async def set_property(self, model_id: str, attr: str, value) -> None:
        from bokeh.protocol.messages.patch_doc import patch_doc

        content = {"events": [{"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": value}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)

    def find_in_patches(self, type_suffix: str, pred) -> str | None:
        for events in self.patches:
            for obj in find_objects(events, type_suffix):
                if pred(obj["attributes"]):
                    return obj["id"]
        return None

    async def message(self, model_id: str, data: dict) -> None:
        """What a JSComponent's script sends with ``model.send_msg``."""
        from bokeh.protocol.messages.patch_doc import patch_doc

        event = {"type": "event", "name": "data_event", "values": _map(model={"id": model_id}, data=_map(**data))}
        content = {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)


async def observe(observer: Learner, stop: asyncio.Event, out: list) -> None:
    """Press row keys in turn every KEY_EVERY_S until ``stop``; each answer's time goes to ``out`` (None: lost).

    Each press selects another row than the last (the same row again would change nothing to answer)."""
    while not stop.is_set():
        observer.row = row = (getattr(observer, "row", 1) + 1) % 3  # the page opens on love's row
        seen = len(observer.lines)
        pressed = time.perf_counter()
        await observer.key(str(row + 1))
        answered = await wait_for(line_after(observer, seen, f'Query of "{TOKENS[row]}"'), FINAL_WAIT_S)
        out.append(None if answered is None else answered - pressed)
        await asyncio.sleep(KEY_EVERY_S)


async def spread_out(calls, spread: float) -> None:
    """Run the coroutines ``calls`` (one per learner) evenly over ``spread`` seconds (0: all at once)."""
    async def later(k, call):
        await asyncio.sleep(spread * k / max(len(calls), 1))
        await call
    await asyncio.gather(*(later(k, call) for k, call in enumerate(calls)))


@contextlib.asynccontextmanager
async def observing(observer: Learner, out: list):
    """The observer presses row keys (:func:`observe`) for as long as the block runs; the answers' times go to
    ``out``."""
    stop = asyncio.Event()
    watching = asyncio.create_task(observe(observer, stop, out))
    try:
        yield
    finally:
        stop.set()
        await watching


async def train_class(url: str, n: int, rounds: int, server: Processes, spread: float = 1.0) -> dict:
    observer = Learner(ws_url(url))
    await observer.connect()
    observer_listening = asyncio.create_task(observer.listen())
    learners = [TrainLearner(ws_url(url)) for _ in range(n)]
    await asyncio.gather(*(learner.connect(keep_doc=True) for learner in learners))
    listening = [asyncio.create_task(learner.listen()) for learner in learners]
    await asyncio.sleep(1.0)

    # before the class trains: the observer's keys on a quiet server with n pages open
    baseline: list = []
    async with observing(observer, baseline):
        await asyncio.sleep(5.0)

    # every learner opens the Train tab (the tab built on the server, its first run) and presses Play
    opening: list = []
    async with observing(observer, opening):
        opening_started = time.perf_counter()
        for learner in learners:
            tabs, index = learner.find_tab("Train")
            await learner.set_property(tabs, "active", index)
        opened = await wait_for(lambda: time.perf_counter() if all(lr.runs for lr in learners) else None,
                                OPEN_WAIT_S)
        if opened is None:
            raise RuntimeError("not every learner's Train tab got its first run")
        for learner in learners:
            learner.new_seed = learner.find_in_patches("Button", lambda a: a.get("label") == "New seed")
            learner.player = learner.find_in_patches(
                "ReactiveESM", lambda a: str((a.get("data") or {}).get("name", "")).startswith("TrainLink"))
        await asyncio.sleep(1.0)

    # everyone presses Play
    playing: list = []
    async with observing(observer, playing):
        await asyncio.sleep(0.5)
        for _ in range(rounds):
            await spread_out([lr.message(lr.player, {"action": "show", "step": 0, "playing": True})
                              for lr in learners], spread)
            await asyncio.sleep(1.5)

    # the rounds: everyone presses New seed at once
    during: list = []
    waits, runs_sent = [], 0
    async with observing(observer, during):
        cpu0, t0 = server.cpu(), time.perf_counter()
        for _ in range(rounds):
            before = [len(lr.runs) for lr in learners]
            clicked = time.perf_counter()
            await spread_out([lr.click(lr.new_seed) for lr in learners], spread)
            for lr, k in zip(learners, before):
                got = await wait_for(lambda lr=lr, k=k: lr.runs[k] if len(lr.runs) > k else None,
                                     max(0.1, clicked + ROUND_WAIT_S - time.perf_counter()))
                if got is not None:
                    waits.append(got - clicked)
                    runs_sent += 1
            await asyncio.sleep(1.0)
        rounds_s, cpu = time.perf_counter() - t0, server.cpu() - cpu0
    for learner in [observer, *learners]:
        learner.close()
    await asyncio.gather(observer_listening, *listening, return_exceptions=True)
    lost_keys = sum(x is None for x in during)
    return {
        "learners": n, "rounds": rounds,
        "key_quiet_ms": summary_ms([x for x in baseline if x is not None]),
        "key_while_opening_tab_ms": summary_ms([x for x in opening if x is not None]),
        "key_while_playing_ms": summary_ms([x for x in playing if x is not None]), "spread_s": spread,
        "tab_open_s": round(opened - opening_started, 2),
        "key_while_training_ms": summary_ms([x for x in during if x is not None]), "lost_keys": lost_keys,
        "new_seed_to_run_ms": summary_ms(waits), "runs": runs_sent, "runs_asked": n * rounds,
        "server_cpu_ms_per_run": round(1e3 * cpu / max(runs_sent, 1), 1),
        "server_cpu_cores_during_rounds": round(cpu / rounds_s, 2),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def table(results: list[dict]) -> str:
    """The figures as a Markdown table (RESULTS.md's)."""
    rows = ["| learners | presses within (s) | row key p50 / p95 quiet (ms) | while all open the tab (ms), "
            "tab open (s) "
            "| while all press Play (ms) | row key p50 / p95 / max while training (ms) | New seed → run p50 / p95 (ms) "
            "| runs | server CPU per run (ms) | load |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        q, k, s = r["key_quiet_ms"], r["key_while_training_ms"], r["new_seed_to_run_ms"]
        o = r["key_while_opening_tab_ms"]
        opening = f"{o['p50']:.0f} / {o['p95']:.0f}" if o["n"] else "–"
        p = r["key_while_playing_ms"]
        rows.append(f"| {r['learners']} | {r['spread_s']:g} | {q['p50']:.0f} / {q['p95']:.0f} | {opening}, "
                    f"{r['tab_open_s']} | {p['p50']:.0f} / {p['p95']:.0f} | "
                    f"{k['p50']:.0f} / {k['p95']:.0f} / "
                    f"{k['max']:.0f} | {s['p50']:.0f} / {s['p95']:.0f} | {r['runs']} of {r['runs_asked']} | "
                    f"{r['server_cpu_ms_per_run']} | {', '.join(f'{x:.1f}' for x in r['load_avg'])} |")
    return "\n".join(rows)


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[60])
    ap.add_argument("--rounds", type=int, default=3, help="times every learner presses Play, then New seed, together")
    ap.add_argument("--spread", type=float, nargs="+", default=[1.0, 0.0], help=(
        "seconds within which the class's presses come, evenly (default 1, a class told to press; then 0, all in "
        "the same instant)"))
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    results = []
    for n, spread in ((n, spread) for n in args.sessions for spread in args.spread):
        with serve() as (url, proc):
            r = asyncio.run(train_class(url, n, args.rounds, Processes([proc]), spread))
        results.append(r)
        print(json.dumps(r), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"bench": "train_class", **r}) + "\n")
    print(table(results))
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
