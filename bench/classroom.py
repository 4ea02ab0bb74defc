"""A classroom on one school server: N learners open the page together, then drag, let go and press keys.

Each simulated learner is a real session driven over Bokeh's own protocol, speaking what the page speaks
(:class:`testing.protocol_client.Learner`: drag positions one at a time through the page's drag channel, keys
through the browser bridge). All N connect at once. Then, for ``--duration`` seconds, each repeats: drag q
for 1 to 3 s at ``--rate`` moves per second along its own path, let go, press a row key at once ("drag, let
go, key"), rest a second, press another row key ("resting key"), rest again.

Reported, per run: the time until every learner is connected; a row key to its numbers back (the readout
naming that row), resting and right after the same learner's drag, p50 and p95; a release to the server's
numbers for the drag's last position (p95), and the finals not confirmed within ``FINAL_WAIT_S``; positions
sent per pointer move; server CPU per update (per readout the learners received) and per learner-second.

    python -m bench.classroom --sessions 1 10 30 60 100 --duration 30
    python -m bench.classroom --sessions 60 100 --processes 2      # two app processes behind deploy/nginx.conf
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import psutil

from bench.stats import summary_ms
from testing.protocol_client import Learner
from testing.server import CHECK_UNUSED_MS, UNUSED_SESSION_LIFETIME_MS, serve, ws_url

#: How long a release or a key may take to come back before it counts as lost.
FINAL_WAIT_S = 5.0
TOKENS = ("I", "love", "NLP")
KEYS = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))  # the keys of the page's example, k_I, k_love, k_NLP


def path_point(learner: int, k: int) -> tuple[float, float]:
    """Move k of a learner's drags: a circle of its own, so no two learners or positions repeat."""
    phase = 2 * math.pi * (learner % 17) / 17
    angle = phase + 2 * math.pi * k / 90
    r = 0.45 + 0.3 * ((k // 90) % 3) / 3
    return round(0.5 + r * math.cos(angle), 6), round(0.5 + r * math.sin(angle), 6)


async def wait_for(pred, timeout: float) -> float | None:
    """Poll ``pred()`` until it returns a time; that time, or None after ``timeout`` seconds."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        t = pred()
        if t is not None:
            return t
        await asyncio.sleep(0.005)
    return None


def readout_text(v: float) -> str:
    """A coordinate as the readout writes it: three decimals, and never "-0.000" (a drag along the x axis passes
    y = -0.0004, which the page shows as 0.000)."""
    text = f"{v:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def line_after(learner: Learner, start: int, prefix: str):
    """When the readout first showed a line starting with ``prefix`` among those after index ``start``."""
    def pred():
        return next((t for line, t in learner.lines[start:] if line.startswith(prefix)), None)
    return pred


def release_answered(learner: Learner, seq: int):
    """When the server answered position ``seq`` (or a later one)."""
    def pred():
        return next((t for s, t in learner.answered if s >= seq), None)
    return pred


async def lesson(learner: Learner, idx: int, rate: float, duration: float, out: dict) -> None:
    rng = random.Random(idx)
    await asyncio.sleep(rng.random())  # learners do not start in lockstep
    end = time.perf_counter() + duration
    k = 0
    row = rng.randrange(3)
    q = KEYS[1]  # the page opens on the query of "love", q = k_love
    while time.perf_counter() < end:
        # press on q, which sits on its row's key, so the press grabs q (q wins ties); a press elsewhere near a
        # key would drag that key instead, as on the page
        seen_shown = len(learner.shown)
        await learner.pointer("panstart", *q)
        x, y = q  # a press let go without moving is a drag to where it began
        t0 = time.perf_counter()
        moves = int(rate * rng.uniform(1.0, 3.0))
        for m in range(1, moves + 1):
            due = t0 + m / rate
            if due > time.perf_counter():
                await asyncio.sleep(due - time.perf_counter())
            k += 1
            x, y = path_point(idx, k)
            await learner.pointer("pan", x, y)
            out["moves"] += 1
        # let go, and press a row key at once
        seen_lines = len(learner.lines)
        released = time.perf_counter()
        await learner.pointer("panend", x, y)
        row = (row + 1) % 3
        await learner.key(str(row + 1))
        pressed = time.perf_counter()
        # the release is final once the server has answered it and its readout has shown that position (during
        # the drag, if the last move had already been taken: the release then changes no text)
        final = await wait_for(release_answered(learner, learner.release_seq), FINAL_WAIT_S)
        if final is not None and (readout_text(x), readout_text(y)) not in (p for p, _ in learner.shown[seen_shown:]):
            final = None
        answered = await wait_for(line_after(learner, seen_lines, f'Query of "{TOKENS[row]}"'), FINAL_WAIT_S)
        if final is None:
            out["lost_finals"] += 1
        else:
            out["release_final"].append(final - released)
        if answered is None:
            out["lost_keys"] += 1
        else:
            out["key_after_drag"].append(answered - pressed)
        # rest, then another row key on the resting page
        await asyncio.sleep(1.0)
        row = (row + 1) % 3
        seen_lines = len(learner.lines)
        pressed = time.perf_counter()
        await learner.key(str(row + 1))
        answered = await wait_for(line_after(learner, seen_lines, f'Query of "{TOKENS[row]}"'), FINAL_WAIT_S)
        q = KEYS[row]  # choosing a row puts q on that row's key
        if answered is None:
            out["lost_keys"] += 1
        else:
            out["key_resting"].append(answered - pressed)
        await asyncio.sleep(1.0)


class Processes:
    """CPU time and resident memory of the server's processes, sampled around a run."""

    def __init__(self, procs: list[psutil.Process]):
        self.procs = procs

    def cpu(self) -> float:
        return sum(sum(p.cpu_times()[:2]) for p in self.procs)

    def rss(self) -> float:
        return sum(p.memory_info().rss for p in self.procs) / 2**20


async def classroom(url: str, n: int, rate: float, duration: float, server: Processes) -> dict:
    learners = [Learner(ws_url(url)) for _ in range(n)]
    cpu0 = server.cpu()
    t = time.perf_counter()
    await asyncio.gather(*(learner.connect() for learner in learners))  # the whole class opens the link at once
    connect_s = time.perf_counter() - t
    connect_cpu = server.cpu() - cpu0
    listeners = [asyncio.create_task(learner.listen()) for learner in learners]
    await asyncio.sleep(1.0)
    out = dict(moves=0, lost_finals=0, lost_keys=0, release_final=[], key_after_drag=[], key_resting=[])
    received0 = sum(len(learner.lines) for learner in learners)
    me = psutil.Process()
    cpu0, t0, client0 = server.cpu(), time.perf_counter(), sum(me.cpu_times()[:2])
    await asyncio.gather(*(lesson(learner, i, rate, duration, out) for i, learner in enumerate(learners)))
    elapsed, cpu = time.perf_counter() - t0, server.cpu() - cpu0
    client_cpu = sum(me.cpu_times()[:2]) - client0
    updates = sum(len(learner.lines) for learner in learners) - received0
    sent = sum(learner.positions_sent for learner in learners)
    rss = server.rss()
    for learner in learners:
        learner.close()
    await asyncio.gather(*listeners, return_exceptions=True)
    return {
        "sessions": n, "rate_hz": rate, "duration_s": duration,
        "connect_s": round(connect_s, 2), "server_cpu_ms_per_page": round(1e3 * connect_cpu / max(n, 1), 1),
        "key_resting_ms": summary_ms(out["key_resting"]), "key_after_drag_ms": summary_ms(out["key_after_drag"]),
        "release_final_ms": summary_ms(out["release_final"]),
        "release_final_within_1s": sum(1 for x in out["release_final"] if x <= 1.0),
        "releases": len(out["release_final"]) + out["lost_finals"], "lost_finals": out["lost_finals"],
        "lost_keys": out["lost_keys"], "pointer_moves": out["moves"], "positions_sent": sent,
        "positions_per_move": round(sent / max(out["moves"], 1), 3),
        "updates_received": updates,
        "server_cpu_ms_per_update": round(1e3 * cpu / max(updates, 1), 2),
        "server_cpu_ms_per_learner_second": round(1e3 * cpu / max(n * elapsed, 1e-9), 2),
        "server_cpu_cores_mean": round(cpu / elapsed, 2),
        # the simulated class's own process: near 1.0, the class, not the server, sets the pace
        "client_cpu_cores_mean": round(client_cpu / elapsed, 2),
        "server_rss_mb": round(rss, 0),
        "load_avg": psutil.getloadavg(),
    }


@contextmanager
def servers(processes: int):
    """One app process (``python app.py``), or ``processes`` of them behind ``deploy/nginx.conf``."""
    if processes == 1:
        with serve() as (url, proc):
            yield url, Processes([proc])
        return
    from testing.nginx import Stack

    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Path(tmp), processes=processes, env={
            "EXPLORER_UNUSED_SESSION_LIFETIME_MS": str(UNUSED_SESSION_LIFETIME_MS),
            "EXPLORER_CHECK_UNUSED_SESSIONS_MS": str(CHECK_UNUSED_MS), "EXPLORER_SESSION_TOKEN_EXPIRATION_S": "15"})
        try:
            yield stack.url + "app", Processes([psutil.Process(p.pid) for p in stack.procs[:processes]])
        finally:
            stack.close()


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 30, 60, 100])
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of the lesson (default 30)")
    ap.add_argument("--rate", type=float, default=30.0, help="moves per second while dragging (default 30)")
    ap.add_argument("--processes", type=int, default=1, help="app processes; more than 1: behind nginx")
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    results = []
    for n in args.sessions:
        with servers(args.processes) as (url, procs):
            r = asyncio.run(classroom(url, n, args.rate, args.duration, procs))
        r.update(processes=args.processes, server_settings={"unused_session_lifetime_ms": UNUSED_SESSION_LIFETIME_MS,
                                                            "check_unused_sessions_ms": CHECK_UNUSED_MS})
        results.append(r)
        print(json.dumps(r), flush=True)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            with open(args.json, "a") as f:
                f.write(json.dumps({"bench": "classroom", **r}) + "\n")
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
