"""Rooms shared through a real Redis (Debian's ``redis-server`` on a free loopback port): several registries, each
as one server process holds it, on one event loop; what a page of one does, the pages of the others see.

Each registry is :class:`services.rooms_redis.RedisRoomRegistry` as a process makes it from ``EXPLORER_REDIS_URL``;
pages are listeners, as in tests/test_rooms.py. Expected values come from what the presenter did, never from
Redis itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from services import rooms_redis
from services.polls import PollCounts, PollView
from services.room_codes import draw_code
from services.rooms import CodesNotReady, RoomRegistry, RoomSecret, RoomsUnavailable
from services.rooms_redis import RedisRoomRegistry
from testing import redis as real_redis
from testing.redis import RedisServer

pytestmark = pytest.mark.server  # each starts a redis-server
redis_server = real_redis.redis_server  # the fixture: a test's own Redis on a free loopback port
WAIT = 30.0  # seconds: a loaded machine is slow, never wrong


async def until(predicate, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


#: Every process of a school's server signs presenter links with the same secret (docs/operations.md).
SECRET = RoomSecret.from_env({"EXPLORER_ROOM_SECRET": "every process of the school's server has this one"})


async def processes(url: str, n: int, **settings) -> list[RedisRoomRegistry]:
    """``n`` registries, as ``n`` server processes would each hold one, connected."""
    settings = {"end_after": 120, "secret": SECRET, **settings}
    registries = [RedisRoomRegistry(url, **settings) for _ in range(n)]
    for registry in registries:
        registry.start()
    await until(lambda: all(r.available for r in registries), "every process reaches Redis")
    return registries


async def close(*registries):
    for registry in registries:
        await registry.close()


class Follower:
    """A follower page's ends of a room: the views and presence it hears."""

    def __init__(self, registry, code, key, browser=None):
        self.registry, self.code, self.key = registry, code, key
        self.views, self.presence = [], []
        registry.follow(code, key, lambda version, snapshot, query_only: self.views.append((version, snapshot)),
                        self.presence.append)
        registry.name_browser(code, key, browser or f"browser-of-{key}".ljust(24, "-")[:24])

    @property
    def query(self):
        return self.views[-1][1]["query"] if self.views and self.views[-1][1] else None


def view(x: float, y: float, preset: str = "Section 6: scalar values") -> dict:
    return {"preset": preset, "query": (x, y)}


