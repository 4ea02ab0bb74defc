"""Rooms shared by every server process through Redis (``EXPLORER_REDIS_URL``): the Redis backend.

Each process keeps its own copy of every running room (:class:`~services.room_state.Room`) and answers its pages from
it at once, as the in-process registry does (:class:`services.rooms.RoomRegistry`, which this one extends): a page
never waits for Redis. What a page of this process changes (its presenter's views and hand, a poll asked or
answered, the pages following) goes to Redis as soon as the event loop is free, coalesced (a newer view or hand
replaces a waiting one); what other processes change comes back on the room's channel, which every process
subscribes to, and is applied to the copy and offered to this process's pages as if it had happened here:

- the presenter's hand is published as it moves, and reaches the live channels of every process;
- the view is stored under the room's key with its version (a query alone when only the query moved) and published,
  so a process that joins late, or missed messages, reads the current view;
- an answer is counted by a script that takes each page and each browser once, and publishes the counts;
- codes are claimed in Redis ahead of need (a few per process), so Present never waits and no two rooms share one;
- the presenter's process beats every second; a room whose presenter's process stopped beating, or whose page left,
  is said to have no presenter and ends as it would in one process (any process's sweep does it, once);
- each process says how many of its pages follow each room; the presenter's card adds them up.

When Redis cannot be reached the process says so once in its log, goes on serving its pages what it holds
(Present says rooms are unavailable), and tries again twice a second. Back, it reads every room again, and if Redis
came back empty (its ``epoch`` changed), first puts back every room it holds, and its pages' answers: the scripts
take each answer once, so nothing is counted twice. The scripts are ``services/room_scripts.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import time
from urllib.parse import urlsplit

from services import room_scripts as lua
from services.polls import STATES, Poll
from services.room_codes import TOMBSTONE_SECONDS
from services.room_state import Room, RoomsUnavailable
from services.room_wire import decode_view
from services.rooms import PRESENCE_GRACE, RoomRegistry
from services.rooms_redis_writes import CLAIMED_CODES, PAGES_STALE_S, RETRY_S, RedisWrites, run_script

#: Seconds between two sweeps and two heartbeats of the presenters of this process.
TICK_S = 1.0
#: A presenter's process that has not beaten for this long has gone (its page with it).
PRESENTER_TIMEOUT_S = 6.0
#: A process's count of the pages following a room is said this often (forgotten when older than PAGES_STALE_S).
PAGES_EVERY_S = 5.0
log = logging.getLogger(__name__)


def where(url: str) -> str:
    """The Redis server a URL names, without its password, for the log."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


