"""A room's live channel: the presenter's query, written once per move to every follower's page.

While a presenter drags, the only thing that changes in the room's view is the query. A
follower's page can compute everything else itself (``link/drag.js``), so its server
need not recompute and re-render the page for each move: that costs each page's server its
own update, and left a class far behind (``bench/HISTORY.md``). Instead each following page opens this websocket,
``room-live?room=CODE`` beside Bokeh's own, and the room writes one short JSON text to all of
them: each pointer move of the presenter as it reaches the server
(:meth:`services.rooms.RoomRegistry.publish_hand`), and each view of the room that is not such a
move (:meth:`~services.rooms.RoomRegistry.publish`). The page's own server sends the full view,
with its authoritative numbers, once the room's view rests (``widgets/room.py``).

Each channel belongs to one page following the room: its server gives the page a ticket
(:meth:`~services.rooms.RoomRegistry.live_ticket`, in the page's own document, which no other page sees),
and the page's script opens the channel with it, as the websocket subprotocols ``explorer-live, TICKET``
(the way BokehJS sends its session token: not in the address, so never in a log). A page has one channel:
a newer one with its ticket replaces it (the old one closes with 4409), and leaving the room closes it.
So the room's slots are held by its pages only, never by sockets anyone can open.

The channel is read-only: it carries only what every follower of the room may see, accepts the same origins as
Bokeh's websocket (``server/ws_origin.py``), and closes on any message from the page (code 4400), without a
following page's ticket or when it names no running room (4403 for both, with one reason: a channel tells nobody
which codes are in use), when the page's newer channel replaces it (4409; the page does not try again after any of
these), or when this process holds as many channels as it accepts (4429; the page tries again later). A client whose
tries keep failing is refused (HTTP 429) before its handshake, a try every few seconds at most once it has failed
:data:`FAILED_TRIES` times (:class:`FailedTries`), unless it comes with a following page's ticket: guessing codes
through the channel was 338 tries a second. It is pinged, so a page that vanished without closing is
dropped, and a page that reads slowly gets the newest query rather than a backlog.
"""

from __future__ import annotations

import threading
import time

from bokeh.server.views.ws import WSHandler
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from server.ws_origin import refuse_foreign_origin
from services.room_hand import LIVE_ROUTE as ROUTE
from services.rooms import RoomError, RoomFull, get_registry

#: The subprotocol a page asks for, followed by its ticket.
SUBPROTOCOL = "explorer-live"
#: Failed tries a client (an address) may make at once; after them, one more each :data:`FAILED_TRY_EVERY_S`. A
#: page's channel fails only when its page has left the room or its server restarted, so a class behind one address
#: (a school's network) stays far inside it.
FAILED_TRIES = 20
FAILED_TRY_EVERY_S = 3.0
#: Clients remembered at most; past it those whose tries have all come back are forgotten.
MAX_CLIENTS = 10_000
CACHE_KEY = "attention-explorer.live-tries"


