"""The selected query's weights as bars, and its output on the values' number line."""

from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, FixedTicker, Range1d
from bokeh.core.properties import value
from bokeh.plotting import figure

from widgets.format import fmt, fmt_short, fmt_vec, token_color
from widgets.state import AttentionState, show_step


class WeightBars(pn.viewable.Viewer):
    """One bar per key: the softmax weight a_i of the selected query, printed above it."""

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._bars = ColumnDataSource(data=dict(x=[], top=[], label=[], color=[]))
        fig = figure(name="weight-bars", title="Softmax weights a = softmax(s)", width=420, height=230,
                     y_range=Range1d(0, 1.18), tools="", toolbar_location=None)
        fig.title.text_font_size = "16px"
        fig.axis.major_label_text_font_size = "15px"
        fig.xgrid.visible = False
        fig.yaxis.ticker = FixedTicker(ticks=[0, 0.5, 1])
        bars = fig.vbar("x", top="top", width=0.7, source=self._bars, color="color")
        labels = fig.text("x", "top", text="label", source=self._bars, text_align="center", y_offset=-4,
                          text_font_size="16px", text_font_style="bold")
        # step-through: until step 2 a "?" stands where each bar will be
        hidden = fig.text("x", 0.5, text=value("?"), source=self._bars, text_align="center",
                          text_baseline="middle", text_font_size="28px", text_font_style="bold", visible=False)
        self._reveal = ([bars, labels], [hidden])
        self.figure = fig
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_axes, "tokens")
        self.state.param.watch(self._render, "plotted")
        self.state.param.watch(self._show_step, ["guided", "step"])
        self._render_axes()
        self._render()
        self._show_step()

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))

    def _render_axes(self, *_):
        n = len(self.state.tokens)
        self.figure.x_range = Range1d(-0.6, n - 0.4)
        self.figure.xaxis.ticker = FixedTicker(ticks=list(range(n)))
        self.figure.xaxis.major_label_overrides = dict(enumerate(self.state.tokens))

    def _render(self, *_):
        w = self.state.plotted.weights[self.state.selected]
        self._bars.data = dict(x=list(range(len(w))), top=w.tolist(), label=[fmt(a) for a in w],
                               color=[token_color(i) for i in range(len(w))])

    def __panel__(self):
        return self._layout


class OutputLine(pn.viewable.Viewer):
    """The values v_i on a number line from min(v) to max(v), and the output Σ a_i v_i on it."""

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._values = ColumnDataSource(data=dict(x=[], y=[], label=[], color=[]))
        self._output = ColumnDataSource(data=dict(x=[], y=[], label=[]))
        fig = figure(name="output-line", title="Output = Σ aᵢ vᵢ on the values' number line", width=420,
                     height=170, y_range=Range1d(-1, 1.3), tools="", toolbar_location=None)
        fig.title.text_font_size = "16px"
        fig.xaxis.major_label_text_font_size = "14px"
        fig.yaxis.visible = False
        fig.grid.visible = False
        fig.outline_line_color = None
        fig.segment(x0="x", y0=-0.35, x1="x", y1=0.35, source=self._values, line_color="color", line_width=4)
        fig.text("x", 0.45, text="label", source=self._values, text_align="center", text_baseline="bottom",
                 text_font_size="15px", text_color="color", text_font_style="bold")
        marker = fig.scatter("x", "y", source=self._output, marker="triangle", size=22, color="black")
        label = fig.text("x", "y", text="label", source=self._output, text_align="center", text_baseline="top",
                         y_offset=14, text_font_size="16px", text_font_style="bold")
        # step-through: until step 3 the output is a "?" in the middle of the line
        self._hidden = ColumnDataSource(data=dict(x=[], y=[]))
        hidden = fig.text("x", "y", text=value("output = ?"), source=self._hidden, text_align="center",
                          text_baseline="middle", text_font_size="20px", text_font_style="bold", visible=False)
        self._reveal = ([marker, label], [hidden])
        self.figure = fig
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_values, ["tokens", "values"])
        self.state.param.watch(self._render_output, "plotted")
        self.state.param.watch(self._show_step, ["guided", "step", "values"])
        self._render_values()
        self._render_output()
        self._show_step()

    def _show_step(self, *_):
        v = np.asarray(self.state.values, dtype=float)
        self._hidden.data = dict(x=[(float(v.min()) + float(v.max())) / 2], y=[-0.45])
        show_step(*self._reveal, self.state.revealed(3))

    def _render_values(self, *_):
        v, tokens = np.asarray(self.state.values, dtype=float), self.state.tokens
        if v.ndim != 1:  # vector values: ValuePlane shows them instead
            return
        pad = max(0.1 * float(np.ptp(v)), 0.5)
        self.figure.x_range = Range1d(float(v.min()) - pad, float(v.max()) + pad)
        self._values.data = dict(x=v.tolist(), y=[0.0] * len(v), color=[token_color(i) for i in range(len(v))],
                                 label=[f"v {t} = {fmt(x, 2).rstrip('0').rstrip('.')}" for t, x in zip(tokens, v)])

    def _render_output(self, *_):
        if np.ndim(self.state.values) != 1:
            return
        out = float(self.state.plotted.output[self.state.selected])
        self._output.data = dict(x=[out], y=[-0.45], label=[fmt(out)])

    def __panel__(self):
        return self._layout


