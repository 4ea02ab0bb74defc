"""A class training at once on one server process, while another learner presses row keys; and what the Train tab
costs the server in-process.

First, in this process (no server, load-independent CPU time, medians of ``--builds`` each): building the Train tab
the first time it is shown (its run deferred, as a served page's queue defers it) and its Bokeh models; one Play
report (the row the page writes, and what follows it: the state, the address), one scrub's release, one New seed
(the message and the state, its run deferred) and one run (the core, what was learned, the payload).

Then, served: each simulated learner (:class:`testing.protocol_client.Learner`, Bokeh's own protocol, no browser)
opens the page; the class opens the Train tab within ``--open-within`` seconds (its view built on the server, its
first run), presses Play as the page reports it (a write of the tab's report row), ``--rounds`` times, then New seed
``--rounds`` times, each round's presses within ``--spread`` seconds (1: a class told to press; 0: the same
instant). Meanwhile one more page, the observer, presses a row key (1, 2, 3 in turn) every 0.25 s and times its
answer: its readout naming that row.

Reported per class size and spread: the observer's row key p50/p95/max before the class trains, while the class
opens the tab, while it presses Play and while it trains (the issue's target: p95 at most 200 ms with 60 learners),
each learner's New seed to its new run on the page (p50/p95/max), the runs received, the server's CPU per tab opened
(its build, its first run, sending both), per Play report (over the Play rounds, less the quiet server's own rate)
and per run, with the load averages.

    python -m bench.train_class                  # in-process costs, then 60 learners, 3 rounds, spreads 1 s and 0
    python -m bench.train_class --sessions 30 60 --rounds 5
    python -m bench.train_class --in-process     # the in-process costs alone
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
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
#: How long the class may take to open the tab (each opening within --open-within seconds, the last run after it).
OPEN_WAIT_S = 300.0
#: The issue's target: another page's row key p95 while sixty learners train (ms).
TARGET_MS = 200.0
#: The Train tab's place among the explorer's tabs.
TRAIN_TAB = 9


class TrainLearner(Learner):
    """A learner that also notes when each new run reaches its page: a change of the tab's ``run``, or the tab's
    model itself arriving with its first run in it."""

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
            # The tab is put in the page a turn of the server's loop after it was built (widgets/tabs.py), and its
            # first run may be computed in between: the run then comes inside the tab's model, with no change of
            # ``run`` after it (a listener waiting for one waited forever).
            if any(ev.get("kind") == "ModelChanged" and ev.get("attr") == "run" for ev in events) or any(
                    _entries(o["attributes"].get("run")) for o in find_objects(events, "")
                    if str(o.get("name", "")).startswith("TrainLink")):
                self.runs.append(now)
            for ev in events:
                if ev.get("kind") == "ModelChanged" and ev.get("attr") == "text" and \
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

    async def open_train(self) -> None:
        tabs, index = self.find_tab("Train")
        await self.set_property(tabs, "active", index)

    def found_train(self) -> None:
        """The tab's component and its report row, once the tab has reached the page."""
        self.tab = self.find_in_patches(
            "ReactiveESM", lambda a: str((a.get("data") or {}).get("name", "")).startswith("TrainLink"))
        self.report_row = self.find_in_patches("OneRow", lambda a: a.get("name") == "train-report")
        self.seq = 0

    async def message(self, data: dict) -> None:
        """What the tab's script sends with ``model.send_msg`` (link/train.js): a learner's choice."""
        from bokeh.protocol.messages.patch_doc import patch_doc

        event = {"type": "event", "name": "data_event", "values": _map(model={"id": self.tab}, data=_map(**data))}
        content = {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)

    async def report(self, step: int, playing: bool) -> None:
        """Where the page is, as link/train.js reports it at Play, Pause or a scrub's release: its row's data."""
        self.seq += 1
        await self.set_property(self.report_row, "data", _map(step=[step], playing=[playing], seq=[self.seq]))


def _entries(value) -> bool:
    """Whether a serialized map (a run's payload) has anything in it."""
    return bool(value.get("entries") if isinstance(value, dict) and value.get("type") == "map" else value)


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


