"""One client floods the server with pointer events: how much slower do the other learners get?

Two phases on one server, each ``--duration`` seconds: ``--sessions`` learners drag at ``--rate`` moves
per second (as in :mod:`bench.classroom`), first alone, then while one more session writes drag positions
as fast as its websocket takes them, never waiting for an answer (from its own process). Reported per phase: the
learners' update latency p50/p95/max, final positions lost, server CPU; and how many events the flooder sent.

    python -m bench.flood --sessions 5 --duration 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import psutil

from bench.classroom import FINAL_WAIT_S, _final_shown, drag
from bench.stats import summary_ms
from testing.protocol_client import Learner
from testing.server import Sampler, serve, ws_url


async def flood(url: str) -> None:
    """Drag positions back to back until SIGTERM, reading nothing back (a hostile client need not), without the
    page's one-at-a-time rule."""
    learner = Learner(url, one_at_a_time=False)
    await learner.connect()
    print("connected", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    k = 0
    await learner.pointer("panstart", 0.0, 0.0)
    while not stop.is_set():
        k += 1
        await learner.pointer("pan", (k % 400) / 200 - 1.0, ((k * 7) % 400) / 200 - 1.0)
        if k % 50 == 0:
            await asyncio.sleep(0)  # let the signal handler run
        learner.sent.clear()
        learner.order.clear()
    print("sent", k, flush=True)


async def phase(url: str, n: int, rate: float, duration: float, server: psutil.Process, flooding: bool) -> dict:
    learners = [Learner(ws_url(url)) for _ in range(n)]
    for learner in learners:
        await learner.connect()
    listeners = [asyncio.create_task(learner.listen()) for learner in learners]
    flooder = None
    if flooding:
        # its own process: sharing this one's event loop would slow the learners' clients, not the server
        flooder = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.flood", "--_flooder", ws_url(url), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL)  # its unanswered writes are cancelled noisily at the end
        await flooder.stdout.readline()  # "connected"
        await asyncio.sleep(2.0)  # the flood is under way before the learners start
    lag: list[float] = []
    with Sampler(server) as sampler:
        await asyncio.gather(*(drag(learner, i, rate, duration, lag) for i, learner in enumerate(learners)))
        deadline = time.perf_counter() + FINAL_WAIT_S
        while time.perf_counter() < deadline and not all(_final_shown(lr) for lr in learners):
            await asyncio.sleep(0.05)
    sent = 0
    if flooding:
        flooder.terminate()  # SIGTERM: the flooder prints how many events it sent
        sent = int((await flooder.stdout.read()).split()[-1])
        await flooder.wait()
    for learner in learners:
        learner.close()
    await asyncio.gather(*listeners, return_exceptions=True)
    latencies = [t - lr.sent[key] for lr in learners for key, t in lr.shown if key in lr.sent]
    return {
        "flooding": flooding, "sessions": n, "rate_hz": rate, "duration_s": duration,
        "latency_ms": summary_ms(latencies),
        "final_positions_lost": sum(1 for lr in learners if not _final_shown(lr)),
        "flood_events_sent": sent,
        "server_cpu_cores_mean": sum(sampler.cpu) / max(len(sampler.cpu), 1),
        "load_avg": psutil.getloadavg(),
    }


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=5, help="learners dragging beside the flood (default 5)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per phase (default 20)")
    ap.add_argument("--rate", type=float, default=30.0, help="learners' moves per second (default 30)")
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    ap.add_argument("--_flooder", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._flooder:
        asyncio.run(flood(args._flooder))
        return []
    results = []
    for flooding in (False, True):
        with serve() as (url, proc):
            r = asyncio.run(phase(url, args.sessions, args.rate, args.duration, proc, flooding))
        results.append(r)
        print(json.dumps(r), flush=True)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            with open(args.json, "a") as f:
                f.write(json.dumps({"bench": "flood", **r}) + "\n")
    return results


if __name__ == "__main__":
    main()
