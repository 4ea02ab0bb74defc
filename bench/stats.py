"""Small statistics shared by the benchmarks."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path


def pct(values, p: float) -> float | None:
    """The p-th percentile (nearest rank) of ``values``, or None if there are none."""
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, max(0, math.ceil(p / 100 * len(v)) - 1))]


def summary_ms(seconds) -> dict:
    """p50/p95/max in milliseconds of durations given in seconds."""
    ms = [s * 1e3 for s in seconds]
    return {"n": len(ms), "p50": pct(ms, 50), "p95": pct(ms, 95), "max": max(ms) if ms else None}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def publish(result: dict, load_start: tuple[float, ...], path: Path) -> None:
    """Print ``result`` as JSON with the load averages at the start (``load_start``) and now; write it to ``path``."""
    result = {**result, "load_average_at_start": [round(x, 2) for x in load_start],
              "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    text = json.dumps(result, indent=2)
    print(text)
    path.write_text(text)


def append_jsonl(path, result: dict) -> None:
    """Append ``result`` as one line of JSON to the file at ``path`` (made, with its folder, if missing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(result) + "\n")
