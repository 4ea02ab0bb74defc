"""How much of this server process's event loop the class's drags may take.

A page in the middle of a drag draws its own numbers (``link/drag.js``); what the server sends during
the drag only confirms them. So when many learners drag at once, their mid-drag updates can wait, and a
click, a key or a release must not: they are queued behind whatever the loop already has to do. Each
session paces its own updates (``link/drag.py``), and this budget spaces them further so that all the
process's mid-drag updates together take at most :attr:`DragBudget.SHARE` of the loop: with ``n`` pages
dragging and an update costing ``c`` seconds, a dragging page takes a position at most every
``n * c / SHARE`` seconds. Sixty learners dragging at 5 ms an update: one confirmation each every 1.2 s.
The share is a quarter because ``c`` is the update alone: receiving the position and sending its answer cost
the loop about as much again, so a quarter of the loop's time in updates is about half of it in drags, and the
other half free for everything else. (At half, 60 learners kept the process's core busy, and a key pressed
right after a drag waited 145–152 ms at the median, 294–302 ms at p95; at a quarter 23–26 and 99–106 ms,
``bench/RESULTS.md``.) Releases are never spaced: they end a drag at once.

One budget per process, in ``pn.state.cache`` (like the room registry): it is the process's concern, not a
page's, and holds no learner's data, only which pages are dragging (weakly) and the recent cost.

A page counts only while its drag moves: one that has sent no position for :attr:`DragBudget.IDLE_AFTER`
seconds (a press held still, or never let go, as a page that means harm can do forty times over) takes no
share from the others until it sends one again.
"""

from __future__ import annotations

import time
import weakref

#: Where the process keeps its budget.
CACHE_KEY = "explorer-drag-budget"


class DragBudget:
    """The share of the event loop mid-drag updates may use, and the spacing that keeps them to it.

    Pages register while they drag (:meth:`start`, :meth:`end`; a page that closes mid-drag drops out
    when it is collected), say when a position comes (:meth:`moved`), and report what each update cost
    (:meth:`record`, seconds of wall time on the loop). :meth:`gap` is the least time (s) a dragging page waits
    between two of its updates. ``clock`` gives the time in seconds (a test's own clock).
    """

    #: At most this fraction of the loop goes to updates in the middle of drags (their receiving and answers about
    #: as much again).
    SHARE = 0.25
    #: Weight of the newest update in the running mean of an update's cost.
    ALPHA = 0.1
    #: A dragging page that has sent no position for this long (s) is not counted. Well above the gap of a
    #: full class (100 pages at 5 ms an update: 2 s), so a page paced by the budget is never left out of it.
    IDLE_AFTER = 5.0

    def __init__(self, cost: float = 0.005, clock=time.monotonic):
        self._dragging: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # page -> its last position's time
        self.cost = cost  # running mean, seconds
        self._clock = clock

    def start(self, page) -> None:
        self._dragging[page] = self._clock()

    def moved(self, page) -> None:
        """A position of ``page``'s drag has come (nothing if the page is not dragging)."""
        if page in self._dragging:
            self._dragging[page] = self._clock()

    def end(self, page) -> None:
        self._dragging.pop(page, None)

    def __contains__(self, page) -> bool:
        return page in self._dragging

    @property
    def dragging(self) -> int:
        """How many pages are in the middle of a drag that moved within :attr:`IDLE_AFTER` seconds."""
        since = self._clock() - self.IDLE_AFTER
        return sum(1 for t in list(self._dragging.values()) if t > since)

    def record(self, seconds: float) -> None:
        """One mid-drag update took ``seconds`` (negative or absurd values are ignored)."""
        if 0 <= seconds < 10:
            self.cost += self.ALPHA * (seconds - self.cost)

    def gap(self) -> float:
        """Seconds between two updates of one dragging page that keep all drags within :attr:`SHARE`.

        >>> b = DragBudget(cost=0.005)
        >>> pages = [type("Page", (), {})() for _ in range(60)]
        >>> for p in pages: b.start(p)
        >>> round(b.gap(), 3)
        1.2
        """
        return self.dragging * self.cost / self.SHARE


def get_budget() -> DragBudget:
    """This server process's budget, created on first use."""
    import panel as pn

    budget = pn.state.cache.get(CACHE_KEY)
    if budget is None:
        budget = pn.state.cache.setdefault(CACHE_KEY, DragBudget())
    return budget
