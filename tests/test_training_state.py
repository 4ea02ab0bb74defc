"""One page's Train tab state (session/training.py), its address, and the process's queue of runs
(services/train_queue.py), without a browser.

Expected values come from the course and from hand computation: a target row of zeros is no attention pattern,
Section 6's embeddings x_NLP = x_I + x_love make "previous token" on them stop at log 2 for one head.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bokeh.document import Document

from services.train_queue import TrainQueue
from session.address import address_of, apply_address
from session.state import AttentionState
from session.training import (
    PAINT,
    RUN_STEPS,
    TrainingState,
    parse_pattern,
    parse_train_address,
    train_address,
    write_pattern,
)


def active(**params) -> TrainingState:
    t = TrainingState(**params)
    t.activate()
    return t


def test_no_run_is_computed_until_the_tab_is_shown():
    t = TrainingState()
    t.choose_target("yourself")
    assert t.run is None
    t.activate()
    assert t.run is not None and t.run.steps == RUN_STEPS and t.run.task.tokens == ("I", "love", "NLP")


def test_a_choice_opens_its_run_paused_at_its_random_start():
    t = active()
    t.show(321, True)
    assert (t.step, t.playing, t.plays) == (321, True, 1)
    t.set_learning_rate(0.2)
    assert (t.step, t.playing) == (0, False) and t.run.learning_rate == 0.2


def test_painting_toggles_a_cell_and_refuses_a_row_of_zeros():
    t = active(target="yourself")
    t.choose_target(PAINT)
    assert t.pattern.tolist() == np.eye(3, dtype=int).tolist()  # painting starts from the target shown
    assert t.paint(0, 1) and t.pattern[0].tolist() == [1, 1, 0]
    # the row is divided by its sum: I attends half to itself, half to love
    assert t.run.task.target[0].tolist() == [0.5, 0.5, 0.0]
    run = t.run
    assert not t.paint(1, 1)  # love's only cell
    assert "would attend to nothing" in t.message
    assert t.pattern[1].tolist() == [0, 1, 0] and t.run is run  # nothing else changed
    assert not t.paint(3, 0) and "3 rows and columns" in t.message
    assert not t.paint(True, 0)
    assert t.paint(1, 0) and t.message == ""


def test_a_pattern_is_painted_on_the_sentence_chosen():
    """The default target is five tokens long: painting starts there, and "I love NLP" is one choice away (it
    took choosing a three-token target first)."""
    t = active()
    t.choose_target(PAINT)
    assert t.run.task.tokens == ("attention", "is", "all", "you", "need")
    assert t.paint_sentence(3)
    assert t.target == PAINT and t.run.task.tokens == ("I", "love", "NLP")
    assert t.pattern.tolist() == np.eye(3, dtype=int).tolist()  # "attend to yourself", the first on that sentence
    assert t.paint(0, 1) and t.paint_sentence(3) and t.pattern[0].tolist() == [1, 1, 0]  # the same: kept
    assert t.paint_sentence(5) and t.pattern.tolist() == [[1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 0, 0, 0],
                                                          [0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
    before, run = t.view(), t.run
    for bad in (4, True, "3", None):
        assert not t.paint_sentence(bad) and "choose 3 or 5" in t.message
        assert t.view() == before and t.run is run


def test_previous_token_painted_on_section_6_stops_at_log_2_for_one_head():
    t = active(target="yourself")
    for i, j in ((1, 0), (1, 1), (2, 1), (2, 2)):
        assert t.paint(i, j)
    assert t.pattern.tolist() == [[1, 0, 0], [1, 0, 0], [0, 1, 0]]
    # x_NLP = x_I + x_love: NLP's scores are I's plus love's, whatever W (the floor: log 2, by hand)
    assert t.floor.loss == pytest.approx(math.log(2), abs=1e-6) and not t.floor.learnable
    assert t.run.loss[-1] == pytest.approx(math.log(2), abs=2e-3)
    t.set_heads(2)
    assert t.run.loss[-1] < math.log(2) - 0.05


@pytest.mark.parametrize("setter, value", [
    ("set_learning_rate", 0), ("set_learning_rate", 1.5), ("set_learning_rate", float("nan")),
    ("set_learning_rate", True), ("set_learning_rate", "0.1"), ("set_seed", -1), ("set_seed", 2 ** 31),
    ("set_seed", 1.0), ("set_heads", 3), ("set_heads", 0), ("set_temperature", 0.001), ("set_temperature", 1e9),
    ("set_scale", "yes"), ("choose_target", "everything"), ("show", 501), ("show", -1), ("show", 2.5),
])
def test_bad_input_gets_a_message_and_changes_nothing_else(setter, value):
    t = active()
    before, run = t.view(), t.run
    assert getattr(t, setter)(value) is False
    assert t.message and t.view() == before and t.run is run


def test_a_run_waits_for_the_scheduler_and_many_changes_ask_for_one_run():
    asked = []
    t = TrainingState()
    t.scheduler = asked.append
    t.activate()
    t.set_learning_rate(0.1)
    t.new_seed()
    t.set_heads(2)
    assert len(asked) == 1 and t.run is None and t.pending
    asked[0]()  # the queue's turn: the settings as they are now
    assert not t.pending and (t.run.learning_rate, t.run.seed, t.run.heads) == (0.1, 1, 2)


def test_a_presenters_view_reaches_a_followers_state_with_its_step():
    teacher, student = AttentionState(), AttentionState()
    teacher.training.activate()
    student.training.activate()
    teacher.training.choose_target("retrieve")
    teacher.training.show(240, True)
    student.apply_snapshot(teacher.snapshot())
    s = student.training
    assert (s.target, s.step, s.playing, s.plays) == ("retrieve", 240, True, 1)
    assert s.run.loss[240] == teacher.training.run.loss[240]


def test_the_address_round_trip_and_its_refusals():
    state = AttentionState()
    apply_address(state, {"train": [b"100.100.010"], "lr": [b"0.1"], "train_seed": [b"3"], "train_step": [b"240"],
                          "train_heads": [b"2"], "train_scale": [b"off"], "train_t": [b"0.5"]})
    t = state.training
    assert state.notice == ""
    assert (t.target, t.pattern.tolist(), t.learning_rate, t.seed, t.step, t.heads, t.scale, t.temperature) == (
        PAINT, [[1, 0, 0], [1, 0, 0], [0, 1, 0]], 0.1, 3, 240, 2, False, 0.5)
    args = address_of(state)
    assert {k: args[k] for k in train_address(t)} == {"train": "100.100.010", "lr": "0.1", "train_seed": "3",
                                                      "train_step": "240", "train_scale": "off", "train_t": "0.5",
                                                      "train_heads": "2"}
    t.activate()
    assert t.step == 240  # the link's step, kept when its run arrives
    assert "train" not in address_of(AttentionState())  # the defaults write nothing
    settings, problems = parse_train_address({"train": "1000.0100.0010.0001", "lr": "-1", "train_step": "1e3",
                                              "train_heads": "0", "train_scale": "yes", "train_t": "inf"})
    assert settings == {} and len(problems) == 6
    with pytest.raises(ValueError):
        parse_pattern("100.000.001")  # love attends to nothing
    assert write_pattern(parse_pattern("11000.10000.01000.00100.00010")) == "11000.10000.01000.00100.00010"


# --- the process's queue ----------------------------------------------------------------------------------------

class Doc(Document):
    """A served page's document as the queue sees it: its next-tick callbacks run when the test says."""

    session_context = object()

    def __init__(self):
        super().__init__()
        self.ticks = []

    def add_next_tick_callback(self, fn):
        self.ticks.append(fn)


