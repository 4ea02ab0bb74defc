"""``python -m core``: every step of one query's attention, as the app's readout writes it.

Default: the course's Section 6 example, "I love NLP", query of "love" (q = (0, 1)).
Bad input exits with status 2 and one line naming the option at fault.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from core.attention import scaled_dot_product_attention
from core.examples import I_LOVE_NLP
from core.report import query_report, query_steps

PROG = "python -m core"

EPILOG = """\
Numbers are separated by commas, rows by semicolons. A value starting with "-" needs "=":
  python -m core --query=-1,0.5
  python -m core --keys "1,0;0,1;1,1" --values "10,0;0,10;5,5" --row I
  python -m core --causal --row love --json"""


class BadInput(Exception):
    """Input the command refuses; its text starts with the option at fault."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block: the option is in the message
        hint = ' (a value starting with "-" needs "=", e.g. --query=-1,0)' if "expected one argument" in message else ""
        raise BadInput(message.removeprefix("argument ") + hint)


def _numbers(option: str, text: str, what: str) -> list[float]:
    parts = [p.strip() for p in text.split(",")]
    out = []
    for p in parts:
        try:
            x = float(p)
        except ValueError:
            raise BadInput(f"{option}: {what} has {p!r}, not a number") from None
        if not math.isfinite(x):
            raise BadInput(f"{option}: {what} has {p!r}, not a finite number")
        out.append(x)
    return out


def _rows(option: str, text: str) -> list[list[float]]:
    rows = [_numbers(option, r, f"row {i}") for i, r in enumerate(text.split(";"), start=1)]
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise BadInput(f"{option}: every row needs as many numbers as the first ({len(rows[0])})")
    return rows


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Every step of one query's attention, as the app's readout writes it.",
                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--query", metavar="Q", help="the query q, e.g. 0,1 (default: the key of --row's token)")
    p.add_argument("--keys", metavar="K", help='one key per token, e.g. "1,0;0,1;1,1" (the default)')
    p.add_argument("--values", metavar="V", help='one value per token: numbers "2;6;4" (the default) '
                                                  'or vectors "10,0;0,10;5,5"')
    p.add_argument("--tokens", metavar="NAMES", help='token names, e.g. "I;love;NLP" (the default for 3 keys)')
    p.add_argument("--row", metavar="TOKEN", help="whose query: a token's name or its position from 1 "
                                                   '(default "love", else the second token)')
    p.add_argument("--causal", action="store_true", help="causal mask: the query sees only its own and earlier tokens")
    scaling = p.add_mutually_exclusive_group()
    scaling.add_argument("--no-scale", action="store_true", help="do not divide the dot products by √d_k")
    scaling.add_argument("--temperature", metavar="T", type=float,
                         help="divide the dot products by T instead of √d_k (T > 0)")
    p.add_argument("--json", action="store_true", help="every intermediate as JSON, in full float64 precision")
    return p


def _inputs(args) -> dict:
    keys = _rows("--keys", args.keys) if args.keys is not None else I_LOVE_NLP.keys.tolist()
    n, d_k = len(keys), len(keys[0])

    if args.values is not None:
        values = _rows("--values", args.values)
        values = [v[0] for v in values] if "," not in args.values else values
    elif n == len(I_LOVE_NLP.values):
        values = I_LOVE_NLP.values.tolist()
    else:
        raise BadInput(f"--values: give one value per key ({n} keys)")
    if len(values) != n:
        raise BadInput(f"--values: {len(values)} values for {n} keys")

    if args.tokens is not None:
        tokens = [t.strip() for t in args.tokens.split(";")]
        if len(tokens) != n:
            raise BadInput(f"--tokens: {len(tokens)} names for {n} keys")
        if not all(tokens):
            raise BadInput("--tokens: a token needs a name")
        if len(set(tokens)) != n:
            raise BadInput(f"--tokens: {next(t for t in tokens if tokens.count(t) > 1)!r} appears twice")
    else:
        tokens = list(I_LOVE_NLP.tokens) if n == len(I_LOVE_NLP.tokens) else [f"t{i}" for i in range(1, n + 1)]

    if args.row is None:
        row = tokens.index("love") if "love" in tokens else min(1, n - 1)
    elif args.row in tokens:
        row = tokens.index(args.row)
    elif args.row.strip().isdigit() and 1 <= int(args.row) <= n:
        row = int(args.row) - 1
    else:
        raise BadInput(f"--row: {args.row!r} is neither a token ({', '.join(tokens)}) nor a position 1 to {n}")

    query = _numbers("--query", args.query, "q") if args.query is not None else list(keys[row])
    if len(query) != d_k:
        raise BadInput(f"--query: {len(query)} numbers, but the keys have d_k = {d_k}")
    return dict(keys=keys, values=values, tokens=tokens, row=row, query=query)


def main(argv=None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``); returns the exit status: 0, or 2 for bad input."""
    try:
        args = _parser().parse_args(argv)
        x = _inputs(args)
        # Every token's query is its key (self-attention, as in the app), the chosen row's replaced by q.
        Q = np.array(x["keys"], dtype=np.float64)
        Q[x["row"]] = x["query"]
        try:
            r = scaled_dot_product_attention(Q, x["keys"], x["values"], is_causal=args.causal,
                                             scale=1.0 if args.no_scale else None, temperature=args.temperature)
        except ValueError as exc:
            msg = str(exc)
            # the options' own checks above leave the core only these two to refuse
            if msg.startswith("temperature"):
                raise BadInput("--temperature: " + msg.removeprefix("temperature").lstrip(" :")) from None
            raise BadInput("--query, --keys: " + msg.removeprefix("query and key: ")) from None
    except BadInput as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    common = dict(result=r, row=x["row"], scale=not args.no_scale, temperature=args.temperature)
    if args.json:
        report = query_report(x["tokens"], x["query"], x["keys"], x["values"], **common)
        print(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print("\n".join(query_steps(x["tokens"], x["query"], x["values"], **common)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
