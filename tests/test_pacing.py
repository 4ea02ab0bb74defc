"""The process's budget for mid-drag updates (services/pacing.py) and the drag channel's use of it."""

from __future__ import annotations

import gc
import math
import time

import pytest

from services.pacing import DragBudget, get_budget
from session.state import AttentionState
from tests.test_widgets import MOVE, PRESS, RELEASE, drag_channel


class Page:
    """Anything a budget can hold weakly."""


def test_the_gap_keeps_every_drag_together_within_the_share():
    budget = DragBudget(cost=0.004)
    pages = [Page() for _ in range(30)]
    for page in pages:
        budget.start(page)
    # 30 pages, 4 ms an update, a quarter of the loop: each may update every 30 * 4 ms / 0.25 = 480 ms
    assert budget.gap() == pytest.approx(0.480)
    for page in pages[:20]:
        budget.end(page)
    assert budget.dragging == 10 and budget.gap() == pytest.approx(0.160)


def test_the_cost_follows_what_updates_take():
    budget = DragBudget(cost=0.005)
    for _ in range(200):
        budget.record(0.002)
    assert budget.cost == pytest.approx(0.002, rel=1e-3)
    budget.record(-1.0)  # a clock that stepped back, or an absurd value, is ignored
    budget.record(1e9)
    assert budget.cost == pytest.approx(0.002, rel=1e-3)


def test_a_page_that_closes_mid_drag_drops_out():
    budget = DragBudget()
    page = Page()
    budget.start(page)
    assert budget.dragging == 1
    del page
    gc.collect()
    assert budget.dragging == 0


def cost_held(budget, monkeypatch, cost=0.005):
    """Hold ``budget``'s cost of an update at ``cost``: what the updates here take on this machine (more under load)
    would otherwise move the gap the test checks."""
    monkeypatch.setattr(budget, "cost", cost)
    monkeypatch.setattr(budget, "record", lambda seconds: None)


def test_a_drag_is_counted_from_the_press_to_the_release_and_spaced_by_the_budget(monkeypatch):
    state = AttentionState()
    channel = drag_channel(state)
    budget = get_budget()
    assert channel._budget is budget and channel not in budget
    others = [Page() for _ in range(59)]  # the rest of a class of sixty, dragging too
    for page in others:
        budget.start(page)
    cost_held(budget, monkeypatch)
    try:
        channel.receive(0.0, 1.0, seq=1, **PRESS)
        assert channel in budget and budget.dragging == 60
        before = time.perf_counter()
        channel.receive(0.5, 1.5, seq=2, **MOVE)
        after = time.perf_counter()
        assert state.query == (0.5, 1.5)
        # sixty pages at 5 ms an update within a quarter of the loop: this page's next update waits 1.2 s
        assert budget.gap() == pytest.approx(60 * 0.005 / DragBudget.SHARE) == pytest.approx(1.2)
        # counted from the move's arrival, however long the move took on a loaded machine
        assert before <= channel._next_flush - budget.gap() <= after
        channel.receive(1.0, 1.0, seq=3, **RELEASE)
        assert channel not in budget and state.query == (1.0, 1.0)  # the release is taken at once
    finally:
        for page in others:
            budget.end(page)


