"""A lecture hall's faults, on real processes: Redis (Debian's ``redis-server``) and two or three ``python app.py``
sharing rooms through it (``testing/hall.py``), the presenter's page on one, followers' pages on the others, each
over Bokeh's own protocol (``testing/protocol_client.py``) as ``bench/lecture.py`` drives them.

Redis here keeps nothing on disk: a restart comes back empty, and the processes put back what they hold.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time

import pytest

from testing.hall import Hall
from testing.poll_page import Page, browser
from testing.poll_presenter import Presenter
from testing.protocol_client import Learner, ProtocolPresenter, find_objects
from testing.server import wait_for_http
from tests.ui.conftest import CLOSED_SOCKET
from widgets.poll import question_options

pytestmark = pytest.mark.server
WAIT = 60  # seconds: a page build on a loaded 2-core machine can take seconds
LABELS = {qid: label for group in question_options().values() for label, qid in group.items()}


def no_traceback(logs: str) -> None:
    logs = re.sub(CLOSED_SOCKET, "", logs)  # a page closed while its server wrote to it is no server error
    assert "Traceback" not in logs, logs[-5000:]


class Followers:
    """Follower pages of room ``code`` on process ``i`` of the hall, on an event loop in a thread of their own;
    each records what it shows and when (CLOCK_MONOTONIC): the live channel's queries and its server's readout."""

    def __init__(self, hall: Hall, i: int, code: str, count: int):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.pages = [Learner(f"{hall.ws(i)}?room={code}", compress=True, clock=time.monotonic, keep_patches=True)
                      for _ in range(count)]
        self.live: list[list[tuple[float, tuple[str, str]]]] = [[] for _ in range(count)]
        self.run(self._open())

    def run(self, coro, timeout: float = 4 * WAIT):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _open(self) -> None:
        for page in self.pages:
            await page.connect(keep_doc=True)
        self.tasks = [asyncio.ensure_future(page.listen()) for page in self.pages]
        channels = await asyncio.gather(*(page.live_channel(timeout=WAIT) for page in self.pages))
        self.tasks += [asyncio.ensure_future(self._read(c, shown)) for c, shown in zip(channels, self.live,
                                                                                        strict=True)]
        self.channels = channels

    @staticmethod
    async def _read(channel, shown) -> None:
        while (text := await channel.read_message()) is not None:
            query = json.loads(text)["query"]
            if query is not None:
                shown.append((time.monotonic(), (f"{query[0]:.3f}", f"{query[1]:.3f}")))

    def first_time_shown(self, i: int, query: tuple[str, str], after: float) -> float | None:
        """When page ``i`` first showed ``query`` after ``after``: its live channel's preview or its server's."""
        seen = [t for t, q in self.live[i] if q == query and t >= after]
        seen += [t for q, t in self.pages[i].shown if q == query and t >= after]
        return min(seen, default=None)

    def said(self, i: int, text: str) -> bool:
        return text in json.dumps(self.pages[i].patches)

    def close(self) -> None:
        async def _close():
            for page in self.pages:
                page.close()
            for channel in getattr(self, "channels", []):
                channel.close()
            await asyncio.gather(*self.tasks, return_exceptions=True)

        self.run(_close())
        self.loop.call_soon_threadsafe(self.loop.stop)


def wait(predicate, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    """Redis and three app processes, for the module's tests (each with rooms of its own)."""
    h = Hall(tmp_path_factory.mktemp("hall"), processes=3)
    yield h
    no_traceback(h.close())


def test_redis_restarted_mid_drag_every_follower_ends_on_the_presenters_final_view_within_2_s(hall):
    """Redis dies (and comes back empty) while the presenter drags, the drag ends while it is away: once it answers
    again, every follower on the other processes shows the presenter's last position within 2 s, then its server's
    numbers for it."""
    h = hall
    presenter = ProtocolPresenter(h.urls[0])
    followers = []
    try:
        code = presenter.start()
        followers = [Followers(h, i, code, 3) for i in (1, 2)]
        rate, points = 30, [(0.5 + 1.5 * k / 90, 1.0 - k / 90) for k in range(91)]  # 3 s of drag
        dragging = threading.Thread(target=presenter.drag, args=(points, rate))
        dragging.start()
        time.sleep(1.0)
        h.redis.kill()
        dragging.join()  # the hand lets go while Redis is away
        final = (f"{points[-1][0]:.3f}", f"{points[-1][1]:.3f}")
        h.redis.start()
        back = h.redis.returned_at
        late = []
        for group in followers:
            for i in range(len(group.pages)):
                wait(lambda g=group, i=i: g.first_time_shown(i, final, 0) is not None,
                     "a follower shows the presenter's final position")
                late.append(group.first_time_shown(i, final, 0) - back)
        assert max(late) <= 2.0, f"seconds after Redis answered again: {late}"
        for group in followers:  # and its server's numbers for it, once the room rests
            for page in group.pages:
                wait(lambda p=page: p.shown and p.shown[-1][0] == final, "the server's numbers of the final view")
    finally:
        for group in followers:
            group.close()
        presenter.close()


def test_redis_unreachable_at_start_is_one_log_line_and_present_says_rooms_are_unavailable(tmp_path):
    h = Hall(tmp_path, processes=1, start_redis=False)
    try:
        _unreachable_at_start(h)
    finally:
        no_traceback(h.close())


