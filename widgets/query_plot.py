"""The query plane: keys as labelled points, the draggable query, and weight-width lines."""

from __future__ import annotations

import panel as pn
import param
from bokeh import events
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure

from widgets.format import fmt_vec, token_color
from widgets.state import AttentionState, show_step

#: Visible plane; drags beyond it are clamped to its edge so q never leaves the view.
PLANE = (-1.5, 2.5)
MAX_LINE_WIDTH = 14


class QueryPlot(pn.viewable.Viewer):
    """Keys k_i and the query q in the plane; drag or click anywhere to move q.

    Live channel: Bokeh's ``Pan`` event reaches the server on every pointer move
    while the button is held (``PointDrawTool`` would only sync on release).
    Pending positions are coalesced so the server is never more than one
    position behind the hand. The figure has ``name="query-plot"``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        self._keys = ColumnDataSource(data=dict(x=[], y=[], token=[], label=[], color=[]))
        self._query = ColumnDataSource(data=dict(x=[], y=[], label=[]))
        self._lines = ColumnDataSource(data=dict(xs=[], ys=[], width=[], color=[]))
        fig = figure(
            name="query-plot", title="Drag the query q (or click to place it)",
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
                    line_width=4, marker="circle")
        q_label = fig.text("x", "y", text="label", source=self._query, x_offset=-14, y_offset=16, text_align="right",
                           text_font_size="15px", text_font_style="bold")
        # projector mode: large labels name the points only (the coordinates are in the readout and the grid)
        self._labels = ((key_labels.glyph, "label", "token"), (q_label.glyph, "label", value("q")))
        for ev in (events.Tap, events.PanStart, events.Pan):
            fig.on_event(ev, self._on_pointer)
        self.figure = fig
        self._pending = None
        self._layout = pn.pane.Bokeh(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_keys, ["tokens", "keys"])
        self.state.param.watch(self._render_query, "result")
        self.state.param.watch(self._show_step, ["guided", "step"])
        self.state.param.watch(self._label_for_mode, "mode")
        self._label_for_mode()
        self._render_keys()
        self._render_query()
        self._show_step()

    def _label_for_mode(self, *_):
        for glyph, normal, projector in self._labels:
            glyph.text = projector if self.state.mode == "projector" else normal

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))

    def _on_pointer(self, event) -> None:
        if event.x is None or event.y is None:
            return
        lo, hi = PLANE
        self._pending = (min(max(event.x, lo), hi), min(max(event.y, lo), hi))
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            doc.add_next_tick_callback(self._flush)

    _flush_scheduled = False

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._pending is None:
            return
        x, y = self._pending
        self._pending = None
        with pn.io.hold():
            self.state.move_query(x, y)

    def _render_keys(self, *_):
        s, K = self.state, self.state.keys
        self._keys.data = dict(
            x=K[:, 0].tolist(), y=K[:, 1].tolist(), token=list(s.tokens),
            color=[token_color(i) for i in range(len(s.tokens))],
            label=[f"{t} {fmt_vec(k, 0)}" for t, k in zip(s.tokens, K)],
        )

    def _render_query(self, *_):
        s = self.state
        K, (qx, qy), w = s.keys, s.query, s.result.weights[s.selected]
        self._query.data = dict(x=[qx], y=[qy], label=[f"q {fmt_vec((qx, qy), 2)}"])
        self._lines.data = dict(
            xs=[[qx, k[0]] for k in K], ys=[[qy, k[1]] for k in K],
            width=(1 + (MAX_LINE_WIDTH - 1) * w).tolist(), color=[token_color(i) for i in range(len(K))],
        )

    def __panel__(self):
        return self._layout

