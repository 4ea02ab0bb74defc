"""Rooms: one presenter's view, followed live by a class, kept in this server process's memory.

A :class:`RoomRegistry` exists once per server process (:func:`get_registry`
keeps it in ``pn.state.cache``, never in a module global). A :class:`Room` has a
short code anyone may know (the join link carries only ``?room=CODE``) and a
presenter token only the presenter's page knows; every change to the room's
view must present that token. Followers subscribe to a room and receive the
latest snapshot; the registry never touches a follower's document itself (see
:mod:`widgets.room`).

A presenter token is not stored anywhere: it is an HMAC-SHA256 of the room's code under the server's
secret (:class:`RoomSecret`), the way Bokeh signs session ids with ``BOKEH_SECRET_KEY``. Only a server that
holds the secret can make one, and every process that holds it can check one, also after a restart. A
code someone chose, or the code of a class's room, is therefore worth nothing without its token.

Several server processes behind a proxy each have their own registry: the
proxy must route every request carrying ``room=CODE`` to the same process (see
``deploy/nginx.conf``). A presenter link may therefore arrive at a process
that has never seen its code (another process, or this one after a restart):
:meth:`RoomRegistry.enter_as_presenter` then opens the room there, if the token is the code's.
"""

from __future__ import annotations

import base64
import bisect
import collections
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

from server.polls import Poll, PollCounts, PollRefused, PollView

#: Letters and digits a class can read off a projector: no 0/O or 1/I/L to confuse.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
#: Seconds a room lives on after its presenter's page has gone (``ROOM_END_AFTER`` overrides).
DEFAULT_END_AFTER = 300.0
#: Seconds a room's view must rest before followers' servers take it in full (``ROOM_SETTLE_AFTER``
#: overrides). Longer than the gap between two moves of a drag on a busy server (taking a view in full
#: costs tens of ms per follower, so it must not happen mid-drag); short enough that a follower's
#: inspector has caught up by the time anyone reads it.
DEFAULT_SETTLE_AFTER = 1.0
#: Live channels one room accepts: a class, with room to spare. Each belongs to one page following the room
#: (its ticket, :meth:`RoomRegistry.live_ticket`), so only pages can hold them.
MAX_LIVE_CHANNELS = 500
#: Rooms one page may start within a minute. A page has one running room at a time (pressing Present again gives
#: it back), so it starts another only once that one has ended.
MAX_ROOMS_PER_MINUTE = 3
#: Shortest time between two texts of a presenter's hand on a room's live channel (one 60 Hz frame).
HAND_GAP_S = 1 / 60
#: While the presenter's hand has moved this recently, the room's query-only views are not written to the
#: live channel: each is a position the hand already passed, and would step the followers' pages back.
HAND_ACTIVE_S = 0.5
#: Ended codes are not given to a new room for this long (their presenter's link would still drive it).
TOMBSTONE_SECONDS = 24 * 3600.0
#: Ended codes are kept in batches of this many seconds, each dropped whole once all of it is old enough.
TOMBSTONE_BATCH_SECONDS = 3600.0
#: The environment variable holding the server's secret for presenter tokens (see :class:`RoomSecret`).
SECRET_ENV = "EXPLORER_ROOM_SECRET"
#: Shortest secret accepted, in characters; Bokeh asks the same of ``BOKEH_SECRET_KEY``.
MIN_SECRET_CHARS = 32
CACHE_KEY = "attention-explorer.rooms"
log = logging.getLogger(__name__)

Snapshot = dict[str, Any]
#: A follower's callback: ``(version, snapshot, query_only)`` on each change, ``(None, None, False)`` when
#: the room ends. ``query_only``: the view differs from the previous one only in its query (a drag).
Listener = Callable[[int | None, Snapshot | None, bool], None]
#: A page's view of the room's poll (:meth:`RoomRegistry.watch_poll`): ``(view, counts)`` whenever the poll
#: changes, ``(None, None)`` when the room ends. ``counts`` is None except for the presenter's page.
PollListener = Callable[[PollView | None, PollCounts | None], None]
#: A live channel's end (``server/room_live.py``): ``send(text, replaceable)``, called on the server's event
#: loop (``replaceable``: a position, which a newer one may replace if the channel is behind), and ``close()``.
LiveSink = Any


