"""Write ``tests/data/golden_attention.json``: the cases the page's scripts and the server are both checked on.

The page mirrors rules of the server in JavaScript: the formula and the number format (``link/attention.js``,
``link/shared.js``), the readout's text, the grab and the geometry of a drag's preview (``link/drag.js``), the
Projections tab's self-attention and its line of outputs (``link/projections.js``), the Train tab's forward pass
(``link/train_mirror.js``), an arrow key's nudge and q in the address (``link/browser.js``), a poll card's browser id
(``widgets/poll.js``) and the labels' sides (``widgets/labels.js``). Each mirror is checked against cases the
server's own code writes here, by ``node --test tests/js/``; ``tests/test_golden.py`` checks the server's side and
that the file holds what its code writes now. So each rule is written once in Python and once in the page's
JavaScript, and nowhere else: the expected values come from ``core/`` and from the views and channels themselves,
and the constants the page is sent come from where the server keeps them. To regenerate, from the repository's
root::

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
    """What a press at ``at`` picks up, as the server decides it (``link.drag.grab``: null for the query), and
    where a position beyond the plane is clamped to (the server's own drag: ``clamped``)."""
    from link.drag import GRAB_RADIUS, DragChannel, grab
    from link.rules import PLANE
    from session.state import AttentionState
    from widgets.query_plot import QueryPlot
    from widgets.steps import Readout
    from widgets.weights import WeightBars

    keys = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    out = []
    for query, at in [((0.0, 1.0), (1.05, 0.02)), ((0.0, 1.0), (0.0, 1.05)), ((0.0, 1.0), (1.0, 1.2)),
                      ((0.0, 1.0), (0.5, 0.5)), ((1.0, 1.0), (1.0, 1.05)), ((0.9, 0.0), (1.0, 0.0)),
                      ((0.0, 0.0), (1.0 + GRAB_RADIUS, 0.0)), ((0.0, 0.0), (9.0, -9.0))]:
        state = AttentionState()
        state.move_query(*query)
        channel = DragChannel(QueryPlot(state=state), Readout(state=state), WeightBars(state=state), state=state)
        channel.receive(*at, seq=1, start=True, end=True)  # a tap moves q, clamped to the plane
        out.append(dict(keys=keys, query=list(query), at=list(at), radius=GRAB_RADIUS, picked=grab(keys, query, at),
                        plane=list(PLANE), clamped=list(state.query)))
    return out


def readout_cases() -> list[dict]:
    """The readout's text as the server writes it (``widgets.steps.Readout.text``) for states in every language,
    both presets, each row, the mask, the scaling and the step-through at each step, beside what the page's
    script reads for the same state: the drag's inputs row and q (``link.drag.DragChannel``'s ``inputs`` and
    ``confirmed``), as they reach the page."""
    from link.drag import DragChannel
    from session.i18n import LANGUAGES
    from session.state import AttentionState
    from widgets.query_plot import QueryPlot
    from widgets.steps import Readout
    from widgets.weights import WeightBars

    rng = np.random.default_rng(5)
    out = []

    def case(s: AttentionState) -> dict:
        channel = DragChannel(QueryPlot(state=s), Readout(state=s), WeightBars(state=s), state=s)
        confirmed = channel.confirmed.data
        return dict(lang=s.lang, inputs={k: list(v) for k, v in channel.inputs.data.items()},
                    q=[confirmed["x"][0], confirmed["y"][0]], text=Readout.text(s))

    for i in range(36):
        s = AttentionState(lang=list(LANGUAGES)[i % len(LANGUAGES)])
        if i % 2:
            s.preset = "Module 2: vector values"
        s.select_row(int(rng.integers(0, 3)))
        s.causal = bool(i % 3 == 0)
        s.scale = bool(i % 5)
        if i % 4 == 1:  # the step-through, at each step
            s.guided, s.step = True, int(rng.integers(1, 4))
        s.move_query(*(np.round(rng.uniform(-1.5, 2.5, size=2), int(rng.integers(1, 6)))))
        out.append(case(s))
    # a learner's own tokens, one of them Arabic, in a left-to-right page and in the right-to-left one
    for lang in ("en", "ar"):
        s = AttentionState(lang=lang)
        s.tokens = ["سلام", "love", "שלום"]
        s.select_row(0)
        s.move_query(-0.5, 1.25)
        out.append(case(s))
    return out


def number_cases() -> list[dict]:
    """Numbers and vectors as each language writes them (``session.i18n.Translator``'s ``num``, ``short``, ``vec``
    and ``entry``), beside the number format the page's scripts get (``Translator.number_format``)."""
    from session.i18n import LANGUAGES, translator

    xs = [0.0, -0.0, 0.5, -0.25, 4.406699, 0.125, 2.5, -1e-9, 1234.5678, -math.inf]
    out = []
    for lang in LANGUAGES:
        tr = translator(lang)
        out.append(dict(lang=lang, format=tr.number_format(), masked=tr._("masked"),
                        num=[[x, d, tr.num(x, d)] for x in xs if math.isfinite(x) for d in (2, 3, 4)],
                        short=[[x, d, tr.short(x, d)] for x in xs + [0.005, 1.0, -1.5, 0.1 + 0.2]
                               if math.isfinite(x) for d in (4, 6)],
                        vec=[[[x, -x / 3], d, tr.vec([x, -x / 3], d)] for x in xs if math.isfinite(x) for d in (2, 3)],
                        entry=[[x if math.isfinite(x) else "-inf", tr.entry(x)] for x in xs]))
    return out


def sqrt_cases() -> list[list]:
    """[d_k, text]: the divisor as the readout writes it (``core.report.sqrt_text``)."""
    from core.report import sqrt_text

    return [[d, sqrt_text(d)] for d in (1, 2, 3, 4, 8, 9, 16, 64, 100, 1000, 1024)]


def train_cases() -> dict:
    """Short training runs as the Train tab's page gets them (``link.train.run_payload``), and at some of their
    steps what the core computed: each head's weights, their average, the outputs, the loss, the loss with W_Q
    and W_K swapped, and Q = X W_Q, K = X W_K (``core.training``); with the scripts the page runs as one module
    (``link.train.TRAIN_SCRIPTS``) and the threshold of a cell's dark ink the view gives it."""
    from core.training import TRAINING_PRESETS, swapped_loss, train
    from link.rules import INK_THRESHOLD
    from link.train import TRAIN_SCRIPTS, run_payload

    def plain(a):
        return np.asarray(a).tolist() if isinstance(a, np.ndarray) else a

    runs = []
    for preset, kw in [("attend to the previous token", dict(heads=1)), ("retrieve the value", dict(heads=1)),
                       ("retrieve the value", dict(heads=2)),
                       ("everyone attends to NLP", dict(heads=2, seed=7, scale=False, temperature=0.5,
                                                        learning_rate=0.2))]:
        run = train(TRAINING_PRESETS[preset], seed=kw.pop("seed", 0), steps=30, **kw)
        X = run.task.X
        steps = []
        for k in (0, 1, 13, 30):
            outputs = run.outputs[k] if run.outputs[k].ndim == 2 else run.outputs[k][:, None]
            steps.append(dict(step=k, loss=float(run.loss[k]), swapped=swapped_loss(run, k),
                              weights=plain(run.weights[k]), heads=plain(run.head_weights[k]), outputs=plain(outputs),
                              Q=[plain(X @ W) for W in run.W_Q[k]], K=[plain(X @ W) for W in run.W_K[k]]))
        runs.append(dict(preset=preset, run={k: plain(v) for k, v in run_payload(run).items()}, steps=steps))
    return dict(scripts=[f"link/{name}" for name in TRAIN_SCRIPTS], ink_threshold=INK_THRESHOLD, runs=runs)


def projection_cases() -> list[dict]:
    """The Projections tab's preview: what its script reads for a state (the drag's inputs row,
    ``link.projections.ProjectionChannel``) and what the core computes for it (``core.projections.self_attention``
    at the state's temperature, ``core.scaling.saturation``), with the outputs' line the server writes
    (``link.projections.projection_status``), at rest and for a handle being dragged, in every language."""
    from core.projections import self_attention
    from core.scaling import saturation
    from link.projections import handle_names, projection_status
    from session.i18n import LANGUAGES
    from session.state import AttentionState
    from widgets.projections import ProjectionsView

    rng = np.random.default_rng(11)
    out = []
    for i in range(12):
        s = AttentionState(lang=list(LANGUAGES)[i % len(LANGUAGES)])
        view = ProjectionsView(state=s)
        if i:
            s.embeddings = np.round(rng.uniform(-1.5, 1.5, size=(3, 2)), 3)
            s.temperature = [0.25, 0.5, 1.0, 2.0][i % 4]
        view.channel.role = i % 3
        X, W = np.asarray(s.embeddings, float), np.asarray(s.projections[s.head], float)
        r = self_attention(X, W[0], W[1], W[2], temperature=s.temperature)
        sat = saturation(r.attention.weights)
        plane, index = ("x", i % 3) if i % 2 else ("w", i % 2)
        at = [round(float(c), 2) for c in rng.uniform(-1, 1, size=2)]
        a = r.attention
        out.append(dict(lang=s.lang, inputs={k: list(v) for k, v in view.channel.inputs.data.items()},
                        Q=r.projections.Q.tolist(), K=r.projections.K.tolist(), V=r.projections.V.tolist(),
                        dots=a.dots.tolist(), scores=a.scores.tolist(), weights=a.weights.tolist(),
                        output=a.output.tolist(), max_weight=sat.max_weight.tolist(), entropy=sat.entropy.tolist(),
                        status=projection_status(r, tr=s.tr), handle=handle_names(view.channel.role)[plane][index],
                        at=at, dragged=projection_status(r, handle_names(view.channel.role)[plane][index], at, s.tr)))
    return out


def browser_cases() -> dict:
    """The page bridge's rules (``link/browser.js``): where an arrow key moves q (``link.browser.handle_key``, which
    the page previews: q nudged, rounded to 9 decimals, clamped to the plane), and q as the address writes it
    (Python's ``repr``, ``session/address.py``); with the constants the server writes before the script
    (``link.browser.SCRIPT_CONSTANTS``)."""
    from link.browser import SCRIPT_CONSTANTS, handle_key
    from link.rules import PLANE
    from session.state import AttentionState

    nudges = []
    for q in [(0.0, 1.0), (0.1, 0.2), (2.45, -1.45), (2.5, 2.5), (-1.5, -1.5), (0.3, 0.7), (1.23456789, -0.98765)]:
        for key in ("ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"):
            for shift in (False, True):
                state = AttentionState()
                state.move_query(*q)
                handle_key(state, key, shift)
                nudges.append(dict(q=list(q), key=key, shift=shift, moved=list(state.query)))
    floats = [0.0, -0.0, 1.0, 0.1 + 0.2, 1e-5, 0.0001, 1e16, 1e15 + 0.5, 123.456, -2.5, 1 / 3, 5e-324,
              1.7976931348623157e308, 2.4999999999999996, -1e-7]
    return dict(constants=SCRIPT_CONSTANTS, plane=list(PLANE), nudges=nudges, repr=[[x, repr(x)] for x in floats])


def poll_cases() -> dict:
    """A follower's poll card (``widgets/poll.js``): the constants the server writes before it
    (``FollowerCard.SCRIPT_CONSTANTS``), and browser ids the server takes or refuses (``widgets.poll.BROWSER_ID``)."""
    from widgets.poll import BROWSER_ID, FollowerCard

    ids = ["A" * 24, "abc-_XYZ0123456789abcdef", "A" * 23, "A" * 25, "A" * 23 + "+", "A" * 23 + "=", "", "é" * 24]
    return dict(constants=FollowerCard.SCRIPT_CONSTANTS, ids=[[i, BROWSER_ID.fullmatch(i) is not None] for i in ids])


def geometry_cases() -> dict:
    """The sizes the server draws a weight with and the page's preview draws again."""
    from link.rules import INK_THRESHOLD, MAX_LINE_WIDTH, VALUE_SIZE, ink, line_width, value_size
    from widgets.weights import BAR_LABEL_GAP, bar_y

    weights = [0.0, 0.1978, 0.4011, 0.5, 0.549999, 0.55, 0.5035, 1.0]
    top, bottom = 26, 146  # a chart's, as the Weights tab draws it in the normal mode
    return dict(max_width=MAX_LINE_WIDTH, value_size=list(VALUE_SIZE), ink_threshold=INK_THRESHOLD,
                bar=dict(top=top, bottom=bottom, gap=BAR_LABEL_GAP),
                cases=[dict(weight=w, line_width=line_width(w), value_size=value_size(w), ink=ink(w),
                            bar_y=bar_y(w, top, bottom)) for w in weights])


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
                labels=label_cases(), readout=readout_cases(), numbers=number_cases(), sqrt=sqrt_cases(),
                train=train_cases(), projections=projection_cases(), browser=browser_cases(),
                poll=poll_cases())


if __name__ == "__main__":
    OUT.write_text(json.dumps(golden(), indent=1, allow_nan=False) + "\n")
    print(f"wrote {OUT}")
