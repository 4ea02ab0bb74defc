"""The process's gate for page builds (server/build_gate.py): builds take their share of the loop, not all of it."""

from __future__ import annotations

import asyncio
import textwrap
import time
from types import SimpleNamespace

import panel as pn
import pytest
from bokeh.application import Application
from bokeh.application.handlers.script import ScriptHandler
from bokeh.document import Document
from bokeh.server.contexts import ApplicationContext

from server.build_gate import CACHE_KEY, BuildGate, PageLeft, TooManyWaiting, watch_gone
from server.patches.bokeh_create_session import install as pace_page_builds
from server.patches.panel_on_load import install as charge_page_loads
from testing.server import free_port, run_beside

#: A page whose build holds the loop for 40 ms, as the app's does for 90–150 ms, and writes when it ran.
SLOW_PAGE = """
import time
from bokeh.io import curdoc
start = time.perf_counter()
while time.perf_counter() - start < 0.04:
    pass
curdoc().title = f"{start} {time.perf_counter()}"
"""


def recorded_sleep(sleeps: list):
    """``asyncio.sleep`` that notes each wait it is asked for in ``sleeps`` (``.sleeps`` on it): the gate's pauses,
    counted rather than timed."""

    async def sleep(seconds):
        sleeps.append(seconds)
        await asyncio.sleep(seconds)

    sleep.sleeps = sleeps
    return sleep


@pytest.fixture
def paced(monkeypatch, tmp_path):
    """An application context whose page is SLOW_PAGE, its builds paced by a fresh gate."""
    monkeypatch.setattr(ApplicationContext, "_create_session", ApplicationContext._create_session)  # undone after
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, BuildGate(sleep=recorded_sleep([])))
    script = tmp_path / "page.py"
    script.write_text(textwrap.dedent(SLOW_PAGE))
    pace_page_builds()
    pace_page_builds()  # twice: one gate, not two
    return ApplicationContext(Application(ScriptHandler(filename=str(script))))


def test_builds_asked_at_once_leave_the_loop_its_share_between_them(paced):
    async def scenario():
        ticks = []  # when a page already open got the loop (a key, a drag's update)
        stop = False
        gate = pn.state.cache[CACHE_KEY]

        async def open_page():  # a page in use: a person's messages, one after another
            while not stop:
                with gate.page_message(in_use=True):
                    ticks.append(asyncio.get_running_loop().time())
                await asyncio.sleep(0)

        ticker = asyncio.create_task(open_page())
        sessions = await asyncio.gather(*(paced.create_session_if_needed(f"page-{i}") for i in range(4)))
        stop = True
        await ticker
        return [tuple(map(float, s.document.title.split())) for s in sessions], ticks

    builds, ticks = asyncio.run(scenario())
    builds.sort()
    share = BuildGate.SHARE
    for (start, end), (next_start, _) in zip(builds, builds[1:], strict=False):
        took = end - start
        # the next build waits until builds have had at most their share of the loop since this one began
        assert next_start - end >= 0.95 * took * (1 - share) / share
        # and meanwhile the loop served the page already open
        assert any(end < t < next_start for t in ticks)
    assert get_gate_counts() == (4, 0)


def test_with_no_page_in_use_builds_asked_at_once_run_while_the_loop_is_idle(paced, monkeypatch):
    """A class opening the page together: nobody uses a page yet, so the share's gaps would only leave the loop
    idle (60 learners connected in 14-15 s instead of 9-11)."""
    gate = pn.state.cache[CACHE_KEY]

    async def idle():
        return True  # the loop had nothing else to run (what BuildGate._loop_idle measures)

    monkeypatch.setattr(gate, "_idle", idle)

    async def scenario():
        sessions = await asyncio.gather(*(paced.create_session_if_needed(f"page-{i}") for i in range(4)))
        return sorted(tuple(map(float, s.document.title.split())) for s in sessions)

    builds = asyncio.run(scenario())
    assert len(builds) == 4 and gate.builds == 4
    # each build starts as soon as the one before has ended: the gate never paused (a gap would have been at
    # least 40 ms (1 - SHARE) / SHARE = 27 ms, counted here, not timed, so a loaded machine cannot blur it)
    assert gate._sleep.sleeps == []
    assert all(end <= next_start for (_, end), (next_start, _) in zip(builds, builds[1:], strict=False))


