"""The presenter's hand on a room's live channels: each page's ticket, the channels this process holds, and the
hand's positions written to them at most one a frame.

While a presenter drags, only the query of the room's view changes, and each follower's page computes the rest
itself (``link/drag.js``). So each pointer move of the presenter is written, as one short JSON text, to the live
channel (``server/room_live.py``) of every page following the room on this process: first as the hand's position
(:meth:`LiveChannels.publish_hand`), before the presenter's server has computed the view it becomes.

A mixin of :class:`services.rooms.RoomRegistry`: it uses the registry's lock, clock, rooms and event loop.
"""

from __future__ import annotations

import json
import math
import secrets

from services.room_state import LiveSink, NotFollowing, Room, RoomError, RoomFull

#: A live channel's path, under the server's prefix: pages open it relative to their own address (the room bar
#: gives it them: ``widgets/room.py``), and ``server/room_live.py`` serves it.
LIVE_ROUTE = "/room-live"
#: Live channels one server process accepts, whichever rooms they follow: a lecture's share of one process, with
#: room to spare. Each belongs to one page following a room (its ticket, :meth:`LiveChannels.live_ticket`), so only
#: pages can hold them. With rooms shared through Redis each process has its own share.
MAX_LIVE_CHANNELS = 500
#: Shortest time between two texts of a presenter's hand on a room's live channel (one 60 Hz frame).
HAND_GAP_S = 1 / 60
#: While the presenter's hand has moved this recently, the room's query-only views are not written to the
#: live channel: each is a position the hand already passed, and would step the followers' pages back.
HAND_ACTIVE_S = 0.5
#: What a live channel that is not a following page's is told, whether or not its room is running.
NOT_FOLLOWING = "Only a page following a running room opens its live channel."


class LiveChannels:
    """The live channels of the pages following rooms on this process, and the presenter's hand written to them."""

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

    def is_ticket(self, code: str | None, ticket: str | None) -> bool:
        """Whether ``ticket`` is a following page's for room ``code`` (a try that is no guess)."""
        with self._lock:
            room = self.get(code)
            return room is not None and isinstance(ticket, str) and ticket in room._tickets

    def live_channels(self) -> int:
        """Live channels this process holds, every room's together."""
        with self._lock:
            return sum(len(room._live) for room in self._rooms.values())

    def watch(self, code: str | None, ticket: str | None, sink: LiveSink) -> Room:
        """Send room ``code``'s later views and hand positions to ``sink`` (see :meth:`publish`, :meth:`publish_hand`).

        ``ticket`` is a following page's (:meth:`live_ticket`): the channel is that page's, and replaces any
        channel the page had (closed with code 4409). Call on the event loop. Raises :class:`NotFollowing` for a
        ticket that is no following page's, and alike for a room that is not running (a channel tells nobody
        which codes are in use); :class:`RoomFull` if this process already holds :data:`MAX_LIVE_CHANNELS` channels.
        """
        from tornado.ioloop import IOLoop

        with self._lock:
            room = self.get(code)
            key = room._tickets.get(ticket) if room is not None and isinstance(ticket, str) else None
            if key is None or room.ended:
                raise NotFollowing(NOT_FOLLOWING)
            replaced = room._live.pop(key, None)
            if replaced is None and self.live_channels() >= MAX_LIVE_CHANNELS:
                raise RoomFull("This server has as many live channels as it accepts.")
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

    def _forget_channel(self, room: Room, key: object) -> LiveSink | None:
        """Page ``key`` leaves ``room``: its ticket goes, and its channel is returned to be closed. Under the lock."""
        room._tickets.pop(room._ticket_of.pop(key, None), None)
        return room._live.pop(key, None)

    def _live_text(self, room: Room, version: int, snapshot, query_only: bool) -> tuple[list, str | None]:
        """The channels of ``room`` and the text of its view ``version`` for them, or no text while the hand moves.

        A drag's view carries its query, ``{"version": v, "query": [x, y]}``; any other view ``"query": null``
        (the follower's page then waits for its server's full view). A query-only view is not written while the
        presenter's hand is moving (:meth:`publish_hand` has written its position, or a newer one, already).
        """
        with self._lock:
            sinks = list(room._live.values())
        if not sinks or (query_only and self._clock() - room.hand_at < HAND_ACTIVE_S):
            return [], None
        query = [float(c) for c in snapshot["query"]] if query_only else None
        return sinks, json.dumps({"version": version, "query": query})

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
            # the view this position becomes (or one before it, if the presenter's server is behind)
            version = room.version + 1
        self._hand_moved(room, version, [x, y])
        self.take_hand(room, version, [x, y])

    def _hand_moved(self, room: Room, version: int, query: list[float]) -> None:
        """The presenter's hand moved, on this process: what else must hear of it (other processes, through Redis)."""

    def take_hand(self, room: Room, version: int, query: list[float]) -> None:
        """The presenter's hand at ``query``, from this process or another: to this process's channels of the room."""
        with self._lock:
            room.hand_at = self._clock()
            if not room._live:
                return
        self._loop.add_callback(self._take_hand, room, (version, query))

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