def test_a_projections_drag_is_paced_by_the_same_budget_as_the_querys_once_it_sends_positions(monkeypatch):
    """The page sends a Projections drag's press and release only, so a press alone takes no share of the loop
    from the others; a page that sends positions between them is paced as a dragging q: the same share, the same
    spacing."""
    from widgets.projections import ProjectionsView

    view = ProjectionsView(state=AttentionState())
    channel = view.channel
    budget = get_budget()
    assert channel._budget is budget and channel not in budget
    others = [Page() for _ in range(59)]
    for page in others:
        budget.start(page)
    cost_held(budget, monkeypatch)
    try:
        channel.receive(0.0, 1.0, plane="x", seq=1, start=True)  # on x_love
        assert channel not in budget and budget.dragging == 59
        before = time.perf_counter()
        channel.receive(0.5, 0.25, plane="x", seq=2)
        after = time.perf_counter()
        assert channel in budget and budget.dragging == 60
        assert channel.confirmed.data["seq"] == [2]
        assert budget.gap() == pytest.approx(1.2)
        assert before <= channel._next_flush - budget.gap() <= after
        channel.receive(0.5, 0.25, plane="x", seq=3, end=True)
        assert channel not in budget and list(view.state.embeddings[1]) == [0.5, 0.25]
        # a press on nothing is not a drag; a release in the other plane still ends one
        channel.receive(-0.9, -0.9, plane="x", seq=4, start=True)
        channel.receive(-0.8, -0.8, plane="x", seq=5)
        assert channel not in budget
        channel.receive(1.0, 0.0, plane="x", seq=6, start=True)
        channel.receive(0.9, 0.1, plane="x", seq=7)
        assert channel in budget
        channel.receive(0.0, 0.0, plane="w", seq=8, end=True)
        assert channel not in budget
        # press after press, never let go: counted from the second, as a page sending positions is
        channel.receive(1.0, 0.0, plane="x", seq=9, start=True)
        assert channel not in budget
        channel.receive(1.0, 0.0, plane="x", seq=10, start=True)
        assert channel in budget
    finally:
        for page in others:
            budget.end(page)


def test_the_spacing_does_not_carry_its_own_wait_or_an_old_drag_into_the_next_update():
    """The pause after an update is what the update cost (its time in the loop past when it was due), never
    the pacing's own wait before it or the time since an earlier drag: those grew the pause at every position,
    to seconds."""
    state = AttentionState()
    channel = drag_channel(state)
    channel._requested = time.perf_counter() - 5.0  # a position scheduled 5 s ago, in an earlier drag
    channel.receive(0.0, 1.0, seq=1, **PRESS)
    before = time.perf_counter()
    channel.receive(0.5, 1.5, seq=2, **RELEASE)
    after = time.perf_counter()
    # the pause is at most what the release's update took (however long a loaded machine made it), not 5 s more
    assert channel._next_flush <= after + max(channel.MIN_GAP, after - before)


def test_a_drag_that_sends_no_position_for_a_while_takes_no_share():
    now = [0.0]
    budget = DragBudget(cost=0.005, clock=lambda: now[0])
    held, moving = Page(), Page()
    budget.start(held)
    budget.start(moving)
    assert budget.dragging == 2
    now[0] = DragBudget.IDLE_AFTER + 1.0
    budget.moved(moving)
    assert budget.dragging == 1 and held in budget  # still in its drag, paced as one when it moves again
    assert budget.gap() == pytest.approx(0.005 / DragBudget.SHARE)
    budget.moved(held)
    assert budget.dragging == 2


def test_a_row_answered_with_nothing_does_not_keep_a_page_counted():
    # pressed twice on x_love, then every 4 s a row that takes no update (a position in the other plane, one
    # that is not a number): forty such pages held another page's mid-drag answers at 445-451 ms
    from widgets.projections import ProjectionsView

    channel = ProjectionsView(state=AttentionState()).channel
    budget = get_budget()
    now, clock = [1000.0], budget._clock
    budget._clock = lambda: now[0]
    before = budget.dragging
    try:
        channel.receive(0.0, 1.0, plane="x", seq=1, start=True)
        channel.receive(0.0, 1.0, plane="x", seq=2, start=True)
        assert channel in budget and budget.dragging == before + 1
        for seq in range(3, 7):
            now[0] += DragBudget.IDLE_AFTER - 1.0
            channel._on_channel("data", None, dict(x=[0.5], y=[0.5], seq=[seq], start=[False], end=[False],
                                                   plane=["w"]))
            channel._on_channel("data", None, dict(x=[math.nan], y=[0.5], seq=[seq], start=[False], end=[False],
                                                   plane=["x"]))
        assert budget.dragging == before and channel in budget
        channel._on_channel("data", None, dict(x=[0.5], y=[0.5], seq=[7], start=[False], end=[False], plane=["x"]))
        assert budget.dragging == before + 1  # a position taken: dragging again
    finally:
        budget.end(channel)
        budget._clock = clock