def test_a_room_opened_on_one_process_is_followed_on_the_others_from_its_current_view(redis_server):
    async def scenario():
        a, b, c = await processes(redis_server.url, 3)
        room, token = a.create(view(0.0, 1.0), creator="teacher's page")
        a.enter_as_presenter(room.code, token, "teacher")
        a.publish(room.code, token, view(0.5, 0.5))
        await until(lambda: b.get(room.code) is not None and b.view(room.code)[0] == 1, "the room reaches b")
        early = Follower(b, room.code, "early")
        for i in range(1, 21):  # a drag: the query alone
            a.publish(room.code, token, view(0.5 + i / 10, 0.5), query_only=True)
        a.publish(room.code, token, view(2.5, -1.0, "Module 2: vector values"))  # more than the query
        await until(lambda: early.query == (2.5, -1.0), "the follower on b follows the drag and the preset")
        late = Follower(c, room.code, "late")  # joins on c after all of it: starts from the current view
        assert c.view(room.code) == (22, view(2.5, -1.0, "Module 2: vector values"))
        assert late.views == []  # nothing since it joined
        versions = [v for v, _ in early.views]
        assert versions == sorted(versions) and versions[-1] == 22  # never a view older than one it had
        codes = set()
        for i in range(8):  # each process holds a few codes claimed ahead, and claims more as they go
            for registry in (a, b):
                await until(lambda registry=registry: registry._pool, "a code claimed")
                codes.add(registry.create(creator=f"page-{i}")[0].code)
        assert len(codes) == 16 and room.code not in codes
        await close(a, b, c)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_a_present_while_no_code_is_claimed_waits_for_one_instead_of_saying_rooms_are_unavailable(redis_server):
    """A process just started (or back from Redis) has claimed no code yet: a Present then is told to wait for one,
    and one comes, where rooms were said unavailable to a teacher pressing Present on a busy, new process."""
    async def scenario():
        (a,) = await processes(redis_server.url, 1)
        await until(lambda: a._pool, "the first codes claimed")
        held = len(a._pool)
        for i in range(held):  # every code this process holds, taken at once
            a.create(creator=f"page-{i}")
        with pytest.raises(CodesNotReady):
            a.create(creator="the teacher's page")
        assert await a.codes_ready(WAIT)
        room, _ = a.create(creator="the teacher's page")
        assert len(a) == held + 1 and room.code in a._rooms
        await close(a)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_a_present_while_the_process_connects_to_redis_waits_for_the_connection(redis_server):
    """A process answers pages before it has connected to Redis (a second or more on a busy machine): a Present then
    waits for the connection and its first codes, where it was told rooms are unavailable."""
    async def scenario():
        a = RedisRoomRegistry(redis_server.url, end_after=120, secret=SECRET)
        a.start()  # its connection runs once this coroutine awaits: the page's Present comes first
        with pytest.raises(CodesNotReady):
            a.create(creator="the teacher's page")
        assert await a.codes_ready(WAIT)
        room, _ = a.create(creator="the teacher's page")
        assert a.available and room.code in a._rooms
        await close(a)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_codes_ready_is_false_at_once_where_redis_cannot_be_reached(tmp_path):
    async def scenario():
        dead = RedisRoomRegistry(f"unix://{tmp_path}/nobody.sock", end_after=120, secret=SECRET)
        dead.start()
        assert await dead.codes_ready(3600) is False  # at once: not the hour (the scenario has two minutes)
        await close(dead)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_the_presenters_hand_reaches_the_live_channels_of_every_process(redis_server):
    class Sink:
        def __init__(self):
            self.texts = []

        def send(self, text, replaceable):
            self.texts.append(json.loads(text))

        def close(self, *args):
            pass

    async def scenario():
        a, b = await processes(redis_server.url, 2)
        room, token = a.create(view(0.0, 1.0))
        a.enter_as_presenter(room.code, token, "teacher")
        await until(lambda: b.get(room.code) is not None, "the room reaches b")
        Follower(b, room.code, "page")
        sink = Sink()
        b.watch(room.code, b.live_ticket(room.code, "page"), sink)
        for i in range(10):
            a.publish_hand(room.code, token, (0.1 * i, 1.0))
            await asyncio.sleep(0.02)
        await until(lambda: sink.texts and sink.texts[-1]["query"] == [0.9, 1.0], "the hand's last position on b")
        await close(a, b)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_a_poll_counts_every_answer_once_whichever_process_takes_it(redis_server):
    async def scenario():
        a, b, c = await processes(redis_server.url, 3)
        room, token = a.create(view(0.0, 1.0))
        a.enter_as_presenter(room.code, token, "teacher")
        await until(lambda: b.get(room.code) and c.get(room.code), "the room reaches every process")
        heard = []
        a.watch_poll(room.code, "teacher", lambda v, counts: heard.append(counts), token=token)
        pages = [Follower(registry, room.code, f"{name}-{i}") for name, registry in (("b", b), ("c", c))
                 for i in range(60)]
        await until(lambda: a.poll_counts(room.code, token) is None and a.pages_following(a.get(room.code)) == 120,
                    "the presenter counts every process's pages")
        asked = a.ask(room.code, token, "key-role")
        assert asked == PollView(1, "key-role", "open")
        await until(lambda: all(p.registry.poll(room.code) == asked for p in pages), "the question on every page")
        for i, page in enumerate(pages):
            page.registry.poll_drawn(room.code, page.key, 1, "ignored: the page named its browser as it joined")
            page.registry.answer_poll(room.code, page.key, 1, i % 4)
        # the same browser from a page on the other process: refused there, counted nowhere
        twin = Follower(c, room.code, "twin", browser=b.get(room.code)._browsers[pages[0].key][0])
        refused = []
        await until(lambda: "browser-of-b-0" in str(c.get(room.code).poll._browsers), "c hears of b's answers")
        assert c.poll_drawn(room.code, "twin", 1, "x") is True
        with pytest.raises(Exception, match="This browser has already answered"):
            c.answer_poll(room.code, twin.key, 1, 2, refused=refused.append)
        await until(lambda: a.poll_counts(room.code, token).answers == 120, "every answer counted")
        await asyncio.sleep(0.5)  # any answer counted twice would have come by now
        counts = a.poll_counts(room.code, token)
        assert counts == PollCounts(1, 120, 121, right=30, choices=(30, 30, 30, 30))
        assert max(h.answers for h in heard if h) == 120 and refused == []
        await close(a, b, c)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_one_browser_answering_on_two_processes_at_once_is_counted_once_and_the_other_page_told(redis_server):
    """Two pages of one browser on two processes answer in the same instant: neither process has heard of the
    other's answer, so both take it; the script counts one and refuses the other, whose page is told."""
    async def scenario():
        a, b, c = await processes(redis_server.url, 3)
        room, token = a.create(view(0.0, 1.0))
        a.enter_as_presenter(room.code, token, "teacher")
        await until(lambda: b.get(room.code) and c.get(room.code), "the room reaches every process")
        same = "one-browser-two-pages---"
        pages = [Follower(b, room.code, "on-b", browser=same), Follower(c, room.code, "on-c", browser=same)]
        a.ask(room.code, token, "key-role")
        await until(lambda: b.poll(room.code) and c.poll(room.code), "the question on both")
        refused = []
        for page in pages:
            page.registry.poll_drawn(room.code, page.key, 1, same)
        for page, choice in zip(pages, (1, 2), strict=True):  # no await between: neither hears of the other
            page.registry.answer_poll(room.code, page.key, 1, choice, refused=refused.append)
        await until(lambda: refused, "the second answer refused")
        await until(lambda: a.poll_counts(room.code, token).answers == 1, "one answer counted")
        await asyncio.sleep(0.5)
        assert a.poll_counts(room.code, token).answers == 1
        assert [str(e) for e in refused] == ["This browser has already answered this poll."]
        await close(a, b, c)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_followers_elsewhere_hear_that_the_presenters_process_has_gone_and_keep_their_view(redis_server,
                                                                                          monkeypatch):
    monkeypatch.setattr(rooms_redis, "PRESENCE_GRACE", 0.5)

    async def scenario():
        a, b = await processes(redis_server.url, 2, presenter_timeout=1.5, tick=0.2)
        room, token = a.create(view(0.0, 1.0))
        a.enter_as_presenter(room.code, token, "teacher")
        a.publish(room.code, token, view(1.5, 0.5))
        await until(lambda: b.view(room.code) and b.view(room.code)[0] == 1, "the view reaches b")
        follower = Follower(b, room.code, "student")
        for task in a._tasks:  # the presenter's process stops: no goodbye, no heartbeat
            task.cancel()
        await until(lambda: follower.presence == [False], "the follower is told the presenter has gone")
        assert b.view(room.code) == (1, view(1.5, 0.5)) and follower.views == []  # the view it had stays
        again = RedisRoomRegistry(redis_server.url, end_after=120, secret=SECRET)  # the presenter, on another process
        again.start()
        await until(lambda: again.available and again.get(room.code), "the room on the presenter's new process")
        again.enter_as_presenter(room.code, token, "teacher again")
        await until(lambda: follower.presence == [False, True], "the follower is told the presenter is back")
        again.publish(room.code, token, view(-1.0, 2.0))
        await until(lambda: follower.query == (-1.0, 2.0), "and follows the presenter again")
        assert follower.views[-1][0] == 2  # the version goes on from where the room was
        await close(a, b, again)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_a_redis_that_restarts_empty_gets_every_room_back_and_counts_each_answer_once(redis_server):
    async def scenario():
        a, b = await processes(redis_server.url, 2)
        room, token = a.create(view(0.0, 1.0))
        a.enter_as_presenter(room.code, token, "teacher")
        await until(lambda: b.get(room.code) is not None, "the room reaches b")
        pages = [Follower(b, room.code, f"page-{i}") for i in range(3)]
        a.ask(room.code, token, "key-role")
        await until(lambda: b.poll(room.code) is not None, "the question reaches b")
        for page in pages:
            b.poll_drawn(room.code, page.key, 1, "x")
        b.answer_poll(room.code, pages[0].key, 1, 1)
        await until(lambda: a.poll_counts(room.code, token).answers == 1, "the first answer counted")
        redis_server.kill()  # everything Redis held is gone
        await until(lambda: not a.available and not b.available, "both processes notice")
        b.answer_poll(room.code, pages[1].key, 1, 1)  # answered while Redis is down
        a.publish(room.code, token, view(2.0, 2.0), query_only=True)  # the presenter drags on meanwhile
        redis_server.start()
        await until(lambda: a.available and b.available, "both processes reach Redis again")
        await until(lambda: pages[0].query == (2.0, 2.0), "the view the presenter made meanwhile reaches b")
        await until(lambda: a.poll_counts(room.code, token).answers == 2, "the answer given meanwhile counted")
        b.answer_poll(room.code, pages[2].key, 1, 3)
        await until(lambda: a.poll_counts(room.code, token).answers == 3, "an answer after counted")
        await asyncio.sleep(1.0)  # an answer counted twice would have come by now
        assert a.poll_counts(room.code, token).choices == (0, 2, 0, 1)
        await close(a, b)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_a_redis_that_cannot_be_reached_says_so_once_and_rooms_come_when_it_does(tmp_path, caplog):
    server = RedisServer(tmp_path / "redis")  # its port, nothing listening on it yet

    async def scenario():
        registry = RedisRoomRegistry(server.url, end_after=120)
        registry.start()
        await asyncio.sleep(3 * rooms_redis.RETRY_S)  # a few tries
        assert not registry.available
        for _ in range(3):
            with pytest.raises(RoomsUnavailable):
                registry.create(creator="a page")
        server.start()
        await until(lambda: registry.available, "rooms once Redis answers")
        room, _ = registry.create(creator="a page")
        assert room.code
        await close(registry)

    with caplog.at_level(logging.WARNING, logger="services.rooms_redis"):
        try:
            asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))
        finally:
            server.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "services.rooms_redis"]
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"Rooms are unavailable: Redis at redis://127.0.0.1:{server.port}/0 cannot be reached")
    assert lines[1].startswith("Rooms are available again")
    assert not any(r.exc_info for r in caplog.records)


