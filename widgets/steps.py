"""The selected query's computation, step by step, and the aria-live text readout."""

from __future__ import annotations

import time
from html import escape
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.models import CustomJS, Div

from core.report import sqrt_text
from link.rules import PLACEHOLDER, readout_words
from session.i18n import Translator
from session.state import AttentionState
from widgets.base import BokehPane, View
from widgets.style import APP_CSS, token_color

# Bokeh's Div view re-renders itself and then re-lays-out the whole page on every change of its model
# (MarkupView connects model.change to rerender), and input waits behind that on every update. The
# readout and the announcer only ever change their text (render_as_text) and their size
# follows CSS, so their views only replace the text. A js_on_change callback runs before the view's own
# handler, so the first change already takes this path. The view is looked up once: Bokeh.index.find_one
# walks every view of the page.
_TEXT_ONLY = (Path(__file__).resolve().parent / "text_only.js").read_text()


def replace_text_in_place(div: Div) -> None:
    """Make ``div``'s view in the browser replace only its text when the text changes.

    For a ``Div`` with ``render_as_text=True`` whose other properties never change.
    """
    div.js_on_change("text", CustomJS(code=_TEXT_ONLY))


class Inspector(View):
    """Every step for the selected query q, in two tables side by side where they fit and one above the other where
    not: the scores (q·k_i, ÷√d_k, − max; each row headed by its token and key k_i) and the output (exp, ÷ Σ,
    a_i v_i; each row headed by its token and value v_i), then the output's sum. One table of all eight columns
    was wider than the tab at 1024×768 (772 px in 518, 1,008 on a projector): the weights and the output's terms
    were out of view behind a scroll bar. Two tables of four columns fit an 800×600 projector; a wider one (large
    numbers, vector values) still scrolls sideways in its own box.

    Token names are escaped: they are always shown as text, never as HTML. In a right-to-left page the columns
    run right to left, while each number, formula and sum reads left to right (isolated: "−0.7071", never
    "0.7071−"; static/inspector.css).
    """

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = pn.pane.HTML("", name="inspector", css_classes=["inspector"], width=760)
        self.render_on("result", "guided", "step", "lang")

    def _render(self, *_):
        s = self.state
        tr = s.tr
        r, i = s.result, s.selected

        def cell(step, x):
            """``x`` as the table writes it; a number of a step not reached yet (step-through) is a "?" of the same
            cell, so the layout stays."""
            return tr.minus_sign(tr.entry(x)) if s.revealed(step) else PLACEHOLDER

        def given(x):
            """A key or a value as it was typed: without trailing zeros ((0.5, 1), never rounded to (0, 1))."""
            x = np.asarray(x, dtype=float)
            return tr.minus_sign(tr.vec(x, 4, short=True) if x.ndim else tr.short(float(x)))

        def table(head, rows, foot):
            """A table: ``head``, the column titles (the first over the row titles); ``rows``, one (title, cells) per
            token; ``foot``, the footer's row title and cells."""
            return ('<table class="steps"><thead><tr>' + "".join(f'<th scope="col">{h}</th>' for h in head)
                    + "</tr></thead><tbody>"
                    + "".join(f'<tr><th scope="row">{t}</th>' + "".join(f"<td>{c}</td>" for c in cs) + "</tr>"
                              for t, cs in rows)
                    + f'</tbody><tfoot><tr><th scope="row">{foot[0]}</th>'
                    + "".join(f"<td>{c}</td>" for c in foot[1]) + "</tr></tfoot></table>")

        values = np.asarray(s.values, dtype=float)
        # the terms of the output's sum, shown as step 6: a_j v_j, a number or a vector
        products = r.weights[i][:, None] * values if values.ndim == 2 else r.weights[i] * values
        tokens = [f'<span class="token" style="--token:{token_color(j)}">{escape(t)}</span>'
                  for j, t in enumerate(s.tokens)]
        scale_head = f"÷ {sqrt_text(s.d_k)}" if s.scale else escape(tr._("(no scaling)"))
        scores = table(
            (f"{escape(tr._('key'))} k<sub>i</sub>", "1. q·k<sub>i</sub>", f"2. s<sub>i</sub> = {scale_head}",
             "3. s<sub>i</sub> − max"),
            [(f'{t} <span class="vec">{given(s.keys[j])}</span>',
              (cell(1, r.dots[i, j]), cell(1, r.scores[i, j]), cell(2, r.shifted[i, j])))
             for j, t in enumerate(tokens)],
            ("max", ("", tr.minus_sign(tr.num(r.row_max[i])), "")))
        output = table(
            ("v<sub>i</sub>", "4. exp", "5. a<sub>i</sub> = exp ÷ Σ", "6. a<sub>i</sub>·v<sub>i</sub>"),
            [(f'{t} <span class="vec">{given(values[j])}</span>',
              (cell(2, r.exp[i, j]), cell(2, r.weights[i, j]), cell(3, products[j])))
             for j, t in enumerate(tokens)],
            ("Σ", (cell(2, r.exp_sum[i]), cell(2, r.weights[i].sum()), cell(3, r.output[i]))))
        title = escape(tr._("Inspector: query of “{token}”, q = {q}", token=tr.name(s.tokens[i]),
                            q=tr.minus_sign(tr.vec(s.query, 3))))
        self._pane.object = f"""
<h3>{title}</h3>
<div class="scroll" tabindex="0" role="region" aria-label="{escape(tr._("Every step of the selected query"))}">
<div class="bands">{scores}{output}</div></div>
<p class="output">7. {escape(tr._("output"))} = <span dir="ltr">{" + ".join(cell(3, c) for c in products)} \
= {cell(3, r.output[i])}</span></p>"""

    def __panel__(self):
        return self._pane


