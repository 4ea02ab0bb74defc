"""How much of this server process's event loop the class's drags may take, each session's other events, and each
client's pages together.

Under the drag's contract (``link/__init__.py``) a page draws its own drag and the server's mid-drag updates
only confirm it, so they can wait, and a click, a key or a release must not. Each session paces its own
updates (``link/channel.py``), and this budget spaces them further so that all the
process's mid-drag updates together take at most :attr:`DragBudget.SHARE` of the loop: with ``n`` pages
dragging and an update costing ``c`` seconds, a dragging page takes a position at most every
``n * c / SHARE`` seconds, and draws every move itself meanwhile.
The share is a quarter because ``c`` is the update alone: receiving the position and sending its answer cost
the loop about as much again, so a quarter of the loop's time in updates is about half of it in drags, and the
other half free for everything else. (At half, 60 learners kept the process's core busy, and a key pressed
right after a drag waited behind their positions: ``bench/HISTORY.md``, "With the class fix, and a quarter of the
loop for drags".) Releases are never spaced: they end a drag at once.

One budget per process, in ``pn.state.cache`` (like the room registry): it is the process's concern, not a
page's, and holds no learner's data, only which pages are dragging (weakly) and the recent cost.

A page counts only while its drag moves: one that has sent no position for :attr:`DragBudget.IDLE_AFTER`
seconds (a press held still, or never let go, as a page that means harm can do forty times over) takes no
share from the others until it sends one again.

A page's other events (a click, a key, a widget's change, a message of its own) are paced per session
(:class:`SessionEvents`): they run at once while the session has used little of the loop lately, and otherwise
wait their turn, so that one session's events take at most half of the loop however many it sends (one
message of 300 clicks on "New random draw" at d_k = 1024 froze every other page while it ran). The websocket's guard
(``server/guard.py``) applies a page's messages one event at a time through it.

A session is a page, and one client may open many: the pages of one client (an address) take their turns one
event at a time, and their events and runs together at most an equal part of the loop with every other client that
uses the server now (:class:`ClientShares`).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import time
import weakref

from services.pace import Pace, run_later

#: Where the process keeps its budget.
CACHE_KEY = "explorer-drag-budget"


class DragBudget:
    """The share of the event loop mid-drag updates may use, and the spacing that keeps them to it.

    Not a scheduler of its own: each page's channel schedules its updates (``link/channel.py``, by
    ``services/pace.py``'s rule, the newest position winning) and waits at least :meth:`gap` between two of them
    in the middle of a drag. The gap follows a running mean of an update's cost over every dragging page, not one
    page's last update: it spaces the whole class.

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
    #: full class (``n * c / SHARE``), so a page paced by the budget is never left out of it.
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


#: Where the process keeps its sessions' event pacing.
EVENTS_CACHE_KEY = "explorer-event-pacing"


