"""The query plane: keys as labelled points, the draggable query, and weight-width lines."""

from __future__ import annotations

import math

import panel as pn
import param
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, MultiLine, Range1d, Scatter, Text
from bokeh.plotting import figure

from widgets.format import token_color
from widgets.i18n import N_
from widgets.glyphs import draw
from widgets.state import AttentionState, show_step

#: Visible plane; drags beyond it are clamped to its edge so q never leaves the view.
PLANE = (-1.5, 2.5)
MAX_LINE_WIDTH = 14


def edge_point(x: float, y: float) -> tuple[tuple[float, float], float | None]:
    """Where the query plot draws q = (x, y): at q, or where the line from the plane's centre to q leaves the
    plane, with the angle (radians, counter-clockwise from up) of an arrow pointing on to q; None inside.

    >>> edge_point(0.0, 1.0)
    ((0.0, 1.0), None)
    >>> edge_point(5.0, 0.5)
    ((2.5, 0.5), -1.5707963267948966)
    """
    lo, hi = PLANE
    if lo <= x <= hi and lo <= y <= hi:
        return (x, y), None
    c = (lo + hi) / 2
    dx, dy = x - c, y - c
    t = min((hi - c) / abs(d) for d in (dx, dy) if d != 0)  # the first side the line crosses
    return (c + t * dx, c + t * dy), math.atan2(dy, dx) - math.pi / 2


class QueryPlot(pn.viewable.Viewer):
    """Keys k_i and the query q in the plane; drag or click anywhere to move q,
    or drag a key (starting on it) to move that key.

    The pointer is the page's drag script's (``widgets/drag.py``, ``static/drag.js``): it draws the drag
    and sends the server its positions one at a time. The figure has ``name="query-plot"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._keys = ColumnDataSource(data=dict(x=[], y=[], token=[], label=[], color=[]))
        # where q is drawn: at q, or, for a q outside the plane, an arrow at the plane's edge pointing to it
        self._query = ColumnDataSource(data=dict(x=[], y=[], label=[], marker=[], angle=[]))
        self._lines = ColumnDataSource(data=dict(xs=[], ys=[], width=[], color=[]))
        fig = figure(
            name="query-plot", title="",
            x_range=Range1d(*PLANE, bounds=PLANE), y_range=Range1d(*PLANE, bounds=PLANE),
            width=460, height=460, tools="save", toolbar_location="below",
            match_aspect=True,
        )
        fig.toolbar.logo = None
        fig.title.text_font_size = "16px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.major_label_text_font_size = "14px"
        weighted = draw(fig, MultiLine, self._lines, "xs", "ys", line_width="width", line_color="color",
                        line_alpha=0.55)
        # step-through: until step 2 every line has one width, so the picture does not give the weights away
        even = draw(fig, MultiLine, self._lines, "xs", "ys", line_width=3, line_color="color", line_alpha=0.55,
                    line_dash="dashed", level="underlay", visible=False)
        self._reveal = ([weighted], [even])
        draw(fig, Scatter, self._keys, "x", "y", size=16, color="color", marker="square")
        key_labels = draw(fig, Text, self._keys, "x", "y", text="label", x_offset=12, y_offset=-6,
                          text_font_size="15px", text_color="color", text_font_style="bold")
        draw(fig, Scatter, self._query, "x", "y", size=20, fill_color="white", line_color="black", line_width=4,
             marker="marker", angle="angle")
        q_label = draw(fig, Text, self._query, "x", "y", text="label", x_offset=-14, y_offset=16, text_align="right",
                       text_font_size="15px", text_font_style="bold")
        # projector mode: large labels name the points only (the coordinates are in the readout and the grid)
        self._labels = ((key_labels.glyph, "label", "token"), (q_label.glyph, "label", value("q")))
        self._titles = (N_("Drag q (or click to place it); drag a key to move it"), N_("Drag q, or a key"))
        self.figure = fig
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_keys, ["tokens", "keys"])
        self.state.param.watch(self._render_query, "plotted")
        self.state.param.watch(self._show_step, ["guided", "step"])
        self.state.param.watch(self._label_for_mode, ["mode", "lang"])
        self.state.param.watch(self._render_keys, "lang")
        self.state.param.watch(self._render_query, "lang")
        self._label_for_mode()
        self._render_keys()
        self._render_query()
        self._show_step()

    def _label_for_mode(self, *_):
        projector, tr = self.state.mode == "projector", self.state.tr
        for glyph, normal, large in self._labels:
            glyph.text = large if projector else normal
        self.figure.title.text = tr.in_plot(tr(self._titles[projector]))
        self.figure.xaxis.axis_label = tr.in_plot(tr._("dimension {n}", n=1))
        self.figure.yaxis.axis_label = tr.in_plot(tr._("dimension {n}", n=2))

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))

    def _render_keys(self, *_):
        s, K = self.state, self.state.keys
        self._keys.data = dict(
            x=K[:, 0].tolist(), y=K[:, 1].tolist(), token=list(s.tokens),
            color=[token_color(i) for i in range(len(s.tokens))],
            label=[f"{t} {s.tr.vec(k, 2, isolate=False, short=True)}" for t, k in zip(s.tokens, K)],
        )

    def _render_query(self, *_):
        s = self.state
        K, (qx, qy), w = s.keys, s.query, s.plotted.weights[s.selected]
        (x, y), angle = edge_point(qx, qy)
        self._query.data = dict(x=[x], y=[y], label=[f"q {s.tr.vec((qx, qy), 2, isolate=False)}"],
                                marker=["circle" if angle is None else "triangle"], angle=[angle or 0.0])
        self._lines.data = dict(
            xs=[[qx, k[0]] for k in K], ys=[[qy, k[1]] for k in K],
            width=(1 + (MAX_LINE_WIDTH - 1) * w).tolist(), color=[token_color(i) for i in range(len(K))],
        )

    def __panel__(self):
        return self._layout