class Readout(View):
    """The current q, scores, weights and output as plain page text in an aria-live region.

    A Bokeh ``Div`` with ``render_as_text=True`` (token names can never become
    HTML), ``role="status"`` and ``aria-live="polite"``. Tests read it by
    ``name="readout"``.
    """

    def __init__(self, **params):
        super().__init__(**params)
        self.div = Div(
            name="readout", render_as_text=True, sizing_mode="stretch_width", css_classes=["readout"],
            stylesheets=[APP_CSS],
            # Not live: it changes on every pixel of a drag; the Announcer speaks for it, throttled. Focusable:
            # where the plot leaves it fewer lines than it has (a projector's large text, a short screen) it
            # scrolls inside itself, and a keyboard must reach those lines too.
            html_attributes={"role": "region", "aria-label": self.state.tr._("Current numbers"),
                             "data-testid": "readout", "tabindex": "0"},
            styles={"white-space": "pre-line", "font-size": "var(--ae-num, 16px)", "line-height": "1.35",
                    "font-variant-numeric": "tabular-nums", "color": "var(--ae-fg, #111)"},
        )
        replace_text_in_place(self.div)
        self._layout = BokehPane(self.div, sizing_mode="stretch_width")
        self.state.param.watch(self._render, ["result", "guided", "step"])
        self.state.param.watch(self._relabel, "lang")
        self._render()

    @staticmethod
    def text(state: AttentionState) -> str:
        r, i, tokens = state.result, state.selected, state.tokens
        tr: Translator = state.tr
        words = readout_words(tr.lang)
        out = r.output[i]

        def per_token(row, step=1):
            return tr.list_sep.join(f"{tr.name(t)} {tr.entry(x) if state.revealed(step) else PLACEHOLDER}"
                                    for t, x in zip(tokens, row, strict=True))

        scale = words["scaled"].format(root=sqrt_text(state.d_k)) if state.scale else words["unscaled"]
        value = (PLACEHOLDER if not state.revealed(3)
                 else f"{tr.ltr(tr.num(out))} ≈ {tr.ltr(tr.num(out, 2))}" if np.ndim(out) == 0
                 else f"{tr.vec(out, 4)} ≈ {tr.vec(out, 2)}")
        return "\n".join((
            words["query"].format(token=tr.name(tokens[i]), q=tr.vec(state.query, 3)),
            words["dots"].format(list=per_token(r.dots[i])),
            words["scores"].format(scale=scale, list=per_token(r.scores[i])),
            words["weights"].format(list=per_token(r.weights[i], 2)),
            words["output"].format(value=value),
        ))

    def _render(self, *_):
        self.div.text = self.text(self.state)

    def _relabel(self, *_):
        self.div.html_attributes = {**self.div.html_attributes, "aria-label": self.state.tr._("Current numbers")}
        self._render()


class Announcer(View):
    """A visually hidden ``aria-live`` region that tells screen-reader users the weights and output.

    Throttled: it speaks once the numbers have been still for ``quiet`` seconds,
    and at most every ``longest`` seconds during a continuous drag, never on
    every pixel. Without a server session (tests) it updates at once. Numbers
    the step-through still hides are not announced. Tests read it by
    ``name="announcer"``.
    """

    quiet = param.Number(default=0.6, bounds=(0, None), doc="Seconds of stillness before speaking.")
    longest = param.Number(default=2.0, bounds=(0, None), doc="Longest wait while the numbers keep changing.")

    def __init__(self, **params):
        super().__init__(**params)
        self.div = Div(
            name="announcer", render_as_text=True, text=self.text(self.state),
            html_attributes={"role": "status", "aria-live": "polite", "aria-atomic": "true",
                             "data-testid": "announcer"},
            # visually hidden but read (the usual "sr-only" recipe)
            styles={"position": "absolute", "width": "1px", "height": "1px", "overflow": "hidden",
                    "clip-path": "inset(50%)", "white-space": "nowrap"},
        )
        replace_text_in_place(self.div)
        self._layout = BokehPane(self.div, width=1, height=1, margin=0)
        self._first = self._last = None
        self.state.param.watch(self._changed, ["result", "guided", "step", "lang"])

    @staticmethod
    def text(state: AttentionState) -> str:
        r, i, tokens = state.result, state.selected, state.tokens
        tr = state.tr
        parts = [tr._('Query of "{token}".', token=tokens[i])]
        if state.revealed(2):
            weights = tr.list_sep.join(f"{t} {tr.num(x)}" for t, x in zip(tokens, r.weights[i], strict=True))
            parts.append(tr._("Weights: {list}.", list=weights))
        if state.revealed(3):
            parts.append(tr._("Output {value}.", value=tr.entry(r.output[i])))
        if state.guided:
            parts.insert(0, tr._("Step {step} of 3.", step=state.step))
        return " ".join(parts)

    def _changed(self, *_):
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self.div.text = self.text(self.state)
            return
        now = time.monotonic()
        if self._first is None:
            self._first = now
            doc.add_timeout_callback(self._speak, int(self.quiet * 1000))
        self._last = now

    def _speak(self):
        now = time.monotonic()
        still, waited = now - self._last, now - self._first
        if still < self.quiet and waited < self.longest:
            delay = min(self.quiet - still, self.longest - waited)
            pn.state.curdoc.add_timeout_callback(self._speak, max(1, int(delay * 1000)))
            return
        self._first = self._last = None
        self.div.text = self.text(self.state)
