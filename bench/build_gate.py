"""Page builds against an open page's keys, in one process, with and without the build gate (server/build_gate.py).

No server, no browser: Bokeh's own session creation (``ApplicationContext``) builds a stand-in page whose build
spins for a fixed amount of CPU time (``--build-ms``, as the app's page takes 90–150 ms), followed by
``--after-ms`` of CPU for what the page costs once built (its connection, its document sent, a room's work),
which the gate does not pace. Meanwhile an open page "presses a key" every 50 ms: a loop callback that records
how late it ran. Two scenarios: a flood (``--pages`` pages asked evenly over ``--within`` s, the hostile check's
100 in 20 s) and a class (``--class-size`` pages asked at once, the time until the last is built and served).

    .venv/bin/python -m bench.build_gate            # 3 repetitions, prints the table of medians

Build and after-work are CPU time (``time.thread_time``), so what each costs does not depend on the machine's
load; the wall times do.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import pct  # noqa: E402

PAGE = """
import time
from bokeh.io import curdoc
start = time.thread_time()
while time.thread_time() - start < {build}:
    pass
curdoc().title = "built"
"""


def spin(seconds: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


async def scenario(context, asks: list[float], after: float) -> dict:
    """Ask for a page at each time in ``asks`` (s from now); a key every 50 ms until every page is served."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    late, served = [], []
    done = asyncio.Event()

    def key(due):
        now = loop.time()
        late.append(now - due)
        if not done.is_set():  # the next key 50 ms after this one, or at once if this one came late
            nxt = max(due + 0.05, now)
            loop.call_at(nxt, key, nxt)

    async def page(i, at):
        await asyncio.sleep(at)
        await context.create_session_if_needed(f"page-{i}-{t0}")
        loop.call_soon(lambda: (spin(after), served.append(loop.time() - t0)))

    loop.call_at(t0 + 0.05, key, t0 + 0.05)
    await asyncio.gather(*(page(i, at) for i, at in enumerate(asks)))
    while len(served) < len(asks):
        await asyncio.sleep(0.01)
    done.set()
    return {"key_p50_ms": 1e3 * pct(late, 50), "key_p95_ms": 1e3 * pct(late, 95), "last_served_s": max(served)}


def run(build: float, after: float, pages: int, within: float, class_size: int, gated: bool,
        share: float | None = None) -> dict:
    from bokeh.application import Application
    from bokeh.application.handlers.script import ScriptHandler
    from bokeh.server.contexts import ApplicationContext

    from server import build_gate
    from server.patches import bokeh_create_session

    original = ApplicationContext._create_session
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "page.py"
        script.write_text(textwrap.dedent(PAGE.format(build=build)))
        context = ApplicationContext(Application(ScriptHandler(filename=str(script))))
        try:
            if gated:
                bokeh_create_session.install()
            import panel as pn

            def fresh_gate():
                gate = pn.state.cache[build_gate.CACHE_KEY] = build_gate.BuildGate()
                if share:
                    gate.SHARE = share

            fresh_gate()
            flood = asyncio.run(scenario(context, [i * within / pages for i in range(pages)], after))
            fresh_gate()
            klass = asyncio.run(scenario(context, [0.0] * class_size, after))
        finally:
            ApplicationContext._create_session = original
    return {"flood": flood, "class": klass}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-ms", type=float, default=150.0, help="CPU of one page's build (ms)")
    ap.add_argument("--after-ms", type=float, default=50.0, help="CPU a page costs once built, not paced (ms)")
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--within", type=float, default=20.0)
    ap.add_argument("--class-size", type=int, default=30)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--share", type=float, help="the gate's share of the loop (default: BuildGate.SHARE)")
    ap.add_argument("--only-gated", action="store_true", help="skip the runs without the gate")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    runs = {False: [], True: []}
    for _ in range(args.reps):
        for gated in (True,) if args.only_gated else (False, True):
            runs[gated].append(run(args.build_ms / 1e3, args.after_ms / 1e3, args.pages, args.within,
                                   args.class_size, gated, args.share))
    load1 = os.getloadavg()[0]
    from server.build_gate import BuildGate

    print(f"share {args.share or BuildGate.SHARE:g}; build {args.build_ms:g} ms + after {args.after_ms:g} ms of CPU "
          f"a page; {args.reps} repetitions; "
          f"load {load0:.1f} → {load1:.1f}")
    print(f"| gate | {args.pages} pages within {args.within:g} s: key p50 / p95 (ms) | last page served (s) "
          f"| {args.class_size} at once: key p95 (ms) | last page served (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for gated in (False, True):
        r = runs[gated]
        if not r:
            continue

        def med(part, key, r=r):
            return statistics.median(x[part][key] for x in r)

        def each(part, key, fmt, r=r):
            return ", ".join(format(x[part][key], fmt) for x in r)

        print(f"| {'on' if gated else 'off'} | {med('flood', 'key_p50_ms'):.0f} / **{med('flood', 'key_p95_ms'):.0f}**"
              f" ({each('flood', 'key_p95_ms', '.0f')}) | {med('flood', 'last_served_s'):.1f} "
              f"| {med('class', 'key_p95_ms'):.0f} ({each('class', 'key_p95_ms', '.0f')}) "
              f"| {med('class', 'last_served_s'):.2f} ({each('class', 'last_served_s', '.2f')}) |")


if __name__ == "__main__":
    main()
