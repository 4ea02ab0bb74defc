"""How much of this server process's event loop building new pages may take.

A page's build (its document, made when its address is first opened: a long turn of the loop) runs on the
process's one event loop, and nothing else runs meanwhile. A hundred pages opened within seconds, by a
class or by one student's script, kept the loop busy most of the time, and a key pressed on a page already open
waited behind several builds (``bench/RESULTS.md``, ``bench/HISTORY.md``). Panel and Bokeh offer nothing to space
them: Panel's ``--num-threads`` runs a page's callbacks in threads, not its build; Bokeh builds an app made from a
script on the loop's own thread, and a build is Python holding the GIL, so a thread would not free the loop.

So every build waits its turn at one gate per process (:class:`BuildGate`): a leaky bucket of loop time. A build
may start when the bucket holds at most :attr:`BuildGate.BURST` seconds; it adds the seconds it took, and the
bucket empties at :attr:`BuildGate.SHARE` seconds a second. After a build of ``c`` seconds the next starts about
``c * (1 / SHARE - 1)`` seconds later, and in that gap the loop serves every page already open: their keys, drags,
websocket connections and the first messages of pages just built. Builds therefore take at most ``SHARE`` of the
loop however many are asked for, one at a time (whose next: below); when they are few, the first starts at
once. Pacing only bites when builds would take more than their share.

The gaps are for pages in use. While no page open for more than a few seconds has sent a message for half a minute,
and no page's message is being handled, a build starts as soon as the loop is idle (work-conserving): a class
opening the page together, before anyone drags, otherwise left the loop idle in most gaps (a class connected
markedly slower than with its pages built back to back: ``bench/HISTORY.md``). The websocket guard
(server/guard.py) tells the gate which messages it is handling and which are a person's.

The gate is installed on Bokeh's session creation (``server/patches/bokeh_create_session.py``), the one place every
page's document is made: an HTTP GET of the page, a websocket whose session the process does not have (discarded, or
its page served by another process sharing the port: Bokeh builds the page again for it), the liveness check.

Builds wait in one line per client (the address a page's request came from, as the queue of training runs counts
clients: ``services/train_queue.py``), and the gate takes one build from each client in turn, so another learner's
page waits at most about one build of a client that asked for 150 (each client's own in the order it asked; the
health check's builds are a client of their own). A client may have at most
:attr:`BuildGate.MAX_WAITING_PER_CLIENT` builds waiting; its next request is answered 429 with a short message,
and one line in the log (backed off per client: ``server/logs.py``). And a page whose request's connection closes
while its build waits is not built: it leaves its line when Tornado notices the close, or at its turn at the
latest, and its request ends without an answer (logged as 499). 150 page requests closed after 2 s were otherwise
all built, one after another, and a new learner's page waited 64.9 s behind them (``bench/RESULTS.md``).

A websocket whose session the process does not have waits in the same line and counts against the same cap: its
handler (``server/guard.py``) refuses its handshake with 429 before upgrading when its client's line is full
(:meth:`BuildGate.admit`), and tells the gate when its socket has gone (:func:`watch_gone`), so its build is skipped
as a page request's is. 150 such sockets, made up by a script and closed within a quarter of a second, were
otherwise all built over 85 s, and another learner's key waited (``bench/RESULTS.md``).

A page's work once it has loaded (Panel's ``onload`` callbacks: a joining page's room, its header and its poll
card, about a tenth of a second each) is charged to the same bucket (``server/patches/panel_on_load.py``): it cannot
wait, the page is open, but the next build waits for it. A hundred pages joining a room within 20 s otherwise did
their room work in the gaps the gate keeps for the open pages, and the presenter's key waited again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import time

from tornado.web import Finish, HTTPError

from services.pace import Pace
from services.pacing import client_address

#: Where the process keeps its gate.
CACHE_KEY = "explorer-build-gate"

log = logging.getLogger(__name__)


class NotBuilt:
    """A page the gate answered without building it: no failure of the server, so Bokeh's line and traceback for a
    session it could not create are left out for it (``server/logs.py``)."""


class PageLeft(NotBuilt, Finish):
    """The page's request closed its connection while its build waited: nobody would read the page, so it is not
    built, and the request ends without an answer (Tornado's :class:`~tornado.web.Finish`: no error, no
    traceback). A websocket's handler takes it as the end of a socket that has gone already (``server/guard.py``)."""


