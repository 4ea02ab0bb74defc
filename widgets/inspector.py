"""The selected query's computation, step by step, and the aria-live text readout."""

from __future__ import annotations

from html import escape

import numpy as np
import panel as pn
import param
from bokeh.models import Div

from widgets.format import fmt, fmt_entry, fmt_vec, sqrt_text, token_color
from widgets.state import AttentionState


class Inspector(pn.viewable.Viewer):
    """A table of every step for the selected query q: q·k_i, ÷√d_k, − max, exp, ÷ Σ, a_i v_i, Σ.

    Token names are escaped: they are always shown as text, never as HTML.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = pn.pane.HTML("", name="inspector", css_classes=["inspector"], width=760)
        self.state.param.watch(self._render, "result")
        self._render()

    def _render(self, *_):
        s = self.state
        r, i = s.result, s.selected
        root = sqrt_text(s.d_k)
        token = escape(s.tokens[i])
        values = np.asarray(s.values, dtype=float)
        # the terms of the output's sum, shown as step 6: a_j v_j, a number or a vector
        products = r.weights[i][:, None] * values if values.ndim == 2 else r.weights[i] * values
        rows = []
        for j, t in enumerate(s.tokens):
            cells = (r.dots[i, j], r.scores[i, j], r.shifted[i, j], r.exp[i, j], r.weights[i, j],
                     values[j], products[j])
            rows.append(
                f'<tr><th scope="row" style="color:{token_color(j)}">{escape(t)} '
                f'<span class="vec">{fmt_vec(s.keys[j], 0)}</span></th>'
                + "".join(f"<td>{fmt_entry(c)}</td>" for c in cells) + "</tr>"
            )
        scale_head = f"÷ {root}" if s.scale else "(no scaling)"
        self._pane.object = f"""
<h3>Inspector: query of “{token}”, q = {fmt_vec(s.query, 3)}</h3>
<table class="steps">
<thead><tr><th scope="col">key k<sub>i</sub></th>
<th scope="col">1. q·k<sub>i</sub></th><th scope="col">2. s<sub>i</sub> = {scale_head}</th>
<th scope="col">3. s<sub>i</sub> − max</th><th scope="col">4. exp</th>
<th scope="col">5. a<sub>i</sub> = exp ÷ Σ</th><th scope="col">v<sub>i</sub></th>
<th scope="col">6. a<sub>i</sub>·v<sub>i</sub></th></tr></thead>
<tbody>{''.join(rows)}</tbody>
<tfoot><tr><th scope="row">Σ / max</th><td></td><td>max {fmt(r.row_max[i])}</td><td></td>
<td>Σ {fmt(r.exp_sum[i])}</td><td>Σ {fmt(r.weights[i].sum())}</td><td></td>
<td>Σ {fmt_entry(r.output[i])}</td></tr></tfoot>
</table>
<p class="output">7. output = {" + ".join(fmt_entry(c) for c in products)} = {fmt_entry(r.output[i])}</p>"""

    def __panel__(self):
        return self._pane


class Readout(pn.viewable.Viewer):
    """The current q, scores, weights and output as plain page text in an aria-live region.

    A Bokeh ``Div`` with ``render_as_text=True`` (token names can never become
    HTML), ``role="status"`` and ``aria-live="polite"``. Tests read it by
    ``name="readout"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self.div = Div(
            name="readout", render_as_text=True, width=560,
            html_attributes={"role": "status", "aria-live": "polite", "aria-atomic": "true",
                             "aria-label": "Current numbers", "data-testid": "readout"},
            styles={"white-space": "pre-line", "font-size": "16px", "line-height": "1.45",
                    "font-variant-numeric": "tabular-nums"},
        )
        self._layout = pn.pane.Bokeh(self.div, sizing_mode="fixed")
        self.state.param.watch(self._render, "result")
        self._render()

    @staticmethod
    def text(state: AttentionState) -> str:
        r, i, tokens = state.result, state.selected, state.tokens
        out = r.output[i]

        def per_token(row):
            return ", ".join(f"{t} {fmt_entry(x)}" for t, x in zip(tokens, row))

        scale = f"q·k / {sqrt_text(state.d_k)}" if state.scale else "q·k (unscaled)"
        return (
            f'Query of "{tokens[i]}": q = {fmt_vec(state.query, 3)}\n'
            f"Dot products q·k: {per_token(r.dots[i])}\n"
            f"Scores s = {scale}: {per_token(r.scores[i])}\n"
            f"Weights a = softmax(s): {per_token(r.weights[i])}\n"
            + (f"Output Σ aᵢvᵢ = {fmt(out)} ≈ {out:.2f}" if np.ndim(out) == 0
               else f"Output Σ aᵢvᵢ = {fmt_vec(out, 4)} ≈ {fmt_vec(out, 2)}")
        )

    def _render(self, *_):
        self.div.text = self.text(self.state)

    def __panel__(self):
        return self._layout