def test_a_build_keeps_its_share_while_a_page_is_in_use_or_a_message_is_handled():
    t = [0.0]

    async def idle():
        return True

    gate = BuildGate(clock=lambda: t[0], idle=idle)
    assert asyncio.run(gate._nobody_waits())
    with gate.page_message(in_use=False):  # a page loading: its script's messages
        assert not asyncio.run(gate._nobody_waits())  # not while one is handled
    assert asyncio.run(gate._nobody_waits())
    with gate.page_message(in_use=True):  # a person's key
        pass
    t[0] += 1.5  # a learner reading before the next key still uses the page (at 1 s, such keys waited 0.9 s)
    assert not asyncio.run(gate._nobody_waits())
    t[0] += BuildGate.QUIET * 0.9 - 1.5
    assert not asyncio.run(gate._nobody_waits())
    t[0] += BuildGate.QUIET * 0.2
    assert asyncio.run(gate._nobody_waits())


def test_the_loop_is_idle_unless_a_turn_runs_something_else():
    gate = BuildGate()

    async def scenario():
        def busy():
            start = time.perf_counter()
            while time.perf_counter() - start < 0.005:
                pass

        asyncio.get_running_loop().call_soon(busy)  # another page's callback, ready in the same turn
        return await gate._loop_idle()

    # (an empty turn is idle on a quiet machine; under load the machine may preempt even that: the share holds)
    assert asyncio.run(scenario()) is False


def get_gate_counts():
    gate = pn.state.cache[CACHE_KEY]
    return gate.builds, gate.queued


def test_a_lone_build_starts_at_once_and_one_session_is_built_once(paced):
    async def scenario():
        first = await paced.create_session_if_needed("page-a")
        again = await paced.create_session_if_needed("page-a")  # its websocket, after the GET: no second build
        return first, again

    first, again = asyncio.run(scenario())
    gate = pn.state.cache[CACHE_KEY]
    assert first is again and gate.builds == 1 and gate._sleep.sleeps == []  # it never paused


def test_a_build_that_fails_passes_the_gate_on():
    gate = BuildGate()

    async def scenario():
        async def build(fail):
            async with gate.turn():
                if fail:
                    raise RuntimeError("the page's code raised")
                return "built"

        return await asyncio.gather(build(True), build(False), return_exceptions=True)

    failed, built = asyncio.run(scenario())
    assert isinstance(failed, RuntimeError) and built == "built" and gate.queued == 0


def test_a_build_given_up_while_it_waits_leaves_the_order_intact():
    gate = BuildGate()
    order = []

    async def scenario():
        async def build(name, seconds):
            async with gate.turn():
                order.append(name)
                gate.level += seconds  # as if it had taken that long: the next must wait

        first = asyncio.create_task(build("first", 0.03))
        dropped = asyncio.create_task(build("dropped", 0.0))
        last = asyncio.create_task(build("last", 0.0))
        await asyncio.sleep(0)
        dropped.cancel()
        await asyncio.gather(first, last, dropped, return_exceptions=True)

    asyncio.run(scenario())
    assert order == ["first", "last"] and gate.queued == 0 and not gate._busy


def test_absurd_charges_are_ignored():
    t = [0.0]
    gate = BuildGate(clock=lambda: t[0])
    gate.charge(-1.0, start=0.0)
    gate.charge(1e9, start=0.0)
    assert gate.wait() == 0.0


def test_a_loaded_pages_onload_work_is_charged_to_the_gate(monkeypatch):
    """A joining page's room work runs once its page has loaded; the next build waits for it as for a build."""
    monkeypatch.setattr(type(pn.state), "_on_load", type(pn.state)._on_load)  # undone after
    t = [0.0]
    gate = BuildGate(clock=lambda: t[0])
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, gate)
    charge_page_loads()
    charge_page_loads()  # twice: charged once

    def busy():  # 50 ms of the loop on the gate's clock, however long it takes the machine
        t[0] += 0.05

    doc = Document()
    pn.state._onload.setdefault(doc, []).append((busy, False))  # what pn.state.onload(busy) does in a served page
    pn.state._on_load(doc)
    # 50 ms charged: the next build waits 50 ms (1 - SHARE) / SHARE (33 ms at 0.6), as after a build of 50 ms
    assert gate.wait() == pytest.approx(0.05 * (1 - BuildGate.SHARE) / BuildGate.SHARE)
    t[0] += 0.02  # and the bucket leaks meanwhile
    assert gate.wait() == pytest.approx(0.05 * (1 - BuildGate.SHARE) / BuildGate.SHARE - 0.02)


