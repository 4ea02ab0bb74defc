"""The one rule of every scheduler on the server's loop (services/pace.py): newest wins, paced by the last cost.

All on a clock of the test's own: no sleeps, nothing timed."""

from __future__ import annotations

import pytest

from services.pace import Pace, run_later


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_newest_owes_its_own_cost_alone():
    """A drag's pause is what its last update cost: an expensive update's debt is not carried into the next one's,
    which stands for everything before it."""
    clock = Clock()
    pace = Pace(share=0.5, least=0.0, clock=clock)
    assert pace.took(0.200, end=100.0) == pytest.approx(0.200)  # half the loop: the next waits as long again
    clock.now = 100.050
    assert pace.wait() == pytest.approx(0.150)
    # taken early (a release is never spaced), and cheap: what is owed now is its 4 ms alone, not 150 ms more
    assert pace.took(0.004, end=100.054) == pytest.approx(0.004)
    clock.now = 100.056
    assert pace.wait() == pytest.approx(0.002)
    assert pace.ready_at == pytest.approx(100.058)
    clock.now = 100.058 + 1e-9
    assert pace.wait() == 0.0


def test_a_gap_at_least_holds_after_a_cheap_take():
    clock = Clock()
    pace = Pace(share=0.5, least=0.0, clock=clock)
    # a report that took 2 ms, at most one every 0.1 s
    assert pace.took(0.002, end=100.0, at_least=0.1) == pytest.approx(0.1)
    clock.now = 100.03
    assert pace.wait() == pytest.approx(0.07)
    # and a take that cost more than the gap waits its cost
    assert pace.took(0.3, end=100.5, at_least=0.1) == pytest.approx(0.3)
    assert pace.ready_at == pytest.approx(100.8)


@pytest.mark.parametrize(("share", "rest"), [(0.5, 0.002), (0.25, 0.006), (0.6, 0.002 * 0.4 / 0.6)])
def test_after_work_of_c_the_rest_keeps_the_work_to_its_share(share, rest):
    # c (1 - share) / share: work and rest in the ratio share : 1 - share
    assert Pace(share=share, clock=Clock()).took(0.002, end=5.0) == pytest.approx(rest)


def test_work_that_must_all_run_adds_up_and_a_burst_goes_at_once():
    """A session's clicks: none is dropped, so their costs accumulate; one within the burst waits for nothing."""
    clock = Clock()
    pace = Pace(share=0.5, burst=0.05, clock=clock)
    pace.charge(0.04)  # a person's click: within the burst
    assert pace.wait() == 0.0
    pace.charge(0.04)
    pace.charge(0.04)  # three back to back: 0.12 owed, 0.07 past the burst
    assert pace.wait() == pytest.approx(0.14)
    clock.now += 0.1  # 0.05 leaked
    assert pace.wait() == pytest.approx(0.04)
    clock.now += 0.04
    assert pace.wait() == 0.0


def test_work_charged_from_its_start_leaks_while_it_runs():
    """A page's build: the bucket empties during the build too, so a build of c leaves c (1 - SHARE) owed."""
    clock = Clock(0.0)
    pace = Pace(share=0.6, clock=clock)
    clock.now = 0.1  # a build from 0.0 to 0.1
    pace.charge(0.1, start=0.0)
    assert pace.wait() == pytest.approx(0.1 * 0.4 / 0.6)
    # a second build at once (a build that must run, begun before the wait was over): its debt adds to what the
    # first still owed
    clock.now = 0.2
    pace.charge(0.1, start=0.1)
    assert pace.wait() == pytest.approx(2 * 0.1 * 0.4 / 0.6)
    assert pace.ready_at == pytest.approx(0.2 + 2 * 0.1 * 0.4 / 0.6)


def test_absurd_charges_are_ignored():
    clock = Clock()
    pace = Pace(clock=clock)
    pace.charge(-1.0)
    pace.charge(1e9, start=clock.now)
    assert pace.level == 0.0 and pace.wait() == 0.0


def test_a_wait_below_the_least_is_none():
    clock = Clock()
    timer = Pace(share=0.5, clock=clock)  # a loop's timer: below a millisecond is no wait
    exact = Pace(share=0.5, least=0.0, clock=clock)
    for pace in (timer, exact):
        pace.took(0.0004, end=clock.now)
    assert timer.wait() == 0.0
    assert exact.wait() == pytest.approx(0.0004)


def test_run_later_waits_whole_milliseconds_or_the_next_turn():
    class Doc:  # a document without a session (a notebook's): its own callbacks
        session_context = None

        def __init__(self):
            self.timeouts, self.ticks = [], []

        def add_timeout_callback(self, callback, ms):
            self.timeouts.append((ms, callback))

        def add_next_tick_callback(self, callback):
            self.ticks.append(callback)

    doc, done = Doc(), lambda: None
    run_later(doc, done, 0.0)
    run_later(doc, done, 0.0001)  # a timer waits at least a millisecond
    run_later(doc, done, 0.0204)
    assert doc.ticks == [done] and [ms for ms, _ in doc.timeouts] == [1, 20]


def test_a_flood_takes_the_newest_and_keeps_to_the_share():
    """What a page that ignores the one-at-a-time rule gets: one update per pause, the newest, and the updates take
    at most their share of the loop however fast the positions come."""
    step = 2**-10  # a position every ~1 ms for a second (binary fractions: the sums below are exact)
    cost = 16 * step  # each update takes ~16 ms of the loop
    clock = Clock(0.0)
    pace = Pace(share=0.5, least=0.0, clock=clock)
    taken, due = [], 0.0
    for i in range(1024):
        clock.now = i * step
        if clock.now >= due:  # its turn: the newest position, i, is taken
            taken.append(i)
            clock.now += cost
            due = clock.now + pace.took(cost, end=clock.now)
    assert taken[:3] == [0, 32, 64]  # 16 ms of work, 16 ms of rest, then the position that came last
    assert len(taken) * cost <= 0.5 * 1024 * step


def test_every_scheduler_keeps_the_one_rule():
    from server.build_gate import BuildGate
    from services.pacing import SessionEvents
    from services.train_queue import TrainQueue
    from session.state import AttentionState
    from tests.test_train_tab import open_tab
    from tests.test_widgets import drag_channel

    assert issubclass(SessionEvents, Pace) and issubclass(BuildGate, Pace)
    assert isinstance(TrainQueue(later=lambda *a: None)._pace, Pace)
    assert isinstance(drag_channel(AttentionState())._pace, Pace)
    assert isinstance(open_tab()[2]._pace, Pace)


def test_run_later_while_the_page_is_built_runs_once_the_loop_turns(caplog):
    """While Bokeh builds a page its session context has no session yet, and ``with_locked_document`` awaits the work
    itself: scheduled then, the work runs, with the page's document current, and nothing is logged."""
    import asyncio
    import weakref

    from bokeh.document import Document
    from bokeh.io import curdoc
    from bokeh.server.contexts import BokehSessionContext

    doc, ran = Document(), []
    context = BokehSessionContext("building", None, doc)
    doc._session_context = weakref.ref(context)

    async def scenario():
        run_later(doc, lambda: ran.append(curdoc() is doc), 0)
        done = asyncio.Event()
        asyncio.get_running_loop().call_later(0.01, done.set)  # the loop's own timer after the work's turn
        await done.wait()

    asyncio.run(scenario())
    assert ran == [True] and not caplog.records
