"""deploy/nginx.conf in front of two app processes sharing rooms through Redis: live drags through the proxy,
sessions stay sticky, a room's pages follow it from either process.

nginx runs in the foreground with a temporary prefix, on free loopback ports; the app processes are
``python app.py`` with the settings docs/operations.md gives for running behind a proxy, and Redis is Debian's
``redis-server`` (``testing/nginx.py``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from testing.nginx import Stack
from tests.ui.conftest import CLOSED_SOCKET
from tests.ui.helpers import move_seen, open_app, show_tab, to_page, wait_for_readout, weights
from tests.ui.test_offline import is_loopback

# a busy shared machine can take seconds per round trip: wait long, still before the button is released
LOADED = 30_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("nginx"))
    yield s
    # a page closed while the server wrote to it is not a server error (as for the other servers: tests/ui/conftest.py)
    logs = re.sub(CLOSED_SOCKET, "", s.close())
    assert "Traceback" not in logs, f"an app process logged a traceback:\n{logs}"


def new_page(browser, route: str | None = None):
    """A page in a fresh browser; ``page.foreign`` collects requests to hosts other than loopback.

    A websocket that reaches a process other than the one that rendered the page gets a new session
    there, whose theme stylesheets point at Panel's CDN: a foreign request is the visible symptom.
    """
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    if route is not None:
        context.add_cookies([{"name": "explorer_route", "value": route, "domain": "127.0.0.1", "path": "/"}])
    page = context.new_page()
    page.foreign = []
    page.on("request", lambda r: None if is_loopback(r.url) else page.foreign.append(r.url))
    return page


def test_drag_through_nginx_updates_live_before_release(browser, stack):
    page = new_page(browser)
    try:
        open_app(page, stack.url)
        assert any(c["name"] == "explorer_route" for c in page.context.cookies()), "nginx set no route cookie"
        x0, y0 = to_page(page, "query-plot", 0.0, 1.0)
        x1, y1 = to_page(page, "query-plot", 1.0, 1.0)
        page.mouse.move(x0, y0)
        page.mouse.down()
        seen = set()
        for i in range(1, 21):  # each move once the page has drawn the last
            seen.add(move_seen(page, x0 + (x1 - x0) * i / 20, y0 + (y1 - y0) * i / 20).splitlines()[0])
        wait_for_readout(page, r"q = \(1\.000, 1\.000\)", timeout=LOADED)  # button still held
        assert len(seen) == 20, f"the readout followed only {len(seen)} of 20 moves through nginx: {seen}"
        assert weights(page) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)
        page.mouse.up()
        assert not page.foreign, page.foreign
        counts = stack.wait_for_sessions(lambda c: sorted(c) == [0, 1])
        assert sorted(counts) == [0, 1], f"websockets per process: {counts}"
    finally:
        page.context.close()


def test_learners_spread_over_both_processes_and_each_page_stays_live(browser, stack):
    """Fresh route keys until both processes hold a learner (consistent hashing: one of them is enough)."""
    pages = []
    try:
        for i in range(12):
            page = new_page(browser, route=f"learner-{i}")
            pages.append(page)
            open_app(page, stack.url)
            show_tab(page, "Matrix", "attention-matrix")
            row = (0, 2)[i % 2]  # a fresh page shows "love": either click changes the readout
            page.mouse.click(*to_page(page, "attention-matrix", 0, row))
            wait_for_readout(page, f'Query of "{["I", "love", "NLP"][row]}"', timeout=LOADED)
            if min(stack.wait_for_sessions(lambda c: sum(c) == len(pages))) > 0:
                break
        counts = stack.sessions()
        assert min(counts) > 0 and sum(counts) == len(pages), f"websockets per process: {counts}"
        # every page still answers: its websocket reached the process that holds its session
        for page in pages:
            page.mouse.click(*to_page(page, "query-plot", 2.0, -1.0))
            wait_for_readout(page, r"q = \(2\.000, -1\.000\)", timeout=LOADED)
            assert not page.foreign, page.foreign
    finally:
        for page in pages:
            page.context.close()


def test_a_rooms_followers_on_both_processes_follow_its_presenter(browser, stack):
    """Pages whose route cookies point at both processes all follow one room: each stays on its own process, and
    the room reaches them through Redis (nginx once had to send every page of a room to the room's process).
    Six students at least, and fresh route keys until both processes hold a page: the processes' places on nginx's
    hash ring follow their ports, new each run, and seven fixed keys once all went to one process."""
    from tests.ui.test_follow import WAIT, present

    pages = []
    try:
        teacher = new_page(browser, route="teacher")
        pages.append(teacher)
        open_app(teacher, stack.url)
        code, link = present(teacher)
        assert link.startswith(stack.url)
        students = []
        for i in range(16):
            student = new_page(browser, route=f"student-{i}")
            pages.append(student)
            open_app(student, link)
            student.get_by_text("Following room").wait_for(timeout=WAIT)
            students.append(student)
            counts = stack.wait_for_sessions(lambda c: sum(c) == len(pages))
            if len(students) >= 6 and min(counts) > 0:
                break
        assert sum(counts) == len(pages) and min(counts) > 0, f"websockets per process: {counts}"
        teacher.mouse.click(*to_page(teacher, "query-plot", 1.0, 1.0))
        for student in students:
            wait_for_readout(student, r"q = \(1\.000, 1\.000\)", WAIT)
            assert not student.foreign, student.foreign
        token = teacher.url.split("token=")[1]
        logged = stack.access_log.read_text() + "".join(Path(log.name).read_text() for log in stack.logs)
        assert "GET /ws" in logged and code not in logged and token not in logged
    finally:
        for page in pages:
            page.context.close()


def liveness_lines(stack) -> list[str]:
    return [line for line in stack.access_log.read_text().splitlines() if '"GET /liveness ' in line]


def answering_process(stack, query: str, route: str | None = None) -> str:
    """The app process nginx sends ``query`` to (with a route cookie): a request for /liveness, as nginx logs it."""
    import urllib.request

    before = len(liveness_lines(stack))
    request = urllib.request.Request(f"{stack.url}liveness?{query}",
                                     headers={"Cookie": f"explorer_route={route}"} if route else {})
    with urllib.request.urlopen(request, timeout=60) as r:
        assert r.status == 200
    deadline = time.monotonic() + 60  # nginx writes its log line after the answer: a loaded machine, later
    while len(lines := liveness_lines(stack)) <= before:
        assert time.monotonic() < deadline, "nginx logged no request for /liveness"
        time.sleep(0.05)
    return lines[before].split()[-1]


def test_a_room_code_spelled_otherwise_reaches_the_room(browser, stack):
    """A code typed in lower case, with a dash: the page opens the room under its own spelling, on its process."""
    from tests.ui.test_follow import WAIT, present

    teacher = new_page(browser, route="teacher")
    student = None
    try:
        open_app(teacher, stack.url)
        code, link = present(teacher)
        student = new_page(browser, route="student")
        student.goto(f"{stack.url}?room={code[:3].lower()}-{code[3:].lower()}")
        student.wait_for_url(re.compile(rf"[?&]room={code}(&|$)"), timeout=4 * WAIT)
        student.get_by_text("Following room").wait_for(timeout=4 * WAIT)
        assert f"{code[:3]} {code[3:]}" == student.locator(".room-code").text_content()
        teacher.mouse.click(*to_page(teacher, "query-plot", 1.5, -0.5))
        wait_for_readout(student, r"q = \(1\.500, -0\.500\)", WAIT)
        assert not student.foreign, student.foreign
    finally:
        teacher.context.close()
        if student is not None:
            student.context.close()


def test_a_follower_on_the_other_process_gets_the_presenters_edited_example(browser, stack):
    """Keys and values from the address, the causal mask switched on the page: the presenter's page stays on its
    process when it presents, and a follower on the other process gets all of it."""
    from tests.ui.test_follow import WAIT, present

    teacher = new_page(browser, route="editor")
    try:
        # every key at the origin: equal scores; with the causal mask "love" sees I and itself, 1/2 each
        open_app(teacher, f"{stack.url}?keys=0,0;0,0;0,0&values=3;6;9")
        show_tab(teacher, "Edit")
        teacher.locator(".switch-causal input").check()
        wait_for_readout(teacher, r"Output Σ aᵢvᵢ = 4\.5000", WAIT)
        home = answering_process(stack, "", route="editor")
        code, link = present(teacher)
        assert answering_process(stack, f"room={code}", route="editor") == home  # the cookie, not the code
        text = wait_for_readout(teacher, r"Output Σ aᵢvᵢ = 4\.5000", WAIT)
        assert weights(teacher) == pytest.approx([0.5, 0.5, 0.0], abs=1e-4), text
        route = next(r for r in (f"student-{i}" for i in range(64)) if answering_process(stack, "", route=r) != home)
        student = new_page(browser, route=route)
        try:
            open_app(student, link)
            student.get_by_text("Following room").wait_for(timeout=WAIT)
            wait_for_readout(student, r"Output Σ aᵢvᵢ = 4\.5000", WAIT)
            assert weights(student) == pytest.approx([0.5, 0.5, 0.0], abs=1e-4)
        finally:
            student.context.close()
    finally:
        teacher.context.close()
