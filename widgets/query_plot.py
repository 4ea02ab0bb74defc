"""The query plane: keys as labelled points, the draggable query, and weight-width lines."""

from __future__ import annotations

import math

import numpy as np
import param
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, MultiLine, Scatter, SingleIntervalTicker, Text
from bokeh.plotting import figure

from link.rules import PLANE, line_width
from link.shown import PlotsShown
from session.i18n import N_
from widgets.base import BokehPane, View
from widgets.glyphs import draw, show_step, true_units
from widgets.style import token_color


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


#: Screen px from a point to its label, by mode: (across, up) for a key's; a projector's markers are larger.
LABEL_OFFSETS = {"normal": (12, 6), "projector": (18, 10)}
#: Where a key's label may go: right and up first, as (x, y) signs in the plane.
SIDES = ((1, 1), (-1, 1), (1, -1), (-1, -1))


def label_sides(points, among, bounds: tuple[float, float] | None = None) -> np.ndarray:
    """The side each of ``points`` : (m, 2) has its label on (signs of x and y, (m, 2) ints): the one facing away
    from the points of ``among`` : (n, 2) (a point of ``among`` on the labelled point itself does not count).

    For each of :data:`SIDES`, each other point counts by how squarely it lies in that direction, and more the
    nearer it is; the lower left counts a little too, since q's own label sits there when q is on a key; a side
    whose label would run past the plane's edge (``bounds``, default :data:`PLANE`) counts as much as a key in
    the way. The least crowded side wins, the first of :data:`SIDES` on a tie. Every point at once: a release
    of the Projections tab's drag places fourteen labels, and a Python loop per point and side runs for each of them.

    >>> keys = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])   # I, love, NLP
    >>> label_sides(keys, keys).tolist()
    [[1, -1], [-1, 1], [1, 1]]
    """
    P = np.asarray(points, dtype=float).reshape(-1, 2)
    A = np.asarray(among, dtype=float).reshape(-1, 2)
    S = np.array(SIDES, dtype=float)  # (4, 2)
    d = A[None, :, :] - P[:, None, :]  # (m, n, 2): from each labelled point to each other
    dist = np.hypot(d[..., 0], d[..., 1])
    away = dist > 0
    safe = np.where(away, dist, 1.0)
    toward = np.einsum("mnc,sc->msn", d, S) / (math.sqrt(2) * safe)[:, None, :]  # (m, 4, n)
    terms = np.where(away[:, None, :], np.maximum(0.0, toward) / np.maximum(safe, 0.1)[:, None, :], 0.0)
    corner = np.where((S == -1).all(axis=1), 0.05, 0.0)
    # a running sum, in order from the corner's share: the very sums (and ties) of adding them one at a time
    total = np.cumsum(np.concatenate([np.broadcast_to(corner[None, :, None], (len(P), 4, 1)), terms], axis=2),
                      axis=2)[..., -1]
    lo, hi = bounds or PLANE
    across, up = 0.7 * (hi - lo) / 4, 0.3 * (hi - lo) / 4  # a label's room, in the 4-unit plane's proportion
    x, y = P[:, :1], P[:, 1:]
    sx, sy = S[:, 0][None, :], S[:, 1][None, :]
    edge = ((sx > 0) & (x > hi - across)) | ((sx < 0) & (x < lo + across)) | ((sy > 0) & (y > hi - up)) | (
        (sy < 0) & (y < lo + up))
    total += 2.0 * edge
    return np.array(SIDES, dtype=int)[np.argmin(total, axis=1)]


