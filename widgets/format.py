"""How numbers and tokens are written on the page (one place, so every view agrees)."""

from __future__ import annotations

import math

#: Okabe & Ito (2008) colour-blind-safe palette, ordered for contrast on white.
TOKEN_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")

DECIMALS = 4


def fmt(x: float, decimals: int = DECIMALS) -> str:
    """Fixed-point text of ``x``; never prints "-0.0000"."""
    s = f"{x:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def fmt_vec(v, decimals: int = 3) -> str:
    return "(" + ", ".join(fmt(c, decimals) for c in v) + ")"


def sqrt_text(d_k: int) -> str:
    r = math.isqrt(d_k)
    return str(r) if r * r == d_k else f"√{d_k}"


def token_color(i: int) -> str:
    return TOKEN_COLORS[i % len(TOKEN_COLORS)]


def fmt_short(x: float, decimals: int = DECIMALS) -> str:
    """``x`` with at most ``decimals`` decimals and no trailing zeros: 1, 0.5, 0.7071."""
    s = fmt(x, decimals)
    return s.rstrip("0").rstrip(".") if "." in s else s


def fmt_entry(x, decimals: int = DECIMALS) -> str:
    """A score, a weight or a value: "masked" for the -inf of a masked score, a vector as (a, b)."""
    if hasattr(x, "__len__") and len(x) != 1:
        return fmt_vec(x, decimals)
    x = float(x[0] if hasattr(x, "__len__") else x)
    return "masked" if x == -math.inf else fmt(x, decimals)
