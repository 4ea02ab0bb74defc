"""Why divide by √d_k: histograms of random q·k with and without scaling, and what softmax makes of them."""

from __future__ import annotations

import math

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, FixedTicker, Quad, Range1d, Text, VBar
from bokeh.plotting import figure

from core.scaling import MAX_D_K, N_KEYS, N_QUERIES, histogram
from services.train_queue import scheduler_for
from widgets.base import BokehPane, View
from widgets.glyphs import draw

BINS = 41
#: Histogram half-widths in standard deviations of the scaled scores.
SPREAD = 4.5


def _hist_figure(name: str, title: str, color: str) -> tuple[figure, ColumnDataSource, ColumnDataSource]:
    src = ColumnDataSource(data=dict(left=[], right=[], top=[]))
    note = ColumnDataSource(data=dict(x=[], y=[], text=[]))
    fig = figure(name=name, title=title, width=330, height=220, tools="", toolbar_location=None,
                 x_range=Range1d(-1, 1), y_range=Range1d(0, 1))
    fig.title.text_font_size = "14px"
    fig.yaxis.visible = False
    fig.ygrid.visible = False
    draw(fig, Quad, src, left="left", right="right", top="top", bottom=0, fill_color=color, line_color="white",
         fill_alpha=0.85)
    draw(fig, Text, note, "x", "y", text="text", text_font_size="14px", text_font_style="bold", text_baseline="top",
         text_align="left")
    return fig, src, note