def _unreachable_at_start(h: Hall) -> None:

    async def present_once() -> str:
        page = Learner(h.ws(0), keep_patches=True)
        await page.connect(keep_doc=True)
        listening = asyncio.ensure_future(page.listen())
        button = next(b for b in find_objects(page.doc, "Button") if b["attributes"].get("label") == "Present")
        await page.click(button["id"])
        deadline = time.monotonic() + WAIT
        said = ""
        while time.monotonic() < deadline:
            said = json.dumps(page.patches)
            if "Rooms are unavailable right now" in said or "token=" in said:
                break
            await asyncio.sleep(0.05)
        page.close()
        await asyncio.gather(listening, return_exceptions=True)
        return said

    h.wait_for_log(0, "Rooms are unavailable: Redis at")
    for _ in range(3):  # pages pressing Present: each is told, and the log says nothing more
        said = asyncio.run(asyncio.wait_for(present_once(), 2 * WAIT))
        assert "Rooms are unavailable right now" in said and "token=" not in said
        follower = asyncio.run(asyncio.wait_for(_follower_notice(h, "K7M4QX"), 2 * WAIT))
        assert "Rooms are unavailable right now" in follower
    log = h.log(0)
    assert log.count("Rooms are unavailable") == 1 and "Traceback" not in log, log
    h.redis.start()
    h.wait_for_log(0, "Rooms are available again")
    assert "token=" in asyncio.run(asyncio.wait_for(present_once(), 2 * WAIT))


async def _follower_notice(h: Hall, code: str) -> str:
    page = Learner(f"{h.ws(0)}?room={code}", keep_patches=True)
    await page.connect(keep_doc=True)
    text = json.dumps(page.doc)
    page.close()
    return text


def test_the_presenters_process_killed_followers_keep_the_last_view_and_say_the_presenter_is_gone(hall):
    h = hall
    doomed = h.start_process()  # the presenter's process, killed below: a fourth, the others go on
    wait_for_http(h.urls[doomed] + "liveness", h.procs[doomed], timeout=180)
    presenter = ProtocolPresenter(h.urls[doomed])
    followers = None
    try:
        code = presenter.start()
        followers = Followers(h, 1, code, 3)
        presenter._run(presenter.me.pointer("tap", 1.5, -0.5))
        last = ("1.500", "-0.500")
        for page in followers.pages:
            wait(lambda p=page: p.shown and p.shown[-1][0] == last, "each follower shows the presenter's view")
        h.kill(doomed)
        for i in range(len(followers.pages)):
            wait(lambda i=i: followers.said(i, "The presenter has gone"), "each follower says the presenter is gone")
        assert all(page.shown[-1][0] == last for page in followers.pages)  # the last view stays
    finally:
        if followers is not None:
            followers.close()
        presenter.close()


def test_a_poll_answered_across_a_redis_restart_is_counted_once(hall):
    h = hall
    presenter = Presenter(h.urls[0])
    try:
        code = presenter.run(presenter.present())

        async def scenario():
            pages = [await Page(h.urls[1], code).open() for _ in range(4)]
            for i, page in enumerate(pages):
                await page.until(lambda page=page: page.card, "the poll card once the page has loaded")
                await page.hello(browser(f"browser-{i}"))
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
                presenter.open_poll(LABELS["key-role"]), presenter.loop))
            for i, page in enumerate(pages):
                await page.until(lambda page=page: page.poll.get("nonce"), "the question")
                await page.draw(browser(f"browser-{i}"))
            await pages[0].send(poll=pages[0].poll["id"], answer=1)
            await pages[0].until(lambda: "Your answer is in" in pages[0].status(), "counted")
            await counted(1)
            h.redis.kill()  # and back empty: the room, its poll and its answers go back from the processes
            await pages[1].send(poll=pages[1].poll["id"], answer=1)  # answered while Redis is away
            await pages[1].until(lambda: "Your answer is in" in pages[1].status(), "taken")
            h.redis.start()
            await counted(2)
            await pages[2].send(poll=pages[2].poll["id"], answer=2)
            await counted(3)
            twin = await Page(h.urls[1], code).open()  # page 3's browser, reloaded: answers nothing more
            await twin.until(lambda: twin.card, "the card")
            await twin.hello(browser("browser-0"))
            await twin.until(lambda: twin.poll.get("nonce") or "already answered" in twin.status(), "the question")
            for page in (*pages, twin):
                page.close()

        async def counted(n: int):
            deadline = time.monotonic() + WAIT
            while not (presenter.counts and presenter.counts[-1][1] == n):
                assert time.monotonic() < deadline, f"the presenter's card counts {n}: {presenter.cards[-1:]}"
                await asyncio.sleep(0.05)

        asyncio.run(asyncio.wait_for(scenario(), 5 * WAIT))
        time.sleep(1.0)  # an answer counted twice would have reached the presenter's card by now
        assert max(answers for _, answers, _, _ in presenter.counts) == 3
        assert presenter.counts[-1][3] == [("A. " + _choice("key-role", 0), 0), ("B. " + _choice("key-role", 1), 2),
                                           ("C. " + _choice("key-role", 2), 1), ("D. " + _choice("key-role", 3), 0)]
    finally:
        presenter.close()


def _choice(question: str, i: int) -> str:
    from course.questions import BY_ID

    return str(BY_ID[question].choices[i].text)