class Page:
    def __init__(self, log, name, cost=0.0):
        self.log, self.name, self.cost = log, name, cost

    def compute(self):
        self.log.append(self.name)


def test_the_queue_takes_one_run_at_a_time_and_rests_as_long_as_it_took(monkeypatch):
    waits = []
    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)))
    log, docs = [], [Doc() for _ in range(3)]
    pages = [Page(log, f"p{i}") for i in range(3)]
    for d, p in zip(docs, pages, strict=True):
        queue.submit(d, p.compute)
    assert len(waits) == 1 and waits[0][0] == 0.0 and len(queue) == 3
    waits.pop()[1]()  # the loop's turn: the first page's run is handed to its document
    assert len(docs[0].ticks) == 1 and not docs[1].ticks and len(queue) == 2
    clock = iter([10.0, 10.03])
    monkeypatch.setattr("services.train_queue.time.perf_counter", lambda: next(clock))
    docs[0].ticks.pop()()  # it runs, 30 ms: the queue rests 30 ms (half the loop) before the next
    assert log == ["p0"] and waits[0][0] == pytest.approx(0.03)
    del pages[1]  # the second page closes while it waits: skipped
    waits.pop()[1]()
    assert not docs[1].ticks and len(docs[2].ticks) == 1


class Drawer:
    """A page whose work (a √d_k draw) runs on the queue's worker and is shown in its turn."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def draw(self):
        self.log.append(("drawn", self.name))
        return f"draw of {self.name}"

    def show(self, drawn):
        self.log.append(("shown", drawn))


def test_a_pages_work_runs_off_the_loop_then_is_shown_in_its_turn_and_the_queue_rests_for_both(monkeypatch):
    """The √d_k tab's draw at d_k = 1024 held the loop 60 ms (several hundred on a loaded server, every other
    page waiting); NumPy's work now runs on the queue's worker thread, and the page shows it in its own turn."""
    waits, handed, back = [], [], []

    class Worker:  # the worker thread, run when the test says
        def submit(self, fn):
            from concurrent.futures import Future

            future = Future()
            handed.append((fn, future))
            return future

    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)), executor=Worker(),
                       call_soon=lambda fn, *args: back.append((fn, args)))
    log, docs = [], [Doc() for _ in range(2)]
    pages = [Drawer(log, f"p{i}") for i in range(2)]
    for d, p in zip(docs, pages, strict=True):
        queue.submit(d, p.show, p.draw)
    clock = iter([10.0, 10.02, 20.0, 20.01, 30.0])
    monkeypatch.setattr("services.train_queue.time.perf_counter", lambda: next(clock))
    waits.pop()[1]()  # the queue's turn: the first page's work goes to the worker, not to the loop
    assert len(handed) == 1 and not docs[0].ticks and log == []
    fn, future = handed.pop()
    future.set_result(fn())  # the worker draws (20 ms)
    assert log == [("drawn", "p0")] and not docs[0].ticks
    fn, args = back.pop()
    fn(*args)  # back on the loop: handed to the page's turn
    docs[0].ticks.pop()()  # the page shows it (10 ms): the queue rests for the draw and the showing, 30 ms
    assert log[-1] == ("shown", "draw of p0") and waits[-1][0] == pytest.approx(0.03) and len(queue) == 1
    waits.pop()[1]()
    assert len(handed) == 1  # the next page's work, after the rest


@pytest.mark.parametrize("tokens", [[3], {"n": 5}, "5", 5.0, None])
def test_painting_on_a_sentence_that_is_not_3_or_5_tokens_is_refused_with_its_message(tokens):
    """A crafted {action: "sentence", tokens: [3]} raised TypeError (a list is not hashable), closing the page."""
    s = TrainingState()
    assert s.paint_sentence(tokens) is False
    assert "No sentence of" in s.message
