"""The in-browser drag preview: numbers follow the hand at any network distance.

During a drag the browser computes the selected query's scores, weights and output
itself (``static/attention.js``, a line-by-line mirror of ``core.attention``) and
redraws the query, the lines, the bars, the output marker, the matrix row and the
readout on the pointer's own event. The server still receives every coalesced
position and recomputes with the NumPy core; its numbers replace the preview when
they arrive, and the inspector, exports and URL use only them. During the drag they
arrive as the readout's text (with ``confirmed``, the position they are for); the
plots' data, which the page has drawn with the same numbers, follow at the release
(``AttentionState.plotted``): repainting every plot for each server update cost the
page 20–36 ms, long enough to hold back the hand's next move.

A page following a presenter (``widgets/follow.py``) previews the same way: while the
presenter drags, the page receives only the presenter's query, on the room's live channel
(``server/room_live.py``), and computes the rest; its server's numbers follow once the
presenter's hand rests.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import param
from bokeh.models import ColumnDataSource, CustomJS

from widgets.charts import ValuesView
from widgets.inspector import PLACEHOLDER, Readout
from widgets.matrix import AttentionMatrix
from widgets.query_plot import GRAB_RADIUS, MAX_LINE_WIDTH, PLANE, QueryPlot
from widgets.state import AttentionState

STATIC = Path(__file__).resolve().parent.parent / "static"
#: The preview's JavaScript: the formula, then the drawing. Read once; it never changes.
PREVIEW_JS = (STATIC / "attention.js").read_text() + "\n" + (STATIC / "preview.js").read_text()


class DragPreview(param.Parameterized):
    """Attaches the preview to one session's views and keeps its inputs in step with the state.

    ``inputs`` is a one-row ``ColumnDataSource`` holding what the computation depends on
    besides q: K : (n, d_k), V as (n, d_v) rows, tokens, the selected row's mask row,
    scaling, and which recipe steps the step-through has revealed. It changes only when one of
    those does, never during a drag.

    ``confirmed`` is a one-row ``ColumnDataSource`` with the query (``x``, ``y``) of the server's
    latest numbers. It is set with every result (Bokeh sends it when the position changed), also
    during a drag, when the plots' own data sources wait for the release
    (``AttentionState.plotted``). It tells the page which position the readout's text from the
    server is for, and which q a press grabs (as the server decides it).

    ``live`` is a one-row ``ColumnDataSource`` that only the room controls write
    (``widgets/follow.py``): ``room``, the code of the room whose live channel the page follows
    ("" for none), ``path``, the channel's URL path, and ``version``, the room's view that the
    server's numbers on the page show.
    The page previews each query the channel brings for a later view.
    """

    state = param.ClassSelector(class_=AttentionState)

    def __init__(self, query_plot: QueryPlot, values: ValuesView, matrix: AttentionMatrix,
                 readout: Readout, bars, **params):
        super().__init__(**params)
        self.inputs = ColumnDataSource(data=self._inputs())
        self.live = ColumnDataSource(data=dict(room=[""], version=[0], path=[""]), name="live-room")
        self.confirmed = ColumnDataSource(data=self._confirmed())
        models = dict(
            inputs=self.inputs, confirmed=self.confirmed, query=query_plot._query, lines=query_plot._lines,
            bars=bars._bars,
            line_out=values.line._output, plane_out=values.plane._output, plane_values=values.plane._values,
            cells=matrix._cells, sums=matrix._sums, outputs=matrix._outputs, readout=readout.div,
            figure=query_plot.figure, live=self.live,
        )
        bundle = "const a = {" + ", ".join(models) + "};\n"
        on_pointer = CustomJS(args=models, code=PREVIEW_JS + bundle + "onPointer(a, cb_obj);")
        for event in ("tap", "panstart", "pan", "panend"):
            query_plot.figure.js_on_event(event, on_pointer)
        # the server's readout text and its query position, whichever of the two arrives first, and
        # a followed presenter's query (one callback: each carries the whole preview script)
        on_server = CustomJS(args=models, code=PREVIEW_JS + bundle + "onServerUpdate(a, cb_obj);")
        readout.div.js_on_change("text", on_server)
        query_plot._query.js_on_change("data", on_server)
        self.confirmed.js_on_change("data", on_server)
        self.live.js_on_change("data", on_server)
        # guided and step: the step-through hides numbers of steps not reached yet, so the preview must too
        self.state.param.watch(self._sync, ["tokens", "keys", "values", "selected", "scale", "causal", "guided",
                                            "step"])
        self.state.param.watch(self._confirm, "result")

    def _inputs(self) -> dict:
        s = self.state
        V = np.asarray(s.values, dtype=float)
        i = s.selected
        return dict(
            keys=[np.asarray(s.keys, dtype=float).tolist()],
            values=[(V[:, None] if V.ndim == 1 else V).tolist()],
            tokens=[list(s.tokens)],
            allowed=[s.result.mask[i].tolist()],
            selected=[i], scale=[bool(s.scale)], scalar=[V.ndim == 1],
            revealed=[[s.revealed(step) for step in (1, 2, 3)]], placeholder=[PLACEHOLDER], guided=[bool(s.guided)],
            plane=[list(PLANE)], grab=[GRAB_RADIUS], max_width=[MAX_LINE_WIDTH],
        )

    def _sync(self, *_):
        self.inputs.data = self._inputs()

    def _confirmed(self) -> dict:
        x, y = self.state.query
        return dict(x=[float(x)], y=[float(y)])

    def _confirm(self, *_):
        self.confirmed.data = self._confirmed()