class DkPanel(View):
    """Pick d_k (1..1024): N_QUERIES·N_KEYS random query/key pairs, i.i.d. N(0, 1) entries, seeded per session.

    Shows the histograms of q·k (figure ``dk-dots``) and q·k/√d_k (``dk-scaled``)
    with their measured variances, and a softmax over N_KEYS such scores: its
    largest weight and entropy (averaged over queries), scaled and unscaled, plus
    one query's weights as bars (``dk-softmax``).
    """

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        # A slider and a number box, not pn.widgets.EditableIntSlider: that one registers a JS callback of its
        # number box in Panel's process-wide panel.links.Callback.registry, a WeakKeyDictionary whose entry
        # (holding the slider, which holds the box) keeps its own weak key alive. It is never freed, and through
        # its binding to the state neither is the session's state, nor every view and Bokeh model built on it.
        self.slider = pn.widgets.IntSlider.from_param(s.param.dk_experiment, name="d_k", start=1, end=MAX_D_K,
                                                      width=220)
        self.typed = pn.widgets.IntInput.from_param(s.param.dk_experiment, start=1, end=MAX_D_K, width=100)
        # as wide as its words (a fixed 150 px let "New random draw" at a projector's 20 px run 60 px past it)
        self.redraw = pn.widgets.Button()
        self.redraw.on_click(lambda _: setattr(s, "dk_seed", s.dk_seed + 1))
        self.dots_fig, self._dots, self._dots_note = _hist_figure("dk-dots", "", "#D55E00")
        self.scaled_fig, self._scaled, self._scaled_note = _hist_figure("dk-scaled", "q·k / √d_k", "#0072B2")
        self._example = ColumnDataSource(data=dict(x=[], top=[], color=[]))
        # short: a projector's 20 px title must fit the 330 px figure (its text is the page's language, _render)
        fig = figure(name="dk-softmax", title="", width=330, height=220,
                     tools="", toolbar_location=None, y_range=Range1d(0, 1.05), x_range=Range1d(-0.5, 2 * N_KEYS + 0.5))
        fig.title.text_font_size = "14px"
        fig.xaxis.ticker = FixedTicker(ticks=[(N_KEYS - 1) / 2, N_KEYS + 1 + (N_KEYS - 1) / 2])
        fig.xaxis.major_label_text_font_size = "13px"
        fig.xgrid.visible = False
        draw(fig, VBar, self._example, "x", top="top", width=0.8, color="color")
        self.example_fig = fig
        self._summary = pn.pane.HTML("", name="dk-summary", sizing_mode="stretch_width", max_width=680)
        self._intro = pn.pane.HTML("", sizing_mode="stretch_width", max_width=700)
        self._layout = pn.Column(
            self._intro,
            # wrap, and scroll inside the tab: on a 1024 px screen the tab is narrower than three figures
            # as wide as the tab, so "New random draw" wraps below rather than past its edge (1024 px projector)
            pn.FlexBox(self.slider, self.typed, self.redraw, align_items="center", sizing_mode="stretch_width"),
            pn.FlexBox(BokehPane(self.dots_fig), BokehPane(self.scaled_fig), BokehPane(fig)),
            self._summary, name="dk-panel", sizing_mode="stretch_both", scroll=True,
        )
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:  # a served page: its draws wait their turn
            s.experiment_scheduler = scheduler_for(doc)
        s.require_scaling()
        self.render_on("scaling", "lang")

    def _render(self, *_):
        e, tr = self.state.scaling, self.state.tr
        fmt = tr.num
        self._intro.object = (f"<h3>{tr._('Why divide by √d<sub>k</sub>?')}</h3><p>" + tr._(
            "Random queries and keys with independent unit-variance entries: q·k adds up d<sub>k</sub> such products, "
            "so its variance is d<sub>k</sub>; dividing by √d<sub>k</sub> brings it back to 1. Unscaled, the softmax "
            "saturates towards one-hot as d<sub>k</sub> grows.") + "</p>")
        self.typed.name = tr._("d_k (type)")
        self.redraw.param.update(label=tr._("New random draw"),
                                 description=tr._("Draw new random queries and keys (next seed)"))
        self.dots_fig.title.text = tr._("q·k (unscaled)")
        self.example_fig.title.text = tr._("softmax of {n} scores", n=N_KEYS)
        self.example_fig.xaxis.major_label_overrides = {(N_KEYS - 1) / 2: tr._("scaled"),
                                                        N_KEYS + 1 + (N_KEYS - 1) / 2: tr._("unscaled")}
        root = math.sqrt(e.d_k)
        for fig, src, note, samples, half, var, want in (
            (self.dots_fig, self._dots, self._dots_note, e.dots, SPREAD * root, e.var_dots, f"≈ d_k = {e.d_k}"),
            (self.scaled_fig, self._scaled, self._scaled_note, e.scaled, SPREAD, e.var_scaled, "≈ 1"),
        ):
            counts, edges = histogram(samples, half, BINS)
            top = counts.max() * 1.35
            fig.x_range.update(start=-half, end=half)
            fig.y_range.update(start=0, end=float(top))
            src.data = dict(left=edges[:-1].tolist(), right=edges[1:].tolist(), top=counts.tolist())
            note.data = dict(x=[-half * 0.95], y=[float(top) * 0.97],
                             text=[tr._("variance {value} ({expected})", value=fmt(var, 2), expected=want)])
        self._example.data = dict(
            x=[*range(N_KEYS), *range(N_KEYS + 1, 2 * N_KEYS + 1)],
            top=[*e.example.tolist(), *e.example_unscaled.tolist()],
            color=["#0072B2"] * N_KEYS + ["#D55E00"] * N_KEYS,
        )
        caption = tr._(
            "Softmax over {n} scores, mean over {queries} random queries (d<sub>k</sub> = {d_k}, seed {seed}). "
            "Uniform: largest weight {uniform}, entropy {bits} bits; one-hot: 1 and 0 bits.", n=N_KEYS,
            queries=N_QUERIES, d_k=e.d_k, seed=e.seed, uniform=fmt(1 / N_KEYS, 3), bits=fmt(np.log2(N_KEYS), 2))
        self._summary.object = f"""
<table class="dk-summary">
<caption>{caption}</caption>
<thead><tr><th></th><th scope="col">{tr._("largest weight")}</th>\
<th scope="col">{tr._("entropy (bits)")}</th></tr></thead>
<tbody>
<tr><th scope="row">{tr._("scaled")} q·k/√d<sub>k</sub></th>\
<td>{fmt(e.max_weight, 3)}</td><td>{fmt(e.entropy, 2)}</td></tr>
<tr><th scope="row">{tr._("unscaled")} q·k</th>\
<td>{fmt(e.max_weight_unscaled, 3)}</td><td>{fmt(e.entropy_unscaled, 2)}</td></tr>
</tbody></table>"""
