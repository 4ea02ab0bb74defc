"""The current numbers as CSV and JSON downloads (the figures export PNG through their own save tool)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import panel as pn
import param

from widgets.state import AttentionState

#: CSV columns: one number per row, named by what it is and which tokens it belongs to.
CSV_COLUMNS = ("quantity", "query_token", "key_token", "dimension", "value")


def numbers(state: AttentionState) -> dict:
    """Everything the page shows, as plain Python numbers (full float64 precision).

    ``dots``, ``scores``, ``weights`` and ``output`` are the selected query's;
    ``weight_matrix`` (n, n) holds every token's weights, row = query.
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
        "scores": r.scores[i].tolist(),
        "weights": r.weights[i].tolist(),
        "output": np.asarray(r.output[i]).tolist(),
        "weight_matrix": r.weights.tolist(),
    }


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

    Token names are text cells (:func:`text_cell`): a name such as ``-2-3`` is written ``'-2-3``, so a
    spreadsheet shows it instead of computing it. Numbers are written as Python writes floats.
    """
    n = numbers(state)
    tokens, sel = [text_cell(t) for t in n["tokens"]], text_cell(n["selected"])
    rows = [("q", sel, "", d, x) for d, x in enumerate(n["q"])]
    rows += [("key", "", t, d, x) for t, k in zip(tokens, n["keys"]) for d, x in enumerate(k)]
    rows += [("value", "", t, "", x) for t, x in zip(tokens, n["values"])]
    for name in ("dots", "scores", "weights"):
        rows += [(name.rstrip("s"), sel, t, "", x) for t, x in zip(tokens, n[name])]
    rows += [("output", sel, "", "", n["output"])]
    rows += [("weight_matrix", qt, kt, "", x) for qt, row in zip(tokens, n["weight_matrix"]) for kt, x in zip(tokens, row)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows((q, a, b, d, repr(float(x))) for q, a, b, d, x in rows)
    return out.getvalue()


class Export(pn.viewable.Viewer):
    """Download buttons for the numbers; a note on the figures' PNG save tool."""

    state = param.ClassSelector(class_=AttentionState, doc="The session state to export.")

    def __init__(self, **params):
        super().__init__(**params)
        self.csv = pn.widgets.FileDownload(callback=lambda: io.StringIO(to_csv(self.state)), filename="attention.csv",
                                           label="Numbers as CSV", color="primary", embed=False, width=260)
        self.json = pn.widgets.FileDownload(callback=lambda: io.StringIO(to_json(self.state)),
                                            filename="attention.json", label="Numbers as JSON",
                                            color="primary", embed=False, width=260)
        note = pn.pane.HTML(
            "<p>The downloads hold q, the keys and values, the selected query's dot products, scores, weights and "
            "output, and the full weight matrix.</p><p>For pictures, use the save button (↓) under the query plot "
            "and under the matrix: each saves that figure as PNG.</p>",
            css_classes=["note"], sizing_mode="stretch_width")
        self._layout = pn.Column(pn.Row(self.csv, self.json), note, sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout
