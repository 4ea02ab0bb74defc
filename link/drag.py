"""The server's end of the drag of q (and of a key), under the drag's contract (``link/__init__.py``).

Particular to this drag: the press decides what it moves (q, or a key within :data:`GRAB_RADIUS`), the page
draws only a drag of q, and during one the server's numbers reach the page as the readout's text while the
plots keep the page's drawing until the release (:class:`link.shown.PlotsShown`). A page following a presenter
previews the presenter's query the same way (``widgets/room.py``); the presenter's hand is :attr:`DragChannel.hand`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import param
from bokeh.models import CustomJS

from link.channel import PositionChannel
from link.row import OneRow
from link.rules import (
    INK_THRESHOLD,
    MAX_LINE_WIDTH,
    PLACEHOLDER,
    PLANE,
    VALUE_SIZE,
    cell_decimals,
    readout_script_words,
)
from link.shown import PlotsShown
from link.updates import one_message
from session.state import AttentionState

HERE = Path(__file__).resolve().parent
#: The page's JavaScript: the formula, the helpers both drags share, the outbox, then the drag. Read once.
DRAG_JS = "\n".join((HERE / name).read_text() for name in ("attention.js", "shared.js", "outbox.js", "drag.js"))
#: A drag that starts this close to a key (in data units, ~12 px) moves that key,
#: unless the query is at least as close: q wins ties, since it sits on its own key.
GRAB_RADIUS = 0.12


def grab(keys, query, at, radius: float = GRAB_RADIUS) -> int | None:
    """The key a press at ``at`` picks up: the index of the nearest of ``keys`` (n, 2) within ``radius``, unless
    ``query`` is at least as close; None for the query. The page decides the same way (``link/shared.js``,
    nearestWithin; ``tests/js/`` checks it on cases this function writes).

    >>> grab([(1, 0), (0, 1), (1, 1)], (0, 1), (1.05, 0.02)), grab([(1, 0), (0, 1), (1, 1)], (0, 1), (0, 1.05))
    (0, None)
    """
    K = np.asarray(keys, dtype=float)
    d_keys = np.hypot(K[:, 0] - at[0], K[:, 1] - at[1])
    j = int(np.argmin(d_keys))
    d_query = float(np.hypot(query[0] - at[0], query[1] - at[1]))
    return j if d_keys[j] <= radius and d_keys[j] < d_query else None


class DragChannel(PositionChannel):
    """The server's end of the page's drag, and the data the page's drag script reads.

    ``channel`` is a :class:`OneRow` the page writes one position at a time: ``x``, ``y``
    (data units of the query plot, already clamped to its plane), ``seq`` (1, 2, … per page), ``start``
    (the press) and ``end`` (the release; a tap is both). :meth:`receive` takes each.

    ``confirmed`` is a :class:`OneRow` with the query (``x``, ``y``) of the server's latest
    numbers and ``seq``, the last position it has answered. It is written with every result and every
    answer: the page sends its next position once ``seq`` reaches the one in flight; it tells which
    position the readout's text from the server is for, and which q a press grabs (as the server
    decides it).

    ``inputs`` is a :class:`OneRow` holding what the computation depends on besides q:
    K : (n, d_k), V as (n, d_v) rows, tokens, the selected row's mask row, scaling, and which recipe
    steps the step-through has revealed. It changes only when one of those does, never during a drag.

    The views it drives are given by whoever builds the page (``app.py``), so that ``link/`` never imports a view:
    ``query_plot`` (``widgets/query_plot.py``'s ``QueryPlot``: its ``plots``, ``figure``, ``query_source`` and
    ``lines_source``), ``readout`` (``widgets/steps.py``'s ``Readout``: its ``div``) and ``bars``
    (``widgets/weights.py``'s ``WeightBars``: its ``div``).

    ``live`` is a :class:`OneRow` that only the room controls write (``widgets/room.py``):
    ``room``, the code of the room whose live channel the page follows ("" for none), ``path``, the
    channel's URL path, ``ticket``, the page's own ticket for it (``server/room_live.py``), and ``version``,
    the room's view that the server's numbers on the page show.
    The page previews each query the channel brings for a later view.
    """

    state = param.ClassSelector(class_=AttentionState)
    hand = param.NumericTuple(default=None, allow_None=True, length=2, doc=(
        "Where the page's drag has moved q to (key units, clamped to the plot), as each position arrives: "
        "ahead of the state, which takes them paced. A presented room sends it to its followers at once "
        "(widgets/room.py); nothing else reads it."))

    def __init__(self, query_plot, readout, bars, **params):
        super().__init__(**params)
        #: What the page's plots show (link/shown.py): this channel holds it from the press of a drag of q to its
        #: release, the time the page draws the drag itself.
        self.plots: PlotsShown = query_plot.plots
        self.inputs = OneRow(data=self._inputs(), name="drag-inputs")
        self.live = OneRow(data=dict(room=[""], version=[0], path=[""], ticket=[""]), name="live-room")
        self._answered = 0  # seq of the last position taken
        self.confirmed = OneRow(data=self._confirmed(), name="drag-confirmed")
        self._open_channel("drag-channel")  # _pending: (target, x, y, seq) not yet taken
        self._target = None  # None: the query; an int: the key being dragged
        self._release = False
        # the views on the page from the start; the script finds the others by name when they are built
        # (the values' number line or plane, the matrix: widgets/weights.py, widgets/matrix.py)
        models = dict(
            inputs=self.inputs, confirmed=self.confirmed, channel=self.channel, query=query_plot.query_source,
            lines=query_plot.lines_source, bars=bars.div, readout=readout.div, figure=query_plot.figure, live=self.live,
        )
        # One callback for what the server sends (the readout's text, the query's position, the answers, a
        # followed presenter's query); the first of them also attaches the script's own pointer listeners to the
        # query plot (link/drag.js: attach). One: the script is the page's largest of its own (its size:
        # bench/RESULTS.md), and each callback is a copy of it in every page the server builds and sends.
        bundle = "const a = {" + ", ".join(models) + "};\n"
        script = CustomJS(args=models, code=DRAG_JS + bundle + "onServerUpdate(a, cb_obj);")
        readout.div.js_on_change("text", script)
        query_plot.query_source.js_on_change("data", script)
        self.confirmed.js_on_change("data", script)
        self.live.js_on_change("data", script)
        # BokehJS sets the plot's inner size once it has laid the plot out, in any page: the drag takes the pointer
        # then, also where no update from Python comes first (a notebook's saved output, a kernel not yet busy)
        query_plot.figure.js_on_change("inner_width", script)
        # guided and step: the step-through hides numbers of steps not reached yet, so the preview must too
        self.state.param.watch(self._sync, ["tokens", "keys", "values", "selected", "scale", "causal", "guided",
                                            "step", "mode", "lang"])
        self.state.param.watch(self._confirm, "result")

    # --- what the page's script reads ---------------------------------------------------------------------------

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
            words=[readout_script_words(s.lang)],
            plane=[list(PLANE)], grab=[GRAB_RADIUS], max_width=[MAX_LINE_WIDTH], value_size=[list(VALUE_SIZE)],
            ink_threshold=[INK_THRESHOLD],
            cell_decimals=[cell_decimals(s.mode)],
        )

    def _sync(self, *_):
        self.inputs.data = self._inputs()

    def _confirmed(self) -> dict:
        x, y = self.state.query
        return dict(x=[float(x)], y=[float(y)], seq=[self._answered])

    def _confirm(self, *_):
        confirmed = self._confirmed()
        if confirmed != dict(self.confirmed.data):
            self.confirmed.data = confirmed

    # --- the server's end of the channel ----------------------------------------------------------------------

    def receive(self, x: float, y: float, *, seq: int = 0, start: bool = False, end: bool = False) -> None:
        """Take one position of the page's drag: ``(x, y)`` in data units, its ``seq``, the press, the release.

        The press decides what the drag moves: a key within :data:`GRAB_RADIUS` of it (unless q is at least
        as close), else q; a tap (press and release at once) always moves q. Positions are clamped to the
        plot's plane. They are taken paced: after each update the session waits as long as that update
        took, so a page that ignores the one-at-a-time rule gets one update per interval, the newest; the
        release is taken at once, so anything the page sends after it (a key, a click) comes after it. While many
        pages drag, mid-drag updates are spaced further, so that together with their receiving they leave the
        server's loop about half free for clicks, keys and releases (``services/pacing.py``).
        Each position taken is answered in ``confirmed`` (``seq``). A page's positions are finite (the channel
        drops any other: ``link/channel.py``); a caller's NaN reaches the state, which refuses it with a message.
        """
        finite = math.isfinite(x) and math.isfinite(y)
        if start:
            self._target = None if end else self._grab(x, y)
            self._release = False
            if not end:
                self._drag_started()
            # the page draws a drag of q itself, not a drag of a key
            self.plots.previewing = self._target is None and finite and not end
        lo, hi = PLANE
        self._pending = (self._target, min(max(x, lo), hi), min(max(y, lo), hi), seq)
        if self._target is None and finite:  # clamping keeps a coordinate finite or not
            self.hand = self._pending[1:3]
        if end:
            self._release = True
            self._target = None
            self._drag_ended()
        self._schedule(end)

    def _take(self, pending) -> None:
        target, x, y, seq = pending
        with one_message():
            self._answered = max(self._answered, seq)
            if target is None:
                if self._release:  # the hand let go: this last position ends the preview
                    self.state.move_query(x, y)
                else:
                    with self.plots.drag_move():
                        self.state.move_query(x, y)
            elif target < len(self.state.tokens):
                self.state.move_key(target, x, y)
            if self._release:  # the hand let go: this last position ends the drag, in the same message
                self._release = self.plots.previewing = False
            self._confirm()  # the answer, also when nothing moved

    def _grab(self, x: float, y: float) -> int | None:
        """The key a drag starting at (x, y) picks up, or None for the query."""
        return grab(self.state.keys, self.state.query, (x, y))
