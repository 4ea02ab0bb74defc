"""The n x n self-attention matrix: a heatmap whose rows can be clicked."""

from __future__ import annotations

import math
import numbers

import numpy as np
import panel as pn
import param
from bokeh import events
from bokeh.core.properties import value
from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, LinearColorMapper, Range1d, Rect, Text
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from widgets.glyphs import draw
from widgets.state import AttentionState, show_step
from widgets.updates import one_message


class AttentionMatrix(pn.viewable.Viewer):
    """Heatmap of the weights a[i, j]: query i (row) attending to key j (column).

    Colours use the perceptually uniform, colour-blind-safe Cividis map on a
    fixed 0..1 scale, and every cell prints its weight, so colour is never the
    only cue. Cells a mask forbids are not weights: they are drawn light grey and
    hatched, labelled "masked", outside the colour scale. The last columns print
    each row's sum and its output Σ a_j v_j (a vector for vector values). Clicking anywhere in a row
    selects it (a plain ``Tap`` event, not a TapTool selection, so a second click
    never deselects). The figure has ``name="attention-matrix"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        # named: the page's drag script draws the selected row into them (static/drag.js)
        self._cells = ColumnDataSource(data=dict(x=[], y=[], weight=[], label=[], text_color=[]), name="matrix-cells")
        self._sums = ColumnDataSource(data=dict(x=[], y=[], label=[]), name="matrix-sums")
        self._masked = ColumnDataSource(data=dict(x=[], y=[], label=[]))
        self._outputs = ColumnDataSource(data=dict(x=[], y=[], label=[]), name="matrix-outputs")
        self._highlight = ColumnDataSource(data=dict(x=[], y=[], width=[]))
        mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        fig = figure(
            name="attention-matrix", title="",
            width=640, height=400, tools="save", toolbar_location="below",
            x_axis_location="above",
        )
        fig.toolbar.logo = None
        fig.title.text_font_size = "16px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.major_label_text_font_size = "15px"
        fig.grid.visible = False
        cells = draw(fig, Rect, self._cells, "x", "y", 1, 1, fill_color={"field": "weight", "transform": mapper},
                     line_color="white", line_width=2)
        labels = draw(fig, Text, self._cells, "x", "y", text="label", text_align="center", text_baseline="middle",
                      text_font_size="17px", text_color="text_color", text_font_style="bold")
        sums = draw(fig, Text, self._sums, "x", "y", text="label", text_align="center", text_baseline="middle",
                    text_font_size="15px", text_color="#333333")
        # level="overlay": the row outline stays on top of the masked cells drawn after it
        draw(fig, Rect, self._highlight, "x", "y", "width", 0.96, fill_alpha=0, line_color="#D55E00", line_width=5,
             level="overlay")
        draw(fig, Rect, self._masked, "x", "y", 1, 1, fill_color="#e6e6e6", hatch_pattern="/", hatch_color="#a0a0a0",
             hatch_scale=10, line_color="white", line_width=2, name="masked-cells")
        draw(fig, Text, self._masked, "x", "y", text="label", text_align="center", text_baseline="middle",
             text_font_size="14px", text_color="#444444", text_font_style="italic")
        outputs = draw(fig, Text, self._outputs, "x", "y", text="label", text_align="center", text_baseline="middle",
                       text_font_size="14px", text_color="#111111", text_font_style="bold", name="row-outputs")
        # step-through: until step 2 (normalise) the cells are grey and hold a "?"; outputs wait for step 3
        blank = draw(fig, Rect, self._cells, "x", "y", 1, 1, fill_color="#c8c8c8", line_color="white", line_width=2,
                     level="underlay", visible=False)
        unknown = draw(fig, Text, self._cells, "x", "y", text=value("?"), text_align="center", text_baseline="middle",
                       text_font_size="22px", text_color="#111111", text_font_style="bold", visible=False)
        self._reveal = ([cells, labels, sums], [blank, unknown])
        self._reveal_output = [outputs]
        self._colorbar = ColorBar(color_mapper=mapper, ticker=FixedTicker(ticks=[0, 0.25, 0.5, 0.75, 1]),
                                  major_label_text_font_size="13px", width=16)
        fig.add_layout(self._colorbar, "right")
        fig.on_event(events.Tap, self._on_tap)
        self.figure = fig
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_axes, ["tokens", "lang"])
        self.state.param.watch(self._render, ["plotted", "lang"])
        self.state.param.watch(self._show_step, ["guided", "step"])
        self._render_axes()
        self._render()
        self._show_step()

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))
        show_step(self._reveal_output, [], self.state.revealed(3))

    def _on_tap(self, event) -> None:
        # a browser sends a finite number; a broken or hostile client's NaN, inf or list is ignored
        if not isinstance(event.y, numbers.Real) or not math.isfinite(event.y):
            return
        row = round(event.y)
        if 0 <= row < len(self.state.tokens):
            with one_message():
                self.state.select_row(row)

    def _render_axes(self, *_):
        n, fig, tr = len(self.state.tokens), self.figure, self.state.tr
        fig.title.text = tr.in_plot(tr._("Attention weights (click a row)"))
        fig.xaxis.axis_label, fig.yaxis.axis_label = tr.in_plot(tr._("key")), tr.in_plot(tr._("query"))
        self._colorbar.title = tr.in_plot(tr._("weight"))
        # a tick's number, as the language writes it (0,25)
        self._colorbar.major_label_overrides = {t: tr.short(t) for t in (0, 0.25, 0.5, 0.75, 1)}
        fig.x_range = Range1d(-0.5, n + 2.9)  # extra columns: the row sums, then the (wider) outputs
        fig.y_range = Range1d(n - 0.5, -0.5)  # row 0 on top, as in a matrix
        names = {i: t for i, t in enumerate(self.state.tokens)}
        fig.xaxis.ticker = FixedTicker(ticks=[*range(n + 1), n + 1.7])
        fig.xaxis.major_label_overrides = {**names, n: tr._("row sum"), n + 1.7: tr._("output")}
        fig.yaxis.ticker = FixedTicker(ticks=list(range(n)))
        fig.yaxis.major_label_overrides = names

    def _render(self, *_):
        r, tr = self.state.plotted, self.state.tr
        w, n = r.weights, r.weights.shape[0]
        rows, cols = (a.ravel() for a in np.indices(w.shape))
        allowed = r.mask.ravel()
        ok = w.ravel()[allowed]
        self._cells.data = dict(
            x=cols[allowed].tolist(), y=rows[allowed].tolist(), weight=ok.tolist(), label=[tr.num(a) for a in ok],
            # Cividis is dark below ~0.55 and light above: pick the readable ink.
            text_color=["white" if a < 0.55 else "black" for a in ok],
        )
        self._masked.data = dict(x=cols[~allowed].tolist(), y=rows[~allowed].tolist(),
                                 label=[tr._("masked")] * int((~allowed).sum()))
        self._sums.data = dict(x=[n] * n, y=list(range(n)), label=[tr.num(s) for s in w.sum(axis=1)])
        out = r.output
        self._outputs.data = dict(x=[n + 1.7] * n, y=list(range(n)),
                                  label=[tr.num(o) if np.ndim(o) == 0 else tr.vec(o, 4, isolate=False) for o in out])
        self._highlight.data = dict(x=[(n + 2.35) / 2], y=[self.state.selected], width=[n + 3.35])

    def __panel__(self):
        return self._layout