# --- whose build comes next: one client at a time, and none for a request that has gone ----------------------------

class Stream:
    """A request's connection's stream as Tornado's: ``closed()`` once the client's end has gone."""

    def __init__(self):
        self.gone = False

    def closed(self) -> bool:
        return self.gone


def page_request(address: str, websocket: bool = False) -> SimpleNamespace:
    """A page's HTTP request from ``address`` as the gate reads it (Tornado's ``remote_ip`` and ``connection.stream``;
    a websocket's connection has handed its stream over: None)."""
    return SimpleNamespace(remote_ip=address, connection=SimpleNamespace(stream=None if websocket else Stream()))


def held_gate(requests: dict, scenario, waits: dict | None = None):
    """Run ``scenario(gate, ask, built, release)`` on a gate whose clock stands still (no pacing: the order alone
    counts) while a first build holds it: ``ask(name)`` asks for the build of ``requests[name]`` (a task),
    ``built`` lists the names built, in order (as each starts), ``release()`` ends the first build. The build of each
    name in ``waits`` lasts until its event is set."""
    gate = BuildGate(clock=lambda: 0.0)
    built = []
    waits = waits or {}

    async def main():
        holding = asyncio.Event()
        release = asyncio.Event()

        async def build(name):
            async with gate.turn(requests.get(name)):
                built.append(name)
                if name == "first":
                    holding.set()
                    await release.wait()
                elif name in waits:
                    await waits[name].wait()

        first = asyncio.create_task(build("first"))
        await asyncio.wait([first, asyncio.create_task(holding.wait())], return_when=asyncio.FIRST_COMPLETED)
        if first.done():
            first.result()  # it failed before holding the gate
        tasks = {}

        def ask(name):
            tasks[name] = asyncio.create_task(build(name))
            return tasks[name]

        await scenario(gate, ask, built, release.set)
        await asyncio.gather(first, *tasks.values(), return_exceptions=True)
        return {name: task.exception() for name, task in tasks.items()}

    return gate, built, asyncio.run(main())


async def settle():
    """Let every task asked for so far reach its place in the gate's line (a few turns of the loop)."""
    for _ in range(5):
        await asyncio.sleep(0)


def test_builds_waiting_are_taken_one_client_at_a_time_in_turn():
    """One client's many pages wait in a line of their own: another client's page comes after at most one of them
    (round robin over clients, in the order each client first waited; within a client, the order it asked)."""
    requests = {"first": page_request("10.0.0.1")}
    requests |= {f"a{i}": page_request("10.0.0.1") for i in range(1, 6)}
    requests |= {"b1": page_request("10.0.0.2"), "c1": page_request("10.0.0.3"), "c2": page_request("10.0.0.3")}

    async def scenario(gate, ask, built, release):
        for name in ["a1", "a2", "a3", "b1", "a4", "c1", "a5", "c2"]:
            ask(name)
            await settle()
        assert gate.queued == 8 and gate.waiting_from(requests["a1"]) == 5
        release()

    gate, built, errors = held_gate(requests, scenario)
    assert built == ["first", "a1", "b1", "c1", "a2", "c2", "a3", "a4", "a5"]
    assert not any(errors.values()) and gate.queued == 0 and gate.builds == 9 and not gate._busy


def test_a_client_that_asks_while_another_clients_build_runs_comes_before_that_clients_next():
    """The client just served goes to the back of the turns when the next build is taken, not when its own is: a
    learner asking during a script's build waits for that build only, not for the script's next one too."""
    requests = {"first": page_request("10.0.0.9"), "a1": page_request("10.0.0.1"), "a2": page_request("10.0.0.1"),
                "b1": page_request("10.0.0.2")}
    a1_ends = asyncio.Event()

    async def scenario(gate, ask, built, release):
        ask("a1")
        ask("a2")
        await settle()
        release()
        while "a1" not in built:
            await asyncio.sleep(0)
        ask("b1")  # a1's build has started (it is in `built`): b1 asks during it
        await settle()
        a1_ends.set()

    gate, built, errors = held_gate(requests, scenario, waits={"a1": a1_ends})
    assert built == ["first", "a1", "b1", "a2"] and not any(errors.values())


