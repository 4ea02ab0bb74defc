"""The process's queue of training runs (and of the √d_k tab's draws): one at a time, at most half of the event loop.

A run of the Train tab costs the loop CPU (see bench/RESULTS.md, "one training run"); sixty learners pressing
Play in the same second ask for sixty runs at once. Run as each page asks, they would all be due at once, and
another learner's key would wait behind every one of them. So the pages' requests wait in one queue per
process: a run is taken, then the queue rests as long as that run took (so training takes at most
:attr:`TrainQueue.SHARE` of the loop) and lets everything that came meanwhile through, then the next.

A page has at most one request waiting (``session.training.TrainingState`` asks again only once its run is
computed, and the run takes the settings as they are then): a learner who drags the learning-rate slider
across its stops gets one run for where the slider rests, however many stops it passed.

The queue is shared fairly by client, not by page: each client (a page's address as the server sees it: the
browser's, or the proxy's ``X-Forwarded-For`` with ``EXPLORER_USE_XHEADERS``) has a line of its own, and the queue
takes one request from each client in turn. One client with fifty pages pressing New seed every 0.2 s otherwise had
fifty places in the one line, and another learner's New seed waited 4-4.75 s instead of 44 ms; now it waits at most
one of theirs. A page that has left (its websocket closed) is skipped: what it asked for is of use to nobody.

The pages' reports of where they are in a run (Play, Pause, a scrub's release: ``link/train.py``) go through a
queue of their own, :func:`get_report_queue`, at most a quarter of the loop: sixty learners pressing Play in the
same instant are sixty reports, each a millisecond or two of the state, the address and a room, and taken one a
turn they leave the loop to everyone else between them (a page's own playback needs none of them).

One queue of each per process, in ``pn.state.cache`` (like the rooms' registry and the drag budget): it is the
process's concern and holds no learner's data, only which documents wait (weakly: a page that closes while it
waits drops out).
"""

from __future__ import annotations

import collections
import logging
import time
import weakref

from services.pace import Pace

#: Where the process keeps its queue of runs.
CACHE_KEY = "explorer-train-queue"
#: Where the process keeps its queue of the pages' reports (link/train.py).
REPORTS_KEY = "explorer-train-reports"
#: The share of the loop the reports may take: a quarter, as the drags' updates (services/pacing.py).
REPORTS_SHARE = 0.25

log = logging.getLogger(__name__)


