"""Give the memory of closed sessions back to the system, so a classroom server does not keep its peak.

Each open page holds a few MB of Python objects. When its session closes, the objects are freed
(``tests/test_session_cleanup.py``), but with CPython's own small-object allocator (pymalloc) the
process keeps the memory: pymalloc gets it from the system in 1 MiB arenas and returns an arena only
when every object in it is gone, and a few long-lived objects allocated while the pages were open keep
most arenas. Measured on this app, after sessions opened and closed: live objects and allocated bytes back at
their start, but far more arenas held, and resident memory far above its start (bench/HISTORY.md, "Memory per
session").

So the server runs with ``PYTHONMALLOC=malloc`` (``server/serve.py`` sets it; CPython's documented switch to
the C library's allocator), and every :data:`TRIM_EVERY` calls glibc's ``malloc_trim(0)``, which returns
every whole free page of the heap to the system, wherever it lies. Same measurement: resident memory
back near its start (see bench/RESULTS.md, "memory back within 10 % once pages close").

**Python's cycle collector, out of the way of a class.** By default CPython makes a full pass over every tracked
object after every tenth middle-generation pass, once the objects added since the last full pass are a quarter of
the rest: while a class opens its pages, several full passes, each a pause of the loop that every page waits
behind, longer with every page open (``bench/HISTORY.md``, "A class on one server: Python's cycle collector out of
the way of a class"). Yet the objects of an open page live as long as its page, and the garbage
a full pass is there for, the object cycles of a closed page (its document, views and state refer to each other),
appears only when a session closes. So:

- before a process serves, :func:`settle_collector` moves the objects of the imported code out of the collector's
  reach (``gc.freeze()``, Python's documented way for a server's start-up objects; it also keeps them shared after
  ``--num-procs`` forks) and lets the collector start a full pass on its own only after :data:`FULL_AFTER`
  middle passes (the quarter rule unchanged): sixty pages arriving together are built without one;
- every round (:class:`Housekeeping`, every :data:`TRIM_EVERY`) freezes what has lived that long, after a pass
  over the younger generations: the pages of a class that has arrived are not passed over again and again while
  it works;
- and once pages have closed (a tenth of the open ones, or any when few are open), or every
  :data:`FULL_EVERY_ROUNDS` rounds whatever happened, the round unfreezes everything and makes one full pass
  before the trim, so the closed pages' memory goes back to the system at once.
"""

from __future__ import annotations

import contextvars
import ctypes
import gc
import sys
from functools import cache

#: How often the server returns freed memory: about as often as Bokeh checks for unused sessions.
TRIM_EVERY = "15s"

#: Middle-generation passes after which the collector may start a full pass on its own (Python's default: 10).
#: Sixty pages cost about 85 of them: a class arriving together is built without a full pass.
FULL_AFTER = 100

#: Rounds after which a round makes a full pass even if no page closed (40 × 15 s: every ten minutes), for cycles
#: a page dropped while it stayed open.
FULL_EVERY_ROUNDS = 40


@cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where there is none (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library the interpreter already runs on
    except (OSError, AttributeError):
        return None


def can_trim() -> bool:
    """Whether this process can return freed heap pages to the system (Linux with glibc)."""
    return _malloc_trim() is not None


def trim() -> None:
    """Return the heap's free pages to the system (glibc ``malloc_trim(0)``; nothing elsewhere)."""
    malloc_trim = _malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)


def settle_collector() -> None:
    """Before a process serves pages: keep what is loaded now out of the collector's passes, and defer full passes.

    Freezes every object alive now (the imported code, Panel's and Bokeh's classes and module state: nothing a
    page's session owns) and raises the collector's third threshold to :data:`FULL_AFTER`. Call it once, after the
    app's modules are imported and before any session exists: a session's objects frozen would never be collected.
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_AFTER)


class Housekeeping:
    """The server process's periodic round: the collector's work (above), then the heap's trim.

    One per process (``pn.state.as_cached``); it holds counts, never a session or its document. It freezes only in
    a process that :func:`settle_collector` settled (a served app's): elsewhere (a test's in-process server, a bare
    ``panel serve app.py``) Python's collector runs as it is, and the round only trims.
    """

    def __init__(self) -> None:
        self.freezing = gc.get_freeze_count() > 0
        self.open = 0  # pages whose sessions are open
        self.closed = 0  # pages closed since the last full pass
        self.rounds = 0  # rounds since the last full pass

    def session_opened(self) -> None:
        self.open += 1

    def session_closed(self, session_context) -> None:
        """Bokeh's ``on_session_destroyed`` callback: the closed page's cycles are garbage for a round."""
        self.open -= 1
        self.closed += 1

    def __call__(self) -> None:
        if self.freezing:
            self.rounds += 1
            if (self.closed and self.closed >= self.open / 10) or self.rounds >= FULL_EVERY_ROUNDS:
                self.closed = self.rounds = 0
                gc.unfreeze()
                gc.collect()
            else:
                gc.collect(1)  # the younger generations' garbage is not frozen with what lives
            gc.freeze()
        elif self.closed:
            self.closed = 0
            gc.collect()
        trim()


def return_freed_memory() -> None:
    """In a served session, make sure the process collects and trims its heap every :data:`TRIM_EVERY`.

    Called by every page; Panel keeps one task per name and process, so the first call schedules it.
    Does nothing outside a server (tests, a notebook) or without glibc.
    """
    # here: server/serve.py asks can_trim() before it starts Python again, and Panel is slow to import
    import panel as pn

    doc = pn.state.curdoc
    if doc is None or doc.session_context is None or not can_trim():
        return
    keeper = pn.state.as_cached("housekeeping", Housekeeping)
    keeper.session_opened()
    doc.on_session_destroyed(keeper.session_closed)
    # from an empty context: the task's timer keeps the context it was scheduled in, and this page's would
    # keep its document (Panel's curdoc) alive for as long as the server runs
    contextvars.Context().run(pn.state.schedule_task, "return-freed-memory", keeper, period=TRIM_EVERY)
