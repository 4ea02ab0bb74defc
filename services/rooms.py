"""Rooms: one presenter's view, followed live by a class; the registry of this server process (in-process backend).

A :class:`RoomRegistry` exists once per server process (:func:`get_registry`
keeps it in ``pn.state.cache``, never in a module global). A :class:`~services.room_state.Room` has a
short code anyone may know (the join link carries only ``?room=CODE``) and a
presenter token only the presenter's page knows (``services/room_codes.py``); every change to the room's
view must present that token. Followers subscribe to a room and receive the
latest snapshot; the registry never touches a follower's document itself (see
:mod:`widgets.room`). The presenter's hand reaches the followers' live channels first (``services/room_hand.py``),
and the room's class poll is ``services/room_polls.py``.

Without ``EXPLORER_REDIS_URL`` a room lives in the memory of the process its presenter opened it on: every page
of the room must reach that process, and a presenter link that reaches another one (or this one after a restart)
opens the room there, if its token is the code's (:meth:`RoomRegistry.enter_as_presenter`). With it, every process
shares every room through Redis (:class:`services.rooms_redis.RedisRoomRegistry`, a subclass of this one: what a
page asks of the registry is the same, and is answered from the process's own copy of the room).
"""

from __future__ import annotations

import collections
import logging
import os
import secrets
import threading
import time
from typing import Callable

from services.room_codes import (  # noqa: F401  (the registry's names, where pages and tests have always found them)
    ALPHABET,
    CODE_LENGTH,
    SECRET_ENV,
    EndedCodes,
    RoomSecret,
    draw_code,
    normalize_code,
)
from services.room_hand import LiveChannels
from services.room_polls import RoomPolls
from services.room_state import (  # noqa: F401
    CodesNotReady,
    Listener,
    NotFollowing,
    PresenceListener,
    Room,
    RoomError,
    RoomFull,
    RoomsUnavailable,
    Snapshot,
    TooManyRooms,
)

#: Seconds a room lives on after its presenter's page has gone (``ROOM_END_AFTER`` overrides).
DEFAULT_END_AFTER = 300.0
#: Seconds a room's view must rest before followers' servers take it in full (``ROOM_SETTLE_AFTER``
#: overrides). Longer than the gap between two moves of a drag on a busy server (taking a view in full
#: costs tens of ms per follower, so it must not happen mid-drag); short enough that a follower's
#: inspector has caught up by the time anyone reads it.
DEFAULT_SETTLE_AFTER = 1.0
#: Seconds the presenter's page may be gone before its followers are told (a presenter reloading the page is back
#: sooner); they are told again when it comes back.
PRESENCE_GRACE = 5.0
#: Rooms one page may start within a minute. A page has one running room at a time (pressing Present again gives
#: it back), so it starts another only once that one has ended.
MAX_ROOMS_PER_MINUTE = 3
#: The environment variable naming the Redis server every process shares rooms through (``services/rooms_redis.py``).
REDIS_ENV = "EXPLORER_REDIS_URL"
CACHE_KEY = "attention-explorer.rooms"
log = logging.getLogger(__name__)


def seconds_from_env(name: str, default: float, environ=None) -> float:
    """Environment variable ``name`` (of ``environ``, default ``os.environ``) in seconds (a positive number), or
    ``default`` when it is unset.

    Raises ValueError if the variable is set to anything else.
    """
    raw = (os.environ if environ is None else environ).get(name, "").strip()
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


