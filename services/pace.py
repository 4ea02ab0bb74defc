"""Newest wins, paced by the last cost: when a scheduler on the server's event loop may take its next piece of work.

The process has one event loop, and every scheduler on it keeps the same rule: its work takes at most a share of
the loop, so after a piece of work that took ``c`` seconds the next waits until the loop has had its share of time
for everything else. :class:`Pace` is that rule, written once; five schedulers use it:

- a page's drag (``link/channel.py``, ``PositionChannel``): the page's newest position is taken, and its next waits
  as long as that update cost (half the loop), at least a frame, longer while many pages drag
  (``services/pacing.py``, ``DragBudget``, the process's share for drags, which only gives the spacing);
- a page's reports of where it is in a training run (``link/train.py``, ``TrainLink``): the newest is taken, then
  the page's next waits as long as it took, at least ``REPORT_GAP``;
- the process's queues of runs and of reports (``services/train_queue.py``, ``TrainQueue``): after a run of ``c``
  seconds the queue rests ``c (1 - share) / share``;
- each session's events (``services/pacing.py``, ``SessionEvents``);
- page builds (``server/build_gate.py``, ``BuildGate``).

They count what a piece of work owes in one of two ways, and the difference is deliberate:

- where the newest wins (a drag's positions, a page's reports, and the queue of runs, where each page has at most
  one request waiting, the newest), the work taken stands for all that came before it, which was never done: what
  is owed after it is its own cost alone (:meth:`Pace.took`). A drag's pause is what its last update cost, never
  what an earlier drag's did;
- where every piece must run, in order (a session's clicks, keys and messages; every page's build), nothing is
  dropped, so their costs add up (:meth:`Pace.charge`), and a small burst (:attr:`Pace.BURST`) lets a person's
  lone click through at once while a flood of them waits its turn.

Either way the owed time is a leaky bucket of loop time that empties at :attr:`Pace.SHARE` seconds a second, and
:meth:`Pace.wait` says how long the next piece waits. The schedulers keep what is particular to them: which work
waits (the newest item, a fair queue by client, a queue in order), how it is scheduled on the loop, and what more
it waits for (the process's share for drags, a build gate that lets builds through while nobody uses a page).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from bokeh.document.callbacks import invoke_with_curdoc

log = logging.getLogger(__name__)


class Pace:
    """What the work of one scheduler owes the event loop, and how long its next piece waits.

    A leaky bucket of loop time: work adds the seconds it took, the bucket empties at :attr:`SHARE` seconds a
    second, and the next piece may start once the bucket holds at most :attr:`BURST` seconds and no more than
    :meth:`took`'s ``at_least`` has to pass. Work that the bucket leaks through while it runs (given its start) is
    followed by a pause of ``c (1 - SHARE) / SHARE``: work and pauses in the ratio ``SHARE : 1 - SHARE``.

    ``clock`` gives the time in seconds (a test's own clock); ``share``, ``burst`` and ``least`` replace the
    class's :attr:`SHARE`, :attr:`BURST` and :attr:`LEAST` for this one.

    >>> t = [0.0]
    >>> pace = Pace(share=0.5, clock=lambda: t[0])
    >>> pace.took(0.02, end=0.0)  # an update of 20 ms at half the loop: the next waits 20 ms
    0.02
    >>> t[0] = 0.015; round(pace.wait(), 4)
    0.005
    >>> pace.took(0.002, end=0.02, at_least=0.1)  # the newest wins: owed is its own cost, here less than the gap
    0.1
    """

    #: At most this fraction of the loop's time goes to the scheduler's work.
    SHARE = 0.5
    #: Seconds of work the bucket may hold when the next piece starts at once.
    BURST = 0.0
    #: A wait shorter than this (s) is none: a loop's timer cannot wait it, and rounding could otherwise leave the
    #: wait above 0 forever.
    LEAST = 0.001

    def __init__(self, clock=time.perf_counter, *, share: float | None = None, burst: float | None = None,
                 least: float | None = None):
        if share is not None:
            self.SHARE = share
        if burst is not None:
            self.BURST = burst
        if least is not None:
            self.LEAST = least
        self.clock = clock
        self.level = 0.0  # seconds of loop time owed, as of _at
        self._at = clock()
        self._not_before = -math.inf  # the clock's time before which no work starts (took's at_least)

    def _leak(self, now: float) -> None:
        self.level = max(0.0, self.level - self.SHARE * (now - self._at))
        self._at = now

    def set_share(self, share: float) -> None:
        """From now on the bucket empties at ``share`` of the loop (what leaked until now, at the share before, is
        kept): for a scheduler whose share changes with the load (``services/pacing.py``, ``ClientShares``)."""
        self._leak(max(self._at, self.clock()))
        self.SHARE = share

    def charge(self, seconds: float, start: float | None = None) -> None:
        """Work that had to run took ``seconds`` of the loop: it adds to what is owed. With ``start`` (the clock's
        time the work began) the bucket leaks while the work ran too, so a piece of ``c`` seconds leaves
        ``c (1 - SHARE)`` owed; without, it is charged whole when it ends. Negative or absurd values (a clock that
        jumped) are ignored."""
        if not 0 <= seconds < 60:
            return
        if start is None:
            self._leak(max(self._at, self.clock()))
            self.level += seconds
        else:
            self._leak(start)  # back to the work's start, if the bucket was looked at since (what leaked is kept)
            self.level += seconds
            self._leak(max(start, self.clock()))

    def took(self, seconds: float, end: float, at_least: float = 0.0) -> float:
        """The newest wins: the work just taken cost ``seconds`` and ended at ``end`` (the clock's time), and it
        stands for all that came before it, so what is owed is its cost alone, the bucket leaking while it ran.
        The next piece also waits at least ``at_least`` seconds from ``end``. Returns the seconds from ``end`` until
        the next may start (what a scheduler that schedules its next turn from ``end`` waits)."""
        self.level = max(0.0, seconds) * (1 - self.SHARE)
        self._at = end
        self._not_before = end + at_least
        return max(at_least, (self.level - self.BURST) / self.SHARE)

    def wait(self, now: float | None = None) -> float:
        """Seconds from ``now`` (the clock's time; default: the clock's now) until the next piece of work may start;
        0 for at once, also for less than :attr:`LEAST`."""
        now = self.clock() if now is None else now
        self._leak(max(self._at, now))
        wait = max((self.level - self.BURST) / self.SHARE, self._not_before - now)
        return wait if wait >= self.LEAST and wait > 0 else 0.0

    @property
    def ready_at(self) -> float:
        """The clock's time from which the next piece of work may start."""
        return max(self._at + (self.level - self.BURST) / self.SHARE, self._not_before)


def run_later(doc, callback, seconds: float) -> None:
    """Run ``callback`` (no arguments) in a turn of ``doc``'s session loop ``seconds`` from now (whole
    milliseconds, at least one), or in the loop's next turn for 0: how a page's scheduler waits what its
    :class:`Pace` says.

    As Bokeh runs a document's callback: under the session's document lock (``with_locked_document``), with ``doc``
    the current document, and not once the session has ended. Bokeh's own ``add_timeout_callback`` makes a callback
    object with an id, announces it to the session on the way in and again on the way out, and wraps it three times:
    a large part of what a drag position costs the server, for one timer a position (``bench/HISTORY.md``).
    Without a session (a notebook), the document's own callbacks."""
    context = doc.session_context
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not on the loop (a thread of its own): Bokeh's callbacks hand over to it
        loop = None
    if loop is None or context is None or not hasattr(context, "with_locked_document"):
        if seconds > 0:
            doc.add_timeout_callback(callback, max(1, round(seconds * 1000)))
        else:
            doc.add_next_tick_callback(callback)
        return

    async def locked(_doc) -> None:  # awaited by Bokeh also while the page is built (its session not made yet)
        invoke_with_curdoc(doc, callback)

    def due() -> None:
        if not context.destroyed:
            loop.create_task(context.with_locked_document(locked)).add_done_callback(_said_if_failed)

    if seconds > 0:
        loop.call_later(max(1, round(seconds * 1000)) / 1000, due)
    else:
        loop.call_soon(due)


def _said_if_failed(task: asyncio.Task) -> None:
    # as Bokeh logs a document callback that raised: with its traceback, the loop going on
    if not task.cancelled() and task.exception() is not None:
        log.error("A page's scheduled work failed", exc_info=task.exception())
