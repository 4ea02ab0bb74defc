"""Follow the presenter: one presenter drags, N followers' pages follow; how late, how much dropped, what CPU.

    .venv/bin/python bench/follow.py                    # 60 followers, 30 moves/s for 30 s
    .venv/bin/python bench/follow.py --seconds 5 --followers 10   # a quick run
    .venv/bin/python bench/follow.py --presenter browser          # the presenter is headless Chromium

The server is ``python app.py`` on a free loopback port. Every session speaks Bokeh's own protocol
(``testing/protocol_client.py``, the client of the classroom benchmark): it pulls the document, then sends
``document_ready`` as BokehJS does once a page has rendered.

The presenter opens the page, presses Present (a ``button_click`` on the Present button), takes the
presenter link the server then sets as the page's address, opens that, and drags the query along a
Lissajous path at the given rate: the ``panstart``/``pan`` events BokehJS sends for a drag on the query
plot. With ``--presenter browser`` it is a real page in headless Chromium instead (Playwright presses
Present and moves the mouse); on a small, busy machine Chromium cannot move the mouse 30 times a second,
so the rate it reached is reported.

Followers open the join link ``?room=CODE`` in separate processes (asyncio each), with permessage-deflate
as browsers negotiate it, and the room's live channel (``room-live?room=CODE``, with the ticket each page's
server sends it) as the page's script does.
They note when the page showed which query: when its readout's text came from the server, or when the
live channel brought the query (the page draws its numbers as it arrives, ``link/drag.js``). A
follower's latency for a shown query is the time from the latest move that aimed at it until the page
first showed it; the server's numbers for a query the page already previews are counted apart (the
``final_server_numbers`` fields, for the last move). Dropped = moves whose query a
follower never showed (the server coalesces: a follower that is behind gets only the latest view); the
last move's query must always arrive. All times are CLOCK_MONOTONIC, comparable across processes.

Results are printed as JSON and written to bench/out/follow.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import publish  # noqa: E402
from testing.browser import APP_LOADED  # noqa: E402
from testing.protocol_client import ProtocolPresenter  # noqa: E402

QUERY_RE = re.compile(r"q = \((-?\d+\.\d{3}), (-?\d+\.\d{3})\)")

# --------------------------------------------------------------------------------------------------------------
# follower processes


class FollowerProcesses:
    """The benchmark's follower processes (this script's ``--_follower`` mode, or bench/poll.py's), one per
    server process's share: each writes ``<prefix>-ready-<i>`` once its pages have connected, ends when
    ``<prefix>-ready-<i>.stop`` appears, and leaves its records as JSON in ``<prefix>-<i>.json``."""

    def __init__(self, out_dir: Path, prefix: str):
        self.out_dir, self.prefix = out_dir, prefix
        self.procs: list[subprocess.Popen] = []
        self.files: list[tuple[str, str]] = []

    def start(self, script: str, *args: str) -> None:
        """One more follower process: ``python script *args ready_file out_file``."""
        i = len(self.procs)
        ready_file = str(self.out_dir / f"{self.prefix}-ready-{i}")
        out_file = str(self.out_dir / f"{self.prefix}-{i}.json")
        for f in (ready_file, ready_file + ".stop", out_file):
            Path(f).unlink(missing_ok=True)
        self.procs.append(subprocess.Popen([sys.executable, script, *args, ready_file, out_file], cwd=ROOT))
        self.files.append((ready_file, out_file))

    def wait_ready(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while not all(Path(r).exists() for r, _ in self.files):
            if time.monotonic() > deadline or any(f.poll() not in (None, 0) for f in self.procs):
                raise RuntimeError("followers did not connect")
            time.sleep(0.2)

    def stop(self, timeout: float = 120) -> list:
        """Tell each to end, wait for it; what each wrote, in order."""
        for ready_file, _ in self.files:
            Path(ready_file + ".stop").write_text("stop")
        for f in self.procs:
            f.wait(timeout)
        return [json.loads(Path(out_file).read_text()) for _, out_file in self.files]

    def kill(self) -> None:
        """End any still running (after an error)."""
        for f in self.procs:
            if f.poll() is None:
                f.kill()


def run_followers(ws_url: str, code: str, count: int, ready_file: str, out_file: str) -> None:
    """Open ``count`` follower sessions, signal readiness, record until the stop file appears; write JSON."""
    import asyncio

    import psutil

    from testing.protocol_client import Learner

    async def follow_live(channel, learner) -> None:
        """The page's live channel (server/room_live.py): the page draws each query it brings at once."""
        while (text := await channel.read_message()) is not None:
            learner.bytes_in += len(text)
            query = json.loads(text)["query"]
            if query is not None:
                learner.live_shown.append(((f"{query[0]:.3f}", f"{query[1]:.3f}"), time.monotonic()))

    async def follow() -> dict:
        learners = [Learner(f"{ws_url}?room={code}", compress=True, clock=time.monotonic, keep_patches=False)
                    for _ in range(count)]
        gate = asyncio.Semaphore(4)  # a class does not open its pages in the same millisecond either

        async def connect(learner: Learner) -> None:
            async with gate:
                await learner.connect()

        t0 = time.monotonic()
        await asyncio.gather(*(connect(learner) for learner in learners))
        connect_s = time.monotonic() - t0
        listeners = [asyncio.create_task(learner.listen()) for learner in learners]
        for learner in learners:
            learner.live_shown = []
        # each page's own channel, with the ticket its server sent it (server/room_live.py)
        channels = await asyncio.gather(*(learner.live_channel() for learner in learners))
        listeners += [asyncio.create_task(follow_live(c, learner))
                      for c, learner in zip(channels, learners, strict=True)]
        me = psutil.Process()
        cpu0, wall0 = sum(me.cpu_times()[:2]), time.monotonic()
        bytes0 = sum(learner.bytes_in for learner in learners)  # after the documents themselves
        Path(ready_file).write_text("ready")
        while not Path(ready_file + ".stop").exists():
            await asyncio.sleep(0.1)
        cpu, wall = sum(me.cpu_times()[:2]) - cpu0, time.monotonic() - wall0
        for learner, channel in zip(learners, channels, strict=True):
            learner.close()
            channel.close()
        await asyncio.gather(*listeners, return_exceptions=True)
        return {
            "connect_s": connect_s, "client_cpu_s": cpu, "listen_s": wall,
            "bytes_in": sum(learner.bytes_in for learner in learners) - bytes0,
            "messages_in": sum(learner.messages_in for learner in learners),
            # what each page showed, in time order: its server's numbers and the live channel's previews
            "records": [sorted((t, float(x), float(y)) for (x, y), t in learner.shown + learner.live_shown)
                        for learner in learners],
            "server_records": [[(t, float(x), float(y)) for (x, y), t in learner.shown] for learner in learners],
        }

    Path(out_file).write_text(json.dumps(asyncio.run(follow())))