class FailedTries:
    """Each client's failed tries to open a live channel, as a bucket of :data:`FAILED_TRIES` refilled one each
    :data:`FAILED_TRY_EVERY_S`. One per process (``pn.state.cache``); thread-safe."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._left: dict[str, tuple[float, float]] = {}  # client -> (tries left, when counted)

    def _now_left(self, client: str, now: float) -> float:
        left, then = self._left.get(client, (FAILED_TRIES, now))
        return min(FAILED_TRIES, left + (now - then) / FAILED_TRY_EVERY_S)

    def take(self, client: str) -> bool:
        """One try of ``client`` that will fail (it has no following page's ticket), taken before its handshake, so
        that tries made at once count as much as tries one after another; False if it has none left."""
        now = self._clock()
        with self._lock:
            left = self._now_left(client, now)
            if left < 1:
                return False
            self._left[client] = (left - 1, now)
            if len(self._left) > MAX_CLIENTS:
                self._left = {c: v for c, v in self._left.items() if self._now_left(c, now) < FAILED_TRIES}
            return True


def failed_tries() -> FailedTries:
    import panel as pn

    tries = pn.state.cache.get(CACHE_KEY)
    return tries if tries is not None else pn.state.cache.setdefault(CACHE_KEY, FailedTries())


class RoomLiveHandler(WebSocketHandler):
    """One follower page's live channel (``GET /room-live?room=CODE``, websocket)."""

    code = ""
    _ticket: str | None = None  # the ticket the page offered with the subprotocol
    _writing = None  # the write in flight
    _queue: list[tuple[str, bool]]  # (text, replaceable) waiting for it; of consecutive positions only the newest

    @property
    def ping_interval(self) -> float:
        return 30.0  # seconds between pings; a page that does not answer within ping_timeout is dropped

    @property
    def ping_timeout(self) -> float:
        return 30.0

    def check_origin(self, origin: str) -> bool:
        # the same rule, and the same settings (BOKEH_ALLOW_WS_ORIGIN), as the page's Bokeh websocket
        return WSHandler.check_origin(self, origin)

    def prepare(self) -> None:
        # the rule above for every handshake that names an origin, not only those Tornado takes to be cross-origin
        refuse_foreign_origin(self)

    def select_subprotocol(self, subprotocols: list[str]) -> str | None:
        # the page offers [SUBPROTOCOL, ticket]; the answer names the first only, so the ticket goes no further
        if len(subprotocols) == 2 and subprotocols[0] == SUBPROTOCOL:
            self._ticket = subprotocols[1]
            return SUBPROTOCOL
        return None

    async def get(self, *args, **kwargs) -> None:
        # Before the handshake. A page's own ticket always gets through (a class shares one address with whoever
        # guesses behind it); any other try is one that will fail, room or no room, and takes one of the client's.
        if not get_registry().is_ticket(self.get_query_argument("room", ""), self._offered_ticket()) and \
                not failed_tries().take(self.request.remote_ip):
            self.set_status(429)
            self.finish("Too many tries for a room's live channel: wait a little.")
            return
        await super().get(*args, **kwargs)

    def _offered_ticket(self) -> str | None:
        offered = [p.strip() for p in self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        return offered[1] if len(offered) == 2 and offered[0] == SUBPROTOCOL else None

    def open(self) -> None:
        self._queue = []
        self.code = self.get_query_argument("room", "")
        try:
            get_registry().watch(self.code, self._ticket, self)
        except RoomFull:  # the page tries again later, less and less often
            self.close(4429, "this server has as many live channels as it accepts")
            return
        except RoomError:  # no such room, or no page of it: one answer for both
            self.close(4403, "only a page following a running room opens its live channel")
            return
        self.set_nodelay(True)  # one small text per move: send it now (as server/transport.py does for pages)

    def on_message(self, message) -> None:
        self.close(4400, "this channel is read-only")

    def on_close(self) -> None:
        get_registry().unwatch(self.code, self)

    def send(self, text: str, replaceable: bool) -> None:
        """Write ``text`` (a JSON view, see RoomRegistry.publish) now, or after the write in flight.

        ``replaceable``: the text is a position, which the next position may replace while it waits.
        """
        if self._writing is None:
            self._write(text)
        elif replaceable and self._queue and self._queue[-1][1]:
            self._queue[-1] = (text, True)  # only the newest position matters
        else:
            self._queue.append((text, replaceable))  # a view that is not a position keeps its place

    def _write(self, text: str) -> None:
        try:
            self._writing = self.write_message(text)
        except WebSocketClosedError:
            self._writing = None
            return
        self._writing.add_done_callback(self._written)

    def _written(self, future) -> None:
        self._writing = None
        if future.exception() is None and self._queue:  # the exception is the closed channel's: nothing to do
            self._write(self._queue.pop(0)[0])


def live_patterns() -> list[tuple]:
    """The tornado routes of the live channel, for the server's ``extra_patterns``."""
    return [(ROUTE, RoomLiveHandler)]