def test_an_ended_room_ends_on_every_process_and_its_code_is_not_given_again(redis_server, monkeypatch):
    async def scenario():
        a, b = await processes(redis_server.url, 2)
        room, token = a.create(view(0.0, 1.0))
        a.enter_as_presenter(room.code, token, "teacher")
        await until(lambda: b.get(room.code) is not None, "the room reaches b")
        follower = Follower(b, room.code, "student")
        a.end(room.code, token)
        await until(lambda: b.get(room.code) is None, "the room ends on b")
        assert follower.views[-1] == (None, None)
        client = b._client
        assert await client.exists(f"explorer:ended:{room.code}")
        assert not await client.exists(f"explorer:room:{room.code}")
        drawn = iter([room.code, room.code, "ABCDEF"])  # the ended code comes up first: another is claimed
        monkeypatch.setattr("services.rooms_redis_writes.draw_code", lambda: next(drawn, None) or draw_code())
        await until(lambda: not b._claiming, "b's own claims done")
        b._pool.clear()
        await b._claim_codes()
        assert [code for code, _ in b._pool][:1] == ["ABCDEF"]
        await close(a, b)

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT))


def test_without_redis_the_registry_is_the_process_own(monkeypatch):
    from services.rooms import make_registry

    monkeypatch.delenv("EXPLORER_REDIS_URL", raising=False)
    assert type(make_registry({})) is RoomRegistry
    shared = make_registry({"EXPLORER_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert isinstance(shared, RedisRoomRegistry) and not shared.available