class TooManyWaiting(NotBuilt, HTTPError):
    """The page's client already has :attr:`BuildGate.MAX_WAITING_PER_CLIENT` builds waiting: HTTP 429, with a
    short message a browser shows."""

    def __init__(self):
        super().__init__(429, reason="Too many pages asked for from this address at once: try again in a minute")


class _Waiter:
    """A build waiting for the gate: its request (None: the health check's), its client, and the future the gate
    resolves when it is its turn (or fails with :class:`PageLeft`)."""

    __slots__ = ("client", "future", "handed", "request")

    def __init__(self, future: asyncio.Future, request, client):
        self.future, self.request, self.client = future, request, client
        self.handed = False  # the gate was handed to it (its future's result set)


class BuildGate(Pace):
    """The share of the event loop page builds may use, one build at a time.

    Its bucket is :class:`services.pace.Pace`'s, charged with each build as it ran (the bucket leaks during the
    build). Unlike a drag's positions, where the newest wins and owes only its own cost, every page asked for is
    built, one client's in the order it asked, and a page's onload work is charged to the same bucket: their costs add
    up. Builds waiting are taken one client at a time in turn (:meth:`turn`'s ``request`` says whose).

    ``async with gate.turn(request):`` waits until a build may start, then holds the gate while the build runs and
    charges the seconds it took (the wall time on the loop, which a build holds). ``clock`` gives the time in
    seconds; ``sleep`` waits that many seconds (both a test's own).

    >>> t = [0.0]
    >>> gate = BuildGate(clock=lambda: t[0])
    >>> gate.charge(0.1, start=0.0); t[0] = 0.1; round(gate.wait(), 4)  # a 0.1 s build: the next waits ~0.067 s
    0.0667
    >>> t[0] = 0.1667; gate.wait()
    0.0
    """

    #: At most this fraction of the loop goes to building pages: a key pressed on an open page during a build waits at
    #: most that build, and the loop has ``1 - SHARE`` of its time for everything else (a joining page's connection,
    #: serialization and room work included, about a third of its build again).
    SHARE = 0.6
    #: Seconds of build time the bucket may hold when a build starts. Zero: two builds never run back to back while
    #: the loop owes the other pages their share, so a key waits behind at most one build.
    BURST = 0.0

    #: A page's messages count as a person's (the page is in use) this long (seconds) after its first message:
    #: before that they are its script's, loading the page (Panel's onload, the page's address, its channels).
    IN_USE_AFTER = 3.0
    #: Builds keep to their share until no page in use has sent a message for this long (seconds): a learner
    #: reading between two keys still uses the page (a quiet time shorter than a learner's pause between keys let
    #: builds run back to back ahead of the next key).
    QUIET = 30.0
    #: A turn of the loop shorter than this (seconds) had nothing else to run: the loop is idle.
    IDLE = 0.0005
    #: While the loop is busy, how often (seconds) a waiting build looks again whether it has become idle.
    RECHECK = 0.01
    #: Builds one client may have waiting; its next page is refused (429) until one of them is built or leaves. A
    #: class behind one school address (a NAT) is one client and opens the page together, nearly all of it waiting:
    #: one process is sized for 100 learners (``bench/RESULTS.md``), so a class waits in line, never refused. A
    #: script's pages beyond that are refused, not kept waiting for minutes.
    MAX_WAITING_PER_CLIENT = 100

    def __init__(self, clock=time.perf_counter, sleep=asyncio.sleep, idle=None):
        super().__init__(clock)
        self._sleep = sleep
        self._idle = idle if idle is not None else self._loop_idle
        self.messages = 0  # pages' messages being handled now (their handling awaits, over several turns)
        self.used_at = -math.inf  # when a page in use last sent a message
        self._busy = False
        # each client's line of builds waiting (_Waiter, in the order asked), and the clients in the order the gate
        # takes them (each once; the one just served in _served, until the next build is taken)
        self._lines: dict[object, collections.deque] = {}
        self._turns: collections.deque = collections.deque()
        # the client whose build was taken last, while it has more waiting: it goes to the back of the turns only when
        # the next build is taken, behind every client that asked while its build ran
        self._served = None
        self.builds = 0
        self.waited = 0.0  # seconds builds spent waiting in all
        self.skipped = 0  # builds not made: their request's connection had closed
        self.refused = 0  # requests answered 429: their client had MAX_WAITING_PER_CLIENT builds waiting

    @contextlib.contextmanager
    def page_message(self, in_use: bool = True):
        """``with gate.page_message(in_use):`` around the handling of one page's message; ``in_use``: the page
        has been open a while (:attr:`IN_USE_AFTER`), so a person is using it, not its script loading it."""
        self.messages += 1
        try:
            yield
        finally:
            self.messages -= 1
            if in_use:
                self.used_at = self.clock()

    async def _nobody_waits(self) -> bool:
        """Whether a build may start before its share allows: no page is in use and the loop is idle.

        The share's gaps keep the loop free for a key pressed on a page in use; when nobody uses one (a class
        opening the page together, before anyone drags), they only left the loop idle: a class took markedly longer
        to connect than with the same pages built back to back (``bench/HISTORY.md``). A key pressed on a page in
        use after :attr:`QUIET` seconds without one may wait one build; the next builds keep their share again.
        """
        if self.messages or self.clock() - self.used_at < self.QUIET:
            return False
        return await self._idle()

    async def _loop_idle(self) -> bool:
        """Whether the loop has nothing else to run now: one turn of it (every callback ready and every message
        already arrived) took under :attr:`IDLE`. A key pressed meanwhile is handled in that turn, before the
        next build starts."""
        start = self.clock()
        await asyncio.sleep(0)
        return self.clock() - start < self.IDLE

    def charge(self, seconds: float, start: float) -> None:
        """A build that started at ``start`` (the clock's time) took ``seconds`` of the loop.

        The bucket leaks during the build too, so a build of ``c`` leaves ``c * (1 - SHARE)`` in it and the next
        waits ``c * (1 - SHARE) / SHARE`` (:meth:`wait`): builds and gaps in the ratio ``SHARE : 1 - SHARE``.
        Negative or absurd values (a clock that jumped) are ignored.
        """
        super().charge(seconds, start)

    @property
    def queued(self) -> int:
        """How many builds wait for the gate."""
        return sum(map(len, self._lines.values()))

    def waiting_from(self, request) -> int:
        """How many builds ``request``'s client has waiting."""
        return len(self._lines.get(_client(request), ()))

    def turn(self, request=None) -> _Turn:
        """``async with gate.turn(request):`` around the build of the page ``request`` (Tornado's request) asked
        for; None: one no client asked for (the health check's). Raises :class:`PageLeft` if the request's
        connection closes before the build starts, :class:`TooManyWaiting` if its client has too many waiting."""
        return _Turn(self, request)

    def admit(self, request) -> None:
        """Raise :class:`TooManyWaiting` (and log one line, backed off per client) if ``request``'s client already has
        :attr:`MAX_WAITING_PER_CLIENT` builds waiting, those whose asker has gone aside. For a websocket's handshake
        that would make a build, asked before its upgrade: after it, HTTP has no answer left to give."""
        client = _client(request)
        line = self._lines.get(client)
        if line is None or len(line) < self.MAX_WAITING_PER_CLIENT:
            return
        for waiter in [w for w in line if connection_closed(w.request)]:  # gone unnoticed: they leave first
            self._remove(waiter)
            self._skip(waiter)
        line = self._lines.get(client)
        if line is not None and len(line) >= self.MAX_WAITING_PER_CLIENT:
            self.refused += 1
            log.warning("Refused a page to %s: %d pages it asked for already wait to be built (at most %d a "
                        "client); answered 429", client, len(line), self.MAX_WAITING_PER_CLIENT)
            raise TooManyWaiting()

    def left(self, request) -> bool:
        """``request``'s connection has closed (Tornado's ``on_connection_close``): if its build waits, it leaves
        its line and is not built. Whether it was waiting."""
        for waiter in self._lines.get(_client(request), ()):
            if waiter.request is request:
                self._remove(waiter)
                self._skip(waiter)
                return True
        return False

    async def _enter(self, request) -> float:
        asked = self.clock()
        if self._busy or self._lines:
            waiter = self._queue(request)
            try:
                await waiter.future  # handed the gate by the build before
            except BaseException:
                self._remove(waiter)
                if waiter.handed:
                    self._release()  # it had been handed the gate: pass it on
                raise
        self._busy = True
        try:
            while (seconds := self.wait()) > 0 and not await self._nobody_waits():
                await self._sleep(min(seconds, self.RECHECK))
            if connection_closed(request):  # it left while the loop had its share
                self.skipped += 1
                raise PageLeft()
        except BaseException:
            self._release()
            raise
        start = self.clock()
        self.waited += start - asked
        return start

    def _queue(self, request) -> _Waiter:
        """A place for ``request``'s build at the back of its client's line; raises :class:`TooManyWaiting` when
        the line is full (never for the health check's builds, which no client asked for)."""
        if request is not None:
            self.admit(request)
        client = _client(request)
        line = self._lines.get(client)
        if line is None:
            line = self._lines[client] = collections.deque()
            self._turns.append(client)
        waiter = _Waiter(asyncio.get_running_loop().create_future(), request, client)
        line.append(waiter)
        return waiter

    def _remove(self, waiter: _Waiter) -> None:
        line = self._lines.get(waiter.client)
        if line is None or waiter not in line:
            return
        line.remove(waiter)
        if not line:
            del self._lines[waiter.client]
            if self._served == waiter.client:
                self._served = None
            else:
                self._turns.remove(waiter.client)

    def _skip(self, waiter: _Waiter) -> None:
        if not waiter.future.done():
            self.skipped += 1
            waiter.future.set_exception(PageLeft())

    def _take(self) -> _Waiter | None:
        """The next build waiting: the oldest of the client whose turn it is (None: none waits)."""
        if self._served is not None:  # its next build after every other client's, those that came meanwhile too
            self._turns.append(self._served)
            self._served = None
        if not self._turns:
            return None
        client = self._turns.popleft()
        line = self._lines[client]
        waiter = line.popleft()
        if line:
            self._served = client
        else:
            del self._lines[client]
        return waiter

    def _release(self) -> None:
        while (waiter := self._take()) is not None:
            if waiter.future.done():  # its asker gave up (cancelled)
                continue
            if connection_closed(waiter.request):  # gone, and Tornado has not said so yet
                self._skip(waiter)
                continue
            waiter.handed = True
            waiter.future.set_result(None)  # stays busy: the gate passes straight to it
            return
        self._busy = False