class RoomError(Exception):
    """A room request that cannot be honoured; ``str(error)`` is safe to show to the learner."""


class RoomFull(RoomError):
    """The room already has :data:`MAX_LIVE_CHANNELS` live channels."""


class NotFollowing(RoomError):
    """A live channel whose ticket is no page's following the room (made up, or its page has left)."""


class TooManyRooms(RoomError):
    """A page has started :data:`MAX_ROOMS_PER_MINUTE` rooms within the last minute."""


def normalize_code(text: str | None) -> str | None:
    """The room code in ``text`` (case, spaces and dashes ignored), or None if it cannot be one.

    >>> normalize_code(" k7m-4qx ")
    'K7M4QX'
    >>> normalize_code("K7M4Q0") is None  # 0 is not in the alphabet
    True
    """
    if not text:
        return None
    code = "".join(c for c in text.upper() if c not in " -")
    if len(code) != CODE_LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def code_number(code: str) -> int:
    """A room code as the number it writes in base 31 (:data:`ALPHABET`): under 31⁶ < 2³², so 4 bytes.

    >>> code_number("222222"), code_number("222223")
    (0, 1)
    """
    n = 0
    for c in code:
        n = n * len(ALPHABET) + ALPHABET.index(c)
    return n


class EndedCodes:
    """The codes of ended rooms, each kept at least ``keep`` seconds: 4 bytes a code.

    Kept as numbers (:func:`code_number`) in sorted arrays, one per :data:`TOMBSTONE_BATCH_SECONDS` of endings,
    and an array is dropped whole once its newest code is ``keep`` seconds old. A dict of code strings to times
    kept far more a code (``bench/rooms.py``; see bench/RESULTS.md, "20,000 Present clicks"), and was rebuilt every
    second.
    Not thread-safe: the registry holds its lock.
    """

    def __init__(self, keep: float = TOMBSTONE_SECONDS):
        self.keep = keep
        self._batches: collections.deque[tuple[float, array]] = collections.deque()  # (first ending's time, codes)

    def add(self, code: str, now: float) -> None:
        if not self._batches or now - self._batches[-1][0] >= TOMBSTONE_BATCH_SECONDS:
            self._batches.append((now, array("I")))
        bisect.insort(self._batches[-1][1], code_number(code))

    def expire(self, now: float) -> None:
        """Drop every batch whose codes have all been kept ``keep`` seconds."""
        while self._batches and self._batches[0][0] + TOMBSTONE_BATCH_SECONDS + self.keep <= now:
            self._batches.popleft()

    def __contains__(self, code: str) -> bool:
        n = code_number(code)
        for _, codes in self._batches:
            i = bisect.bisect_left(codes, n)
            if i < len(codes) and codes[i] == n:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(codes) for _, codes in self._batches)


def seconds_from_env(name: str, default: float) -> float:
    """Environment variable ``name`` in seconds (a positive number), or ``default`` when it is unset.

    Raises ValueError if the variable is set to anything else.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {raw!r}")
    return value


def end_after_from_env() -> float:
    """``ROOM_END_AFTER`` in seconds (a positive number), or :data:`DEFAULT_END_AFTER`; ValueError otherwise."""
    return seconds_from_env("ROOM_END_AFTER", DEFAULT_END_AFTER)


@dataclass(frozen=True)
class RoomSecret:
    """The key that makes and checks presenter tokens: ``token = HMAC-SHA256(key, code)``, base64url.

    ``persistent``: the key came from :data:`SECRET_ENV`, so tokens stay valid across restarts and in
    every process started with the same value. Otherwise it was drawn when the process started, and
    presenter links stop working when the server restarts.
    """

    key: bytes = field(repr=False)
    persistent: bool

    @classmethod
    def from_env(cls, environ=None) -> RoomSecret:
        """The secret in ``EXPLORER_ROOM_SECRET``, or a random one for this process when it is unset.

        Raises ValueError if it is set but shorter than :data:`MIN_SECRET_CHARS` characters.
        """
        raw = (os.environ if environ is None else environ).get(SECRET_ENV, "")
        if not raw:
            return cls(secrets.token_bytes(32), persistent=False)
        if len(raw) < MIN_SECRET_CHARS:
            raise ValueError(f"{SECRET_ENV} must be at least {MIN_SECRET_CHARS} characters long "
                             f"(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
        return cls(raw.encode(), persistent=True)

    def token(self, code: str) -> str:
        """The presenter token of room ``code`` (43 characters of base64url)."""
        mac = hmac.new(self.key, b"attention-explorer presenter\0" + code.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def matches(self, code: str, token: str | None) -> bool:
        """Whether ``token`` is room ``code``'s presenter token (compared in constant time)."""
        return isinstance(token, str) and hmac.compare_digest(self.token(code).encode(), token.encode())


