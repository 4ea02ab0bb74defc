"""Server CPU per row key: one page presses 1, 2, 3, 1, … , each when the last one's readout has come back.

The app as it ships (``testing/server.py``), one learner over Bokeh's own protocol
(:class:`testing.protocol_client.Learner`: a key reaches the server as the browser bridge reports it, a Bokeh event
that Panel handles). The server process's CPU time (psutil, user + system) is read around ``--keys`` presses, after a
warm-up, ``--rounds`` times; the same with ``--code`` for another checkout, alternating, so that a noisy machine hits
both alike. A row key is a class's costliest repeated message after a drag position (``bench.channel_cost``).

    python -m bench.key_cost --keys 150 --rounds 3
    python -m bench.key_cost --keys 150 --rounds 3 --code /path/to/an/older/checkout
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys

from bench.classroom import TOKENS, line_after, wait_for
from bench.stats import append_jsonl
from testing.protocol_client import Learner
from testing.server import serve, ws_url

#: How long a key's readout may take to come back before the run stops (seconds).
ANSWER_WAIT_S = 10.0


async def _press(learner: Learner, row: int) -> None:
    """Press row key ``row`` (1-based) and wait for the readout of that row's query."""
    seen = len(learner.lines)
    await learner.key(str(row))
    if await wait_for(line_after(learner, seen, f'Query of "{TOKENS[row - 1]}"'), ANSWER_WAIT_S) is None:
        raise TimeoutError(f"row key {row} got no readout within {ANSWER_WAIT_S} s")


async def _rounds(url: str, proc, keys: int, rounds: int) -> list[float]:
    """Milliseconds of server CPU per key, one number per round."""
    learner = Learner(ws_url(url))
    await learner.connect()
    listening = asyncio.create_task(learner.listen())
    for i in range(30):  # warm-up: the first showings fill caches
        await _press(learner, i % 3 + 1)
    per_key = []
    for _ in range(rounds):
        before = proc.cpu_times()
        for i in range(keys):
            await _press(learner, i % 3 + 1)
        after = proc.cpu_times()
        per_key.append(1e3 * ((after.user + after.system) - (before.user + before.system)) / keys)
    learner.close()
    await asyncio.gather(listening, return_exceptions=True)
    return per_key


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=150, help="keys a round (default 150)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--code", help="another checkout of the app, measured in turn with this one")
    ap.add_argument("--json", help="append the result to this JSON-lines file")
    args = ap.parse_args(argv)
    apps = {"this": None} if not args.code else {"this": None, "other": os.path.join(args.code, "app.py")}
    per_key: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(args.rounds):  # one round of each in turn
        for name, app in apps.items():
            with (serve() if app is None else serve(app)) as (url, proc):
                per_key[name] += asyncio.run(_rounds(url, proc, args.keys, 1))
    result = {f"{name}: ms per key": [round(x, 2) for x in values] for name, values in per_key.items()}
    result.update({f"{name}: median": round(statistics.median(values), 2) for name, values in per_key.items()},
                  keys=args.keys, rounds=args.rounds, load_average=round(os.getloadavg()[0], 1))
    print(json.dumps(result, indent=1))
    if args.json:
        append_jsonl(args.json, {"bench": "key_cost", **result})
    return result


if __name__ == "__main__":
    sys.exit(main() and 0)
