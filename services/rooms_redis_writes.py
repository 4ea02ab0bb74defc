"""What a process changes in a shared room, written to Redis: the writing half of ``services/rooms_redis.py``.

Each change a page of this process makes (a room opened, its presenter here or gone, a view, the hand, the room
ended, a poll asked or answered, the pages following) becomes one :class:`_Op` in an ordered outbox, keyed so that a
newer one of the same kind and room takes the place of one not yet sent (views, hands, counts of pages). One task
sends all that waits in one pipeline as soon as the loop is free, and again what matters after a lost connection:
the scripts (``services/room_scripts.py``) take each change once however often it comes.

A mixin of :class:`services.rooms_redis.RedisRoomRegistry`.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Callable

from services import room_scripts as lua
from services.polls import PollRefused
from services.room_codes import TOMBSTONE_SECONDS, draw_code
from services.room_state import CodesNotReady, Room, RoomsUnavailable
from services.room_wire import encode_view, message

#: Seconds between two tries to reach Redis while it cannot be reached (and to send an answer Redis lost the poll of).
RETRY_S = 0.5
#: A process's count of the pages following a room is forgotten when older than this (it says it every 5 s).
PAGES_STALE_S = 15.0
#: Codes this process holds claimed for its next rooms, and how long a claim lasts.
CLAIMED_CODES = 4
CLAIM_S = 3600
#: What a later refusal from the answer script says, in the words the page's own process would have said it.
REFUSED = {"over": "That poll is over: the presenter has asked another question.",
           "closed": "The presenter has closed this poll.", "browser": "This browser has already answered this poll."}
log = logging.getLogger("services.rooms_redis")


@dataclass
class _Op:
    """A change to write to Redis: ``add(pipe)`` adds its command to a pipeline (and may return what hears how it
    went, else ``done(result)`` does); ``keep``: sent again after a lost connection (a hand's position is not: a newer
    one will come)."""

    add: Callable
    done: Callable | None = None
    keep: bool = True


def run_script(client, source: str, keys=(), args=()):
    """Run one of ``services/room_scripts.py`` (EVAL: Redis keeps each script compiled, and a Redis started again
    is sent it again, where EVALSHA would fail): awaitable on a client."""
    return client.eval(source, len(keys), *keys, *args)


def _queue(pipe, source: str, keys=(), args=()) -> None:
    """:func:`run_script` in a pipeline."""
    pipe.eval(source, len(keys), *keys, *args)


def _publish(pipe, channel: str, text: str) -> None:
    pipe.publish(channel, text)



class RedisWrites:
    """The outbox of a process's changes to shared rooms, and the changes themselves."""

    def _push(self, key: tuple, op: _Op) -> None:
        with self._lock:
            self._ops[key] = op  # a newer op of the same key takes the older one's place
        if self._aio is not None:
            self._aio.call_soon_threadsafe(self._wake.set)

    def _once(self, kind: str, code: str) -> tuple:
        self._serial += 1
        return (kind, code, self._serial)

    async def _pump(self) -> None:
        from redis.exceptions import RedisError

        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._connected:
                continue
            with self._lock:
                ops, self._ops = self._ops, {}
            if not ops:
                continue
            try:
                pipe = self._client.pipeline(transaction=False)
                dones = [op.add(pipe) or op.done for op in ops.values()]
                results = await pipe.execute(raise_on_error=False)
            except (RedisError, OSError) as exc:
                with self._lock:  # what still matters goes again, before anything newer of its kind
                    self._ops = {**{k: op for k, op in ops.items() if op.keep and k not in self._ops}, **self._ops}
                self._lost(exc)
                continue
            for done, result in zip(dones, results, strict=True):
                if isinstance(result, Exception):
                    log.warning("rooms: Redis refused a change: %s", result)
                elif done is not None:
                    try:
                        done(result)
                    except Exception:  # one change's follow-up must not stop every later change
                        log.exception("rooms: a change written to Redis could not be followed up")

    def _new_code(self) -> str:
        if not self._connected:
            if self._starting:
                raise CodesNotReady("Rooms are not ready yet: this server is connecting to Redis.")
            raise RoomsUnavailable("Rooms are unavailable: this server cannot reach Redis.")
        if self._aio is not None:
            self._spawn(self._claim_codes())
        while self._pool:
            code, claimed = self._pool.pop(0)
            if time.monotonic() - claimed < CLAIM_S / 2 and code not in self._rooms:
                return code
        raise CodesNotReady("Rooms are unavailable: no code is ready yet.")

    async def _claim_codes(self) -> None:
        """Claim codes for this process's next rooms, until it holds CLAIMED_CODES fresh ones."""
        from redis.exceptions import RedisError

        if self._claiming or self._client is None:
            return
        self._claiming = True
        try:
            self._pool = [(c, t) for c, t in self._pool if time.monotonic() - t < CLAIM_S / 2]
            while len(self._pool) < CLAIMED_CODES:
                code = draw_code()
                keys = [self._key("room:", code), self._key("ended:", code), self._key("claim:", code)]
                if code not in self._rooms and await run_script(self._client, lua.CLAIM, keys, [self.process, CLAIM_S]):
                    self._pool.append((code, time.monotonic()))
                    if self._claimed is not None:
                        self._claimed.set()
        except RedisError as exc:
            self._lost(exc)
        finally:
            self._claiming = False

    def _opened(self, room: Room) -> None:
        def add(pipe, room=room):
            with self._lock:
                version, snapshot, polls = room.version, room.snapshot, room._polls_asked
                presenter = self.process if room.presenter is not None else ""
            view, query = _stored(snapshot)
            self._bases[room.code] = version
            _queue(pipe, lua.OPEN, [self._key("room:", room.code), self._key("rooms"), self._key("claim:", room.code)],
                  [room.code, version, version, view, query, presenter, polls, self._channel(room.code),
                   message(t="open", c=room.code, p=self.process, v=version, b=version, s=view or None,
                           q=_query(snapshot))])
        self._push(self._once("open", room.code), _Op(add))

    def _presence_changed(self, room: Room) -> None:
        def add(pipe, room=room):
            here = room.presenter is not None
            _queue(pipe, lua.PRESENCE, [self._key("room:", room.code)],
                  [self.process, "1" if here else "", self._channel(room.code),
                   message(t="presence", c=room.code, p=self.process, here=True)])
        self._push(("presence", room.code), _Op(add))

    def _viewed(self, room: Room, query_only: bool) -> None:
        if not query_only:
            self._whole.add(room.code)
        self._push(("view", room.code), _Op(lambda pipe: self._add_view(pipe, room)))

    def _add_view(self, pipe, room: Room) -> Callable:
        code = room.code
        with self._lock:
            version, snapshot = room.version, room.snapshot
        whole = code in self._whole or code not in self._bases
        base = version if whole else self._bases[code]
        view, query = _stored(snapshot)
        text = message(t="view", c=code, p=self.process, v=version, b=base, q=_query(snapshot),
                       s=view if whole else None)

        def done(result):
            if result == 1 and whole:
                self._bases[code] = version
                self._whole.discard(code)
            elif result == -2:  # Redis holds another whole view: send this one whole
                self._whole.add(code)
                self._viewed(room, False)
            elif result == -1 and not room.ended:  # Redis lost the room: it goes back, with this view
                self._whole.add(code)
                self._opened(room)
            elif result == 0:  # another process presents it too, and is ahead: read what it wrote
                self._spawn(self._fetch(code))

        _queue(pipe, lua.VIEW, [self._key("room:", code)],
              [version, base, view if whole else "", query, self._channel(code), text])
        return done

    def _hand_moved(self, room: Room, version: int, query: list[float]) -> None:
        text = message(t="hand", c=room.code, p=self.process, v=version, q=query)
        self._push(("hand", room.code), _Op(lambda pipe: _publish(pipe, self._channel(room.code), text), keep=False))

    def _ended_here(self, room: Room) -> None:
        text = message(t="ended", c=room.code, p=self.process)
        self._push(self._once("end", room.code), _Op(lambda pipe: _queue(
            pipe, lua.END, (), [self.prefix, room.code, int(TOMBSTONE_SECONDS), text])))

    def _followers_changed(self, room: Room) -> None:
        self._push(("pages", room.code), _Op(lambda pipe: self._add_pages(pipe, room.code), keep=False))

    def _add_pages(self, pipe, code: str) -> None:
        room = self._rooms.get(code)
        n = room.follower_count if room is not None else 0
        self._announced[code] = n
        _publish(pipe, self._channel(code), message(t="pages", c=code, p=self.process, n=n, **{"from": self.process}))

    def _announce_pages(self, every: bool = False) -> None:
        with self._lock:
            codes = [code for code, room in self._rooms.items() if room.follower_count or self._announced.get(code)]
        for code in codes:
            self._push(("pages", code), _Op(lambda pipe, code=code: self._add_pages(pipe, code), keep=False))

    def pages_following(self, room: Room) -> int:
        now = self._clock()
        others = sum(n for process, (n, heard) in self._pages.get(room.code, {}).items()
                     if process != self.process and now - heard < PAGES_STALE_S)
        return room.follower_count + others

    def _poll_set(self, room: Room) -> None:
        with self._lock:
            poll = room.poll
            if poll._total is None:  # the presenter's own poll: its counts come from Redis
                poll.take_counts({})
            poll_id, question, state = poll.id, poll.question.id, poll.state
        gen = self._gens.setdefault(room.code, secrets.token_hex(4)) if state != "open" else secrets.token_hex(4)
        if state == "open":
            self._gens[room.code] = gen
        code = room.code
        text = message(t="poll", c=code, p=self.process, id=poll_id, q=question, state=state, gen=gen)
        poll_key = self._key("poll:", code)
        self._push(self._once("poll", code), _Op(lambda pipe: _queue(
            pipe, lua.SET_POLL, [poll_key, poll_key + ":pages", poll_key + ":browsers", self._key("room:", code)],
            [poll_id, question, state, gen, self._channel(code), text])))

    def _count(self, room: Room, key: object, where: str, right: bool, late: bool, refused) -> None:
        browser = room.poll.mark(key)
        answer = (room.poll.id, str(key), browser, where, "1" if right else "", "1" if late else "")
        self._journal.setdefault(room.code, {})[key] = answer
        self._send_answer(room.code, key, answer, refused)

    def _send_answer(self, code: str, key: object, answer: tuple, refused, tries: int = 0) -> None:
        poll_key = self._key("poll:", code)

        def done(result):
            if result == "missing" and tries < 20:  # Redis lost the poll: its processes are putting it back
                self._aio.call_later(RETRY_S, self._send_answer, code, key, answer, refused, tries + 1)
            elif result in REFUSED:
                self._journal.get(code, {}).pop(key, None)
                if refused is not None:
                    refused(PollRefused(REFUSED[result]))

        self._push(("answer", code, key), _Op(lambda pipe: _queue(
            pipe, lua.ANSWER, [poll_key, poll_key + ":pages", poll_key + ":browsers"],
            [*answer, self._channel(code), code]), done))


def _stored(snapshot) -> tuple[str, str]:
    """A view as Redis keeps it: the view whole, and its query apart (what a drag changes)."""
    return encode_view(snapshot), encode_view(_query(snapshot))


def _query(snapshot) -> list[float] | None:
    return None if snapshot is None else [float(c) for c in snapshot["query"]]