@dataclass(eq=False)
class Room:
    """One presented view. ``snapshot`` and ``version`` change only through the registry."""

    code: str
    snapshot: Snapshot | None = None
    version: int = 0
    presenter: str | None = None  # session id of the page currently presenting
    left_at: float | None = None  # when the presenter's page went away; None while present
    published_at: float = 0.0  # when the view last changed (the registry's clock)
    ended: bool = False
    _listeners: dict[object, Listener] = field(default_factory=dict, repr=False)
    _joined: dict[object, float] = field(default_factory=dict, repr=False)  # follower key -> when it joined
    #: live channels watching the room's query, by the key of the page each belongs to (one a page)
    _live: dict[object, LiveSink] = field(default_factory=dict, repr=False)
    _tickets: dict[str, object] = field(default_factory=dict, repr=False)  # live channel ticket -> follower key
    _ticket_of: dict[object, str] = field(default_factory=dict, repr=False)
    hand_at: float = -1e9  # when the presenter's hand last moved the query (the registry's clock)
    #: follower pages take a view in full one at a time: the one doing it now, and the others' turns to come
    _settling: bool = field(default=False, repr=False)
    _settle_turns: collections.deque = field(default_factory=collections.deque, repr=False)
    _hand: tuple | None = field(default=None, repr=False)  # the hand's position not yet written
    _hand_sent: float = field(default=-1e9, repr=False)  # when it was last written (the event loop's clock)
    _hand_timer: Any = field(default=None, repr=False)
    poll: Poll | None = field(default=None, repr=False)  # the question asked of the room, if any
    poll_asked_at: float = 0.0  # when it was asked (the registry's clock)
    _polls_asked: int = field(default=0, repr=False)
    #: pages watching the poll: key -> (listener, whether it is the presenter's and sees the counts)
    _poll_watchers: dict[object, tuple[PollListener, bool]] = field(default_factory=dict, repr=False)

    @property
    def follower_count(self) -> int:
        return len(self._listeners)