def test_a_build_whose_request_has_gone_is_not_built():
    """A page request whose connection closed while its build waited is not built: it leaves its line when Tornado
    says so (``left``), or at its turn at the latest (Tornado had not said so yet), or once the loop has had its
    share before it (it was next). A websocket's request (no stream) is built as before."""
    requests = {"first": page_request("10.0.0.1"), "ws": page_request("10.0.0.1", websocket=True)}
    requests |= {name: page_request("10.0.0.1") for name in ["told", "unnoticed", "kept"]}
    requests["other"] = page_request("10.0.0.2")

    async def scenario(gate, ask, built, release):
        told = ask("told")
        for name in ["unnoticed", "kept", "ws", "other"]:
            ask(name)
        await settle()
        assert gate.queued == 5
        requests["told"].connection.stream.gone = True
        assert gate.left(requests["told"]) and not gate.left(requests["told"])  # once
        await settle()
        assert told.done() and gate.queued == 4  # it left at once, not at its turn
        requests["unnoticed"].connection.stream.gone = True  # closed; Tornado has not called back yet
        release()

    gate, built, errors = held_gate(requests, scenario)
    assert built == ["first", "other", "kept", "ws"]
    assert isinstance(errors["told"], PageLeft) and isinstance(errors["unnoticed"], PageLeft)
    assert errors["kept"] is errors["ws"] is errors["other"] is None
    assert gate.skipped == 2 and gate.builds == 4 and gate.queued == 0 and not gate._busy


def test_a_build_whose_request_goes_while_the_loop_has_its_share_is_not_built():
    t = [0.0]
    gate = BuildGate(clock=lambda: t[0])
    request, after = page_request("10.0.0.1"), page_request("10.0.0.2")

    async def sleep(seconds):  # the loop's share before the next build; meanwhile the page's asker leaves
        request.connection.stream.gone = True
        t[0] += seconds

    gate._sleep = sleep
    gate._idle = lambda: asyncio.sleep(0, result=False)  # a page is in use: builds keep their share
    built = []

    async def scenario():
        async def build(req):
            async with gate.turn(req):
                built.append(req)

        gate.level = 0.1  # as after a build: the next waits its share
        return await asyncio.gather(build(request), build(after), return_exceptions=True)

    left, kept = asyncio.run(scenario())
    assert isinstance(left, PageLeft) and kept is None and built == [after] and gate.skipped == 1 and not gate._busy


def test_a_client_with_too_many_builds_waiting_is_answered_429_and_logged_with_a_back_off(caplog, monkeypatch):
    """Past MAX_WAITING_PER_CLIENT waiting, a client's next page is refused with 429 and a line naming it (backed
    off per client by server/logs.py); another client's is not, a waiting request that has gone frees its place, and
    a websocket's build counts against the same cap (its handshake is refused before it upgrades: server/guard.py)."""
    import logging

    from server.logs import CLIENT_LOGGERS, PerClientLines

    assert "server.build_gate" in CLIENT_LOGGERS  # the server backs its lines off per client, as this fresh one does
    monkeypatch.setattr(logging.getLogger("server.build_gate"), "filters", [PerClientLines()])
    most = BuildGate.MAX_WAITING_PER_CLIENT
    requests = {"first": page_request("10.0.0.1")}
    requests |= {f"a{i}": page_request("10.0.0.1") for i in range(most + 12)}
    requests["b"] = page_request("10.0.0.2")
    requests["ws"] = page_request("10.0.0.1", websocket=True)

    async def scenario(gate, ask, built, release):
        for i in range(most):
            ask(f"a{i}")
        await settle()
        assert gate.waiting_from(requests["a0"]) == most
        for i in range(most, most + 10):
            ask(f"a{i}")
        ask("b")
        await settle()
        requests["a0"].connection.stream.gone = True  # one of those waiting goes: its place is free again
        ask(f"a{most + 10}")
        ask(f"a{most + 11}")
        await settle()
        ask("ws")  # a websocket's build (a session the process does not have): the line is full again, refused
        await settle()
        release()

    with caplog.at_level("WARNING", logger="server.build_gate"):
        gate, built, errors = held_gate(requests, scenario)
    refused = [name for name, e in errors.items() if isinstance(e, TooManyWaiting)]
    assert refused == [f"a{i}" for i in range(most, most + 10)] + [f"a{most + 11}", "ws"]
    assert {e.status_code for name, e in errors.items() if name in refused} == {429}
    assert isinstance(errors["a0"], PageLeft) and errors["b"] is errors[f"a{most + 10}"] is None
    assert built.index("b") == 2 and gate.refused == 12 and built[-1] == f"a{most + 10}"
    assert len(built) == most + 2  # first, a1…a(most-1), b, a(most+10)
    lines = [r.getMessage() for r in caplog.records if r.name == "server.build_gate"]
    # the first five lines of a client in full, then the 8th (server/logs.py's back-off), each naming the client
    assert len(lines) == 6 and all("10.0.0.1" in line for line in lines), lines