class RedisRoomRegistry(RedisWrites, RoomRegistry):
    """Every room of every process sharing ``url``; this process's pages and copy of each room.

    ``presenter_timeout``, ``tick``: seconds (tests shorten them). Start it on the server's event loop
    (:meth:`start`, or :meth:`start_sweeping`, which a page's room controls call).
    """

    def __init__(self, url: str, *, prefix: str = "explorer:", presenter_timeout: float = PRESENTER_TIMEOUT_S,
                 tick: float = TICK_S, **settings):
        super().__init__(**settings)
        self.url, self.prefix = url, prefix
        self.process = secrets.token_hex(6)
        self.presenter_timeout, self.tick = presenter_timeout, tick
        self._connected = False
        self._said_unavailable = False
        self._client = None
        self._aio: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._broken: asyncio.Event | None = None
        self._claimed: asyncio.Event | None = None  # set when a code is claimed: a Present waiting for one goes on
        self._starting = True  # until the first connection is made or fails: a Present meanwhile waits for it
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()
        self._ops: dict[tuple, object] = {}  # the outbox (services/rooms_redis_writes.py)
        self._serial = 0
        self._epoch: str | None = None
        self._pool: list[tuple[str, float]] = []  # codes claimed for this process's next rooms, and when
        self._claiming = False
        self._bases: dict[str, int] = {}  # code -> the version whose view this copy holds whole
        self._whole: set[str] = set()  # codes whose next view this process sends must be whole
        self._pages: dict[str, dict[str, tuple[int, float]]] = {}  # code -> process -> (pages, when heard)
        self._announced: dict[str, int] = {}  # code -> the count of its pages this process last said
        self._journal: dict[str, dict[object, tuple]] = {}  # code -> page -> its answer to the room's poll
        self._gens: dict[str, str] = {}  # code -> the generation of the poll's counts last taken
        self._fetching: set[str] = set()

    # -- names ------------------------------------------------------------------------------------------------------

    def _key(self, kind: str, code: str = "") -> str:
        return f"{self.prefix}{kind}{code}"

    def _channel(self, code: str) -> str:
        return self._key("r:", code)

    @property
    def available(self) -> bool:
        """Whether this process reaches Redis and holds every room as it is there now."""
        return self._connected

    # -- starting, the connection and its messages ------------------------------------------------------------------

    def start_sweeping(self) -> bool:
        started = super().start_sweeping()
        if started:
            self.start()
        return started

    def start(self) -> None:
        """Connect, and keep connecting, to Redis from the running event loop (the server's)."""
        if self._tasks:
            return
        self._aio = asyncio.get_running_loop()
        self._wake, self._broken, self._claimed = asyncio.Event(), asyncio.Event(), asyncio.Event()
        # from an empty context, as the sweeper: a page's context would keep that page alive as long as the server
        for run in (self._connection, self._pump, self._ticker):
            self._tasks.append(contextvars.Context().run(self._aio.create_task, run()))

    async def codes_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds, on the registry's loop, until this process holds a claimed code (a process
        just started first connects to Redis, then claims); whether it does (false as soon as Redis cannot be
        reached)."""
        if self._claimed is None or asyncio.get_running_loop() is not self._aio:
            return False
        deadline = time.monotonic() + timeout
        while not (self._connected and self._pool):
            if not (self._connected or self._starting):
                return False
            self._claimed.clear()
            if self._connected:
                self._spawn(self._claim_codes())
            try:
                await asyncio.wait_for(self._claimed.wait(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                return False
        return True

    def _spawn(self, coro) -> None:
        """Run ``coro`` on the registry's loop, from any thread, kept until it is done (a task nobody holds may be
        collected before it ends)."""
        def start():
            task = contextvars.Context().run(self._aio.create_task, coro)
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        self._aio.call_soon_threadsafe(start)

    async def close(self) -> None:
        """Stop (tests): the tasks, then the connection."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._client is not None:
            await self._client.aclose()
        self._connected = False

    def _make_client(self):
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # no retries of its own: a lost connection is this registry's to handle (it sends again what matters)
        return Redis.from_url(self.url, decode_responses=True, socket_timeout=5, socket_connect_timeout=2,
                              retry=Retry(NoBackoff(), 0), health_check_interval=0)

    async def _connection(self) -> None:
        """Subscribe to every room's channel, read every room, then hand each message on, until the connection is
        lost; then again, every RETRY_S."""
        from redis.exceptions import RedisError

        while True:
            pubsub = None
            try:
                if self._client is None:
                    self._client = self._make_client()
                pubsub = self._client.pubsub(ignore_subscribe_messages=True)
                await pubsub.psubscribe(self._channel("*"))
                await self._resync()
                self._broken.clear()
                self._set_connected(True)
                while not self._broken.is_set():
                    got = await pubsub.get_message(timeout=0.5)
                    if got is None:
                        continue
                    try:
                        self._on_message(got["data"])
                    except Exception:  # one message this process cannot take (another version's?) stops nothing
                        log.exception("rooms: a message from Redis could not be taken")
            except (RedisError, OSError) as exc:
                self._lost(exc)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("rooms: a message from Redis could not be taken")
                self._lost(None)
            finally:
                if pubsub is not None:
                    try:
                        await pubsub.aclose()
                    except Exception:  # a closed connection's pubsub may fail to close: it is gone either way
                        pass
            if not self._connected and self._client is not None:
                # a new client next time: the old one's pooled connections may be to the Redis that went away
                client, self._client = self._client, None
                try:
                    await client.aclose()
                except Exception:
                    pass
            await asyncio.sleep(RETRY_S)

    def _lost(self, exc: Exception | None) -> None:
        if self._broken is not None:
            self._broken.set()
        self._set_connected(False, exc)

    def _set_connected(self, connected: bool, exc: Exception | None = None) -> None:
        was, self._connected, self._starting = self._connected, connected, False
        if self._claimed is not None:
            self._claimed.set()  # a Present waiting for the first connection hears how it went
        if connected and not was:
            if self._said_unavailable:
                log.warning("Rooms are available again: Redis at %s answers", where(self.url))
            self._said_unavailable = False
            self._wake.set()
        elif not connected and not self._said_unavailable:
            self._said_unavailable = True  # once, until it answers again: not a line per try, nor per page
            log.warning("Rooms are unavailable: Redis at %s cannot be reached (%s); trying again every %g s",
                        where(self.url), exc.__class__.__name__ if exc else "no answer", RETRY_S)

    async def _resync(self) -> None:
        """Just (re)connected: if Redis came back empty, put back what this process holds; then read every room."""
        client = self._client
        await client.set(self._key("epoch"), secrets.token_hex(8), nx=True)
        epoch = await client.get(self._key("epoch"))
        lost, self._epoch = self._epoch is not None and epoch != self._epoch, epoch
        if lost:
            self._pool.clear()  # claims went with the rest
            self._restore()
        for room in list(self._rooms.values()):  # this process's presenters are here, and their views the newest,
            if room.presenter is not None:  # whatever Redis holds (another process may have put back an older one)
                self._presence_changed(room)
                self._viewed(room, False)
        await self._read_all(lost)
        self._announce_pages(every=True)
        await self._claim_codes()

    def _restore(self) -> None:
        """Redis came back empty: every room this process holds goes back (a presenter's process holds the newest
        view, and its writes win), with its poll and the answers of this process's pages."""
        with self._lock:
            rooms = list(self._rooms.values())
        for room in rooms:
            self._whole.add(room.code)
            self._opened(room)
            if room.poll is not None:
                self._gens.pop(room.code, None)
                self._poll_set(room)
            for key, answer in self._journal.get(room.code, {}).items():
                self._send_answer(room.code, key, answer, None)

    async def _read_all(self, restored: bool) -> None:
        client = self._client
        codes = await client.smembers(self._key("rooms"))
        pipe = client.pipeline(transaction=False)
        for code in codes:
            pipe.hgetall(self._key("room:", code))
            pipe.hgetall(self._key("poll:", code))
        got = await pipe.execute()
        for i, code in enumerate(codes):
            if got[2 * i]:
                self._merge(code, got[2 * i], got[2 * i + 1])
        with self._lock:
            missing = [room for code, room in self._rooms.items() if code not in codes]
        for room in missing:
            if restored or not await client.exists(self._key("ended:", room.code)):
                self._opened(room)  # not yet written, or lost with the rest: it goes (back)
            else:
                self._end(room)  # ended while this process could not hear it

    async def _fetch(self, code: str) -> None:
        """Read one room again (this process missed part of it)."""
        from redis.exceptions import RedisError

        if code in self._fetching or self._client is None:
            return
        self._fetching.add(code)
        try:
            room_fields = await self._client.hgetall(self._key("room:", code))
            poll_fields = await self._client.hgetall(self._key("poll:", code))
            if room_fields:
                self._merge(code, room_fields, poll_fields)
        except RedisError as exc:
            self._lost(exc)
        finally:
            self._fetching.discard(code)

    def _merge(self, code: str, fields: dict, poll_fields: dict) -> None:
        """What Redis holds of room ``code`` into this process's copy, and to its pages where it changed."""
        version = int(fields.get("version") or 0)
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                room = self._rooms[code] = Room(code=code, published_at=self._clock())
        if version > room.version:
            snapshot = decode_view(fields.get("view"))
            if snapshot is not None and fields.get("query"):
                snapshot["query"] = tuple(decode_view(fields["query"]))
            self._bases[code] = int(fields.get("base") or version)
            self.take_view(room, version, snapshot, _query_only(room.snapshot, snapshot))
        gone = fields.get("gone") == "1"
        if gone != room.gone and room.presenter is None:
            room.gone = gone
            self._tell_presence(room, not gone)
        if poll_fields.get("id"):
            self._take_poll(room, int(poll_fields["id"]), poll_fields.get("q", ""), poll_fields.get("state", ""),
                            poll_fields.get("gen", ""))
            self._take_counts(room, int(poll_fields["id"]), poll_fields, (), exact=True)

    def _on_message(self, data: str) -> None:
        import json

        m = json.loads(data)
        if m.get("p") == self.process:
            return  # this process's own change, applied here already
        code, kind = m.get("c"), m.get("t")
        room = self._rooms.get(code)
        if kind == "pages":
            self._pages.setdefault(code, {})[m["from"]] = (int(m["n"]), self._clock())
            if room is not None:
                self._poll_changed(room, counts_only=True)
            return
        if room is None:
            if kind in ("open", "view"):
                self._spawn(self._fetch(code))
            return
        if kind in ("open", "view"):
            self._take_message_view(room, m)
        elif kind == "hand":
            self.take_hand(room, int(m["v"]), [float(c) for c in m["q"]])
        elif kind == "presence":
            if room.gone == m["here"] and room.presenter is None:
                room.gone = not m["here"]
                self._tell_presence(room, m["here"])
        elif kind == "ended":
            self._end(room)
        elif kind == "poll":
            self._take_poll(room, int(m["id"]), m["q"], m["state"], m["gen"])
        elif kind == "counts":
            fields = dict(zip(m["h"][::2], m["h"][1::2], strict=True))
            self._take_counts(room, int(fields["id"]), fields, [m["b"]])

    def _take_message_view(self, room: Room, m: dict) -> None:
        version = int(m["v"])
        if version <= room.version:
            return
        if m.get("s") is not None:  # the view whole
            snapshot = decode_view(m["s"])
            snapshot["query"] = tuple(m["q"])
            self._bases[room.code] = int(m["b"])
            self.take_view(room, version, snapshot, _query_only(room.snapshot, snapshot))
        elif self._bases.get(room.code) == int(m["b"]) and room.snapshot is not None:  # the query alone
            self.take_view(room, version, {**room.snapshot, "query": tuple(m["q"])}, True)
        else:  # this process missed the view the query belongs to
            self._spawn(self._fetch(room.code))

    def _take_poll(self, room: Room, poll_id: int, question: str, state: str, gen: str) -> None:
        with self._lock:
            poll = room.poll
            if poll is None or poll_id > poll.id:
                poll = room.poll = Poll(poll_id, question)
                poll.take_counts({})
                room._polls_asked, room.poll_asked_at = poll_id, self._clock()
                self._journal.pop(room.code, None)
            elif poll_id != poll.id or state not in STATES or STATES.index(state) <= STATES.index(poll.state):
                return
            poll.state = state
        self._poll_changed(room)

    def _take_counts(self, room: Room, poll_id: int, fields: dict, browsers, exact: bool = False) -> None:
        """The counts of the room's poll as Redis counted them. ``exact``: read whole (else one answer's, which
        may arrive after a read that already holds it: never one that counts fewer)."""
        with self._lock:
            poll = room.poll
            if poll is None or poll.id != poll_id:
                return
            gen = fields.get("gen", "")
            answers = int(fields.get("answers", 0))
            if not exact and gen == self._gens.get(room.code) and answers < poll.counts(0).answers:
                return
            self._gens[room.code] = gen
            poll.take_counts(fields, browsers)
        self._poll_changed(room, counts_only=True)

    def _end(self, room: Room) -> None:
        super()._end(room)
        for kept in (self._bases, self._announced, self._journal, self._gens, self._pages):
            kept.pop(room.code, None)
        self._whole.discard(room.code)

    # -- the sweep, the heartbeat -----------------------------------------------------------------------------------

    def _due_to_end(self, now: float) -> list[Room]:
        return []  # Redis's sweep ends rooms, for every process (_ticker)

    def _due_gone(self, now: float) -> list[Room]:
        return []

    def _reopen_check(self, code: str) -> None:
        if not self._connected:
            raise RoomsUnavailable("Rooms are unavailable: this server cannot reach Redis.")

    async def _ticker(self) -> None:
        from redis.exceptions import RedisError

        last_pages = 0.0
        while True:
            await asyncio.sleep(self.tick)
            if not self._connected:
                continue
            try:
                with self._lock:
                    presenting = [self._key("room:", c) for c, r in self._rooms.items() if r.presenter is not None]
                if presenting:
                    await run_script(self._client, lua.BEAT, presenting, [self.process])
                await run_script(self._client, lua.SWEEP, [self._key("rooms")], [
                    self.prefix, round(PRESENCE_GRACE * 1000), round(self.presenter_timeout * 1000),
                    round(self.end_after * 1000), int(TOMBSTONE_SECONDS)])
                if len(self._pool) < CLAIMED_CODES:
                    await self._claim_codes()
            except (RedisError, OSError) as exc:
                self._lost(exc)
                continue
            now = self._clock()
            if now - last_pages >= PAGES_EVERY_S:
                last_pages = now
                self._announce_pages()
            for code, processes in list(self._pages.items()):  # a process that stopped saying has gone
                stale = [p for p, (_, heard) in processes.items() if now - heard >= PAGES_STALE_S]
                for p in stale:
                    del processes[p]
                if not processes:
                    del self._pages[code]
                if stale and code in self._rooms:
                    self._poll_changed(self._rooms[code], counts_only=True)


def _query_only(before, after) -> bool:
    """Whether ``after`` differs from ``before`` in its query alone."""
    if before is None or after is None or before.keys() != after.keys():
        return False
    from services.room_wire import encode_view as text

    return all(text({k: before[k]}) == text({k: after[k]}) for k in before if k != "query")
