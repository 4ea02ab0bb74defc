"""Write ``tests/data/golden_attention.json``: the cases the page's scripts and the server are both checked on.

The page mirrors parts of the server in JavaScript (``link/attention.js``, ``link/shared.js``, ``link/drag.js``,
``widgets/labels.js``); each mirror and its Python original are tested against the same cases, stored here, by
pytest (``tests/test_golden.py``) and by ``node --test tests/js/``. The expected values come from ``core/`` (the
formula, ``core.report.fmt``) and from the server's own rules (the grab, the clamp, the geometry, the labels'
sides). To regenerate, from the repository's root::

    .venv/bin/python -m tests.golden_reference

JSON has no infinity: a masked score (-inf) is stored as null.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("data") / "golden_attention.json"


def _masked(row) -> list:
    return [None if x == -math.inf else float(x) for x in row]


def attention_cases() -> list[dict]:
    """One query each: the course's "I love NLP" (q_love, output 4.4067), its vector values, a causal row, the
    unscaled switch, scores large enough to overflow exp without the shift, and random shapes."""
    from core import I_LOVE_NLP, MODULE_2, scaled_dot_product_attention

    rng = np.random.default_rng(6)
    raw = [
        (I_LOVE_NLP.keys[1], I_LOVE_NLP.keys, I_LOVE_NLP.values, [True, True, True], True),
        (I_LOVE_NLP.keys[1], I_LOVE_NLP.keys, MODULE_2.values, [True, True, True], True),
        (I_LOVE_NLP.keys[1], I_LOVE_NLP.keys, I_LOVE_NLP.values, [True, True, False], True),
        ((0.5, 2.0), I_LOVE_NLP.keys, I_LOVE_NLP.values, [True, True, True], False),
        ((900.0, -3.0), I_LOVE_NLP.keys, I_LOVE_NLP.values, [True, False, True], True),
    ]
    for _ in range(15):
        n, d_k, d_v = (int(x) for x in rng.integers(1, 5, size=3))
        allowed = rng.random(n) < 0.7
        allowed[rng.integers(0, n)] = True
        raw.append((rng.normal(size=d_k) * 2, rng.normal(size=(n, d_k)) * 2, rng.normal(size=(n, d_v)),
                    allowed.tolist(), bool(rng.integers(0, 2))))
    cases = []
    for q, K, V, allowed, scale in raw:
        q, K, V = np.asarray(q, float), np.asarray(K, float), np.asarray(V, float)
        rows = V[:, None] if V.ndim == 1 else V
        r = scaled_dot_product_attention(q[None], K, rows, np.asarray(allowed)[None], scale=None if scale else 1.0)
        cases.append(dict(q=q.tolist(), keys=K.tolist(), values=rows.tolist(), allowed=list(allowed), scale=scale,
                          dots=r.dots[0].tolist(), scores=_masked(r.scores[0]), weights=r.weights[0].tolist(),
                          output=r.output[0].tolist()))
    return cases


def fmt_cases() -> list[list]:
    """[x, decimals, text] as ``core.report.fmt`` writes them: exact ties (to even, as Python), negative zero,
    the infinities, and the numbers of the attention cases."""
    from core.report import fmt

    xs = [0.125, 0.375, -0.125, 2.5, 3.5, 0.5, -0.00001, -0.0, 4.40670, 0.19775, 1e6, -123.456789, math.inf,
          -math.inf, 1 / 3, 2 / 3, 0.049999999999, 0.05, 0.15, 0.25]
    for case in attention_cases():
        xs += case["weights"] + case["output"]
    out = [[x, d, fmt(x, d)] for x in xs for d in (0, 1, 2, 3, 4)]
    return [[x if math.isfinite(x) else ("inf" if x > 0 else "-inf"), d, text] for x, d, text in out]


def grab_cases() -> list[dict]:
    """What a press at ``at`` picks up (link/drag.py's rule): the nearest key within ``radius`` unless q is at
    least as close (null: the query). Positions beyond the plane are clamped to it first (``clamped``)."""
    from link.drag import GRAB_RADIUS
    from widgets.query_plot import PLANE

    keys = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    out = []
    for query, at in [((0.0, 1.0), (1.05, 0.02)), ((0.0, 1.0), (0.0, 1.05)), ((0.0, 1.0), (1.0, 1.2)),
                      ((0.0, 1.0), (0.5, 0.5)), ((1.0, 1.0), (1.0, 1.05)), ((0.9, 0.0), (1.0, 0.0)),
                      ((0.0, 0.0), (1.0 + GRAB_RADIUS, 0.0)), ((0.0, 0.0), (9.0, -9.0))]:
        lo, hi = PLANE
        clamped = [min(max(c, lo), hi) for c in at]
        d = [math.hypot(k[0] - at[0], k[1] - at[1]) for k in keys]
        j = d.index(min(d))
        picked = j if d[j] <= GRAB_RADIUS and d[j] < math.hypot(query[0] - at[0], query[1] - at[1]) else None
        out.append(dict(keys=keys, query=list(query), at=list(at), radius=GRAB_RADIUS, picked=picked,
                        plane=list(PLANE), clamped=clamped))
    return out


def geometry_cases() -> dict:
    """The sizes the server draws a weight with and the page's preview draws again."""
    from widgets.matrix import INK_THRESHOLD
    from widgets.query_plot import MAX_LINE_WIDTH
    from widgets.weights import BAR_LABEL_GAP, VALUE_SIZE

    weights = [0.0, 0.1978, 0.4011, 0.5, 0.549999, 0.55, 0.5035, 1.0]
    lo, hi = VALUE_SIZE
    return dict(max_width=MAX_LINE_WIDTH, value_size=list(VALUE_SIZE), ink_threshold=INK_THRESHOLD,
                bar=dict(top=26, bottom=146, gap=BAR_LABEL_GAP),
                cases=[dict(weight=w, line_width=1 + (MAX_LINE_WIDTH - 1) * w, value_size=lo + (hi - lo) * w,
                            ink="white" if w < INK_THRESHOLD else "black", bar_y=146 - w * (146 - 26))
                       for w in weights])


def label_cases() -> list[dict]:
    """The side of each key's label in the query plot (widgets/query_plot.py, label_sides) and the anchoring the
    page's label placement gives its first candidate for that side (screen y runs down)."""
    from widgets.query_plot import label_sides

    out = []
    for keys in ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[0.0, 0.0], [0.1, 0.0], [2.0, 2.0]],
                 [[-1.0, 2.0], [2.0, -1.0]]):
        sides = label_sides(np.array(keys), np.array(keys)).tolist()
        out.append(dict(keys=keys, sides=sides, align=["left" if sx > 0 else "right" for sx, _ in sides],
                        baseline=["bottom" if sy > 0 else "top" for _, sy in sides]))
    return out


def golden() -> dict:
    return dict(attention=attention_cases(), fmt=fmt_cases(), grab=grab_cases(), geometry=geometry_cases(),
                labels=label_cases())


if __name__ == "__main__":
    OUT.write_text(json.dumps(golden(), indent=1, allow_nan=False) + "\n")
    print(f"wrote {OUT}")