def test_a_websockets_build_is_not_built_once_its_handler_says_the_socket_has_gone():
    """A websocket's request has no stream of its own (it is the socket's): its handler tells the gate when the socket
    has gone (watch_gone), and its build is skipped at its turn as a page request's is; one nothing watches, or whose
    socket stays, is built."""
    requests = {"first": page_request("10.0.0.1")}
    requests |= {name: page_request("10.0.0.1", websocket=True) for name in ["gone", "open", "unwatched"]}
    sockets = {"gone": False, "open": False}
    for name in sockets:
        watch_gone(requests[name], lambda name=name: sockets[name])

    async def scenario(gate, ask, built, release):
        for name in ["gone", "open", "unwatched"]:
            ask(name)
        await settle()
        assert gate.queued == 3
        sockets["gone"] = True  # its socket closed; nobody told the gate
        release()

    gate, built, errors = held_gate(requests, scenario)
    assert built == ["first", "open", "unwatched"] and isinstance(errors["gone"], PageLeft)
    assert errors["open"] is errors["unwatched"] is None and gate.skipped == 1 and gate.builds == 3


# --- a real server: page requests that leave, and one client's too many -------------------------------------------

@pytest.fixture
def app_server(monkeypatch):
    """Bokeh's server in this process serving the app with its patches, and a fresh build gate; yields (port, the
    server, the gate). Pages are asked for by HTTP, as a browser asks for its page."""
    from panel.io.server import get_server

    from app import create_app
    from server import patches

    patches.install()
    gate = BuildGate()
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, gate)
    port = free_port()
    server = get_server({"app": create_app}, port=port, address="127.0.0.1", start=False, show=False)
    server.start()
    try:
        yield port, server, gate
    finally:
        server.stop()
        pn.state.kill_all_servers()


async def _hold(gate: BuildGate):
    """A build in progress (as a page's, held here): the gate's next builds wait behind it until the event returned
    is set; and its task."""
    holding, release = asyncio.Event(), asyncio.Event()

    async def long_build():
        async with gate.turn():
            holding.set()
            await release.wait()

    held = asyncio.create_task(long_build())
    await holding.wait()
    return release, held


async def _ask_page(port: int, source: str):
    """Send a page's GET from the loopback address ``source``; the connection's (reader, writer)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    writer.write(f"GET /app HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


async def _answer_once_released(release: asyncio.Event, held: asyncio.Task, reader, writer) -> bytes:
    """End the held build (:func:`_hold`), then read a page request's whole answer."""
    release.set()
    await held
    answer = await asyncio.wait_for(reader.read(), 120)
    writer.close()
    return answer


async def _until(condition, seconds: float = 60.0) -> bool:
    """Wait for the server's own signal ``condition()`` (looked at every 20 ms, at most ``seconds``)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.mark.server
def test_page_requests_closed_while_they_wait_are_not_built_and_another_learner_gets_a_page(app_server, caplog,
                                                                                           monkeypatch):
    """20 page requests from one address wait behind a build, then close (a script's, or a class's reloads): none is
    built, and a learner on another address gets a page at once. Before, every one was built, one after another
    (150 closed after 2 s kept a new learner's page waiting 64.9 s)."""
    import logging

    from server.logs import PerClientLines

    port, server, gate = app_server
    dead = 20
    monkeypatch.setattr(logging.getLogger("tornado.access"), "filters", [PerClientLines()])  # this test's lines alone

    async def scenario():
        release, held = await _hold(gate)
        asked = [await _ask_page(port, "127.0.0.1") for _ in range(dead)]
        queued = await _until(lambda: gate.queued == dead)
        for _, writer in asked:
            writer.close()
        left = await _until(lambda: gate.queued == 0, 30.0)  # each leaves its line as its close is noticed
        reader, writer = await _ask_page(port, "127.0.0.2")
        await _until(lambda: gate.queued == 1)
        return {"queued": queued, "left": left, "answer": await _answer_once_released(release, held, reader, writer)}

    with caplog.at_level("INFO"):
        r = run_beside(server, scenario)
    assert r["queued"] and r["left"]
    head, _, body = r["answer"].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b'"roots":' in body and b'"token":' in body
    assert gate.builds == 2 and gate.skipped == dead  # the held one and the learner's; none of the twenty
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelname == "ERROR"]
    closed = [m for m in (rec.getMessage() for rec in caplog.records if rec.name == "tornado.access") if "499 GET" in m]
    assert 0 < len(closed) < dead  # logged as a client that closed first, backed off per client


