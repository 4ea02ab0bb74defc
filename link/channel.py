"""The server's end of a drag that the page sends one position at a time (``link/outbox.js``), under the
drag's contract (``link/__init__.py``).

Two drags use it: the query's (:class:`link.drag.DragChannel`) and the Projections tab's
(:class:`link.projections.ProjectionChannel`), so a position costs the server the same in either. Particular to
this file: a row the page writes is checked before anything reads it (a position that is not a finite number is
dropped, said once a page in the log); positions are taken paced (the newest
position wins, and after each update the session waits as long as it took, at least
:attr:`PositionChannel.MIN_GAP`: ``services/pace.py``), mid-drag updates also count against the process's share
(``services/pacing.py``), and the release is taken at once.
"""

from __future__ import annotations

import logging
import math
import time

import panel as pn
import param

from core.checks import is_real, is_whole
from link.row import OneRow
from services.direct_writes import read_directly
from services.pace import Pace, run_later
from services.pacing import get_budget
from services.sessions import SCREENED

#: The largest ``seq`` a page sends: JavaScript's largest exact integer (the page counts 1, 2, …).
MAX_SEQ = 2**53 - 1

log = logging.getLogger(__name__)


class PositionChannel(param.Parameterized):
    """A :class:`~link.row.OneRow` the page writes positions into, and the pacing of what the server takes.

    ``channel`` holds ``x``, ``y`` (data units of the plot dragged in), ``seq`` (1, 2, … per page),
    ``start`` (the press), ``end`` (the release; a tap is both) and the columns of :attr:`EXTRA`.
    A subclass implements :meth:`receive` (decide what the position means, keep it in ``_pending`` and
    call :meth:`_schedule`) and :meth:`_take` (apply ``_pending`` and answer it), and calls
    :meth:`_drag_started` / :meth:`_drag_ended` around a drag that the page previews.
    """

    #: Shortest time (s) between two updates of one session (the preview in the page fills the gaps).
    MIN_GAP = 1 / 60
    #: The channel's columns besides the position: name -> (default, check of a value the page wrote).
    EXTRA: dict = {}
    _said_not_finite = False  # a position that is not a finite number has been dropped, and said in the log

    def _open_channel(self, name: str) -> None:
        """Create ``channel`` (its Bokeh name ``name``) and the pacing's bookkeeping."""
        extra = {k: [default] for k, (default, _) in self.EXTRA.items()}
        self.channel = OneRow(data=dict(x=[0.0], y=[0.0], seq=[0], start=[False], end=[False], **extra), name=name)
        # a served page's writes come straight from the websocket guard, which has read and checked them
        # (services/direct_writes.py); elsewhere (a notebook) Bokeh sets `data` and calls _on_channel
        self.channel.on_change("data", self._on_channel)
        read_directly(self.channel, "data", self._read_row)
        self._pending = None  # what the newest position asks for, not yet taken
        self._flush_scheduled = False
        self._requested = 0.0  # when the scheduled update is due (perf_counter time)
        # newest wins, paced by the last update's cost: at most half the loop, each a timer's whole milliseconds
        self._pace = Pace(share=0.5, least=0.0)
        self._budget = get_budget()  # the process's share for mid-drag updates

    def _on_channel(self, attr, old, new) -> None:
        self._read_row(new)

    def _read_row(self, new) -> None:
        # a page always writes one row of numbers, booleans and the extra columns; anything else is ignored
        names = ("x", "y", "seq", "start", "end", *self.EXTRA)
        try:
            row = {k: new[k][0] for k in names}
        except (KeyError, IndexError, TypeError):
            return
        seq = row["seq"]
        # seq within the page's own counting (JavaScript's exact integers): the answer echoes it, and Bokeh fails
        # on a larger one (logging the whole message each time) or warns on one past 2**53
        if not (is_real(row["x"]) and is_real(row["y"]) and is_whole(seq)
                and 0 <= seq <= MAX_SEQ and isinstance(row["start"], bool) and isinstance(row["end"], bool)
                and all(check(row[k]) for k, (_, check) in self.EXTRA.items())):
            return
        try:
            x, y = float(row["x"]), float(row["y"])
        except OverflowError:  # a whole number too large for a float: no page writes one
            return
        if not (math.isfinite(x) and math.isfinite(y)):
            # the page's scripts send finite positions only (link/drag.js, link/projections.js); clamped, ±inf moved
            # q to the plane's edge, and NaN put the state's refusal on the page
            if not self._said_not_finite:
                self._said_not_finite = True  # said once a page, as the browser bridge says what it ignores
                log.warning("Ignored a drag position that is not a finite number (%r, %r), and will ignore the "
                            "page's next such silently (%s)", x, y, SCREENED)
            return
        extra = {k: row[k] for k in self.EXTRA}
        self.receive(x, y, seq=seq, start=row["start"], end=row["end"], **extra)

    def receive(self, x: float, y: float, *, seq: int = 0, start: bool = False, end: bool = False, **extra) -> None:
        raise NotImplementedError

    @property
    def _next_flush(self) -> float:
        """The perf_counter time before which the session takes no next update."""
        return self._pace.ready_at

    def _drag_started(self) -> None:
        self._budget.start(self)

    def _drag_ended(self) -> None:
        self._budget.end(self)

    def _schedule(self, end: bool) -> None:
        """Take ``_pending`` at once (a release, or outside a served page), else when the pacing allows."""
        if not end:
            # the drag moves: only a position that is taken counts, not a row answered with nothing (one
            # that picked nothing up, in the other plane, not a number), which a page could send every few
            # seconds to be counted as dragging forever
            self._budget.moved(self)
        doc = pn.state.curdoc
        if end or doc is None or doc.session_context is None:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            now = time.perf_counter()
            wait = self._pace.wait(now)
            # when the update is due: the loop's delay past it counts as the update's cost, the pacing's own wait not
            self._requested = now + wait
            run_later(doc, self._flush, wait)

    def _flush(self) -> None:
        """Take the newest position. The pause after it (``services/pace.py``, the newest's own cost) counts from
        when the update was due, so the loop's delay in reaching it counts as its cost; in the middle of a drag it
        is at least the process's gap for drags (``services/pacing.py``, ``DragBudget.gap``)."""
        self._flush_scheduled = False
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        requested, self._requested = self._requested, 0.0  # a release, taken at once, was not waiting
        start = time.perf_counter()
        self._take(pending)
        end = time.perf_counter()
        gap = self.MIN_GAP
        if self in self._budget:  # the middle of a drag: its updates only confirm what the page draws
            self._budget.record(end - start)
            gap = max(gap, self._budget.gap())
        self._pace.took(end - min(start, requested or start), end, at_least=gap)

    def _take(self, pending) -> None:
        """Apply one pending position (what :meth:`receive` stored) and answer it."""
        raise NotImplementedError