async def train_class(url: str, n: int, rounds: int, server: Processes, spread: float = 1.0,
                      open_within: float = 10.0) -> dict:
    observer = Learner(ws_url(url))
    await observer.connect()
    observer_listening = asyncio.create_task(observer.listen())
    learners = [TrainLearner(ws_url(url)) for _ in range(n)]
    await asyncio.gather(*(learner.connect(keep_doc=True) for learner in learners))
    listening = [asyncio.create_task(learner.listen()) for learner in learners]
    await asyncio.sleep(1.0)

    # before the class trains: the observer's keys on a quiet server with n pages open, and its CPU rate
    baseline: list = []
    async with observing(observer, baseline):
        cpu0, t0 = server.cpu(), time.perf_counter()
        await asyncio.sleep(5.0)
        quiet_cores = (server.cpu() - cpu0) / (time.perf_counter() - t0)

    # the class opens the Train tab within open_within seconds (each tab built on the server, its first run)
    opening: list = []
    async with observing(observer, opening):
        opening_started, cpu0 = time.perf_counter(), server.cpu()
        await spread_out([lr.open_train() for lr in learners], open_within)
        opened = await wait_for(lambda: time.perf_counter() if all(lr.runs for lr in learners) else None,
                                OPEN_WAIT_S)
        if opened is None:
            raise RuntimeError("not every learner's Train tab got its first run")
        open_cpu = server.cpu() - cpu0 - quiet_cores * (opened - opening_started)
        for learner in learners:
            learner.found_train()
        await asyncio.sleep(1.0)

    # everyone presses Play, as the page reports it
    playing: list = []
    async with observing(observer, playing):
        await asyncio.sleep(0.5)
        cpu0, t0 = server.cpu(), time.perf_counter()
        for _ in range(rounds):
            await spread_out([lr.report(0, True) for lr in learners], spread)
            await asyncio.sleep(1.5)
        play_cpu = server.cpu() - cpu0 - quiet_cores * (time.perf_counter() - t0)

    # the rounds: everyone presses New seed
    during: list = []
    waits, runs_sent = [], 0
    async with observing(observer, during):
        cpu0, t0 = server.cpu(), time.perf_counter()
        for _ in range(rounds):
            before = [len(lr.runs) for lr in learners]
            clicked = time.perf_counter()
            await spread_out([lr.message({"action": "seed"}) for lr in learners], spread)
            for lr, k in zip(learners, before, strict=True):
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
        "learners": n, "rounds": rounds, "open_within_s": open_within, "spread_s": spread,
        "key_quiet_ms": summary_ms([x for x in baseline if x is not None]),
        "key_while_opening_tab_ms": summary_ms([x for x in opening if x is not None]),
        "key_while_playing_ms": summary_ms([x for x in playing if x is not None]),
        "tab_open_s": round(opened - opening_started, 2),
        "server_cpu_ms_per_tab_opened": round(1e3 * open_cpu / n, 1),
        "server_cpu_ms_per_play_report": round(1e3 * play_cpu / (n * rounds), 2),
        "key_while_training_ms": summary_ms([x for x in during if x is not None]), "lost_keys": lost_keys,
        "new_seed_to_run_ms": summary_ms(waits), "runs": runs_sent, "runs_asked": n * rounds,
        "server_cpu_ms_per_run": round(1e3 * cpu / max(runs_sent, 1), 1),
        "server_cpu_cores_during_rounds": round(cpu / rounds_s, 2),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def table(results: list[dict]) -> str:
    """The served figures as a Markdown table (RESULTS.md's)."""
    rows = [f"| learners | presses within (s) | row key p50 / p95 quiet (ms) | while all open the tab within "
            f"{results[0]['open_within_s']:g} s (ms), all open after (s) | while all press Play (ms) | row key p50 / "
            "p95 / max while training (ms) | New seed → run p50 / p95 (ms) | runs | server CPU per tab opened / per "
            "Play report / per run (ms) | load |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        q, k, s = r["key_quiet_ms"], r["key_while_training_ms"], r["new_seed_to_run_ms"]
        o, p = r["key_while_opening_tab_ms"], r["key_while_playing_ms"]
        rows.append(f"| {r['learners']} | {r['spread_s']:g} | {q['p50']:.0f} / {q['p95']:.0f} | "
                    f"{o['p50']:.0f} / {o['p95']:.0f}, {r['tab_open_s']} | {p['p50']:.0f} / {p['p95']:.0f} | "
                    f"{k['p50']:.0f} / {k['p95']:.0f} / {k['max']:.0f} | {s['p50']:.0f} / {s['p95']:.0f} | "
                    f"{r['runs']} of {r['runs_asked']} | {r['server_cpu_ms_per_tab_opened']} / "
                    f"{r['server_cpu_ms_per_play_report']} / {r['server_cpu_ms_per_run']} | "
                    f"{', '.join(f'{x:.1f}' for x in r['load_avg'])} |")
    return "\n".join(rows)


# --- in this process: what the tab and its messages cost, load-independent ---------------------------------------

def _patch(doc, events: list) -> None:
    doc.apply_json_patch({"events": events})


def in_process(builds: int = 20) -> dict:
    """Median CPU time (ms) of the tab's build and of each message, in this process, and the tab's Bokeh models.

    The page is built as a served page's document would hold it; its runs are deferred (a served page's queue)
    except where a run is what is measured. A report is taken at once here (served, it waits its turn: the same
    work later). Bokeh's own receiving of a websocket message (about 2.5 ms, its decoding) is not in these."""
    from bokeh.document import Document
    from bokeh.models import Tabs

    import app
    from link.train import TrainLink
    from widgets.tabs import LazyTabs

    def page():
        view = app.create_app()
        doc = Document()
        doc.add_root(view.get_root(doc))
        layout = next(o for o in view.select(LazyTabs))
        deferred = []
        view.state.training.scheduler = deferred.append
        return view, doc, layout, deferred

    def cpu_ms(fn) -> float:
        c0 = time.process_time()
        fn()
        return (time.process_time() - c0) * 1e3

    for _ in range(2):  # untimed: first-call costs (imports, Panel's and Bokeh's caches)
        view, doc, layout, deferred = page()
        layout.active = TRAIN_TAB
        deferred.pop()()
    build, run, play, scrub, seed, models = [], [], [], [], [], 0
    for _ in range(builds):
        view, doc, layout, deferred = page()
        build.append(cpu_ms(lambda layout=layout: setattr(layout, "active", TRAIN_TAB)))
        run.append(cpu_ms(deferred.pop()))
        tabs = next(m for m in doc.models if isinstance(m, Tabs) and "explorer-tabs" in m.css_classes)
        tab = next(o for o in layout[TRAIN_TAB].select(TrainLink))
        models = len(tabs.tabs[TRAIN_TAB].child.references()) + 1  # and its report row, a root of its own
        doc.add_root(tab.report)
        row = tab.report.id
        model = next(iter(tab._models.values()))[0].id

        def report(step, playing, seq, row=row, doc=doc):
            new = {"type": "map", "entries": [["step", [step]], ["playing", [playing]], ["seq", [seq]]]}
            _patch(doc, [{"kind": "ModelChanged", "model": {"id": row}, "attr": "data", "new": new}])

        def message(data, model=model, doc=doc):
            values = {"type": "map", "entries": [["model", {"id": model}],
                                                 ["data", {"type": "map", "entries": list(data.items())}]]}
            _patch(doc, [{"kind": "MessageSent", "msg_type": "bokeh_event",
                          "msg_data": {"type": "event", "name": "data_event", "values": values}}])
        for k in range(6):
            play.append(cpu_ms(lambda k=k: report(0, True, 2 * k + 1)))
            scrub.append(cpu_ms(lambda k=k: report(100 + k, False, 2 * k + 2)))
        seed.append(cpu_ms(lambda: message({"action": "seed"})))
        deferred.clear()
    return {"bench": "train_class", "in_process": True, "builds": builds, "tab_models": models,
            "tab_build_cpu_ms": round(statistics.median(build), 1),
            "play_report_cpu_ms": round(statistics.median(play), 2),
            "scrub_report_cpu_ms": round(statistics.median(scrub), 2),
            "new_seed_cpu_ms": round(statistics.median(seed), 2), "run_cpu_ms": round(statistics.median(run), 1),
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def in_process_table(r: dict) -> str:
    return "\n".join([
        "| in this process (CPU, median of %d) | tab build | the tab's Bokeh models | Play report | a scrub's "
        "release | New seed (its run deferred) | one run | load |" % r["builds"],
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| Train tab | {r['tab_build_cpu_ms']} ms | {r['tab_models']} | {r['play_report_cpu_ms']} ms | "
        f"{r['scrub_report_cpu_ms']} ms | {r['new_seed_cpu_ms']} ms | {r['run_cpu_ms']} ms | "
        f"{', '.join(f'{x:.1f}' for x in r['load_avg'])} |"])


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[60])
    ap.add_argument("--rounds", type=int, default=3, help="times every learner presses Play, then New seed, together")
    ap.add_argument("--spread", type=float, nargs="+", default=[1.0, 0.0], help=(
        "seconds within which the class's presses come, evenly (default 1, a class told to press; then 0, all in "
        "the same instant)"))
    ap.add_argument("--open-within", type=float, default=10.0, help="seconds within which the class opens the tab")
    ap.add_argument("--builds", type=int, default=20, help="pages built in this process for the in-process costs")
    ap.add_argument("--in-process", action="store_true", help="only the in-process costs")
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    own = in_process(args.builds)
    print(json.dumps(own), flush=True)
    results = [own]
    served = []
    if not args.in_process:
        for n, spread in ((n, spread) for n in args.sessions for spread in args.spread):
            with serve() as (url, proc):
                r = asyncio.run(train_class(url, n, args.rounds, Processes([proc]), spread, args.open_within))
            served.append(r)
            print(json.dumps(r), flush=True)
    results += served
    if args.json:
        with open(args.json, "a") as f:
            for r in results:
                f.write(json.dumps({"bench": "train_class", **r}) + "\n")
    print(in_process_table(own))
    if served:
        print(table(served))
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