@pytest.mark.server
def test_a_client_past_its_waiting_builds_is_answered_429_at_once_and_others_are_not(app_server, caplog, monkeypatch):
    """One address with MAX_WAITING_PER_CLIENT page requests waiting gets 429 for its next at once, with a short
    message; a learner on another address still gets a page. Before, every request waited, without limit."""
    import logging

    from server.logs import PerClientLines

    port, server, gate = app_server
    most = BuildGate.MAX_WAITING_PER_CLIENT
    monkeypatch.setattr(logging.getLogger("server.build_gate"), "filters", [PerClientLines()])  # this test's alone

    async def scenario():
        release, held = await _hold(gate)
        asked = [await _ask_page(port, "127.0.0.1") for _ in range(most)]
        queued = await _until(lambda: gate.queued == most)
        reader, writer = await _ask_page(port, "127.0.0.1")
        try:  # while the gate is still held: answered at once
            refused = await asyncio.wait_for(reader.read(), 60)
        except TimeoutError:
            refused = b"no answer while the gate was held"
        writer.close()
        learner, its_writer = await _ask_page(port, "127.0.0.2")
        await _until(lambda: gate.queued == most + 1)
        for _, w in asked:  # the script's requests go (else each would be built, after the learner's page)
            w.close()
        await _until(lambda: gate.queued == 1, 30.0)
        answer = await _answer_once_released(release, held, learner, its_writer)
        return {"queued": queued, "refused": refused, "answer": answer}

    with caplog.at_level("INFO"):
        r = run_beside(server, scenario)
    assert r["queued"]
    head, _, body = r["refused"].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429 ") and b"Too many pages asked for from this address" in body
    assert len(body) < 300
    assert r["answer"].startswith(b"HTTP/1.1 200 ") and b'"roots":' in r["answer"]
    assert gate.refused == 1 and gate.builds == 2 and gate.skipped == most
    refusals = [rec.getMessage() for rec in caplog.records if rec.name == "server.build_gate"]
    assert len(refusals) == 1 and "127.0.0.1" in refusals[0], refusals
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelname == "ERROR"]


# --- a real server: websockets for sessions the process does not have -----------------------------------------------

async def _open_socket(port: int, source: str, session_id: str | None = None):
    """A websocket to the app's page from the loopback address ``source``, for ``session_id`` (a made-up one if None:
    a session this process does not have, as for a page another process served); the socket, or the HTTP status
    its handshake was answered with."""
    from bokeh.util.token import generate_jwt_token, generate_session_id
    from tornado.httpclient import HTTPClientError, HTTPRequest
    from tornado.websocket import websocket_connect

    token = generate_jwt_token(session_id or generate_session_id())
    try:
        return await websocket_connect(HTTPRequest(f"ws://127.0.0.1:{port}/app/ws", network_interface=source),
                                       subprotocols=["bokeh", token])
    except HTTPClientError as e:
        return e.code


def _page_session(answer: bytes) -> str:
    """The session id of the page in a page request's answer (its token, in the page's script)."""
    import re

    from bokeh.util.token import get_session_id

    return get_session_id(re.search(rb'"token": ?"([^"]+)"', answer)[1].decode())


