"""The current numbers as CSV and JSON downloads (the figures export PNG through their own save tool)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import panel as pn
import param

from core import saturation, score_matrix_size
from core.cost import D_K as COST_D_K
from session.heads import D_MODEL, HEAD_D_K, HEAD_TOKENS, ROLES
from session.i18n import N_
from session.state import AttentionState
from widgets.cost import cost_cache

#: CSV columns: one number per row, named by what it is and which tokens it belongs to.
CSV_COLUMNS = ("quantity", "query_token", "key_token", "dimension", "value")


def _scores(scores: np.ndarray) -> list:
    """Scores as JSON takes them: a score the mask forbids (−∞) is None (``null``; JSON has no infinity)."""
    return np.where(np.isneginf(scores), None, scores).tolist()


def numbers(state: AttentionState) -> dict:
    """Everything the page shows, as plain Python numbers (full float64 precision).

    Every row of the matrix, row = query: ``queries`` Q (n, d_k) (each token's key as its query, the selected
    row's q), ``dot_matrix`` and ``score_matrix`` (n, n), ``weight_matrix`` (n, n) and ``outputs`` (n,), or
    (n, d_v) for vector values. ``dots``, ``scores``, ``weights`` and ``output`` repeat the selected query's
    (``selected``, its q ``q``). A score the causal mask forbids is ``None`` (its weight is 0).
    """
    r, i = state.result, state.selected
    return {
        "tokens": list(state.tokens),
        "selected": state.tokens[i],
        "d_k": state.d_k,
        "scaled": bool(state.scale),
        "q": [float(c) for c in state.query],
        "keys": np.asarray(state.keys, dtype=float).tolist(),
        "values": np.asarray(state.values, dtype=float).tolist(),
        "dots": r.dots[i].tolist(),
        "scores": _scores(r.scores[i]),
        "weights": r.weights[i].tolist(),
        "output": np.asarray(r.output[i]).tolist(),
        "queries": state.queries.tolist(),
        "dot_matrix": r.dots.tolist(),
        "score_matrix": _scores(r.scores),
        "weight_matrix": r.weights.tolist(),
        "outputs": np.asarray(r.output).tolist(),
        "projections": projection_numbers(state),
        "n2_cost": cost_numbers(state),
    }


def projection_numbers(state: AttentionState) -> dict:
    """The Projections and Heads tabs' numbers: X, each running head's W_Q, W_K, W_V, Q, K, V, scores,
    weights (row = query), outputs, largest weights and entropies (nats), then the concatenation, W_O and the
    output, all at the temperature T."""
    r = state.head_attention()
    heads = []
    for h, head in enumerate(r.heads):
        a = head.attention
        sat = saturation(a.weights)
        W = np.asarray(state.projections[h], dtype=float)
        heads.append({**{role: W[k].tolist() for k, role in enumerate(ROLES)},
                      "Q": head.projections.Q.tolist(), "K": head.projections.K.tolist(),
                      "V": head.projections.V.tolist(),
                      "scores": a.scores.tolist(), "weights": a.weights.tolist(), "output": a.output.tolist(),
                      "max_weight": sat.max_weight.tolist(), "entropy": sat.entropy.tolist()})
    return {"tokens": list(HEAD_TOKENS), "d_model": D_MODEL, "d_k": HEAD_D_K, "temperature": float(state.temperature),
            "embeddings": np.asarray(state.embeddings, dtype=float).tolist(), "shown_head": state.head + 1,
            "heads": heads, "W_O": np.asarray(state.w_o, dtype=float).tolist(), "concat": r.concat.tolist(),
            "output": r.output.tolist()}


def cost_numbers(state: AttentionState) -> dict:
    """The n² cost: this server's measurements up to the chosen n (those made so far), and Module 2's sizes."""
    measured = [{"n": m.n, "seconds": m.seconds, "peak_bytes": m.peak_bytes, "nn_bytes": m.nn_bytes,
                 "entries": score_matrix_size(m.n).entries, "float64_bytes": score_matrix_size(m.n).bytes}
                for m in cost_cache().measured(up_to=state.cost_n)]
    return {"d_k": COST_D_K, "seed": 0, "n": state.cost_n, "measurements": measured}


def to_json(state: AttentionState) -> str:
    return json.dumps(numbers(state), indent=2)


#: A cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula gets a leading ``'``.

    >>> text_cell("-2-3"), text_cell("love")
    ("'-2-3", 'love')
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def to_csv(state: AttentionState) -> str:
    """One number per line, columns :data:`CSV_COLUMNS`; empty cells where a column does not apply.

    ``q`` is the selected query (its token in ``query_token``); ``query``, ``dot``, ``score``, ``weight`` and
    ``output`` are given for every row of the matrix, ``query_token`` naming the row (a vector's coordinate in
    ``dimension``); a score the causal mask forbids is ``-inf``. Token names are text cells (:func:`text_cell`):
    a name such as ``-2-3`` is written ``'-2-3``, so a spreadsheet shows it instead of computing it. Numbers are
    written as Python writes floats.
    """
    n = numbers(state)
    r = state.result
    tokens, sel = [text_cell(t) for t in n["tokens"]], text_cell(n["selected"])
    rows = [("q", sel, "", d, x) for d, x in enumerate(n["q"])]
    rows += [("key", "", t, d, x) for t, k in zip(tokens, n["keys"], strict=True) for d, x in enumerate(k)]
    rows += [row for t, v in zip(tokens, n["values"], strict=True) for row in _vector_rows("value", "", t, v)]
    rows += [("query", t, "", d, x) for t, q in zip(tokens, n["queries"], strict=True) for d, x in enumerate(q)]
    for name, matrix in (("dot", r.dots), ("score", r.scores), ("weight", r.weights)):
        rows += [(name, qt, kt, "", x) for qt, row in zip(tokens, matrix.tolist(), strict=True)
                 for kt, x in zip(tokens, row, strict=True)]
    rows += [output_row for t, o in zip(tokens, n["outputs"], strict=True)
             for output_row in _vector_rows("output", t, "", o)]
    rows += _projection_rows(n["projections"])
    for m in n["n2_cost"]["measurements"]:  # one row per quantity and n; the dimension column holds n
        rows += [(f"cost_{name}", "", "", m["n"], m[name]) for name in ("seconds", "peak_bytes", "nn_bytes", "entries")]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows((q, a, b, d, repr(float(x))) for q, a, b, d, x in rows)
    return out.getvalue()


def _vector_rows(name: str, query_token: str, key_token: str, v) -> list[tuple]:
    """A number as one row (no dimension), a vector as one row per coordinate."""
    if isinstance(v, list):
        return [(name, query_token, key_token, d, x) for d, x in enumerate(v)]
    return [(name, query_token, key_token, "", v)]


def _matrix(name: str, M) -> list[tuple]:
    """Entries of a matrix as rows, the dimension written ``[row][column]`` (0-based, as NumPy indexes): text no
    spreadsheet reads as a number or a date."""
    return [(name, "", "", f"[{i}][{j}]", x) for i, row in enumerate(M) for j, x in enumerate(row)]


def _projection_rows(p: dict) -> list[tuple]:
    tokens = [text_cell(t) for t in p["tokens"]]
    rows = [("temperature", "", "", "", p["temperature"])]
    rows += [("embedding", "", t, d, x) for t, e in zip(tokens, p["embeddings"], strict=True) for d, x in enumerate(e)]
    for h, head in enumerate(p["heads"], start=1):
        rows += [r for role in ROLES for r in _matrix(f"head{h}_{role}", head[role])]
        for name in ("Q", "K", "V"):
            rows += [(f"head{h}_{name}", "", t, d, x)
                     for t, v in zip(tokens, head[name], strict=True) for d, x in enumerate(v)]
        for name in ("scores", "weights"):
            rows += [(f"head{h}_{name.rstrip('s')}", qt, kt, "", x)
                     for qt, row in zip(tokens, head[name], strict=True) for kt, x in zip(tokens, row, strict=True)]
        rows += [(f"head{h}_output", t, "", d, x)
                 for t, o in zip(tokens, head["output"], strict=True) for d, x in enumerate(o)]
        rows += [(f"head{h}_{name}", t, "", "", x) for name in ("max_weight", "entropy")
                 for t, x in zip(tokens, head[name], strict=True)]
    rows += _matrix("W_O", p["W_O"])
    rows += [("concat", t, "", d, x) for t, c in zip(tokens, p["concat"], strict=True) for d, x in enumerate(c)]
    rows += [("multihead_output", t, "", d, x)
             for t, o in zip(tokens, p["output"], strict=True) for d, x in enumerate(o)]
    return rows


class Export(pn.viewable.Viewer):
    """Download buttons for the numbers; a note on the figures' PNG save tool."""

    state = param.ClassSelector(class_=AttentionState, doc="The session state to export.")

    def __init__(self, **params):
        super().__init__(**params)
        self.csv = pn.widgets.FileDownload(callback=lambda: io.StringIO(to_csv(self.state)), filename="attention.csv",
                                           color="primary", embed=False, width=260)
        self.json = pn.widgets.FileDownload(callback=lambda: io.StringIO(to_json(self.state)),
                                            filename="attention.json", color="primary", embed=False, width=260)
        self._note = pn.pane.HTML("", css_classes=["note"], sizing_mode="stretch_width")
        # the buttons wrap onto two lines where the tab is narrower than both (an 800 px projector, a phone)
        self._layout = pn.Column(pn.FlexBox(self.csv, self.json), self._note, sizing_mode="stretch_width")
        self.state.param.watch(self._relabel, "lang")
        self._relabel()

    def _relabel(self, *_):
        tr = self.state.tr
        self.csv.label, self.json.label = tr._("Numbers as CSV"), tr._("Numbers as JSON")
        self._note.object = "".join(f"<p>{tr(text)}</p>" for text in (
            N_("The downloads hold q, the keys and values, and every row of the matrix: each token's query with its "
            "dot products, scores, weights and output; from the Projections and Heads tabs, X, each head's W_Q, "
            "W_K, W_V, Q, K, V, scores, weights, outputs, largest weights and entropies, W_O and the output at the "
            "temperature T; and the server's n² measurements up to your n."),
            N_("In every language the files are the same: numbers with a decimal point (0.5), at full precision, and "
            "English names for the columns and keys, so any spreadsheet or program reads them."),
            N_("For pictures, use the save button (↓) under the query plot and under the matrix: each saves that "
            "figure as PNG.")))

    def __panel__(self):
        return self._layout