class _Turn:
    def __init__(self, gate: BuildGate, request):
        self._gate = gate
        self._request = request
        self._start = 0.0

    async def __aenter__(self) -> None:
        self._start = await self._gate._enter(self._request)

    async def __aexit__(self, *exc) -> None:
        gate = self._gate
        gate.charge(gate.clock() - self._start, self._start)
        gate.builds += 1
        gate._release()


def connection_closed(request) -> bool:
    """Whether ``request``'s asker has gone: the callable :func:`watch_gone` gave it says so (a websocket's), or its
    HTTP connection has closed (Tornado's handler of a page's request sets a close callback on its connection, so its
    stream watches for the client's end while the build waits). False for no request (the health check's) or a
    websocket's that nothing watches (its connection is the websocket's now: no stream), which are built as asked."""
    gone = getattr(request, GONE, None)
    if gone is not None:
        return gone()
    stream = _stream(request)
    return stream is not None and stream.closed()


#: The attribute of a request that holds its :func:`watch_gone` callable.
GONE = "explorer_build_gone"


def watch_gone(request, gone) -> None:
    """The build ``request`` asks for is not made once ``gone()`` is true (its asker has left; checked while it waits
    and at its turn): for a websocket's request, whose HTTP connection has handed its stream to the websocket, and
    whose handler knows when the socket has closed. ``gone`` should not hold the handler alive (a weak reference)."""
    setattr(request, GONE, gone)


def _client(request) -> object:
    """Whose line ``request``'s build waits in: its address; one line for the builds of no address (the health
    check's)."""
    address = client_address(request)
    return ("no address",) if address is None else address


def _stream(request):
    """The stream of ``request``'s HTTP connection (Tornado's ``IOStream``); None for no request or a websocket's."""
    return getattr(getattr(request, "connection", None), "stream", None)


def get_gate() -> BuildGate:
    """This server process's gate, created on first use."""
    import panel as pn

    gate = pn.state.cache.get(CACHE_KEY)
    if gate is None:
        gate = pn.state.cache.setdefault(CACHE_KEY, BuildGate())
    return gate
