"""Time one training run of ``core.training.train``: 500 steps, each preset and an 8-token sentence, 1 to 4 heads.

    python -m bench.training                 # seeds 0-9 for every case, 500 steps
    python -m bench.training --seeds 30 --steps 500 --json bench/out/results.jsonl

The target is well under 50 ms a run for n <= 8 tokens. Each run is timed alone (wall clock and the
process's CPU time, after one untimed run of the case), and the table gives the median and the largest
over the seeds. The last line times the largest run ``train`` accepts (2,000 steps, 8 tokens, 4 heads,
on the outputs), what one request can cost the server at most. The load average is printed beside the
figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench.stats import append_jsonl, median
from core.training import MAX_HEADS, MAX_STEPS, TRAINING_PRESETS, outputs_task, train, weights_task

TARGET_MS = 50.0


def _cases():
    # eight positions 22.5° apart on a half circle, the longest sentence a task may have
    angles = np.radians(22.5 * np.arange(8))
    X = np.column_stack([np.cos(angles), np.sin(angles)])
    cases = dict(TRAINING_PRESETS)
    cases["8 tokens, previous token"] = weights_task(np.eye(8)[[0, 0, 1, 2, 3, 4, 5, 6]], X)
    cases["8 tokens, outputs 1 to 8"] = outputs_task(np.arange(1.0, 9.0), X)
    return cases


def _time(name: str, task, heads: int, steps: int, seeds: int) -> dict:
    train(task, seed=0, steps=steps, heads=heads)  # untimed: first-call costs
    wall, cpu = [], []
    for seed in range(seeds):
        w0, c0 = time.perf_counter(), time.process_time()
        train(task, seed=seed, steps=steps, heads=heads)
        wall.append((time.perf_counter() - w0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return {"bench": "training", "case": name, "n": len(task.tokens), "heads": heads, "steps": steps,
            "seeds": seeds, "wall_ms_median": median(wall), "wall_ms_max": max(wall), "cpu_ms_median": median(cpu),
            "target_ms": TARGET_MS}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="runs per case, seeds 0 to N-1 (default 10)")
    ap.add_argument("--steps", type=int, default=500, help="steps per run (default 500)")
    ap.add_argument("--heads", type=int, nargs="+", default=[1, 2, 4], help="head counts (default 1 2 4)")
    ap.add_argument("--json", help="append each row as a line of JSON to this file")
    args = ap.parse_args(argv)

    load_start = os.getloadavg()
    cases = _cases()
    rows = [_time(name, task, heads, args.steps, args.seeds) for name, task in cases.items() for heads in args.heads]
    largest = _time("largest allowed run", cases["8 tokens, outputs 1 to 8"], MAX_HEADS, MAX_STEPS, args.seeds)
    load_end = os.getloadavg()

    print(f"core.training.train, {args.steps} steps, seeds 0-{args.seeds - 1}; load average "
          f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end, {os.cpu_count()} cores")
    print(f"| case | n | heads | median ms | max ms | CPU median ms | median / {TARGET_MS:g} ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['case']} | {r['n']} | {r['heads']} | {r['wall_ms_median']:.1f} | {r['wall_ms_max']:.1f} | "
              f"{r['cpu_ms_median']:.1f} | {r['wall_ms_median'] / TARGET_MS:.2f} |")
    worst = max(rows, key=lambda r: r["wall_ms_median"])
    print(f"slowest median: {worst['case']}, {worst['heads']} head(s), {worst['wall_ms_median']:.1f} ms "
          f"({'within' if worst['wall_ms_median'] < TARGET_MS else 'over'} the {TARGET_MS:g} ms target)")
    print(f"largest allowed run ({MAX_STEPS} steps, 8 tokens, {MAX_HEADS} heads, outputs): median "
          f"{largest['wall_ms_median']:.0f} ms, max {largest['wall_ms_max']:.0f} ms, CPU median "
          f"{largest['cpu_ms_median']:.0f} ms")
    rows.append(largest)
    if args.json:
        for r in rows:
            append_jsonl(args.json, {**r, "load_average_at_start": [round(x, 2) for x in load_start],
                                     "load_average_at_end": [round(x, 2) for x in load_end]})
    return rows


if __name__ == "__main__":
    main()
