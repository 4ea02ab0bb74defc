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
the way of a class"). A full pass cannot be cut short or split: it passes over every object of the oldest generation
at once, about a third of a microsecond each, and a page is about 9,000 of them. Yet the objects of an open page live
as long as its page, and the garbage a full pass is there for, the object cycles of a closed page, appears only when
a session closes. So:

- before a process serves, :func:`settle_collector` moves the objects of the imported code out of the collector's
  reach for good (``gc.freeze()``, Python's documented way for a server's start-up objects; it also keeps them
  shared after ``--num-procs`` forks) and leaves the full passes to the round: the collector makes only its young
  passes on its own, which never pass over a page open a while;
- a closed page is taken apart as Bokeh discards its session (``server/patches/bokeh_cleanup_sessions.py``,
  ``server/teardown.py``):
  its cycles cut, nearly all of its memory comes back by reference counting, one page per turn of the loop, and the
  heap's pages it freed go back to the system in the next turn (``malloc_trim`` takes about 1 ms per MB it gives
  back: the round's one trim of a class's pages was a turn of its own), with a rest as long as both took before the
  next page (Bokeh discarded every closed session of a class in one turn: 0.4 s and more for 60 pages);
- what is left of closed pages (nothing, for a page that never left its first tab) waits for the round
  (:class:`Housekeeping`, every :data:`TRIM_EVERY`) to make a full pass when it is short: the round estimates the
  pass from the objects it would
  pass over and the time per object the last pass took, and makes it only when under :data:`FULL_PASS_BUDGET`
  (a few pages open: between two lessons), unless :data:`WAIT_AT_MOST` closed pages are waiting; Panel's own full
  pass a few seconds after a session is discarded (``panel.io.document._garbage_collect``) is left to the round;
- and the heap's trim comes in a turn of its own, after the pass.

(Before, every round froze what had lived 15 s and, once a tenth of the pages had closed, unfroze everything for one
full pass: over every object of the process, the start-up's too. 60 pages closing cost one turn of 3.3 s at load 8,
and 1,000 sessions opened and closed stalls of 2-4.7 s every 15 s: ``bench/RESULTS.md``.)
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import gc
import sys
import time
from functools import cache

#: How often the server returns freed memory: about as often as Bokeh checks for unused sessions.
TRIM_EVERY = "15s"

#: The collector's oldest-generation threshold in a settled process: never reached, so the collector makes no full
#: pass on its own (Python's default is 10 middle passes; sixty pages arriving cost about 85).
NEVER = 2**30

#: The longest full pass the round makes while pages are open (seconds): a turn of the loop every page waits behind.
#: Its estimate is the last pass's time per object, which a busy machine can make half as long again.
FULL_PASS_BUDGET = 0.02

#: Objects of an open page a full pass goes over (about 9,000 with its first tab built, more with more tabs), and of
#: the process outside its pages (what it made after start-up: caches, the rooms, the queues).
OBJECTS_PER_PAGE = 9_000
BASE_OBJECTS = 5_000
#: What a closed page's leftovers once it was taken apart (none on its first tab; some tens of objects, at most, were
#: about 90 before its reactive expressions and config were taken apart too) cost a pass, in objects it only goes
#: over: freeing an object costs the pass about ten times going over one.
LEFTOVER_PER_PAGE = 700

#: A sweep that discards many pages makes a full pass (if short) every this many pages, so that no pass frees the
#: leftovers of a whole class at once.
PASS_EVERY_PAGES = 16

#: Closed pages whose leftovers may wait for a short full pass; with more, the round makes the pass however long it
#: is, a turn as long as every open page's objects take to go over (with a class's pages open, 150-450 ms). A page
#: taken apart leaves nothing or tens of objects, some kB at most: 4,000 pages are about the memory of a few open
#: ones (at 400, a day of classes would have had one: the next class's pages are open while the last's are discarded).
WAIT_AT_MOST = 4_000

