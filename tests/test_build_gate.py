"""The process's gate for page builds (server/build_gate.py): builds take their share of the loop, not all of it."""

from __future__ import annotations

import asyncio
import textwrap
import time

import panel as pn
import pytest
from bokeh.application import Application
from bokeh.application.handlers.script import ScriptHandler
from bokeh.document import Document
from bokeh.server.contexts import ApplicationContext

from server.build_gate import CACHE_KEY, BuildGate
from server.patches.bokeh_create_session import install as pace_page_builds
from server.patches.panel_on_load import install as charge_page_loads

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