class TrainQueue:
    """Runs that pages ask for, taken one at a time on the server's event loop.

    :meth:`submit` ``(doc, compute)``: call ``compute()`` in ``doc``'s own turn of the loop (Bokeh's next-tick
    callback, under the document's lock) when the queue reaches it. ``submit(doc, compute, work)``: call ``work()``
    on the queue's worker thread first, then ``compute(work())`` in ``doc``'s turn: for NumPy work, which leaves the
    loop free while it computes (the √d_k tab's draws). ``later(seconds, fn)`` schedules the queue's own next turn
    (the loop's ``call_later``; a test's own clock); ``share`` is the most of the loop's time its calls take
    (:attr:`SHARE` unless given), and of the worker's. ``executor`` runs ``work`` (a worker thread unless given)
    and ``call_soon(fn, *args)`` brings its result back to the loop (Tornado's ``add_callback``).

    The rest after each is ``services/pace.py``'s rule for the newest: the last run's cost alone (a page has at most
    one request waiting, its newest). What the queue adds is the order: not the newest of everyone, but one request
    of each client in turn, each run.
    """

    #: At most this share of the loop's time goes to runs: after a run of c seconds the queue rests
    #: c (1 - SHARE) / SHARE seconds (``services/pace.py``: each request is a page's newest, so the rest is the last
    #: run's cost alone).
    SHARE = 0.5

    def __init__(self, later=None, share: float | None = None, executor=None, call_soon=None):
        # each client's line of (weakref to doc, weak method to compute, weak method to work or None), and the
        # clients in the order the queue takes them (each has one place, at the back once it was served)
        self._lines: dict[object, collections.deque] = {}
        self._turns: collections.deque = collections.deque()
        self._busy = False
        self._later = later
        self._executor = executor
        self._call_soon = call_soon
        self.share = self.SHARE if share is None else share
        self._pace = Pace(share=self.share)

    def __len__(self) -> int:
        return sum(map(len, self._lines.values()))

    def waiting(self) -> list[tuple]:
        """The waiting requests, ``(weakref to doc, weak method to compute, weak method to work or None)``, in the
        order the queue would take them (one of each client in turn)."""
        lines = [list(self._lines[c]) for c in self._turns]
        order = []
        while any(lines):
            for line in lines:
                if line:
                    order.append(line.pop(0))
        return order

    def submit(self, doc, compute, work=None) -> None:
        """Queue ``compute`` (a bound method) to run in ``doc``'s turn of the loop; with ``work`` (a bound method),
        ``compute(work())``, ``work`` on the worker thread. In the line of ``doc``'s client (:func:`client_of`)."""
        client = client_of(doc)
        line = self._lines.get(client)
        if line is None:
            line = self._lines[client] = collections.deque()
            self._turns.append(client)
        line.append((weakref.ref(doc), weakref.WeakMethod(compute), None if work is None else weakref.WeakMethod(work)))
        if not self._busy:
            self._busy = True
            self._schedule(0.0)

    def _schedule(self, delay: float) -> None:
        later = self._later
        if later is None:
            from tornado.ioloop import IOLoop

            later = IOLoop.current().call_later
        later(delay, self._next)

    def _take(self):
        """The next request: the oldest of the client whose turn it is (None when no client waits)."""
        while self._turns:
            client = self._turns.popleft()
            line = self._lines[client]
            item = line.popleft()
            if line:
                self._turns.append(client)  # its next request after every other client's
            else:
                del self._lines[client]
            return item
        return None

    def _next(self) -> None:
        while (item := self._take()) is not None:
            doc_ref, compute_ref, work_ref = item
            doc, compute = doc_ref(), compute_ref()
            work = None if work_ref is None else work_ref()
            if doc is None or compute is None or doc.session_context is None or (work_ref and work is None) \
                    or page_left(doc):
                continue  # the page has closed
            if work is not None:
                self._work(doc_ref, compute_ref, work)
                return
            if self._in_turn(doc, compute, 0.0):
                return
        self._busy = False

    def _in_turn(self, doc, compute, worked: float) -> bool:
        try:
            doc.add_next_tick_callback(lambda: self._run(doc, compute, worked))
        except Exception:  # a document being torn down refuses new callbacks: skip the page
            log.debug("a closed page's run skipped", exc_info=True)
            return False
        return True

    def _work(self, doc_ref, compute_ref, work) -> None:
        """Run ``work`` on the worker thread, then its result through ``compute`` in the page's turn."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="page-work")
        call_soon = self._call_soon
        if call_soon is None:
            from tornado.ioloop import IOLoop

            call_soon = IOLoop.current().add_callback
        start = time.perf_counter()

        def done(future) -> None:  # on the loop
            now = time.perf_counter()
            worked = now - start
            doc, compute = doc_ref(), compute_ref()
            if future.exception() is not None:
                log.error("a page's work failed", exc_info=future.exception())
            elif doc is not None and compute is not None and doc.session_context is not None and self._in_turn(
                    doc, lambda: compute(future.result()), worked):
                return
            self._schedule(self._pace.took(worked, now))

        self._executor.submit(work).add_done_callback(lambda future: call_soon(done, future))

    def _run(self, doc, compute, worked: float = 0.0) -> None:
        import panel as pn

        start = time.perf_counter()
        try:
            with pn.io.hold(doc):
                compute()
        finally:
            # the worker's time too: a page asking for draws as fast as it can keeps the worker's core at most
            # this share busy, as the loop
            end = time.perf_counter()
            self._schedule(self._pace.took(worked + end - start, end))


def client_of(doc) -> object:
    """Who asks for ``doc``'s work: the address its page was opened from (Tornado's ``remote_ip``: the browser's, or
    the proxy's ``X-Forwarded-For`` with ``EXPLORER_USE_XHEADERS``); the page itself when it has none (a test)."""
    address = client_address(getattr(getattr(doc, "session_context", None), "request", None))
    return ("address", address) if address is not None else ("page", id(doc))


def client_address(request) -> str | None:
    """The address a request came from as the server sees it (Tornado's ``remote_ip``: the browser's, or the proxy's
    ``X-Forwarded-For`` with ``EXPLORER_USE_XHEADERS``); None without one (no request, a test's)."""
    address = getattr(request, "remote_ip", None) if request is not None else None
    return address if isinstance(address, str) else None


def page_left(doc) -> bool:
    """Whether ``doc``'s page has left: its websocket has closed (``services/sessions.py``)."""
    from services.sessions import page_left as left

    return left(doc)


def _cached(key: str, share: float) -> TrainQueue:
    import panel as pn

    queue = pn.state.cache.get(key)
    if queue is None:
        queue = pn.state.cache.setdefault(key, TrainQueue(share=share))
    return queue


def get_queue() -> TrainQueue:
    """This server process's queue of runs, created on first use."""
    return _cached(CACHE_KEY, TrainQueue.SHARE)


def get_report_queue() -> TrainQueue:
    """This server process's queue of the pages' reports (Play, Pause, a scrub's release), created on first use."""
    return _cached(REPORTS_KEY, REPORTS_SHARE)


def scheduler_for(doc):
    """A scheduler for the page ``doc`` (:class:`session.training.TrainingState`'s runs, the √d_k experiment of
    :class:`session.state.AttentionState`): what it is given goes through the queue, and the changes of each call
    reach the page as one message."""
    doc_ref = weakref.ref(doc)

    def schedule(compute, work=None) -> None:
        d = doc_ref()
        if d is not None:
            get_queue().submit(d, compute, work)
    return schedule