#: Rounds after which a round makes a full pass, if it is short, even with no page closed (40 × 15 s: every ten
#: minutes), for cycles a page dropped while it stayed open.
FULL_EVERY_ROUNDS = 40

#: The share of the loop discarding closed sessions may take: after a page taken apart in c seconds, the sweep rests
#: c (1 - SHARE) / SHARE before the next.
SWEEP_SHARE = 0.5


@cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where there is none (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library the interpreter already runs on
    except (OSError, AttributeError):
        return None


#: ``mallopt``'s parameter for the largest chunk glibc keeps in a fast bin (``M_MXFAST`` in malloc.h).
M_MXFAST = 1


def merge_on_free() -> bool:
    """Have glibc merge each freed small chunk with its free neighbours when it is freed (``mallopt(M_MXFAST, 0)``:
    no fast bins), not keep it aside until the next trim merges every one of them (``malloc_consolidate``) in one go.

    A closed page frees about a hundred thousand small objects; with fast bins, the trim after a class had left
    merged all of theirs in one turn of the loop, the longest turn of a day of sessions (bench/RESULTS.md). The same
    merging, one chunk at a time as pages are taken apart, costs the loop no long turn. Call it before serving;
    whether it was done (glibc only).
    """
    if _malloc_trim() is None:
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(M_MXFAST, 0))
    except (OSError, AttributeError):
        return False


def can_trim() -> bool:
    """Whether this process can return freed heap pages to the system (Linux with glibc)."""
    return _malloc_trim() is not None


def trim() -> None:
    """Return the heap's free pages to the system (glibc ``malloc_trim(0)``; nothing elsewhere)."""
    malloc_trim = _malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)


class Collector:
    """What the process knows of its full passes: whether it is settled, and the seconds a pass takes per object.

    The objects a pass would go over are first estimated from the pages (:data:`OBJECTS_PER_PAGE` for each open one,
    :data:`LEFTOVER_PER_PAGE` for each closed one since the last pass): counting them (``gc.get_objects()``) walks
    them all, about a quarter of the pass, a turn of 50-80 ms with 60 pages open. Only a pass that estimate calls
    short is counted (:meth:`count`), a few ms, before it is made: the process's own objects outside its pages are
    more than the estimate's :data:`BASE_OBJECTS` (tens of thousands after a class has come and gone), and a pass
    estimated at 25 ms took 61 with nothing but those.
    """

    def __init__(self) -> None:
        self.settled = False
        self.per_object = 1e-6  # seconds a full pass takes per object (measured at start, then by each pass)
        self.passes = 0
        self.longest = 0.0  # seconds of the longest pass made while serving

    def objects(self, open_pages: int, closed_pages: int) -> int:
        return OBJECTS_PER_PAGE * max(open_pages, 0) + LEFTOVER_PER_PAGE * max(closed_pages, 0) + BASE_OBJECTS

    def estimate(self, open_pages: int, closed_pages: int) -> float:
        """The seconds a full pass would take with these pages."""
        return self.per_object * self.objects(open_pages, closed_pages)

    def count(self) -> int:
        """The objects a full pass goes over now, counted: every generation's (the frozen ones are in none)."""
        return sum(len(gc.get_objects(generation)) for generation in range(3))

    def full_pass(self, objects: int) -> float:
        """Make a full pass now over about ``objects``; returns the seconds it took, and learns the time per object."""
        start = time.perf_counter()
        gc.collect()
        took = time.perf_counter() - start
        self.per_object = took / max(objects, 1)
        self.passes += 1
        self.longest = max(self.longest, took)
        return took


#: The process's collector (the interpreter's is one per process too).
COLLECTOR = Collector()


def settle_collector() -> None:
    """Before a process serves pages: keep what is loaded now out of the collector's passes, and leave its full
    passes to the round (:class:`Housekeeping`).

    Freezes every object alive now (the imported code, Panel's and Bokeh's classes and module state: nothing a
    page's session owns) and raises the collector's third threshold to :data:`NEVER`. The full pass it makes first
    measures what a pass costs per object on this machine. Call it once, after the app's modules are imported and
    before any session exists: a session's objects frozen would never be collected.
    """
    start = time.perf_counter()
    gc.collect()
    COLLECTOR.per_object = (time.perf_counter() - start) / max(len(gc.get_objects()), 1)
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    COLLECTOR.settled = True