class SessionEvents(Pace):
    """How one session's events (clicks, keys, widget changes, a page's messages) share the event loop.

    A leaky bucket of loop time (:class:`services.pace.Pace`): each event adds the seconds it took on the loop
    (:meth:`charge`), and the bucket empties at :attr:`SHARE` seconds a second. Unlike a drag's positions, where the
    newest wins and owes only its own cost, every event runs, in order (a click is never dropped for a newer one),
    so their costs add up. While it holds at most :attr:`BURST`, the session's next event runs
    at once; past that it waits (:meth:`wait`: ``(level - BURST) / SHARE`` seconds). An event that comes while the
    session waits is queued and run in its turn (:meth:`run`), one a turn of the loop. So once past its burst, a
    session's events take at most :attr:`SHARE` of the loop: after an event that took ``c`` seconds its next one
    waits about as long again, and every other page is served meanwhile. (One message of 300 clicks of "New random
    draw" at d_k = 1024 used to freeze every other page.) A page's click, key or change, spaced as a person
    makes them, never waits.

    Work a page does once (building a tab the first time it is shown) is not counted (:meth:`exempt`,
    :func:`once_a_page`): it cannot be repeated, and counting a 1 s build would hold the page's next click for 2 s.

    ``later(callback, seconds)`` runs ``callback`` on the session's loop after ``seconds``; ``clock`` gives the time
    in seconds (a test's own clock).

    >>> t = [0.0]
    >>> events = SessionEvents(later=None, clock=lambda: t[0])
    >>> events.charge(0.08); round(events.wait(), 3)  # one click at d_k = 1024: the next waits (0.08 - 0.05) / 0.5 s
    0.06
    >>> t[0] = 0.06; events.wait()
    0.0
    """

    #: The share of the loop one session's events may take.
    SHARE = 0.5
    #: Seconds of loop time a session's events may take at once without waiting: the cost of most of an honest page's
    #: events, and small beside what another page may wait (a page's message takes a few turns of the loop to read,
    #: and a session within its burst could take each of those turns).
    BURST = 0.05

    def __init__(self, later, clock=time.perf_counter):
        super().__init__(clock)
        self.accounted = 0.0  # seconds charged or exempted in all: a caller tells what was accounted while it ran
        self._later = later
        self._queue: collections.deque = collections.deque()
        self._draining = False
        self.pulled = False  # the page's document has been sent once (server/guard.py)

    def charge(self, seconds: float) -> None:
        """The session's events took ``seconds`` of the loop, charged whole when they end (negative or absurd values
        are ignored)."""
        if 0 <= seconds < 60:
            super().charge(seconds)
            self.accounted += seconds

    def exempt(self, seconds: float) -> None:
        """``seconds`` of the loop went to work the page does once: accounted for, not charged."""
        if 0 <= seconds < 60:
            self.accounted += seconds

    @property
    def queued(self) -> int:
        """How many of the session's events wait in its queue."""
        return len(self._queue)

    def drop_queued(self) -> int:
        """Forget the events waiting in the queue (the page's connection has closed); returns how many."""
        dropped = len(self._queue)
        self._queue.clear()
        return dropped

    def run(self, call) -> None:
        """Run ``call`` (one event's work, no arguments) now if the session may, else queue it; charge its time."""
        if not self._queue and self.wait() == 0:
            self._run(call)
        else:
            self._queue.append(call)
            self._schedule()

    def _run(self, call) -> None:
        accounted, start = self.accounted, self.clock()
        try:
            call()
        finally:
            self.charge(self.clock() - start - (self.accounted - accounted))

    def _schedule(self) -> None:
        if not self._draining:
            self._draining = True
            self._later(self._drain, self.wait())

    def _drain(self) -> None:
        self._draining = False
        if not self._queue:
            return
        if self.wait() > 0:
            self._schedule()
            return
        call = self._queue.popleft()
        try:
            self._run(call)
        finally:  # the next in its own turn, also after a call that raised
            if self._queue:
                self._schedule()


@contextlib.contextmanager
def once_a_page(doc=None):
    """Work a page does once, such as building a tab the first time it is shown: not counted against the share
    of ``doc``'s session (default: the current document's; nothing outside a served page)."""
    import panel as pn

    events = get_event_pacer().session(doc if doc is not None else pn.state.curdoc)
    if events is None:
        yield
        return
    start = events.clock()
    try:
        yield
    finally:
        events.exempt(events.clock() - start)


class EventPacer:
    """Each served session's :class:`SessionEvents`, made on first use and dropped when the session ends."""

    def __init__(self):
        self._sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # document -> SessionEvents

    def session(self, doc) -> SessionEvents | None:
        """The pacing of ``doc``'s session; None for a document that is not served (a test, a notebook)."""
        if doc is None or doc.session_context is None:
            return None
        events = self._sessions.get(doc)
        if events is None:
            events = self._sessions[doc] = SessionEvents(later=functools.partial(_later, weakref.ref(doc)))
            # its queue holds the document (each call does): dropped with the session, or the document would stay
            doc.on_session_destroyed(functools.partial(_forget, weakref.ref(self), weakref.ref(doc)))
        return events


def _later(doc_ref, callback, seconds: float) -> None:
    doc = doc_ref()
    if doc is not None:
        run_later(doc, callback, seconds)


def _forget(pacer_ref, doc_ref, session_context) -> None:
    pacer, doc = pacer_ref(), doc_ref()
    if pacer is not None and doc is not None:
        pacer._sessions.pop(doc, None)


def get_event_pacer() -> EventPacer:
    """This server process's :class:`EventPacer`, created on first use."""
    import panel as pn

    pacer = pn.state.cache.get(EVENTS_CACHE_KEY)
    if pacer is None:
        pacer = pn.state.cache.setdefault(EVENTS_CACHE_KEY, EventPacer())
    return pacer


#: Where the process keeps its clients' shares of the loop.
SHARES_CACHE_KEY = "explorer-client-shares"


class _Client:
    """One client's turn (one of its events at a time) and its bucket of loop time."""

    def __init__(self, clock):
        self.lock = None  # an asyncio.Lock, made on the loop when first asked for
        self.pace = Pace(clock, share=1.0, burst=ClientShares.BURST)
        self.seen = -math.inf  # when it last sent an event or asked for a run (the clock's time)


