"""One room as this server process holds it, and the errors a room request may meet.

A :class:`Room` is the process's copy of a room: the view its presenter shares (``snapshot``, ``version``),
whether the presenter is there, the class poll, and the pages of this process that follow it (their listeners,
their live channels). With one process that copy is the room itself (:class:`services.rooms.RoomRegistry`); with
several, each holds one and keeps it current through Redis (:class:`services.rooms_redis.RedisRoomRegistry`), while
the pages of each process stay that process's own.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any, Callable

from services.polls import Poll, PollCounts, PollView

Snapshot = dict[str, Any]
#: A follower's callback: ``(version, snapshot, query_only)`` on each change, ``(None, None, False)`` when
#: the room ends. ``query_only``: the view differs from the previous one only in its query (a drag).
Listener = Callable[[int | None, Snapshot | None, bool], None]
#: A follower's callback when the presenter goes (``False``: the room goes on without a presenter) or comes back.
PresenceListener = Callable[[bool], None]
#: A page's view of the room's poll (:meth:`RoomRegistry.watch_poll`): ``(view, counts)`` whenever the poll
#: changes, ``(None, None)`` when the room ends. ``counts`` is None except for the presenter's page.
PollListener = Callable[[PollView | None, PollCounts | None], None]
#: A live channel's end (``server/room_live.py``): ``send(text, replaceable)``, called on the server's event
#: loop (``replaceable``: a position, which a newer one may replace if the channel is behind), and ``close()``.
LiveSink = Any


class RoomError(Exception):
    """A room request that cannot be honoured; ``str(error)`` is safe to show to the learner."""


class RoomFull(RoomError):
    """This process already holds :data:`services.room_hand.MAX_LIVE_CHANNELS` live channels."""


class NotFollowing(RoomError):
    """A live channel whose ticket is no page's following the room (made up, or its page has left), or a room
    that is not running: the two are answered alike, so that a channel tells nobody which codes are in use."""


class TooManyRooms(RoomError):
    """A page has started :data:`services.rooms.MAX_ROOMS_PER_MINUTE` rooms within the last minute."""


class RoomsUnavailable(RoomError):
    """Rooms are shared through Redis and this process cannot reach it now (``services/rooms_redis.py``)."""


class CodesNotReady(RoomsUnavailable):
    """Rooms are shared through Redis, which this process reaches, but it holds no claimed code yet: it has just
    started or reconnected and claims its next codes within a moment (:meth:`RoomRegistry.codes_ready`)."""


@dataclass(eq=False)
class Room:
    """One presented view. ``snapshot`` and ``version`` change only through the registry."""

    code: str
    snapshot: Snapshot | None = None
    version: int = 0
    presenter: str | None = None  # session id of the page of this process presenting it now
    left_at: float | None = None  # when the presenter's page went away; None while present
    published_at: float = 0.0  # when the view last changed (the registry's clock)
    ended: bool = False
    #: the room's followers have been told its presenter has gone (they are told again when the presenter is back)
    gone: bool = False
    _listeners: dict[object, Listener] = field(default_factory=dict, repr=False)
    _presence: dict[object, PresenceListener] = field(default_factory=dict, repr=False)
    _joined: dict[object, float] = field(default_factory=dict, repr=False)  # follower key -> when it joined
    #: follower key -> (the browser its page named as it joined, when): see :meth:`RoomRegistry.name_browser`
    _browsers: dict[object, tuple[str, float]] = field(default_factory=dict, repr=False)
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
    poll_asked_at: float = 0.0  # when it was asked (the registry's clock; with Redis, when this process heard)
    _polls_asked: int = field(default=0, repr=False)
    #: pages watching the poll: key -> (listener, whether it is the presenter's and sees the counts)
    _poll_watchers: dict[object, tuple[PollListener, bool]] = field(default_factory=dict, repr=False)

    @property
    def follower_count(self) -> int:
        """Pages of this process following the room."""
        return len(self._listeners)