class Housekeeping:
    """The server process's periodic round: a full pass of the collector when it is due and short, then the heap's
    trim in a turn of its own.

    One per process (``pn.state.as_cached``); it holds counts, never a session or its document. In a process that
    :func:`settle_collector` did not settle (a test's in-process server, a bare ``panel serve app.py``) Python's
    collector runs as it is, and the round makes a full pass once a page has closed. ``later(fn)`` runs ``fn`` in a
    later turn of the loop (the loop's ``call_soon``; a test's own).
    """

    def __init__(self, collector: Collector = COLLECTOR, later=None) -> None:
        self.collector = collector
        self.open = 0  # pages whose sessions are open
        self.closed = 0  # pages closed since the last full pass
        self.rounds = 0  # rounds since the last full pass
        self.skipped = 0  # full passes put off because they would be long
        self._later = later

    @property
    def freezing(self) -> bool:  # the name the tests of the code before knew
        return self.collector.settled

    def session_opened(self) -> None:
        self.open += 1

    def session_closed(self, session_context) -> None:
        """Bokeh's ``on_session_destroyed`` callback: the closed page's leftovers are garbage for a full pass."""
        self.open -= 1
        self.closed += 1

    def page_discarded(self) -> None:
        """A page built with no session was discarded (the health check's): its leftovers, likewise."""
        self.closed += 1

    def due(self) -> bool:
        """Whether a full pass is wanted: a page has closed since the last, or :data:`FULL_EVERY_ROUNDS` rounds."""
        return bool(self.closed) or self.rounds >= FULL_EVERY_ROUNDS

    def collect_if_short(self) -> bool:
        """In a settled process, make a full pass if one is due and it is within :data:`FULL_PASS_BUDGET`, estimated
        from the pages and then from the objects counted (or :data:`WAIT_AT_MOST` closed pages wait); whether it made
        one."""
        if not (self.collector.settled and self.due()):
            return False
        forced = self.closed >= WAIT_AT_MOST
        if not forced and self.collector.estimate(self.open, self.closed) > FULL_PASS_BUDGET:
            self.skipped += 1
            return False
        objects = self.collector.count()
        if not forced and self.collector.per_object * objects > FULL_PASS_BUDGET:
            self.skipped += 1
            return False
        self.collector.full_pass(objects)
        self.closed = self.rounds = 0
        return True

    def __call__(self) -> None:
        self.rounds += 1
        if not self.collector.settled:
            if self.closed:
                self.closed = self.rounds = 0
                gc.collect()
        else:
            self.collect_if_short()
        self._in_a_later_turn(trim)

    def _in_a_later_turn(self, fn) -> None:
        later = self._later
        if later is None:
            try:
                later = asyncio.get_running_loop().call_soon
            except RuntimeError:  # no loop running (a test calling the round)
                later = _now
        later(fn)


def _now(fn) -> None:
    fn()


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
    keeper = get_housekeeping()
    keeper.session_opened()
    doc.on_session_destroyed(keeper.session_closed)
    # from an empty context: the task's timer keeps the context it was scheduled in, and this page's would
    # keep its document (Panel's curdoc) alive for as long as the server runs
    contextvars.Context().run(pn.state.schedule_task, "return-freed-memory", keeper, period=TRIM_EVERY)


def get_housekeeping() -> Housekeeping:
    """This server process's :class:`Housekeeping`, created on first use."""
    import panel as pn

    return pn.state.as_cached("housekeeping", Housekeeping)


def collect_if_short() -> None:
    """The process's round makes a full pass now if one is due and short (:meth:`Housekeeping.collect_if_short`)."""
    get_housekeeping().collect_if_short()