def test_a_press_never_let_go_stops_counting_and_its_next_position_counts_it_again():
    # forty pages that press and never let go held every other page's mid-drag answers back (19 → 317 ms)
    state = AttentionState()
    channel = drag_channel(state)
    budget = get_budget()
    now, clock = [1000.0], budget._clock
    budget._clock = lambda: now[0]
    before = budget.dragging
    try:
        channel._on_channel("data", None, dict(x=[0.0], y=[1.0], seq=[1], start=[True], end=[False]))
        assert budget.dragging == before + 1
        now[0] += DragBudget.IDLE_AFTER + 1.0
        assert budget.dragging == before and channel in budget
        channel._on_channel("data", None, dict(x=[0.5], y=[1.0], seq=[2], start=[False], end=[False]))
        assert budget.dragging == before + 1
    finally:
        budget.end(channel)
        budget._clock = clock


class Loop:
    """A session's loop with a clock of its own: ``later`` queues a callback for a time, ``run`` runs them in order."""

    def __init__(self):
        self.now, self.pending = 0.0, []

    def clock(self) -> float:
        return self.now

    def later(self, callback, seconds: float) -> None:
        self.pending.append((self.now + seconds, len(self.pending), callback))

    def run(self) -> None:
        while self.pending:
            self.pending.sort()
            due, _, callback = self.pending.pop(0)
            self.now = max(self.now, due)
            callback()


def test_a_sessions_expensive_events_take_at_most_its_share_of_the_loop():
    """One message of 300 clicks of "New random draw" at d_k = 1024 froze every other page for 24 s: Bokeh applied
    them all in one turn. Paced, the session's clicks run one a turn, and the loop is free for as long again."""
    from services.pacing import SessionEvents

    loop = Loop()
    events = SessionEvents(later=loop.later, clock=loop.clock)
    ran = []

    def click(i, cost=0.08):
        def work():
            ran.append((i, loop.now))
            loop.now += cost  # the click's time on the loop
        return work

    for i in range(10):  # arrive at once
        events.run(click(i))
    assert [i for i, _ in ran] == [0] and events.queued == 9  # the first at once, the rest in their turn
    loop.run()
    assert [i for i, _ in ran] == list(range(10)) and events.queued == 0  # all of them, in order
    busy, span = 10 * 0.08, ran[-1][1] + 0.08 - ran[0][1]
    assert busy / span <= SessionEvents.SHARE + 0.05, busy / span
    # each waited for the one before it to have been paid for: no two back to back
    assert all(b - a >= 0.08 for (_, a), (_, b) in zip(ran, ran[1:], strict=False))


def test_a_page_spaced_as_a_person_clicks_never_waits():
    from services.pacing import SessionEvents

    loop = Loop()
    events = SessionEvents(later=loop.later, clock=loop.clock)
    ran = []
    for i in range(20):  # a click of 80 ms ("New random draw" at d_k = 1024) every second, a key of 20 ms between
        loop.now = float(i)
        events.run(lambda: (ran.append(loop.now), setattr(loop, "now", loop.now + 0.08)))
        for k in range(1, 4):
            loop.now = i + k * 0.25
            events.run(lambda: (ran.append(loop.now), setattr(loop, "now", loop.now + 0.02)))
    assert len(ran) == 80 and events.queued == 0 and not loop.pending  # each ran as it came


def test_building_a_tab_the_first_time_is_not_counted(monkeypatch):
    """A tab takes up to a second to build, once a page: counted, the page's next click would wait two."""
    from services import pacing
    from services.pacing import SessionEvents, once_a_page

    loop = Loop()
    events = SessionEvents(later=loop.later, clock=loop.clock)
    monkeypatch.setattr(pacing.EventPacer, "session", lambda self, doc: events)

    def open_tab():
        with once_a_page(doc=object()):
            loop.now += 1.0

    events.run(open_tab)
    assert events.level == 0 and events.wait() == 0
    events.run(lambda: setattr(loop, "now", loop.now + 1.0))  # the same second of other work is counted
    assert events.wait() > 1.0