class ValuePlane(pn.viewable.Viewer):
    """Vector values (d_v = 2): each v_i as an arrow from the origin, and the output Σ a_i v_i as a point.

    The output is a weighted average of the values, so it always lies inside the
    triangle (polygon) they span; each value's marker grows with its weight.
    The figure has ``name="value-plane"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._values = ColumnDataSource(data=dict(x=[], y=[], x0=[], y0=[], label=[], color=[], size=[]))
        self._output = ColumnDataSource(data=dict(x=[], y=[], label=[]))
        fig = figure(name="value-plane", title="Values vᵢ and the output Σ aᵢvᵢ", width=420, height=330,
                     x_range=Range1d(-1, 1), y_range=Range1d(-1, 1), tools="", toolbar_location=None)
        fig.title.text_font_size = "16px"
        fig.axis.major_label_text_font_size = "13px"
        fig.segment("x0", "y0", "x", "y", source=self._values, line_color="color", line_width=3, line_alpha=0.7)
        fig.scatter("x", "y", source=self._values, size="size", color="color", marker="square")
        fig.text("x", "y", text="label", source=self._values, x_offset=10, y_offset=-4, text_font_size="14px",
                 text_color="color", text_font_style="bold")
        fig.scatter("x", "y", source=self._output, marker="star", size=24, color="black")
        fig.text("x", "y", text="label", source=self._output, y_offset=-14, text_font_size="15px",
                 text_font_style="bold", text_align="center", text_baseline="bottom")
        self.figure = fig
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render, "plotted")
        self._render()

    def _render(self, *_):
        V = np.asarray(self.state.values, dtype=float)
        if V.ndim != 2 or V.shape[1] != 2:
            return
        w, tokens = self.state.plotted.weights[self.state.selected], self.state.tokens
        lo, hi = np.minimum(V.min(axis=0), 0), np.maximum(V.max(axis=0), 0)
        pad = np.maximum(0.25 * (hi - lo), 1.0)
        # labels are written to the right of each point: leave them room
        self.figure.x_range.update(start=float(lo[0] - pad[0]), end=float(hi[0] + 2.2 * pad[0]))
        self.figure.y_range.update(start=float(lo[1] - pad[1]), end=float(hi[1] + pad[1]))
        self._values.data = dict(
            x=V[:, 0].tolist(), y=V[:, 1].tolist(), x0=[0.0] * len(V), y0=[0.0] * len(V),
            color=[token_color(i) for i in range(len(V))], size=(8 + 16 * w).tolist(),
            label=[f"v {t} ({fmt_short(a)}, {fmt_short(b)})" for t, (a, b) in zip(tokens, V)],
        )
        out = self.state.plotted.output[self.state.selected]
        self._output.data = dict(x=[float(out[0])], y=[float(out[1])], label=[f"output {fmt_vec(out, 4)}"])

    def __panel__(self):
        return self._layout


class ValuesView(pn.viewable.Viewer):
    """The values' view that fits them: a number line for scalar values, the plane for 2-D vectors.

    Other value sizes are listed in the inspector and the matrix's output column.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self.line, self.plane = OutputLine(state=self.state), ValuePlane(state=self.state)
        # visibility is switched on wrapping columns: a Bokeh pane re-syncs its own
        # `visible` from the figure's, silently undoing a change made on the pane
        self._line_pane = pn.Column(self.line.__panel__(), margin=0)
        self._plane_pane = pn.Column(self.plane.__panel__(), margin=0)
        self._layout = pn.Column(self._line_pane, self._plane_pane, margin=0)
        self.state.param.watch(self._show, "values")
        self._show()

    def _show(self, *_):
        ndim = np.ndim(self.state.values)
        self._line_pane.visible = ndim == 1
        self._plane_pane.visible = ndim == 2 and np.shape(self.state.values)[1] == 2
        if ndim == 1:
            self.line._render_values()
            self.line._render_output()
        else:
            self.plane._render()

    def __panel__(self):
        return self._layout