class RoomRegistry(LiveChannels, RoomPolls):
    """Every room of this server process. Thread-safe; never blocks on a follower.

    ``end_after``: seconds a room outlives its presenter's page. ``clock``: a
    monotonic clock in seconds (tests pass a fake one). ``secret``: what makes and checks presenter
    tokens (default: a random one for this registry, as when ``EXPLORER_ROOM_SECRET`` is unset).

    The methods named ``_…`` between the public ones (``_new_code``, ``_opened``, ``_presence_changed``,
    ``_viewed``, ``_ended_here``, ``_followers_changed``, and the mixins' ``_hand_moved``, ``_poll_set``,
    ``_count``) are where a room's change made on this process reaches the others: nothing to do here, where the
    process holds the only copy of its rooms; :class:`services.rooms_redis.RedisRoomRegistry` writes each to Redis.
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

    @property
    def available(self) -> bool:
        """Whether rooms can be opened and joined now: always, where this process holds them."""
        return True

    async def codes_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until :meth:`create` has a code to give (after :class:`CodesNotReady`);
        whether it has. Where this process holds its rooms it always has."""
        return True

    # -- creating and entering ------------------------------------------------------------------------------------

    def create(self, snapshot: Snapshot | None = None, creator: object = None) -> tuple[Room, str]:
        """Open a room under a fresh code; returns it with its presenter token (shown to nobody else).

        The room waits for its presenter's page (:meth:`enter_as_presenter`) and
        ends ``end_after`` seconds from now if none comes.

        ``creator``: the key of the page asking (its session). A page has one running room at a time: while the
        room it started last runs, it gets that room again (with ``snapshot`` as its view if nobody presents
        it yet). Raises :class:`TooManyRooms` for a page that has started :data:`MAX_ROOMS_PER_MINUTE` rooms in
        the last minute, :class:`RoomsUnavailable` where rooms are shared and cannot be now. Without ``creator``
        (a test, a tool) neither rule of a page applies.
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
            code = self._new_code()
            room = self._open(code, snapshot)
            if creator is not None:
                times.append(now)
                self._creators[creator] = (code, times)
        self._opened(room)
        return room, self.secret.token(code)

    def _new_code(self) -> str:
        """A code no running room has, nor any room that ended within a day. Under the lock."""
        while True:
            code = draw_code()
            if code not in self._rooms and code not in self._ended:
                return code

    def _opened(self, room: Room) -> None:
        """A room was opened here (by Present, or by its presenter's link): what else must hear of it."""

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
            opened = room is None
            if opened:  # its code may stay among the ended ones: it only keeps new rooms off it a while longer
                self._reopen_check(norm)
                room = self._open(norm, None)
            room.presenter, room.left_at = session, None
            back = room.gone
            room.gone = False
        if opened:
            self._opened(room)
        self._presence_changed(room)
        if back:
            self._tell_presence(room, True)
        return room

    def _reopen_check(self, code: str) -> None:
        """May the presenter's link open room ``code`` again here? Raises :class:`RoomsUnavailable` where not now."""

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
        the version as one JSON text, written once for the whole room (see :meth:`_live_text`).

        Raises :class:`RoomError` if the room is not running or the token is not the room's.
        """
        with self._lock:
            room = self._presenters_room(code, token, "change")
            version = room.version + 1
        self.take_view(room, version, snapshot, query_only)
        self._viewed(room, query_only)
        return version

    def _viewed(self, room: Room, query_only: bool) -> None:
        """The presenter made a new view of ``room`` here: what else must hear of it."""

    def take_view(self, room: Room, version: int, snapshot: Snapshot, query_only: bool) -> None:
        """``snapshot`` is room's view ``version`` now, from its presenter on this process or another: offer it to
        this process's followers and live channels."""
        with self._lock:
            room.version = version
            room.snapshot, room.published_at = snapshot, self._clock()
            listeners = list(room._listeners.values())
        for listener in listeners:  # each only records the snapshot and schedules its own page
            try:
                listener(version, snapshot, query_only)
            except Exception:  # one broken follower page must not stop the room
                log.exception("a follower of a room failed to take a view")
        sinks, text = self._live_text(room, version, snapshot, query_only)
        if text is not None:
            # publish runs in the presenter's callback, which Bokeh may run in a worker thread;
            # websockets are written on the event loop only
            self._loop.add_callback(self._send_live, sinks, text, query_only)

    def presenter_left(self, code: str, session: str) -> None:
        """The presenter's page ``session`` is gone: start the room's ``end_after`` countdown."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None or room.presenter != session:
                return
            room.presenter, room.left_at = None, self._clock()
        self._presence_changed(room)

    def _presence_changed(self, room: Room) -> None:
        """The presenter's page came to ``room`` here, or left it: what else must hear of it."""

    def end(self, code: str, token: str | None) -> None:
        """End the room now (the presenter stops presenting). Raises :class:`RoomError` without its token."""
        with self._lock:
            if code not in self._rooms:  # ended already (an ended room is no longer held), or never started
                return
            room = self._presenters_room(code, token, "end")
        self._end(room)
        self._ended_here(room)

    def _ended_here(self, room: Room) -> None:
        """The presenter ended ``room`` here: what else must hear of it."""

    # -- the followers' side --------------------------------------------------------------------------------------

    def follow(self, code: str, key: object, listener: Listener, presence: PresenceListener | None = None) -> Room:
        """Subscribe ``listener`` (keyed by ``key``) to room ``code``; ``presence(here)`` hears when the presenter
        goes (and at once, if it has) and when it comes back.

        Raises :class:`RoomError` if it is not running.
        """
        with self._lock:
            room = self._rooms.get(code)
            if room is None or room.ended:
                raise RoomError(f"There is no room {code} running on this server.")
            room._listeners[key] = listener
            room._joined.setdefault(key, self._clock())
            if presence is not None:
                room._presence[key] = presence
            gone = room.gone
        if gone and presence is not None:
            presence(False)
        self._followers_changed(room)
        self._poll_changed(room, counts_only=True)  # the presenter's count of pages following
        return room

    def unfollow(self, code: str, key: object) -> None:
        """Page ``key`` has left room ``code``: it hears no more, and its live channel ticket and channel go."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return
            room._listeners.pop(key, None)
            room._presence.pop(key, None)
            room._joined.pop(key, None)
            room._browsers.pop(key, None)
            sink = self._forget_channel(room, key)
        if sink is not None:
            self._loop.add_callback(sink.close, 4404, "this page has left the room")
        self._followers_changed(room)
        self._poll_changed(room, counts_only=True)

    def _followers_changed(self, room: Room) -> None:
        """A page of this process joined or left ``room``: what else must hear of it (the presenter's count)."""

    def pages_following(self, room: Room) -> int:
        """Pages following ``room``: here, this process's."""
        return room.follower_count

    def _tell_presence(self, room: Room, here: bool) -> None:
        """Tell ``room``'s followers on this process that its presenter has gone, or is back."""
        with self._lock:
            listeners = list(room._presence.values())
        for listener in listeners:
            try:
                listener(here)
            except Exception:
                log.exception("a follower of a room failed to hear of its presenter")

    # -- ending ---------------------------------------------------------------------------------------------------

    def sweep(self) -> list[str]:
        """End every room whose presenter has been gone ``end_after`` seconds; returns their codes. Tell the
        followers of a room whose presenter has been gone :data:`PRESENCE_GRACE` seconds."""
        now = self._clock()
        with self._lock:
            done = self._due_to_end(now)
            gone = self._due_gone(now)
            for room in gone:
                room.gone = True
        for room in done:
            self._end(room)
        for room in gone:
            if room not in done:
                self._tell_presence(room, False)
        with self._lock:
            self._ended.expire(now)
            # a page's record of the rooms it started goes once its room has ended and the minute has passed
            if self._creators:
                self._creators = {k: (code, times) for k, (code, times) in self._creators.items()
                                  if code in self._rooms or (times and now - times[-1] < 60)}
        return [r.code for r in done]

    def _due_to_end(self, now: float) -> list[Room]:
        """The rooms whose presenter has been gone ``end_after`` seconds. Under the lock."""
        return [r for r in self._rooms.values() if r.left_at is not None and now - r.left_at >= self.end_after]

    def _due_gone(self, now: float) -> list[Room]:
        """The presented rooms whose presenter has been gone :data:`PRESENCE_GRACE` seconds, their followers not yet
        told. Under the lock."""
        return [r for r in self._rooms.values()
                if r.left_at is not None and not r.gone and r.version and now - r.left_at >= PRESENCE_GRACE]

    def _end(self, room: Room) -> None:
        with self._lock:
            if self._rooms.get(room.code) is not room:
                return
            del self._rooms[room.code]
            self._ended.add(room.code, self._clock())
            room.ended = True
            listeners, room._listeners = list(room._listeners.values()), {}
            room._joined, room._tickets, room._ticket_of, room._presence, room._browsers = {}, {}, {}, {}, {}
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


def make_registry(environ=None) -> RoomRegistry:
    """The registry the settings in ``environ`` ask for: shared through Redis with ``EXPLORER_REDIS_URL``."""
    environ = os.environ if environ is None else environ
    settings = dict(end_after=end_after_from_env(),
                    settle_after=seconds_from_env("ROOM_SETTLE_AFTER", DEFAULT_SETTLE_AFTER),
                    secret=RoomSecret.from_env(environ))
    url = redis_url_from_env(environ)
    if not url:
        return RoomRegistry(**settings)
    from services.rooms_redis import RedisRoomRegistry

    return RedisRoomRegistry(url, **settings)


def redis_url_from_env(environ=None) -> str:
    """``EXPLORER_REDIS_URL``, checked: "" when unset; ValueError for a value that names no Redis server."""
    from urllib.parse import urlsplit

    url = (os.environ if environ is None else environ).get(REDIS_ENV, "").strip()
    if url and not (urlsplit(url).scheme in ("redis", "rediss", "unix") and (urlsplit(url).hostname
                                                                            or urlsplit(url).path)):
        raise ValueError(f"{REDIS_ENV} must name a Redis server, such as redis://127.0.0.1:6379/0, not {url!r}")
    return url


def start_rooms() -> None:
    """Start this process's rooms on the running event loop: with Redis, its connection is made now, so that a
    Redis that cannot be reached is said as the server starts, not when the first page asks."""
    get_registry().start_sweeping()


def get_registry() -> RoomRegistry:
    """This server process's registry, created on first use."""
    import panel as pn

    registry = pn.state.cache.get(CACHE_KEY)
    if registry is None:
        registry = pn.state.cache.setdefault(CACHE_KEY, make_registry())
    return registry
