"""The query plane: keys as labelled points, the draggable query, and weight-width lines."""

from __future__ import annotations

import math
import numbers
import time

import numpy as np
import panel as pn
import param
from bokeh import events
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure

from widgets.format import fmt_short, fmt_vec, token_color
from widgets.state import AttentionState, show_step

#: Visible plane; drags beyond it are clamped to its edge so q never leaves the view.
PLANE = (-1.5, 2.5)
MAX_LINE_WIDTH = 14
#: A drag that starts this close to a key (in data units, ~12 px) moves that key,
#: unless the query is at least as close: q wins ties, since it sits on its own key.
GRAB_RADIUS = 0.12


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

    Pointer to server: Bokeh's ``Pan`` event reaches the server on every pointer move
    while the button is held (``PointDrawTool`` would only sync on release).
    Pending positions are coalesced so the server is never more than one
    position behind the hand. The figure has ``name="query-plot"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")
    hand = param.NumericTuple(default=None, allow_None=True, length=2, doc=(
        "Where the pointer has moved q to (key units, clamped to the plot), as each move arrives: ahead of "
        "the state, which takes the moves paced. A presented room sends it to its followers at once "
        "(widgets/follow.py); nothing else reads it."))

    def __init__(self, **params):
        super().__init__(**params)
        self._keys = ColumnDataSource(data=dict(x=[], y=[], token=[], label=[], color=[]))
        # where q is drawn: at q, or, for a q outside the plane, an arrow at the plane's edge pointing to it
        self._query = ColumnDataSource(data=dict(x=[], y=[], label=[], marker=[], angle=[]))
        self._lines = ColumnDataSource(data=dict(xs=[], ys=[], width=[], color=[]))
        fig = figure(
            name="query-plot", title="Drag q (or click to place it); drag a key to move it",
            x_range=Range1d(*PLANE, bounds=PLANE), y_range=Range1d(*PLANE, bounds=PLANE),
            width=460, height=460, tools="save", toolbar_location="below",
            x_axis_label="dimension 1", y_axis_label="dimension 2", match_aspect=True,
        )
        fig.toolbar.logo = None
        fig.title.text_font_size = "16px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.major_label_text_font_size = "14px"
        weighted = fig.multi_line("xs", "ys", source=self._lines, line_width="width", line_color="color",
                                  line_alpha=0.55)
        # step-through: until step 2 every line has one width, so the picture does not give the weights away
        even = fig.multi_line("xs", "ys", source=self._lines, line_width=3, line_color="color", line_alpha=0.55,
                              line_dash="dashed", level="underlay", visible=False)
        self._reveal = ([weighted], [even])
        fig.scatter("x", "y", source=self._keys, size=16, color="color", marker="square")
        key_labels = fig.text("x", "y", text="label", source=self._keys, x_offset=12, y_offset=-6,
                              text_font_size="15px", text_color="color", text_font_style="bold")
        fig.scatter("x", "y", source=self._query, size=20, fill_color="white", line_color="black",
                    line_width=4, marker="marker", angle="angle")
        q_label = fig.text("x", "y", text="label", source=self._query, x_offset=-14, y_offset=16, text_align="right",
                           text_font_size="15px", text_font_style="bold")
        # projector mode: large labels name the points only (the coordinates are in the readout and the grid)
        self._labels = ((key_labels.glyph, "label", "token"), (q_label.glyph, "label", value("q")))
        self._titles = (fig.title.text, "Drag q, or a key")
        for ev in (events.Tap, events.PanStart, events.Pan):
            fig.on_event(ev, self._on_pointer)
        fig.on_event(events.PanEnd, self._on_pan_end)
        self.figure = fig
        self._pending = None
        self._target = None  # None: the query; an int: the key being dragged
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_keys, ["tokens", "keys"])
        self.state.param.watch(self._render_query, "plotted")
        self.state.param.watch(self._show_step, ["guided", "step"])
        self.state.param.watch(self._label_for_mode, "mode")
        self._label_for_mode()
        self._render_keys()
        self._render_query()
        self._show_step()

    def _label_for_mode(self, *_):
        projector = self.state.mode == "projector"
        for glyph, normal, large in self._labels:
            glyph.text = large if projector else normal
        self.figure.title.text = self._titles[projector]

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))

    def _on_pointer(self, event) -> None:
        # a browser always sends two numbers; anything else is a hostile or broken client, ignored here
        # (NaN passes, and move_query refuses it with a message)
        if not all(isinstance(c, numbers.Real) and not isinstance(c, bool) for c in (event.x, event.y)):
            return
        finite = math.isfinite(event.x) and math.isfinite(event.y)
        if isinstance(event, events.PanStart):
            self._target = self._grab(event.x, event.y)
            # the page draws a drag of q itself (widgets/preview.py), not a drag of a key
            self._release = False
            self.state.previewing = self._target is None and finite
        elif isinstance(event, events.Tap):
            self._target = None
            self._release = True  # the page previews a tap and lets go at once
        lo, hi = PLANE
        self._pending = (self._target, min(max(event.x, lo), hi), min(max(event.y, lo), hi))
        if self._target is None and finite:  # clamping keeps a coordinate finite or not
            self.hand = self._pending[1:]
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            # Pacing: after each update a session waits as long as that update took from request to
            # done (its own cost plus the wait behind other sessions), and at least MIN_GAP. Moves
            # arriving meanwhile only replace the pending one. So the more crowded the server, the fewer
            # stale positions each session renders: a full class, or one client flooding events, drains
            # its queue of cheap pointer messages instead, and the newest position always lands.
            self._requested = time.perf_counter()
            wait = self._next_flush - self._requested
            if wait > 0:
                doc.add_timeout_callback(self._flush, max(1, round(wait * 1000)))
            else:
                doc.add_next_tick_callback(self._flush)

    _flush_scheduled = False
    _next_flush = _requested = 0.0
    #: Shortest time between two server updates of one session (the preview in the page fills the gaps).
    MIN_GAP = 1 / 60

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._pending is None:
            return
        target, x, y = self._pending
        self._pending = None
        start = time.perf_counter()
        with pn.io.hold():
            if target is None:
                self.state.move_query(x, y, drag=True)
            elif target < len(self.state.tokens):
                self.state.move_key(target, x, y)
            if self._release:  # the hand let go before this last position was drawn: one message for both
                self._release = self.state.previewing = False
        end = time.perf_counter()
        self._next_flush = end + max(self.MIN_GAP, end - min(start, self._requested))

    _release = False

    def _on_pan_end(self, event) -> None:
        # a pending move keeps its own target, so ending the drag here loses nothing
        self._target = None
        if self._flush_scheduled:
            self._release = True
        else:
            with pn.io.hold():
                self.state.previewing = False

    def _grab(self, x: float, y: float) -> int | None:
        """The key a drag starting at (x, y) picks up, or None for the query."""
        K = np.asarray(self.state.keys, dtype=float)
        d_keys = np.hypot(K[:, 0] - x, K[:, 1] - y)
        j = int(np.argmin(d_keys))
        d_query = float(np.hypot(self.state.query[0] - x, self.state.query[1] - y))
        return j if d_keys[j] <= GRAB_RADIUS and d_keys[j] < d_query else None

    def _render_keys(self, *_):
        s, K = self.state, self.state.keys
        self._keys.data = dict(
            x=K[:, 0].tolist(), y=K[:, 1].tolist(), token=list(s.tokens),
            color=[token_color(i) for i in range(len(s.tokens))],
            label=[f"{t} ({', '.join(fmt_short(c, 2) for c in k)})" for t, k in zip(s.tokens, K)],
        )

    def _render_query(self, *_):
        s = self.state
        K, (qx, qy), w = s.keys, s.query, s.plotted.weights[s.selected]
        (x, y), angle = edge_point(qx, qy)
        self._query.data = dict(x=[x], y=[y], label=[f"q {fmt_vec((qx, qy), 2)}"],
                                marker=["circle" if angle is None else "triangle"], angle=[angle or 0.0])
        self._lines.data = dict(
            xs=[[qx, k[0]] for k in K], ys=[[qy, k[1]] for k in K],
            width=(1 + (MAX_LINE_WIDTH - 1) * w).tolist(), color=[token_color(i) for i in range(len(K))],
        )

    def __panel__(self):
        return self._layout

