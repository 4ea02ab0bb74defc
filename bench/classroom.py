"""A classroom on one server: N learners drag the query at the same time.

Each simulated learner is a real Bokeh session driven over Bokeh's own protocol
(:mod:`bench.protocol_client`): it sends the query plot's ``pan`` events at ``--rate`` moves per second
along its own circle for ``--duration`` seconds, then one final move, and records every readout the
server sends back. Per update, the latency is the time from sending a position to receiving the readout
that shows it. Positions the server skipped because a newer one had arrived (coalesced) are counted, and
a learner whose final position never shows is an update lost.

    python -m bench.classroom --sessions 1 10 30 60 100 --duration 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import time
from pathlib import Path

import psutil

from bench.protocol_client import Learner
from bench.server import CHECK_UNUSED_MS, ROOT, UNUSED_SESSION_LIFETIME_MS, Sampler, serve, ws_url
from bench.stats import pct, summary_ms

FINAL_WAIT_S = 15.0


def circle(learner: int, k: int, total: int) -> tuple[float, float]:
    """Move k of ``total`` for this learner: a slowly widening circle, so no position repeats."""
    phase = 2 * math.pi * (learner % 17) / 17
    angle = phase + 2 * math.pi * k / 90
    r = 0.45 + 0.4 * k / max(total, 1)
    return 0.5 + r * math.cos(angle), 0.5 + r * math.sin(angle)


async def drag(learner: Learner, idx: int, rate: float, duration: float, lag: list[float]) -> None:
    total = int(rate * duration)
    await asyncio.sleep(random.random() / rate)  # learners do not move in lockstep
    await learner.pointer("panstart", *circle(idx, 0, total))
    t0 = time.perf_counter()
    for k in range(1, total + 1):
        due = t0 + k / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        lag.append(max(0.0, time.perf_counter() - due))  # how late this client sent the move
        await learner.pointer("pan", *circle(idx, k, total))
    # the final position: where the hand stops
    learner.final = (2.0 + (idx % 400) / 1000, -1.0)
    await learner.pointer("pan", *learner.final)


async def classroom(url: str, n: int, rate: float, duration: float, server: psutil.Process) -> dict:
    learners = [Learner(ws_url(url)) for _ in range(n)]
    gate = asyncio.Semaphore(4)

    async def connect(learner):
        async with gate:
            await learner.connect()

    t = time.perf_counter()
    await asyncio.gather(*(connect(learner) for learner in learners))
    connect_s = time.perf_counter() - t
    listeners = [asyncio.create_task(learner.listen()) for learner in learners]
    await asyncio.sleep(1.0)
    lag: list[float] = []
    me = psutil.Process()
    me_cpu0 = sum(me.cpu_times()[:2])
    with Sampler(server) as sampler:
        await asyncio.gather(*(drag(learner, i, rate, duration, lag) for i, learner in enumerate(learners)))
        # wait for every final position, a bounded time
        deadline = time.perf_counter() + FINAL_WAIT_S
        while time.perf_counter() < deadline:
            if all(_final_shown(learner) for learner in learners):
                break
            await asyncio.sleep(0.05)
    client_cpu = (sum(me.cpu_times()[:2]) - me_cpu0) / sampler.elapsed
    for learner in learners:
        learner.close()
    await asyncio.gather(*listeners, return_exceptions=True)

    latencies, coalesced, sent_total, shown_total = [], 0, 0, 0
    for learner in learners:
        shown_keys = {key for key, _ in learner.shown}
        moves = [k for k in learner.order[1:]]  # after panstart
        sent_total += len(moves)
        coalesced += sum(1 for k in moves if k not in shown_keys)
        shown_total += len(learner.shown)
        latencies += [t - learner.sent[key] for key, t in learner.shown if key in learner.sent]
    lost = sum(1 for learner in learners if not _final_shown(learner))
    return {
        "sessions": n, "rate_hz": rate, "duration_s": duration, "connect_s": round(connect_s, 1),
        "moves_sent": sent_total, "updates_received": shown_total,
        "coalesced": coalesced, "final_positions_lost": lost,
        "latency_ms": summary_ms(latencies),
        "server_cpu_cores_mean": sum(sampler.cpu) / max(len(sampler.cpu), 1),
        "server_cpu_ms_per_update": 1e3 * sampler.cpu_seconds / max(shown_total, 1),
        "server_rss_mb_max": max(sampler.rss, default=0) / 2**20,
        "client_cpu_cores": client_cpu,
        "client_send_lag_ms_p95": (pct(lag, 95) or 0) * 1e3,
        "load_avg": psutil.getloadavg(),
    }


def _final_shown(learner: Learner) -> bool:
    final = getattr(learner, "final", None)
    if final is None:
        return False
    key = (f"{final[0]:.3f}", f"{final[1]:.3f}")
    return any(k == key for k, _ in learner.shown[-5:])


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 30, 60, 100])
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of dragging per run (default 30)")
    ap.add_argument("--rate", type=float, default=30.0, help="moves per second per learner (default 30)")
    ap.add_argument("--app", default=str(ROOT / "app.py"))
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    results = []
    for n in args.sessions:
        with serve(args.app) as (url, proc):
            r = asyncio.run(classroom(url, n, args.rate, args.duration, proc))
        r["server_settings"] = {"unused_session_lifetime_ms": UNUSED_SESSION_LIFETIME_MS,
                                "check_unused_sessions_ms": CHECK_UNUSED_MS}
        results.append(r)
        print(json.dumps(r), flush=True)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            with open(args.json, "a") as f:
                f.write(json.dumps({"bench": "classroom", **r}) + "\n")
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