class QueryPlot(View):
    """Keys k_i and the query q in the plane; drag or click anywhere to move q,
    or drag a key (starting on it) to move that key.

    The pointer is the page's drag script's (``link/drag.py``, ``link/drag.js``): it draws the drag
    and sends the server its positions one at a time. The figure has ``name="query-plot"``.
    """

    plots = param.ClassSelector(class_=PlotsShown, doc="What the plots show during a drag (link/shown.py).")

    def __init__(self, **params):
        super().__init__(**params)
        self.plots = self.plots or PlotsShown(state=self.state)
        self._keys = ColumnDataSource(data=dict(x=[], y=[], token=[], label=[], color=[], dx=[], dy=[], align=[],
                                                baseline=[]))
        # where q is drawn: at q, or, for a q outside the plane, an arrow at the plane's edge pointing to it
        self._query = ColumnDataSource(data=dict(x=[], y=[], label=[], marker=[], angle=[]))
        self._lines = ColumnDataSource(data=dict(xs=[], ys=[], width=[], color=[]))
        #: The sources the page's drag script draws a drag of q into (link/drag.py, link/drag.js).
        self.query_source, self.lines_source = self._query, self._lines
        fig = figure(name="query-plot", title="", width=460, height=460, tools="save", toolbar_location="below")
        # the plane at least, one unit as long across as up: the angles and lengths of a dot product are true
        true_units(fig, PLANE, PLANE)
        fig.toolbar.logo = None
        # a tick a unit, a grid line every half: nine labels of 20 px collide on a 300 px phone or projector plot
        for axis in (fig.xaxis, fig.yaxis):
            axis.ticker = SingleIntervalTicker(interval=1, num_minor_ticks=2)
        fig.grid.minor_grid_line_color = "#d9d9d9"
        fig.grid.minor_grid_line_alpha = 0.6
        fig.title.text_font_size = "16px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.major_label_text_font_size = "14px"
        # opaque: at 55 % the blue line was 1.9:1 on the dark plane and 2.3:1 on the light one (3:1 is the least
        # for a line one has to see, WCAG 1.4.11)
        weighted = draw(fig, MultiLine, self._lines, "xs", "ys", line_width="width", line_color="color")
        # step-through: until step 2 every line has one width, so the picture does not give the weights away
        even = draw(fig, MultiLine, self._lines, "xs", "ys", line_width=3, line_color="color",
                    line_dash="dashed", level="underlay", visible=False)
        self._reveal = ([weighted], [even])
        draw(fig, Scatter, self._keys, "x", "y", size=16, color="color", marker="square")
        key_labels = draw(fig, Text, self._keys, "x", "y", text="label", x_offset="dx", y_offset="dy",
                          text_align="align", text_baseline="baseline", text_font_size="15px", text_color="color",
                          text_font_style="bold")
        draw(fig, Scatter, self._query, "x", "y", size=20, fill_color="white", line_color="black", line_width=4,
             marker="marker", angle="angle")
        q_label = draw(fig, Text, self._query, "x", "y", text="label", x_offset=-14, y_offset=8, text_align="right",
                       text_baseline="top", text_font_size="15px", text_font_style="bold")
        # labels name the points only: a key's coordinates beside its name ran into the next key's label and
        # off the plot on a narrow screen (they are in the readout, the grid and the Edit tab); each mode keeps
        # its label clear of its own, larger or smaller, markers (screen px: offsets, then q's)
        self._q_label = q_label.glyph
        key_labels.glyph.text, q_label.glyph.text = "token", value("q")
        self._titles = (N_("Drag q (or click); drag a key"), N_("Drag q, or a key"))
        self.figure = fig
        self._layout = BokehPane(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_keys, ["tokens", "keys"])
        self.plots.param.watch(self._render_query, "result")
        self.state.param.watch(self._show_step, ["guided", "step"])
        self.state.param.watch(self._label_for_mode, ["mode", "lang"])  # and the keys' labels
        self.state.param.watch(self._render_query, "lang")
        self.state.param.watch(self._mark_values, "values")
        self._mark_values()
        self._label_for_mode()
        self._render_query()
        self._show_step()

    def _label_for_mode(self, *_):
        projector, tr = self.state.mode == "projector", self.state.tr
        dx, dy = LABEL_OFFSETS[self.state.mode]
        # left of q and wholly below its centre: a key one unit beside q (true units leave a small projector's
        # plane 34 px a unit) keeps its marker clear of it
        self._q_label.update(x_offset=-dx - 2, y_offset=dy + 2)
        self.figure.title.text = tr.in_plot(tr(self._titles[projector]))
        self.figure.xaxis.axis_label = tr.in_plot(tr._("dimension {n}", n=1))
        self.figure.yaxis.axis_label = tr.in_plot(tr._("dimension {n}", n=2))
        self._render_keys()

    def _mark_values(self, *_):
        """Mark the figure ``vector-values`` while the values are vectors (d_v > 1): static/app.css then leaves the
        readout under the plot a line more for its Output line, whose vector value wraps in a narrow column."""
        classes = [c for c in self.figure.css_classes if c != "vector-values"]
        classes += ["vector-values"] if self.state.d_v > 1 else []
        if classes != self.figure.css_classes:  # an edited value keeps its kind: nothing to send
            self.figure.css_classes = classes

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))

    def _render_keys(self, *_):
        s, K = self.state, self.state.keys
        mx, my = LABEL_OFFSETS[s.mode]
        sides = label_sides(K, K).tolist()
        self._keys.data = dict(
            x=K[:, 0].tolist(), y=K[:, 1].tolist(), token=list(s.tokens),
            color=[token_color(i) for i in range(len(s.tokens))],
            label=[f"{s.tr.name_in_plot(t)} {s.tr.vec(k, 2, isolate=False, short=True)}"
                   for t, k in zip(s.tokens, K, strict=True)],
            dx=[mx * sx for sx, _ in sides], dy=[-my * sy for _, sy in sides],  # screen y runs down
            align=["left" if sx > 0 else "right" for sx, _ in sides],
            baseline=["bottom" if sy > 0 else "top" for _, sy in sides],
        )

    def _render_query(self, *_):
        s = self.state
        K, (qx, qy), w = s.keys, s.query, self.plots.result.weights[s.selected]
        (x, y), angle = edge_point(qx, qy)
        self._query.data = dict(x=[x], y=[y], label=[f"q {s.tr.vec((qx, qy), 2, isolate=False)}"],
                                marker=["circle" if angle is None else "triangle"], angle=[angle or 0.0])
        self._lines.data = dict(
            xs=[[qx, k[0]] for k in K], ys=[[qy, k[1]] for k in K],
            width=line_width(w).tolist(), color=[token_color(i) for i in range(len(K))],
        )