class ClientShares:
    """How the clients that use the server now share its event loop: each takes at most an equal part.

    A client is a page's address as the server sees it (:func:`client_of`): the browser's, or the proxy's
    ``X-Forwarded-For`` with ``EXPLORER_USE_XHEADERS``. A session's events are paced on their own
    (:class:`SessionEvents`, half the loop each), and the queue of runs is fair between clients
    (``services/train_queue.py``), but nothing bounded what one client's many pages took together: one client's 50
    pages pressing New seed every 0.2 s kept the loop busy, and another learner's keys and runs waited behind every
    turn (bench/RESULTS.md, issue 45). Here each client's events go one at a time (:meth:`turn`: the client's pages in
    the order their events came), and what its events and its runs took is charged to a bucket of its own
    (:meth:`charge`, :class:`services.pace.Pace`) that empties at :meth:`share` of the loop: ``1 / n`` with ``n`` the
    clients active in the last :attr:`ACTIVE_S` seconds. Past :attr:`BURST` the client's next event or run waits
    (:meth:`wait`) while everyone else's go. A client alone on the server (a class behind one address) has the
    whole loop, as before; with two, half each.

    ``clock`` gives the time in seconds (a test's own clock).

    >>> t = [0.0]
    >>> shares = ClientShares(clock=lambda: t[0])
    >>> shares.seen("flood"); shares.seen("learner")
    >>> shares.charge("flood", 0.25); round(shares.wait("flood"), 3)  # 0.1 s past its burst, at half the loop
    0.2
    >>> shares.wait("learner")
    0.0
    """

    #: A client counts as using the server for this long (s) after its last event or run.
    ACTIVE_S = 10.0
    #: Seconds of loop time a client may take at once before its next event or run waits: a person's clicks and
    #: runs, spaced as a person makes them, never wait.
    BURST = 0.15

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self._clients: dict[object, _Client] = {}

    def _client(self, client) -> _Client:
        c = self._clients.get(client)
        if c is None:
            c = self._clients[client] = _Client(self.clock)
        return c

    def seen(self, client) -> None:
        """``client`` sent an event or asked for a run: it uses the server now."""
        self._client(client).seen = self.clock()

    def active(self) -> int:
        """How many clients have used the server in the last :attr:`ACTIVE_S` seconds (those that have not, with
        nothing owed and no event in hand, are forgotten)."""
        since = self.clock() - self.ACTIVE_S
        for client, c in list(self._clients.items()):
            if c.seen < since and c.pace.wait() == 0 and not (c.lock is not None and c.lock.locked()):
                del self._clients[client]
        return sum(1 for c in self._clients.values() if c.seen >= since)

    def share(self) -> float:
        """The part of the loop each client may take: 1 / the clients using the server now."""
        return 1.0 / max(1, self.active())

    def _paced(self, client) -> Pace:
        pace = self._client(client).pace
        pace.set_share(self.share())
        return pace

    def charge(self, client, seconds: float) -> None:
        """``client``'s event or run took ``seconds`` of the loop."""
        self._paced(client).charge(seconds)

    def wait(self, client) -> float:
        """Seconds until ``client``'s next event or run may start (0: now)."""
        return self._paced(client).wait() if client in self._clients else 0.0

    def turn(self, client):
        """``async with shares.turn(client):`` one of ``client``'s events at a time, in the order they came."""
        c = self._client(client)
        if c.lock is None:
            import asyncio

            c.lock = asyncio.Lock()
        return c.lock


def client_of(doc) -> object:
    """Who ``doc``'s page is: the address its page was opened from (:func:`client_address`); the page itself when it
    has none (a test)."""
    address = client_address(getattr(getattr(doc, "session_context", None), "request", None))
    return client_at(address) if address is not None else ("page", id(doc))


def client_address(request) -> str | None:
    """The address a request came from as the server sees it (Tornado's ``remote_ip``: the browser's, or the proxy's
    ``X-Forwarded-For`` with ``EXPLORER_USE_XHEADERS``); None without one (no request, a test's)."""
    address = getattr(request, "remote_ip", None) if request is not None else None
    return address if isinstance(address, str) else None


def client_at(address: str) -> object:
    """The client of a page opened from ``address`` (:func:`client_of`)."""
    return ("address", address)


def get_client_shares() -> ClientShares:
    """This server process's :class:`ClientShares`, created on first use."""
    import panel as pn

    shares = pn.state.cache.get(SHARES_CACHE_KEY)
    if shares is None:
        shares = pn.state.cache.setdefault(SHARES_CACHE_KEY, ClientShares())
    return shares
