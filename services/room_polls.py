"""The class poll of a room: the presenter asks, closes and reveals; each following page answers once.

The poll itself (its question, its state, its rules and totals) is :class:`services.polls.Poll`. This is the
registry's side of it: who may ask (the presenter's token), who may answer (a page following the room that has
shown the question, once per poll and browser), and who hears what (the presenter's page the counts, on every
answer; every other page only the question and its state).

A mixin of :class:`services.rooms.RoomRegistry`: it uses the registry's lock, clock and rooms, and counts an answer
through :meth:`RoomPolls._count` (in this process; through a Redis script in ``services/rooms_redis.py``).
"""

from __future__ import annotations

import logging
from typing import Callable

from services.polls import Poll, PollCounts, PollRefused, PollView
from services.room_state import PollListener, Room, RoomError

log = logging.getLogger(__name__)


class RoomPolls:
    """The class poll's requests, for the pages of this process."""

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
        self._poll_set(room)
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
        self._poll_set(room)
        self._poll_changed(room)
        return view

    def _poll_set(self, room: Room) -> None:
        """The presenter asked, closed or revealed the room's poll here: what else must hear of it (Redis)."""

    def name_browser(self, code: str | None, key: object, browser: str) -> None:
        """Page ``key`` of room ``code`` names the browser it runs in (the id the browser keeps), as its poll card
        loads: a page keeps the browser it named first, and one that names none before a question is asked counts
        as new to the room when it answers that question (:meth:`answer_poll`). Ignored for a page not following."""
        with self._lock:
            room = self.get(code)
            if room is not None and key in room._listeners:
                room._browsers.setdefault(key, (browser, self._clock()))

    def poll_drawn(self, code: str | None, key: object, poll_id: int, browser: str) -> bool:
        """Page ``key`` of room ``code`` has shown poll ``poll_id``'s question, in browser ``browser`` (the id the
        browser keeps; the one the page named as it joined, if it did); True if that browser has answered the poll
        already (see :meth:`Poll.drawn`).

        Only a page that has shown the question may answer it. PollRefused for a page that does not follow the
        room, or a poll that is not the room's.
        """
        with self._lock:
            room = self._following(code, key)
            named = room._browsers.get(key)
            return room.poll.drawn(key, poll_id, named[0] if named else browser)

    def answer_poll(self, code: str | None, key: object, poll_id: int, given,
                    refused: Callable[[PollRefused], None] | None = None) -> None:
        """Count page ``key``'s answer ``given`` (a choice's index, or the typed number) to poll ``poll_id``.

        ``key`` is the page's session, as its own server knows it, never something the page sends. Only a page
        following the room that has shown the question (:meth:`poll_drawn`) answers, once per poll and browser,
        while it is open, with one of the question's answers; anything else raises PollRefused (its message is
        for the learner) and counts nothing. Only the presenter's page hears of an answer (its counts), and
        how many came from pages new since the question was asked: a page that joined after it, or that named its
        browser only after it (a script's page minting a browser for each answer). ``refused`` hears of a refusal
        that comes only later, from another process's answers (rooms shared through Redis).
        """
        with self._lock:
            room = self._following(code, key)
            poll = room.poll
            where = poll.judge(key, poll_id, given)
            asked = room.poll_asked_at
            named = room._browsers.get(key)
            late = room._joined.get(key, 0.0) > asked or named is None or named[1] > asked
            self._count(room, key, where, bool(poll.question.grade(given).ok), late, refused)
        self._poll_changed(room, counts_only=True)

    def _count(self, room: Room, key: object, where: str, right: bool, late: bool, refused) -> None:
        """Count the answer :meth:`Poll.judge` took. Under the lock."""
        room.poll.count(key, where, right, late)

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
            return None if room.poll is None else room.poll.counts(self.pages_following(room))

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
            view, counts = poll.view, poll.counts(self.pages_following(room))
            calls = [(listener, counts if presenter else None) for listener, presenter in room._poll_watchers.values()
                     if presenter or not counts_only]
        for listener, shown in calls:  # each only records and schedules its own page, like a room's listeners
            try:
                listener(view, shown)
            except Exception:
                log.exception("a page of a room failed to take its poll")
