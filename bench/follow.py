"""Follow the presenter: one presenter drags, N followers' pages follow; how late, how much dropped, what CPU.

    .venv/bin/python bench/follow.py                    # 60 followers, 30 moves/s for 30 s
    .venv/bin/python bench/follow.py --seconds 5 --followers 10   # a quick run

The server is ``python app.py`` on a free loopback port. The presenter is a real page in headless
Chromium (Playwright) that presses Present and then drags the query along a Lissajous path at the given
rate, noting when each move left the hand and the query it aims at (the plot's own scales invert the
pixel). Followers are Bokeh's own client (``bokeh.client.pull_session``, ``import panel`` first) in
separate processes (Playwright and bokeh.client each want their own event loop); each records when its
readout's text showed which query. A follower's latency for a shown query is the time since the latest
move that aimed at it. Dropped = moves whose query a follower never showed (the server coalesces: a
follower that is behind gets only the latest view); the last move's query must always arrive.

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
QUERY_RE = re.compile(r"q = \((-?\d+\.\d{3}), (-?\d+\.\d{3})\)")

# --------------------------------------------------------------------------------------------------------------
# follower processes


def run_followers(url: str, code: str, count: int, ready_file: str, out_file: str) -> None:
    """Open ``count`` follower sessions, signal readiness, record until stdin closes; write JSON."""
    import panel  # noqa: F401  (registers Panel's models so the client can decode the document)
    from bokeh.client import pull_session
    from bokeh.events import DocumentReady
    from tornado.ioloop import IOLoop

    records: list[list[tuple[float, float, float]]] = []
    sessions = []
    for i in range(count):
        session = pull_session(url=url, arguments={"room": code})
        # what a browser sends once it has rendered the page; until then Panel leaves changes to the
        # full document it sends on connection, and a follower would see nothing
        session.document.callbacks.send_event(DocumentReady())
        div = session.document.select_one({"name": "readout"})
        seen: list[tuple[float, float, float]] = []

        def on_text(attr, old, new, seen=seen):
            m = QUERY_RE.search(new)
            if m:
                seen.append((time.monotonic(), float(m.group(1)), float(m.group(2))))

        div.on_change("text", on_text)
        records.append(seen)
        sessions.append(session)
    Path(ready_file).write_text("ready")
    loop = IOLoop.current()

    def poll_stop():
        if Path(ready_file + ".stop").exists():
            loop.stop()
        else:
            loop.call_later(0.1, poll_stop)

    loop.call_later(0.1, poll_stop)
    loop.start()
    Path(out_file).write_text(json.dumps(records))
    print("follower texts:", [s.document.select_one({"name": "readout"}).text.splitlines()[0] for s in sessions[:2]],
          file=sys.stderr)
    for s in sessions:
        s.close()


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--followers", type=int, default=60)
    ap.add_argument("--processes", type=int, default=2, help="follower client processes")
    ap.add_argument("--rate", type=float, default=30.0, help="presenter moves per second")
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()

    import psutil
    from playwright.sync_api import sync_playwright

    from tests.ui.conftest import CHROMIUM_ARGS, free_port, wait_for_http

    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = open(out_dir / "follow-server.log", "w")
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1"})
    followers: list[subprocess.Popen] = []
    try:
        wait_for_http(url + "liveness", server, timeout=180)
        with sync_playwright() as p:
            chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(url)
            ready = ("() => window.Bokeh && Bokeh.documents.length > 0 && "
                     "Bokeh.documents[0].get_model_by_name('query-plot') != null")
            page.wait_for_function(ready)
            with page.expect_navigation(url=re.compile(r"[?&]token=")):
                page.get_by_role("button", name="Present").click()
            page.wait_for_function(ready)
            page.locator(".room-code").wait_for()
            code = page.locator(".room-code").text_content().replace(" ", "")

            per = [args.followers // args.processes + (i < args.followers % args.processes)
                   for i in range(args.processes)]
            files = []
            for i, n in enumerate(per):
                ready_file, out_file = str(out_dir / f"follow-ready-{i}"), str(out_dir / f"follow-{i}.json")
                for f in (ready_file, ready_file + ".stop", out_file):
                    Path(f).unlink(missing_ok=True)
                followers.append(subprocess.Popen(
                    [sys.executable, __file__, "--_follower", url, code, str(n), ready_file, out_file], cwd=ROOT))
                files.append((ready_file, out_file))
            deadline = time.monotonic() + 300
            while not all(Path(r).exists() for r, _ in files):
                if time.monotonic() > deadline or any(f.poll() not in (None, 0) for f in followers):
                    raise RuntimeError("followers did not connect")
                time.sleep(0.2)

            n = int(args.rate * args.seconds)
            points = [page.evaluate(_TO_PAGE, list(path_point(i, n))) for i in range(n + 1)]
            proc = psutil.Process(server.pid)
            cpu0, wall0 = proc.cpu_times(), time.monotonic()
            moves: list[tuple[float, float, float]] = []  # (time, x, y) of each move, in data units
            page.mouse.move(*points[0])
            page.mouse.down()
            start = time.monotonic()
            for i, (px, py) in enumerate(points[1:], 1):
                target = start + i / args.rate
                delay = target - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                t = time.monotonic()
                page.mouse.move(px, py)
                moves.append((t, px, py))
            page.mouse.up()
            drag_wall = time.monotonic() - start
            time.sleep(3.0)  # let the last view reach everyone
            cpu1, wall1 = proc.cpu_times(), time.monotonic()
            data = page.evaluate(f"(pts) => pts.map(p => ({_TO_DATA})(p))", [[x, y] for _, x, y in moves])
            presenter_q = QUERY_RE.search(page.locator("[data-testid=readout] .bk-clearfix").text_content())
            browser.close()

        for ready_file, _ in files:
            Path(ready_file + ".stop").write_text("stop")
        for f in followers:
            f.wait(120)
        records = [r for _, out_file in files for r in json.loads(Path(out_file).read_text())]
    finally:
        for f in followers:
            if f.poll() is None:
                f.kill()
        server.terminate()
        server.wait(10)
        log.close()

    # a move aimed at data point (x, y); the readout shows it rounded to 3 decimals
    aimed = [(t, round(x, 3), round(y, 3)) for (t, _, _), (x, y) in zip(moves, data)]
    final = aimed[-1][1:]
    latencies, dropped, finals_ok = [], [], 0
    for seen in records:
        shown = set()
        for r, x, y in seen:
            cands = [t for t, ax, ay in aimed if t <= r and abs(ax - x) <= 0.0015 and abs(ay - y) <= 0.0015]
            if cands:
                latencies.append((r - max(cands)) * 1000)
                shown.add((x, y))
        distinct_moves = {(x, y) for _, x, y in aimed}
        dropped.append(1 - len(shown & distinct_moves) / len(distinct_moves))
        finals_ok += bool(seen) and (seen[-1][1], seen[-1][2]) == final
    cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (wall1 - wall0)
    result = {
        "followers": len(records), "moves": len(moves), "rate_per_s": round(len(moves) / drag_wall, 1),
        "seconds": round(drag_wall, 1), "cpu_count": os.cpu_count(),
        "latency_ms_p50": round(percentile(latencies, 0.5), 1), "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "updates_shown": len(latencies),
        "dropped_median_pct": round(100 * statistics.median(dropped), 1),
        "dropped_max_pct": round(100 * max(dropped), 1),
        "final_position_reached": f"{finals_ok}/{len(records)}",
        "presenter_final": presenter_q.group(0) if presenter_q else None,
        "server_cpu_pct_of_one_core": round(100 * cpu, 1),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=2))
    (out_dir / "follow.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_follower":
        run_followers(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    else:
        main()
