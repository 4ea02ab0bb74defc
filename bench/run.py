"""Run every benchmark of the explorer and print a summary; raw results go to bench/out/results.jsonl.

    python -m bench.run                 # full: drag 3x100 moves, classroom 1..100 learners x 30 s, 300 sessions
    python -m bench.run --quick         # a few minutes: shorter drags, 5 s classroom with 1 and 10 learners
    python -m bench.run --only preview --delay-ms 25   # the drag preview, direct and through a delaying proxy
    python -m bench.run --only drag     # one of: drag, preview, classroom, memory, events (repeatable)

Each benchmark runs in its own process (Playwright's sync API and Bokeh's protocol client each run an
event loop). Every server is started on a free 127.0.0.1 port and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

from bench import memory
from bench.stats import median

OUT = Path(__file__).resolve().parent / "out"


def _run(module: str, args: list[str], out: Path, ok: tuple[int, ...] = (0,)) -> list[dict]:
    before = out.read_text().count("\n") if out.exists() else 0
    done = subprocess.run([sys.executable, "-m", module, *args, "--json", str(out)],
                          cwd=Path(__file__).resolve().parents[1])
    if done.returncode not in ok:
        raise subprocess.CalledProcessError(done.returncode, module)
    return [json.loads(line) for line in out.read_text().splitlines()[before:]]


def _shipped(flag: str) -> str:
    from server import serve

    return next(s.default for s in serve.SETTINGS if s.flag == flag)


def _fmt(x, digits=1):
    return "–" if x is None else f"{x:.{digits}f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs, for a first look")
    ap.add_argument("--only", action="append", choices=["drag", "preview", "classroom", "memory", "events"])
    ap.add_argument("--repeat", type=int, default=1, help="run each benchmark this many times; medians reported")
    ap.add_argument("--delay-ms", type=float, default=25, help="preview: proxy delay each way (default 25)")
    ap.add_argument("--duration", type=float, help="classroom seconds of dragging (default 30, quick 5)")
    args = ap.parse_args(argv)
    only = set(args.only or ["drag", "preview", "classroom", "memory", "events"])
    OUT.mkdir(exist_ok=True)
    out = OUT / "results.jsonl"
    started = time.strftime("%Y-%m-%d %H:%M")
    lines = [f"Run {started}: {psutil.cpu_count()} cores, load average at start "
             + " / ".join(f"{x:.1f}" for x in psutil.getloadavg())]

    if "drag" in only:
        rs = []
        for _ in range(args.repeat):
            rs += _run("bench.drag", ["--moves", "80" if args.quick else "100", "--rounds", "1" if args.quick else "3"],
                       out)
        lines += ["", "Drag latency, pointermove → readout text (ms, median over runs)", "",
                  "| page | p50 | p95 | max | no change within 2 s |", "|---|---|---|---|---|"]
        for name in ("app", "reference"):
            lines.append(f"| {name} | "
                         + " | ".join(_fmt(median([r[name][k] for r in rs])) for k in ("p50", "p95", "max"))
                         + f" | {_fmt(median([r[name]['misses'] for r in rs]), 0)} |")

    if "preview" in only:
        rs = []
        for _ in range(args.repeat):
            rs += _run("bench.preview_latency", ["--delay-ms", str(args.delay_ms),
                                                 "--moves", "80" if args.quick else "100",
                                                 "--single", "10" if args.quick else "30",
                                                 "--rounds", "1" if args.quick else "2"], out)
        lines += ["", f"Drag preview, direct and through a {args.delay_ms:g} ms-each-way proxy "
                  "(ms, median over runs)", "",
                  "| network | drag | first change p50 | p95 | max | from dispatch p95 | server's numbers p50 | p95 "
                  "| moves/s |", "|---|---|---|---|---|---|---|---|---|"]
        for net in ("direct", "proxy"):
            for drag in ("paced", "single"):
                def m(f, net=net, drag=drag):
                    return median([f(r[net][drag]) for r in rs if drag in r[net]])

                lines.append(f"| {net} | {drag} | "
                             + " | ".join(_fmt(m(lambda d, k=k: d["first"][k])) for k in ("p50", "p95", "max"))
                             + f" | {_fmt(m(lambda d: d['from_dispatch']['p95']))} | "
                             + " | ".join(_fmt(m(lambda d, k=k: d["confirm"][k])) for k in ("p50", "p95"))
                             + f" | {_fmt(m(lambda d: d['moves_per_s']))} |")

    if "classroom" in only:
        sessions = ["1", "10"] if args.quick else ["1", "10", "30", "60", "100"]
        duration = str(args.duration or (5 if args.quick else 30))
        rs = []
        for _ in range(args.repeat):
            rs += _run("bench.classroom", ["--sessions", *sessions, "--duration", duration], out)
        lines += ["", f"Classroom, 30 moves/s per learner for {duration} s (median over runs)", "",
                  "| learners | latency p50 ms | p95 ms | moves | updates | coalesced | final lost "
                  "| server CPU (cores) | server ms/update | server RSS MB | client CPU | client send lag p95 ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for n in sessions:
            g = [r for r in rs if r["sessions"] == int(n)]

            def m(f, g=g):
                return median([f(r) for r in g])

            lines.append(f"| {n} | {_fmt(m(lambda r: r['latency_ms']['p50']))} "
                         f"| {_fmt(m(lambda r: r['latency_ms']['p95']))} "
                         f"| {_fmt(m(lambda r: r['moves_sent']), 0)} "
                         f"| {_fmt(m(lambda r: r['updates_received']), 0)} "
                         f"| {_fmt(m(lambda r: r['coalesced']), 0)} "
                         f"| {_fmt(m(lambda r: r['final_positions_lost']), 0)} "
                         f"| {_fmt(m(lambda r: r['server_cpu_cores_mean']), 2)} "
                         f"| {_fmt(m(lambda r: r['server_cpu_ms_per_update']), 2)} "
                         f"| {_fmt(m(lambda r: r['server_rss_mb_max']), 0)} "
                         f"| {_fmt(m(lambda r: r['client_cpu_cores']), 2)} "
                         f"| {_fmt(m(lambda r: r['client_send_lag_ms_p95']))} |")

    if "memory" in only:
        n = "50" if args.quick else "300"
        rs = []
        for _ in range(args.repeat):
            # the cleanup settings the app ships (server/serve.py), not Bokeh's defaults
            rs += _run("bench.memory", ["--sessions", n,
                                        "--unused-session-lifetime", _shipped("--unused-session-lifetime"),
                                        "--check-unused-sessions", _shipped("--check-unused-sessions")], out,
                       ok=(0, memory.NOT_RETURNED))  # memory did not come back: in the table all the same

        def m(k):
            return median([r[k] for r in rs])

        lines += ["", f"Memory, {n} idle sessions opened then closed (RSS MB, median over runs; unused-session "
                  f"lifetime {rs[0]['unused_session_lifetime_ms']} ms, "
                  f"checked every {rs[0]['check_unused_sessions_ms']} ms)",
                  "", "| start | open | closed | closed, later | MB per idle session | after close vs start |",
                  "|---|---|---|---|---|---|",
                  f"| {_fmt(m('rss_start_mb'))} | {_fmt(m('rss_open_mb'))} | {_fmt(m('rss_closed_mb'))} "
                  f"| {_fmt(m('rss_closed_later_mb'))} | {_fmt(m('mb_per_idle_session'), 2)} "
                  f"| {_fmt(m('after_close_vs_start_pct'))} % |"]

    if "events" in only:
        from bench.event_flood import table

        rs = _run("bench.event_flood", ["--runs", str(args.repeat), "--duration", "10" if args.quick else "20"], out)
        lines += ["", "A learner's answers, alone and beside one client sending the costliest messages it can build",
                  "", table(rs)]

    lines.append("\nLoad average at the end: " + " / ".join(f"{x:.1f}" for x in psutil.getloadavg()))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
