"""The n x n self-attention matrix: a heatmap whose rows can be clicked."""

from __future__ import annotations

import panel as pn
import param
from bokeh import events
from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, LinearColorMapper, Range1d
from bokeh.core.properties import value
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from widgets.format import fmt
from widgets.state import AttentionState, show_step


class AttentionMatrix(pn.viewable.Viewer):
    """Heatmap of the weights a[i, j]: query i (row) attending to key j (column).

    Colours use the perceptually uniform, colour-blind-safe Cividis map on a
    fixed 0..1 scale, and every cell prints its weight, so colour is never the
    only cue. A last column prints each row's sum. Clicking anywhere in a row
    selects it (a plain ``Tap`` event, not a TapTool selection, so a second click
    never deselects). The figure has ``name="attention-matrix"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._cells = ColumnDataSource(data=dict(x=[], y=[], weight=[], label=[], text_color=[]))
        self._sums = ColumnDataSource(data=dict(x=[], y=[], label=[]))
        self._highlight = ColumnDataSource(data=dict(x=[], y=[], width=[]))
        mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        fig = figure(
            name="attention-matrix", title="Attention weights (click a row)",
            width=520, height=400, tools="save", toolbar_location="below",
            x_axis_label="key", y_axis_label="query", x_axis_location="above",
        )
        fig.toolbar.logo = None
        fig.title.text_font_size = "16px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.major_label_text_font_size = "15px"
        fig.grid.visible = False
        cells = fig.rect("x", "y", 1, 1, source=self._cells, fill_color={"field": "weight", "transform": mapper},
                         line_color="white", line_width=2)
        labels = fig.text("x", "y", text="label", source=self._cells, text_align="center", text_baseline="middle",
                          text_font_size="17px", text_color="text_color", text_font_style="bold")
        sums = fig.text("x", "y", text="label", source=self._sums, text_align="center", text_baseline="middle",
                        text_font_size="15px", text_color="#333333")
        fig.rect("x", "y", "width", 0.96, source=self._highlight, fill_alpha=0, line_color="#D55E00",
                 line_width=5)
        # step-through: until step 2 (normalise) the cells are grey and hold a "?"
        blank = fig.rect("x", "y", 1, 1, source=self._cells, fill_color="#c8c8c8", line_color="white", line_width=2,
                         level="underlay", visible=False)
        unknown = fig.text("x", "y", text=value("?"), source=self._cells, text_align="center",
                           text_baseline="middle", text_font_size="22px", text_color="#111111",
                           text_font_style="bold", visible=False)
        self._reveal = ([cells, labels, sums], [blank, unknown])
        fig.add_layout(ColorBar(color_mapper=mapper, ticker=FixedTicker(ticks=[0, 0.25, 0.5, 0.75, 1]),
                                major_label_text_font_size="13px", title="weight", width=16), "right")
        fig.on_event(events.Tap, self._on_tap)
        self.figure = fig
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_axes, "tokens")
        self.state.param.watch(self._render, "result")
        self.state.param.watch(self._show_step, ["guided", "step"])
        self._render_axes()
        self._render()
        self._show_step()

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))

    def _on_tap(self, event) -> None:
        if event.y is None:
            return
        row = round(event.y)
        if 0 <= row < len(self.state.tokens):
            with pn.io.hold():
                self.state.select_row(row)

    def _render_axes(self, *_):
        n, fig = len(self.state.tokens), self.figure
        fig.x_range = Range1d(-0.5, n + 0.5)  # one extra column for the row sums
        fig.y_range = Range1d(n - 0.5, -0.5)  # row 0 on top, as in a matrix
        names = {i: t for i, t in enumerate(self.state.tokens)}
        fig.xaxis.ticker = FixedTicker(ticks=list(range(n + 1)))
        fig.xaxis.major_label_overrides = {**names, n: "row sum"}
        fig.yaxis.ticker = FixedTicker(ticks=list(range(n)))
        fig.yaxis.major_label_overrides = names

    def _render(self, *_):
        w = self.state.result.weights
        n = w.shape[0]
        self._cells.data = dict(
            x=[j for i in range(n) for j in range(n)], y=[i for i in range(n) for _ in range(n)],
            weight=w.ravel().tolist(), label=[fmt(a) for a in w.ravel()],
            # Cividis is dark below ~0.55 and light above: pick the readable ink.
            text_color=["white" if a < 0.55 else "black" for a in w.ravel()],
        )
        self._sums.data = dict(x=[n] * n, y=list(range(n)), label=[fmt(s) for s in w.sum(axis=1)])
        self._highlight.data = dict(x=[(n - 1) / 2 + 0.5], y=[self.state.selected], width=[n + 1])

    def __panel__(self):
        return self._layout