# --------------------------------------------------------------------------------------------------------------
# the presenter and the measurement

_TO_PAGE = """([x, y]) => {
  const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('query-plot'));
  const r = view.canvas_view.el.getBoundingClientRect();
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)];
}"""
_TO_DATA = """([px, py]) => {
  const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('query-plot'));
  const r = view.canvas_view.el.getBoundingClientRect();
  return [view.frame.x_scale.invert(px - r.left), view.frame.y_scale.invert(py - r.top)];
}"""


def path_point(i: int, n: int) -> tuple[float, float]:
    """A Lissajous curve inside the plane; it rarely revisits a pixel, so positions identify moves."""
    t = 2 * math.pi * i / max(n, 1)
    return 0.5 + 1.6 * math.sin(3 * t), 0.5 + 1.6 * math.sin(4 * t + 0.7)


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Presenter:
    """Drives the room; ``start(...)`` returns the room code, ``drag(...)`` the moves as (time, x, y) in data units."""

    def final_text(self) -> str | None:
        return None

    def close(self) -> None:
        pass


class BrowserPresenter(Presenter):
    """The presenter's page in headless Chromium, driven with Playwright's mouse."""

    READY = APP_LOADED

    def __init__(self, url: str):
        from playwright.sync_api import sync_playwright

        from testing.browser import CHROMIUM_ARGS

        self.url = url
        self.pw = sync_playwright().start()
        chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
        self.browser = self.pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        self.page = self.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()

    def start(self) -> str:
        page = self.page
        page.goto(self.url)
        page.wait_for_function(self.READY)
        with page.expect_navigation(url=re.compile(r"[?&]token=")):
            page.get_by_role("button", name="Present").click()
        page.wait_for_function(self.READY)
        page.locator(".room-code").wait_for()
        return page.locator(".room-code").text_content().replace(" ", "")

    def drag(self, points, rate):
        page = self.page
        pixels = [page.evaluate(_TO_PAGE, list(p)) for p in points]
        moves = []
        page.mouse.move(*pixels[0])
        page.mouse.down()
        start = time.monotonic()
        for i, (px, py) in enumerate(pixels[1:], 1):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            t = time.monotonic()
            page.mouse.move(px, py)
            moves.append((t, px, py))
        page.mouse.up()
        # the query each move aimed at: the plot's own scales invert the pixel
        data = page.evaluate(f"(pts) => pts.map(p => ({_TO_DATA})(p))", [[x, y] for _, x, y in moves])
        return [(t, x, y) for (t, _, _), (x, y) in zip(moves, data, strict=True)]

    def final_text(self):
        m = QUERY_RE.search(self.page.locator("[data-testid=readout] .bk-clearfix").text_content())
        return m.group(0) if m else None

    def close(self):
        self.browser.close()
        self.pw.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--followers", type=int, default=60)
    ap.add_argument("--processes", type=int, default=2, help="follower client processes")
    ap.add_argument("--rate", type=float, default=30.0, help="presenter moves per second")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=10.0, help="seconds after the drag for the last view to arrive")
    ap.add_argument("--presenter", choices=["protocol", "browser"], default="protocol")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds the presenter rests halfway (protocol presenter): the class's servers take "
                         "the view in full meanwhile; reports the latency of the moves right after")
    args = ap.parse_args()

    import psutil

    from testing.server import free_port, wait_for_http

    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    ws = url.replace("http://", "ws://", 1) + "app/ws"  # `python app.py` serves the page at /app
    log = open(out_dir / "follow-server.log", "w")
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1"})
    followers = FollowerProcesses(out_dir, "follow")
    presenter: Presenter | ProtocolPresenter | None = None
    load_start = os.getloadavg()
    try:
        wait_for_http(url + "liveness", server, timeout=180)
        presenter = (BrowserPresenter if args.presenter == "browser" else ProtocolPresenter)(url)
        code = presenter.start()

        per = [args.followers // args.processes + (i < args.followers % args.processes) for i in range(args.processes)]
        for n in per:
            followers.start(__file__, "--_follower", ws, code, str(n))
        followers.wait_ready()
        time.sleep(1.0)  # the last follower's first view settles before the clock starts

        n = int(args.rate * args.seconds)
        points = [path_point(i, n) for i in range(n + 1)]
        proc = psutil.Process(server.pid)
        cpu0, wall0 = proc.cpu_times(), time.monotonic()
        moves = presenter.drag(points, args.rate, args.pause) if args.pause else presenter.drag(points, args.rate)
        cpu1, wall1 = proc.cpu_times(), time.monotonic()
        time.sleep(args.settle)  # late followers still get the last view; their lateness is measured
        presenter_final = presenter.final_text()

        outs = followers.stop()
        records = [r for out in outs for r in out["records"]]
        server_records = [r for out in outs for r in out["server_records"]]
    finally:
        if presenter is not None:
            presenter.close()
        followers.kill()
        server.terminate()
        server.wait(10)
        log.close()

    # a move aimed at data point (x, y); the readout shows it rounded to 3 decimals
    aimed = [(t, round(x, 3), round(y, 3)) for t, x, y in moves]
    final = aimed[-1][1:]
    last_move = aimed[-1][0]
    distinct_moves = {(x, y) for _, x, y in aimed}
    latencies, dropped, finals_ok, final_latencies = [], [], 0, []
    resumed = getattr(presenter, "resumed", None)
    after_pause = []  # latencies of the moves in the 5 s after the presenter resumed
    for seen in records:
        shown: dict[tuple[float, float], float] = {}  # position -> when the page last showed it
        for r, x, y in seen:
            cands = [t for t, ax, ay in aimed if t <= r and abs(ax - x) <= 0.0015 and abs(ay - y) <= 0.0015]
            # a page that shows the same query again (its server's numbers after the preview) shows nothing new
            if cands and shown.get((x, y), -math.inf) < max(cands):
                latencies.append((r - max(cands)) * 1000)
                if resumed is not None and resumed <= max(cands) < resumed + 5:
                    after_pause.append((r - max(cands)) * 1000)
            if cands:
                shown[(x, y)] = r
        dropped.append(1 - len(set(shown) & distinct_moves) / len(distinct_moves))
        # the first time after the last move that the page showed its query: a preview, or the server's numbers
        first = min((t for t, x, y in seen if (x, y) == final and t >= last_move), default=None)
        if seen and (seen[-1][1], seen[-1][2]) == final and first is not None:
            finals_ok += 1
            final_latencies.append((first - last_move) * 1000)
    confirmed = [(seen[-1][0] - last_move) * 1000 for seen in server_records
                 if seen and (seen[-1][1], seen[-1][2]) == final and seen[-1][0] >= last_move]
    drag_wall = wall1 - wall0
    cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / drag_wall
    result = {
        "presenter": args.presenter, "followers": len(records), "moves": len(moves),
        "rate_per_s": round(len(moves) / drag_wall, 1), "seconds": round(drag_wall, 1), "cpu_count": os.cpu_count(),
        "latency_ms_p50": round(percentile(latencies, 0.5), 1), "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "latency_ms_max": round(max(latencies, default=float("nan")), 1),
        "pause_s": args.pause,
        "after_pause_latency_ms_p50": round(percentile(after_pause, 0.5), 1) if after_pause else None,
        "after_pause_latency_ms_p95": round(percentile(after_pause, 0.95), 1) if after_pause else None,
        "updates_shown": len(latencies),
        "dropped_median_pct": round(100 * statistics.median(dropped), 1),
        "dropped_max_pct": round(100 * max(dropped), 1),
        "final_position_reached": f"{finals_ok}/{len(records)}",
        "final_latency_ms_max": round(max(final_latencies), 1) if final_latencies else None,
        "final_server_numbers": f"{len(confirmed)}/{len(server_records)}",
        "final_server_numbers_ms_max": round(max(confirmed), 1) if confirmed else None,
        "presenter_final": presenter_final,
        "final_aimed": "q = ({:.3f}, {:.3f})".format(*final),
        "server_cpu_pct_of_one_core": round(100 * cpu, 1),
        "follower_clients_cpu_pct_of_one_core": round(100 * sum(o["client_cpu_s"] / o["listen_s"] for o in outs), 1),
        "follower_connect_s": round(max(o["connect_s"] for o in outs), 1),
        "kB_per_follower_per_update": round(sum(o["bytes_in"] for o in outs) / 1024 / max(len(latencies), 1), 1),
    }
    publish(result, load_start, out_dir / "follow.json")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_follower":
        run_followers(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    else:
        main()