@pytest.mark.server
def test_websockets_for_sessions_never_made_wait_in_line_and_are_not_built_once_closed(app_server, caplog):
    """20 websockets from one address name sessions the process does not have, and close while their builds wait: none
    is built, and nothing is logged for them; one from another address that stays open (a page another process
    served, as with EXPLORER_NUM_PROCS > 1) is built and connected. Before, each such socket's page was built even
    after it had closed: 150 closed within 0.25 s made 150 builds over 85 s."""
    port, server, gate = app_server
    ghosts = 20

    async def scenario():
        release, held = await _hold(gate)
        sockets = [await _open_socket(port, "127.0.0.1") for _ in range(ghosts)]
        elsewhere = await _open_socket(port, "127.0.0.3")
        queued = await _until(lambda: gate.queued == ghosts + 1)
        for sock in sockets:
            sock.close()
        left = await _until(lambda: gate.queued == 1, 30.0)  # each leaves its line as its close is noticed
        release.set()
        await held
        ack = await asyncio.wait_for(elsewhere.read_message(), 120)  # Bokeh's first message once its session is made
        elsewhere.close()
        return {"queued": queued, "left": left, "ack": ack}

    with caplog.at_level("INFO"):
        r = run_beside(server, scenario)
    assert r["queued"] and r["left"]
    assert r["ack"] is not None and '"msgtype":"ACK"' in r["ack"].replace(" ", "")
    assert gate.builds == 2 and gate.skipped == ghosts  # the held one and the other process's page's
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelname == "ERROR"]


@pytest.mark.server
def test_a_client_past_its_waiting_builds_has_its_next_websocket_refused_429_before_it_opens(app_server, caplog,
                                                                                            monkeypatch):
    """One address with MAX_WAITING_PER_CLIENT websockets waiting for builds (sessions the process does not have) gets
    429 for its next such handshake, before the upgrade, with one line in the log; its own page's websocket (a session
    the process has) still opens. Before, websockets' builds waited without limit."""
    import logging

    from server.logs import PerClientLines

    port, server, gate = app_server
    most = BuildGate.MAX_WAITING_PER_CLIENT
    monkeypatch.setattr(logging.getLogger("server.build_gate"), "filters", [PerClientLines()])  # this test's alone

    async def scenario():
        reader, writer = await _ask_page(port, "127.0.0.1")
        page = await asyncio.wait_for(reader.read(), 120)
        writer.close()
        release, held = await _hold(gate)
        sockets = [await _open_socket(port, "127.0.0.1") for _ in range(most)]
        queued = await _until(lambda: gate.queued == most)
        refused = await _open_socket(port, "127.0.0.1")
        own = await _open_socket(port, "127.0.0.1", _page_session(page))
        own_ack = await asyncio.wait_for(own.read_message(), 60) if not isinstance(own, int) else own
        for sock in [*sockets, own]:
            if not isinstance(sock, int):
                sock.close()
        await _until(lambda: gate.queued == 0, 30.0)
        release.set()
        await held
        return {"queued": queued, "refused": refused, "own": own_ack}

    with caplog.at_level("INFO"):
        r = run_beside(server, scenario)
    assert r["queued"] and r["refused"] == 429
    assert isinstance(r["own"], str) and '"msgtype":"ACK"' in r["own"].replace(" ", "")
    assert gate.refused == 1 and gate.skipped == most and gate.builds == 2  # the page's and the held one
    refusals = [rec.getMessage() for rec in caplog.records if rec.name == "server.build_gate"]
    assert len(refusals) == 1 and "127.0.0.1" in refusals[0], refusals
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelname == "ERROR"]


@pytest.mark.server
def test_a_websocket_that_closes_while_its_session_is_built_lets_the_session_go(app_server, caplog):
    """Sockets for sessions the process does not have, closed at once while the gate is free: the first is built (its
    build had started) and the socket closes during it. Bokeh let go of a socket's session when the socket closed,
    and this one had no session yet: the session kept the socket as its connection once built, and was never
    discarded (each such socket kept a page in memory for the server's life). Every session now has no connection
    left once its socket's opening is done."""
    port, server, gate = app_server

    def opened() -> int:  # Bokeh's line once a socket's session is made and its connection set
        return sum(rec.getMessage() == "ServerConnection created" for rec in caplog.records)

    async def scenario():
        sockets = [await _open_socket(port, "127.0.0.1") for _ in range(3)]
        for sock in sockets:
            sock.close()
        done = await _until(lambda: gate.builds and opened() == gate.builds and not gate.queued and not gate._busy)
        return {"done": done, "connections": [s.connection_count for s in server.get_sessions("/app")]}

    with caplog.at_level("INFO"):
        r = run_beside(server, scenario)
    assert r["done"] and len(r["connections"]) == gate.builds >= 1
    assert r["connections"] == [0] * gate.builds  # each discarded once its lifetime without a page has passed
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelname == "ERROR"]
