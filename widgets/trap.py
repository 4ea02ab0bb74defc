"""The common trap: scoring the query against the values instead of the keys."""

from __future__ import annotations

from html import escape

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, FactorRange, FixedTicker, Range1d, Text, VBar
from bokeh.plotting import figure

from session.i18n import N_
from widgets.base import BokehPane, View
from widgets.edit import relabel_switch, switch
from widgets.glyphs import draw

#: Bar labels under each token: scored against the keys (correct) or the values (the trap).
CORRECT, TRAP = "keys", "values"
N_("keys"), N_("values")  # CORRECT and TRAP, the bars' group labels, for the catalogs
COLORS = {CORRECT: "#0072B2", TRAP: "#D55E00"}


class TrapPanel(View):
    """Side by side: the correct weights (scored against keys) and the trap's (scored against values).

    With scalar values the panel explains why q·v_i is undefined instead of
    computing anything. Grouped bars are in the figure named ``trap-weights``.
    """

    def __init__(self, **params):
        super().__init__(**params)
        self._bars = ColumnDataSource(data=dict(x=[], top=[], label=[], color=[], kind=[]))
        # a short title: a projector's 21 px letters cut the long one ("softmax(q·kᵢ/√d_k) vs …") at any width
        # (its text is the page's language, _render)
        fig = figure(name="trap-weights", title="",
                     x_range=FactorRange(), y_range=Range1d(0, 1.22), height=280, min_width=300, max_width=760,
                     sizing_mode="stretch_width", tools="", toolbar_location=None)
        fig.title.text_font_size = "15px"
        fig.axis.major_label_text_font_size = "13px"
        fig.xaxis.group_text_font_size = "14px"
        fig.xgrid.visible = False
        fig.yaxis.ticker = FixedTicker(ticks=[0, 0.5, 1])
        draw(fig, VBar, self._bars, "x", top="top", width=0.85, color="color")
        draw(fig, Text, self._bars, "x", "top", text="label", text_align="center", y_offset=-3, text_font_size="12px")
        self.figure = fig
        self._text = pn.pane.HTML("", name="trap-text", css_classes=["trap-text"], sizing_mode="stretch_width",
                                  max_width=760)
        # a wrapping column: a Bokeh pane would silently re-sync its own `visible` from the figure
        self._figure_pane = pn.Column(BokehPane(fig, sizing_mode="stretch_width"), margin=0,
                                      sizing_mode="stretch_width", max_width=780)
        # the same switch as the editor's: both are bound to state.trap, the one place it lives
        self.switch = switch(self.state, "trap")
        self._heading = pn.pane.HTML("")
        self._layout = pn.Column(self._heading, self.switch, self._text, self._figure_pane, name="trap",
                                 sizing_mode="stretch_width")
        self.render_on("result", "trap", "lang")

    def _render(self, *_):
        s = self.state
        tr = s.tr
        i, token = s.selected, escape(s.tokens[s.selected])
        self._heading.object = f"<h3>{tr._('The common trap: scoring against the values')}</h3>"
        relabel_switch(self.switch, tr)
        self.figure.title.text = tr._("Weights: scored on keys vs on values")
        if not s.trap:
            self._figure_pane.visible = False
            self._text.object = "<p>" + tr._(
                "Attention scores the query against the <em>keys</em> (what each token offers to be matched on) and "
                "only then mixes the <em>values</em> (what it hands over). Turn on “Score against values instead of "
                "keys” to see what goes wrong when the two are confused.") + "</p>"
            return
        if s.trap_result is None:
            self._figure_pane.visible = False
            v = np.asarray(s.values)
            if v.ndim == 1:
                why = "<p>" + tr._(
                    "<strong>Nothing to compute: q·v<sub>i</sub> is not defined.</strong> q = {q} is a vector of "
                    "d<sub>k</sub> = {d_k} numbers, but each value is a single number (v<sub>{token}</sub> = {v}). A "
                    "dot product needs two vectors of the same size. Values are what a token hands over, not what it "
                    "is matched on: that is the key's job.", q=tr.vec(s.query, 3), d_k=s.d_k, token=token,
                    v=tr.num(float(v[i]), 2)) + "</p>"
            else:
                why = f"<p><strong>{tr._('Nothing to compute.')}</strong> {escape(tr(s.trap_error))}</p>"
            self._text.object = why + "<p>" + tr._(
                "Try the “{preset}” preset, where v<sub>i</sub> has d_k = 2 entries.",
                preset=tr._("Module 2: vector values")) + "</p>"
            return
        good, bad = s.result.weights[i], s.trap_result.weights[i]
        tokens = list(s.tokens)
        x = [(t, tr._(k)) for t in tokens for k in (CORRECT, TRAP)]
        self.figure.x_range.factors = x
        tops = [w for pair in zip(good, bad, strict=True) for w in pair]
        kinds = [k for _ in tokens for k in (CORRECT, TRAP)]
        self._bars.data = dict(x=x, top=tops, label=[tr.num(w, 2) for w in tops],
                               color=[COLORS[k] for k in kinds], kind=kinds)
        self._figure_pane.visible = True
        j = int(np.argmax(bad))
        self._text.object = "<p>" + tr._(
            "Query of “{token}”: scored against the values, the weights follow q·v<sub>i</sub>, so relevance now "
            "depends on <em>what would be retrieved</em>. The largest weight goes to “{largest}” ({weight}); make "
            "any value longer and its weight rises, though its key has not changed. The output becomes {trap} "
            "instead of {right}.", token=token, largest=escape(tokens[j]), weight=tr.num(bad[j], 4),
            trap=tr.vec(s.trap_result.output[i], 4), right=tr.vec(s.result.output[i], 4)) + "</p>"