class RoomRegistry:
    """Every room of this server process. Thread-safe; never blocks on a follower.

    ``end_after``: seconds a room outlives its presenter's page. ``clock``: a
    monotonic clock in seconds (tests pass a fake one). ``secret``: what makes and checks presenter
    tokens (default: a random one for this registry, as when ``EXPLORER_ROOM_SECRET`` is unset).
    """

    def __init__(self, end_after: float = DEFAULT_END_AFTER, clock: Callable[[], float] = time.monotonic,
                 settle_after: float = DEFAULT_SETTLE_AFTER, secret: RoomSecret | None = None):
        self.secret = secret if secret is not None else RoomSecret(secrets.token_bytes(32), persistent=False)
        self.end_after = end_after
        self.settle_after = settle_after
        self._clock = clock
        self._rooms: dict[str, Room] = {}
        self._ended = EndedCodes()
        #: page key -> (the code of the room it started last, when it started rooms within the last minute)
        self._creators: dict[object, tuple[str, collections.deque]] = {}
        self._lock = threading.RLock()
        self._sweeper = None
        self._loop = None  # the event loop live channels are written on; set by the first watch()

    # -- creating and entering ------------------------------------------------------------------------------------

    def create(self, snapshot: Snapshot | None = None, creator: object = None) -> tuple[Room, str]:
        """Open a room under a fresh code; returns it with its presenter token (shown to nobody else).

        The room waits for its presenter's page (:meth:`enter_as_presenter`) and
        ends ``end_after`` seconds from now if none comes.

        ``creator``: the key of the page asking (its session). A page has one running room at a time: while the
        room it started last runs, it gets that room again (with ``snapshot`` as its view if nobody presents
        it yet). Raises :class:`TooManyRooms` for a page that has started :data:`MAX_ROOMS_PER_MINUTE` rooms in
        the last minute. Without ``creator`` (a test, a tool) neither rule applies.
        """
        now = self._clock()
        with self._lock:
            made = self._creators.get(creator) if creator is not None else None
            if made is not None and made[0] in self._rooms:
                room = self._rooms[made[0]]
                if room.presenter is None and room.version == 0 and snapshot is not None:
                    room.snapshot = snapshot
                return room, self.secret.token(room.code)
            times = made[1] if made is not None else collections.deque()
            while times and now - times[0] >= 60:
                times.popleft()
            if creator is not None and len(times) >= MAX_ROOMS_PER_MINUTE:
                raise TooManyRooms(f"This page has started {len(times)} rooms in the last minute.")
            while True:
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
                if code not in self._rooms and code not in self._ended:
                    break
            room = self._open(code, snapshot)
            if creator is not None:
                times.append(now)
                self._creators[creator] = (code, times)
        return room, self.secret.token(code)

    def enter_as_presenter(self, code: str | None, token: str | None, session: str) -> Room:
        """Make ``session`` the presenter of room ``code``; the token must be the code's (:class:`RoomSecret`).

        A room this process does not hold is opened here (the presenter link was routed here by the code,
        or the server restarted). Raises :class:`RoomError` for a malformed code or a token that is not
        this code's under this server's secret; the message says why a link may have stopped working.
        """
        norm = normalize_code(code)
        if norm is None:
            raise RoomError("That is not a room code.")
        if not token:
            raise RoomError(f"Only the presenter's link can present room {norm}.")
        if not self.secret.matches(norm, token):
            why = ("" if self.secret.persistent else
                   " Presenter links stop working when the server restarts (it has no EXPLORER_ROOM_SECRET);"
                   " press Present to start a new room.")
            raise RoomError(f"This presenter link is not valid for room {norm} on this server.{why}")
        with self._lock:
            room = self._rooms.get(norm)
            if room is None:  # its code may stay among the ended ones: it only keeps new rooms off it a while longer
                room = self._open(norm, None)
            room.presenter, room.left_at = session, None
            return room

    def _open(self, code: str, snapshot: Snapshot | None) -> Room:
        room = Room(code=code, snapshot=snapshot, left_at=self._clock())
        self._rooms[code] = room
        return room

    def get(self, code: str | None) -> Room | None:
        """The running room with this code (any case, dashes allowed), or None."""
        norm = normalize_code(code)
        with self._lock:
            return self._rooms.get(norm) if norm else None

    def view(self, code: str | None) -> tuple[int, Snapshot | None] | None:
        """``(version, snapshot)`` of room ``code``'s view, read together; None if it is not running."""
        with self._lock:  # re-entrant: get() takes it too, and the pair is read under one hold
            room = self.get(code)
            return None if room is None else (room.version, room.snapshot)

    def begin_settle(self, code: str | None, turn: Callable[[], bool]) -> bool:
        """Let one follower page of room ``code`` take the room's view in full; True if this one may now.

        Otherwise ``turn`` is queued, and called once the page before it is done (:meth:`end_settle`);
        ``turn`` returns False if its page can no longer take it (closed), and the next one is called.
        A room's pages take a view one at a time so that the server, which has one event loop for
        everyone, stays free between two pages for the presenter's next drag.
        """
        room = self.get(code)
        if room is None:
            return True
        with self._lock:
            if not room._settling:
                room._settling = True
                return True
            room._settle_turns.append(turn)
            return False

    def end_settle(self, code: str | None) -> None:
        """The page that :meth:`begin_settle` let in is done: call the next queued page's turn."""
        room = self.get(code)
        if room is None:
            return
        with self._lock:
            room._settling = False
            turns = room._settle_turns
        while True:
            with self._lock:
                if room._settling or not turns:
                    return
                turn = turns.popleft()
            if turn():
                return

    def resting_for(self, code: str | None) -> float | None:
        """Seconds since room ``code``'s view last changed, or None if it is not running."""
        room = self.get(code)
        return None if room is None else self._clock() - room.published_at

    # -- the presenter's side -------------------------------------------------------------------------------------

    def publish(self, code: str, token: str | None, snapshot: Snapshot, query_only: bool = False) -> int:
        """Make ``snapshot`` the room's view and offer it to every follower; returns its version.

        ``query_only``: only the query moved since the last view. Live channels (:meth:`watch`) get
        the version as one JSON text, written once for the whole room: ``{"version": v, "query":
        [x, y]}``, or ``"query": null`` when more than the query changed (the follower's page then
        waits for its server's full view). A query-only view is not written while the presenter's hand
        is moving (:meth:`publish_hand` has written its position, or a newer one, already).

        Raises :class:`RoomError` if the room is not running or the token is not the room's.
        """
        with self._lock:
            room = self._presenters_room(code, token, "change")
            room.version += 1
            room.snapshot, room.published_at = snapshot, self._clock()
            version, listeners, sinks = room.version, list(room._listeners.values()), list(room._live.values())
        for listener in listeners:  # each only records the snapshot and schedules its own page
            try:
                listener(version, snapshot, query_only)
            except Exception:  # one broken follower page must not stop the room
                log.exception("a follower of a room failed to take a view")
        if query_only and self._clock() - room.hand_at < HAND_ACTIVE_S:
            sinks = []  # the hand has written it, or a newer position, already
        if sinks:
            query = [float(c) for c in snapshot["query"]] if query_only else None
            text = json.dumps({"version": version, "query": query})
            # publish runs in the presenter's callback, which Bokeh may run in a worker thread;
            # websockets are written on the event loop only
            self._loop.add_callback(self._send_live, sinks, text, query is not None)
        return version

    def publish_hand(self, code: str, token: str | None, query: tuple[float, float]) -> None:
        """The presenter's pointer moved the query to ``query``: write it to the room's live channels now.

        This runs as each pointer move reaches the presenter's server, before its page's paced update
        (all of the page's numbers, later on a busy server) makes it the room's next view. The text is that next view's
        version with the hand's query; hands faster than :data:`HAND_GAP_S` are coalesced, the newest
        always written. Ignored without the room's token, for an ended room, or for a non-finite query.
        """
        x, y = (float(c) for c in query)
        if not (math.isfinite(x) and math.isfinite(y)):
            return
        with self._lock:
            try:
                room = self._presenters_room(code, token)
            except RoomError:
                return
            room.hand_at = self._clock()
            if not room._live:
                return
            # the view this position becomes (or one before it, if the presenter's server is behind)
            version = room.version + 1
        self._loop.add_callback(self._take_hand, room, (version, [x, y]))

    def _take_hand(self, room: Room, hand: tuple[int, list[float]]) -> None:
        """On the event loop: write the hand's newest position now, or when HAND_GAP_S has passed."""
        room._hand = hand
        if room._hand_timer is None:
            wait = room._hand_sent + HAND_GAP_S - self._loop.time()
            if wait > 0:
                room._hand_timer = self._loop.call_later(wait, self._write_hand, room)
            else:
                self._write_hand(room)

    def _write_hand(self, room: Room) -> None:
        room._hand_timer = None
        hand, room._hand = room._hand, None
        if hand is None or room.ended:
            return
        room._hand_sent = self._loop.time()
        with self._lock:
            sinks = list(room._live.values())
        self._send_live(sinks, json.dumps({"version": hand[0], "query": hand[1]}), True)

    @staticmethod
    def _send_live(sinks, text: str, replaceable: bool) -> None:
        for sink in sinks:
            sink.send(text, replaceable)

    def presenter_left(self, code: str, session: str) -> None:
        """The presenter's page ``session`` is gone: start the room's ``end_after`` countdown."""
        with self._lock:
            room = self._rooms.get(code)
            if room is not None and room.presenter == session:
                room.presenter, room.left_at = None, self._clock()

    def end(self, code: str, token: str | None) -> None:
        """End the room now (the presenter stops presenting). Raises :class:`RoomError` without its token."""
        with self._lock:
            if code not in self._rooms:  # ended already (an ended room is no longer held), or never started
                return
            room = self._presenters_room(code, token, "end")
        self._end(room)

    # -- the followers' side --------------------------------------------------------------------------------------

    def follow(self, code: str, key: object, listener: Listener) -> Room:
        """Subscribe ``listener`` (keyed by ``key``) to room ``code``.

        Raises :class:`RoomError` if it is not running.
        """
        with self._lock:
            room = self._rooms.get(code)
            if room is None or room.ended:
                raise RoomError(f"There is no room {code} running on this server.")
            room._listeners[key] = listener
            room._joined.setdefault(key, self._clock())
        self._poll_changed(room, counts_only=True)  # the presenter's count of pages following
        return room

    def live_ticket(self, code: str, key: object) -> str | None:
        """The ticket with which page ``key``, following room ``code``, opens the room's live channel (:meth:`watch`).

        One per page, the same until the page leaves the room; None if the page does not follow the room.
        """
        with self._lock:
            room = self._rooms.get(code)
            if room is None or key not in room._listeners:
                return None
            ticket = room._ticket_of.get(key)
            if ticket is None:
                ticket = room._ticket_of[key] = secrets.token_urlsafe(18)
                room._tickets[ticket] = key
            return ticket

    def watch(self, code: str | None, ticket: str | None, sink: LiveSink) -> Room:
        """Send room ``code``'s later views and hand positions to ``sink`` (see :meth:`publish`, :meth:`publish_hand`).

        ``ticket`` is a following page's (:meth:`live_ticket`): the channel is that page's, and replaces any
        channel the page had (closed with code 4409). Call on the event loop. Raises :class:`RoomError` if the room
        is not running, :class:`NotFollowing` for a ticket that is no following page's, :class:`RoomFull` if
        the room already has :data:`MAX_LIVE_CHANNELS` channels.
        """
        from tornado.ioloop import IOLoop

        with self._lock:
            room = self.get(code)
            if room is None or room.ended:
                raise RoomError("There is no such room running on this server.")
            key = room._tickets.get(ticket) if isinstance(ticket, str) else None
            if key is None:
                raise NotFollowing("Only a page following this room opens its live channel.")
            replaced = room._live.pop(key, None)
            if replaced is None and len(room._live) >= MAX_LIVE_CHANNELS:
                raise RoomFull("This room has as many live channels as it accepts.")
            self._loop = IOLoop.current()
            room._live[key] = sink
        if replaced is not None:
            replaced.close(4409, "replaced by this page's newer live channel")
        return room

    def unwatch(self, code: str | None, sink: LiveSink) -> None:
        room = self.get(code)
        if room is not None:
            with self._lock:
                for key, kept in list(room._live.items()):
                    if kept is sink:
                        del room._live[key]

    def unfollow(self, code: str, key: object) -> None:
        """Page ``key`` has left room ``code``: it hears no more, and its live channel ticket and channel go."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return
            room._listeners.pop(key, None)
            room._joined.pop(key, None)
            room._tickets.pop(room._ticket_of.pop(key, None), None)
            sink = room._live.pop(key, None)
        if sink is not None:
            self._loop.add_callback(sink.close, 4404, "this page has left the room")
        self._poll_changed(room, counts_only=True)

    # -- the class poll ---------------------------------------------------------------------------------------------

    def _presenters_room(self, code: str, token: str | None, to: str = "poll") -> Room:
        """Running room ``code`` if ``token`` is its presenter's, with the registry's lock held; else RoomError,
        saying that only the presenter can ``to`` it."""
        room = self._rooms.get(code)
        if room is None or room.ended:
            raise RoomError(f"Room {code} is not running.")
        if not self.secret.matches(code, token):
            raise RoomError(f"Only the presenter can {to} room {code}.")
        return room

    def ask(self, code: str, token: str | None, question_id: str) -> PollView:
        """Ask the room question ``question_id`` (:data:`course.questions.BY_ID`): a new poll, open at once.

        It replaces the room's poll before it, whose answers are forgotten. Raises :class:`RoomError` without
        the room's token, PollRefused for a question that does not exist.
        """
        with self._lock:
            room = self._presenters_room(code, token)
            room.poll = Poll(room._polls_asked + 1, question_id)
            room._polls_asked += 1
            room.poll_asked_at = self._clock()
            view = room.poll.view
        self._poll_changed(room)
        return view

    def close_poll(self, code: str, token: str | None) -> PollView | None:
        """Take no more answers to the room's poll; returns its view (None: no poll). RoomError without the token."""
        return self._poll_step(code, token, Poll.close)

    def reveal_poll(self, code: str, token: str | None) -> PollView | None:
        """Reveal the poll's answer and its "Why" to every page (an open poll is closed first)."""
        return self._poll_step(code, token, Poll.reveal)

    def _poll_step(self, code, token, step) -> PollView | None:
        with self._lock:
            room = self._presenters_room(code, token)
            if room.poll is None:
                return None
            step(room.poll)
            view = room.poll.view
        self._poll_changed(room)
        return view

    def poll_drawn(self, code: str | None, key: object, poll_id: int, browser: str) -> bool:
        """Page ``key`` of room ``code`` has shown poll ``poll_id``'s question, in browser ``browser`` (the id the
        browser keeps); True if that browser has answered the poll already (see :meth:`Poll.drawn`).

        Only a page that has shown the question may answer it. PollRefused for a page that does not follow the
        room, or a poll that is not the room's.
        """
        with self._lock:
            room = self._following(code, key)
            return room.poll.drawn(key, poll_id, browser)

    def answer_poll(self, code: str | None, key: object, poll_id: int, given) -> None:
        """Count page ``key``'s answer ``given`` (a choice's index, or the typed number) to poll ``poll_id``.

        ``key`` is the page's session, as its own server knows it, never something the page sends. Only a page
        following the room that has shown the question (:meth:`poll_drawn`) answers, once per poll and browser,
        while it is open, with one of the question's answers; anything else raises PollRefused (its message is
        for the learner) and counts nothing. Only the presenter's page hears of an answer (its counts), and
        how many came from pages that joined after the question was asked.
        """
        with self._lock:
            room = self._following(code, key)
            room.poll.answer(key, poll_id, given, late=room._joined.get(key, 0.0) > room.poll_asked_at)
        self._poll_changed(room, counts_only=True)

    def _following(self, code: str | None, key: object) -> Room:
        """The running room ``code`` with a poll, which page ``key`` follows; PollRefused otherwise. Under the lock."""
        room = self.get(code)
        if room is None or room.ended:
            raise PollRefused("This room has ended.")
        if key not in room._listeners:
            raise PollRefused("Only a page following the room answers its poll.")
        if room.poll is None:
            raise PollRefused("There is no poll to answer.")
        return room

    def poll(self, code: str | None) -> PollView | None:
        """Room ``code``'s poll as every page may see it (what a late joiner is shown); None if there is none."""
        with self._lock:
            room = self.get(code)
            return None if room is None or room.poll is None else room.poll.view

    def poll_counts(self, code: str, token: str | None) -> PollCounts | None:
        """How the room's poll has been answered, for its presenter; None if there is none.

        RoomError without the token.
        """
        with self._lock:
            room = self._presenters_room(code, token)
            return None if room.poll is None else room.poll.counts(room.follower_count)

    def watch_poll(self, code: str, key: object, listener: PollListener, token: str | None = None) -> None:
        """Call ``listener(view, counts)`` (keyed by ``key``) on every change of room ``code``'s poll.

        With the room's presenter ``token`` the listener is the presenter's: it gets the counts, on every answer
        too. Without it, only the view, when the poll is asked, closed or revealed: no follower hears of another's
        answer. Raises RoomError if the room is not running or the token given is not the room's.
        """
        with self._lock:
            room = self._rooms.get(code)
            if room is None or room.ended:
                raise RoomError(f"There is no room {code} running on this server.")
            if token is not None:
                self._presenters_room(code, token, "see the counts of")
            room._poll_watchers[key] = (listener, token is not None)

    def unwatch_poll(self, code: str, key: object) -> None:
        with self._lock:
            room = self._rooms.get(code)
            if room is not None:
                room._poll_watchers.pop(key, None)

    def _poll_changed(self, room: Room, counts_only: bool = False) -> None:
        """Tell the room's pages: the presenter's its counts, the others the view unless only the counts changed."""
        with self._lock:
            poll = room.poll
            if poll is None:  # the room ended meanwhile: its pages have heard already
                return
            view, counts = poll.view, poll.counts(room.follower_count)
            calls = [(listener, counts if presenter else None) for listener, presenter in room._poll_watchers.values()
                     if presenter or not counts_only]
        for listener, shown in calls:  # each only records and schedules its own page, like a room's listeners
            try:
                listener(view, shown)
            except Exception:
                log.exception("a page of a room failed to take its poll")

    # -- ending ---------------------------------------------------------------------------------------------------

    def sweep(self) -> list[str]:
        """End every room whose presenter has been gone ``end_after`` seconds; returns their codes."""
        now = self._clock()
        with self._lock:
            done = [r for r in self._rooms.values() if r.left_at is not None and now - r.left_at >= self.end_after]
        for room in done:
            self._end(room)
        with self._lock:
            self._ended.expire(now)
            # a page's record of the rooms it started goes once its room has ended and the minute has passed
            if self._creators:
                self._creators = {k: (code, times) for k, (code, times) in self._creators.items()
                                  if code in self._rooms or (times and now - times[-1] < 60)}
        return [r.code for r in done]

    def _end(self, room: Room) -> None:
        with self._lock:
            if self._rooms.get(room.code) is not room:
                return
            del self._rooms[room.code]
            self._ended.add(room.code, self._clock())
            room.ended = True
            listeners, room._listeners = list(room._listeners.values()), {}
            room._joined, room._tickets, room._ticket_of = {}, {}, {}
            sinks, room._live = list(room._live.values()), {}
            polls, room._poll_watchers, room.poll = [w for w, _ in room._poll_watchers.values()], {}, None
        for listener in listeners:
            listener(None, None, False)
        for listener in polls:
            listener(None, None)
        if sinks:
            self._loop.add_callback(lambda: [sink.close() for sink in sinks])

    def start_sweeping(self) -> bool:
        """Call :meth:`sweep` once a second on the running event loop, from now on; True if it does.

        Call it from the server's event-loop thread (a page's session is created there; Bokeh may run
        event callbacks in worker threads, which have no loop). Without a running loop nothing
        happens: unit tests call :meth:`sweep` themselves.
        """
        import asyncio
        import contextvars

        from tornado.ioloop import PeriodicCallback

        with self._lock:
            if self._sweeper is not None:
                return True
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return False
            self._sweeper = PeriodicCallback(self.sweep, 1000)
            # from an empty context: the timer keeps the context it is started in, and the first page's (Panel's
            # curdoc) would keep that page's document alive for as long as the server runs
            contextvars.Context().run(self._sweeper.start)
            return True

    def __len__(self) -> int:
        return len(self._rooms)


def get_registry() -> RoomRegistry:
    """This server process's registry, created on first use."""
    import panel as pn

    registry = pn.state.cache.get(CACHE_KEY)
    if registry is None:
        registry = pn.state.cache.setdefault(CACHE_KEY, RoomRegistry(
            end_after=end_after_from_env(), settle_after=seconds_from_env("ROOM_SETTLE_AFTER", DEFAULT_SETTLE_AFTER),
            secret=RoomSecret.from_env()))
    return registry
