"""The Check tab without a server: its widgets driven as a learner does, the tasks on a real AttentionState, and
the progress kept through the browser store's messages.

Weights and outputs expected here are the course's (4 decimals) or worked out below with its recipe, by hand.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from html import escape
from pathlib import Path

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import Div
from panel.models.esm import ReactiveESM

from course.questions import (
    BY_ID,
    MODEL_QUESTIONS,
    PRACTICE,
    QUESTIONS,
    RIGHT_AFTER_UNREADABLE,
    TRAIN_QUESTIONS,
    Progress,
)
from link.browser import BrowserBridge
from session.state import AttentionState
from widgets.check import (
    CHECK_CSS,
    START_OUTPUTS,
    STORAGE_KEY,
    STORE_NAME,
    CheckTab,
    CheckView,
    LearnerProgress,
    ProgressStore,
    on_section_6,
)

ROOT = Path(__file__).resolve().parents[1]
TOL = dict(rel=0, abs=5e-5)
XSS = "<img src=x onerror=alert(1)>"


def recipe(q, keys=((1, 0), (0, 1), (1, 1)), values=(2, 6, 4)):
    """The course's three steps for one query, in plain Python: scores / sqrt(2), softmax, weighted sum."""
    scores = [(q[0] * k[0] + q[1] * k[1]) / math.sqrt(2) for k in keys]
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    weights = [x / sum(e) for x in e]
    return weights, sum(w * v for w, v in zip(weights, values, strict=True))


@pytest.fixture
def state():
    return AttentionState()


@pytest.fixture
def learner(state):
    return LearnerProgress(state=state)


@pytest.fixture
def view(learner):
    return CheckView(learner=learner)


def answer(view, qid, value):
    """Check ``value`` for question ``qid`` as the page sends it; the card's record as the page shows it."""
    view.tab._handle_msg({"check": qid, "answer": value})
    return view.records()[qid]


def show(view, qid):
    view.tab._handle_msg({"show": qid})
    return view.records()[qid]


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def task(view, task_id) -> str:
    return dict(view.tab.tasks)[task_id]


# --- questions, as the page sends its answers ---------------------------------------------------------------------
def test_every_question_is_sent_to_the_page_in_order(view):
    every = QUESTIONS + PRACTICE + TRAIN_QUESTIONS + MODEL_QUESTIONS
    assert [q["id"] for q in view.tab.questions] == [q.id for q in every]
    for q, shown in zip(every, view.tab.questions, strict=True):
        train, model = q in TRAIN_QUESTIONS, q in MODEL_QUESTIONS
        assert shown["kind"] == q.kind and shown["counts"] == q.counts
        assert shown["group"] == ("train" if train else "model" if model else "section" if q.counts else "practice")
        title = (f"Train tab, question {q.number}" if train else f"Real model tab, question {q.number}" if model
                 else f"Question {q.number}" if q.counts else f"Practice problem {q.number}")
        assert shown["title"] == title
        assert f"<h4>{title}</h4>" in shown["prompt"] and escape(q.prompt) in shown["prompt"]
        assert shown["choices"] == [c.text for c in q.choices]
        assert ("<summary>Hint</summary>" in shown["prompt"]) == bool(q.hint) and escape(q.hint) in shown["prompt"]
    for r in view.tab.records:
        assert r == {"feedback": "", "value": None, "done": False, "shown": False}


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.kind == "choice"], ids=lambda q: q.id)
def test_each_wrong_choice_gives_its_own_explanation_and_the_right_one_credit(view, q):
    wrong = [i for i in range(len(q.choices)) if i != q.answer]
    for n, i in enumerate(wrong[:2], start=1):
        r = answer(view, q.id, i)
        assert escape(q.choices[i].feedback) in r["feedback"] and r["value"] == i
        assert all(escape(q.choices[j].feedback) not in r["feedback"] for j in wrong if j != i)
        assert f"Not yet — {n} of 3 tries used" in r["feedback"]
        assert escape(q.why) not in r["feedback"]  # the Why waits for a right answer
    r = answer(view, q.id, q.answer)
    assert "Right on try 3 — credit." in r["feedback"] and escape(q.why) in r["feedback"]
    assert r["done"] and r["shown"]  # nothing more to check or show


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.kind == "number"], ids=lambda q: q.id)
def test_each_number_question_accepts_its_printed_answer(view, q):
    r = answer(view, q.id, q.answer)
    assert "Right on try 1 — credit." in r["feedback"] and escape(q.why) in r["feedback"]


def test_the_third_wrong_choice_shows_the_answer(view, learner):
    q = BY_ID["why-scale"]
    for i in (0, 2, 3):
        r = answer(view, q.id, i)
    assert "Answer shown after three tries — this one no longer earns credit." in r["feedback"]
    assert escape(q.choices[3].feedback) in r["feedback"]  # the last wrong choice's explanation stays
    assert f"Answer: {escape(q.answer_text)}" in r["feedback"] and escape(q.why) in r["feedback"]
    assert r["shown"] and not r["done"]
    r = answer(view, q.id, q.answer)
    assert "Right — the answer had already been shown, so no credit this time." in r["feedback"]
    assert learner.score_text == "0 of 14 with credit"


def test_show_answer_button(view, learner):
    q = BY_ID["two-key-softmax"]
    r = show(view, q.id)
    assert "You chose to see the answer — this one earns no credit." in r["feedback"]
    assert "Answer: 0.731" in r["feedback"] and r["shown"]
    assert learner.progress.of(q.id).shown == "asked" and learner.progress.of(q.id).tries == 0


def test_too_few_decimal_places_are_said_and_cost_no_try(view, learner):
    r = answer(view, "two-key-softmax", "0.73")
    assert ("Not precise enough: this question asks for 3 decimal places, and 0.73 has 2. It is judged neither right "
            "nor wrong, and it does not count as a try.") in r["feedback"]
    assert learner.progress.of("two-key-softmax").tries == 0 and r["value"] is None
    r = answer(view, "two-key-softmax", ".731")
    assert "Right on try 1 — credit." in r["feedback"] and "Not precise enough" not in r["feedback"]


def test_a_non_number_is_refused_with_a_message_and_is_not_a_try(view, learner):
    r = answer(view, "scaled-score", XSS)
    assert "is not a number" in r["feedback"]
    assert "<img" not in r["feedback"] and escape(XSS) in r["feedback"]
    assert learner.progress.of("scaled-score").tries == 0 and learner.progress.empty
    r = answer(view, "scaled-score", "4.2426")
    assert "Right on try 1 — credit." in r["feedback"] and "is not a number" not in r["feedback"]


def test_no_choice_made_is_refused(view, learner):
    r = answer(view, "row-sum", None)
    assert "Choose one of the answers first." in r["feedback"] and learner.progress.empty


def test_the_same_wrong_answer_twice_is_one_try(view, learner):
    answer(view, "dot-product", "5")
    r = answer(view, "dot-product", "5")  # a double click
    assert "already tried that answer" in r["feedback"] and learner.progress.of("dot-product").tries == 1


@pytest.mark.parametrize("msg", [None, "check", [1], {"check": "no-such-question", "answer": "1"}, {"show": 7},
                                 {"check": ["key-role"]}, {"practice": "yes"}, {"restart": "confirm"},
                                 {"check": "dot-product", "answer": "6" * 100_000},
                                 {"check": "key-role", "answer": 1.0}])
def test_what_no_page_sends_changes_nothing(view, learner, msg):
    view.tab._handle_msg(msg)
    assert learner.progress.empty and not view.tab.practice_open and not view.tab.asking


def test_score_line_and_what_it_is(view, learner):
    assert text_of(view.tab.score) == "Score: 0 of 14 with credit"
    answer(view, "key-role", 1)
    answer(view, "dot-product", "6.0")
    show(view, "row-sum")
    answer(view, "row-sum", 1)
    assert text_of(view.tab.score) == "Score: 2 of 14 with credit"
    # progress lives in the learner's browser, where they may change it: the tab says what the score is
    assert view.tab.words["own_record"] == ("This score is your own record, kept in this browser to help you study: it "
                                            "is not a grade, and your teacher does not see it.")


def test_practice_opens_on_demand_and_does_not_count(view, learner):
    assert not view.tab.practice_open
    assert "does not count" in view.tab.practice_intro
    view.tab._handle_msg({"practice": True})
    assert view.tab.practice_open
    r = answer(view, "practice-softmax", "0.881")
    assert "Practice problems do not count toward your progress." in r["feedback"]
    assert learner.score_text == "0 of 14 with credit"
    view.tab._handle_msg({"practice": False})
    assert not view.tab.practice_open and view.records()["practice-softmax"]["done"]


def test_start_again_asks_then_clears_everything(view, learner, state):
    answer(view, "key-role", 1)
    answer(view, "weighted-output", "7.80")
    state.select_row(0)
    view.tab._handle_msg({"restart": "ask"})
    assert view.tab.asking
    view.tab._handle_msg({"restart": "keep"})
    assert not learner.progress.empty and not view.tab.asking
    view.tab._handle_msg({"restart": "ask"})
    view.tab._handle_msg({"restart": "confirm"})
    assert learner.progress == Progress() and learner.store.value == "" and not view.tab.asking
    records = view.records()
    assert records["key-role"] == records["weighted-output"] == {"feedback": "", "value": None, "done": False,
                                                                 "shown": False}
    assert view.tab.restarts == 1  # the page empties its boxes
    assert text_of(view.tab.score) == "Score: 0 of 14 with credit"
    assert "I: not selected yet" in task(view, "rows")


def test_the_whole_tab_is_a_few_bokeh_models(view):
    """The page draws the cards itself (widgets/check.js): Panel's widgets and panes for them came to about 110 Bokeh
    models (seven per question card), about 3 MB of the server's memory for every page with the tab open."""
    doc = Document()
    doc.add_root(view.__panel__().get_root(doc))
    models = Counter(type(m).__name__ for m in doc.models)
    own = sum(n for name, n in models.items() if name != "ImportedStyleSheet")  # the page's shared sheets
    assert own <= 5, models  # the tab's column, its component (and its data) and the lab's download


def test_projector_text_sizes():
    sizes = re.findall(r"font-size:\s*([^;]+);", CHECK_CSS)
    assert sizes and all("var(--ae-text" in s for s in sizes)
    theme = (ROOT / "static" / "theme.css").read_text()
    projector = theme[theme.index('[data-mode="projector"]'):]
    assert int(re.search(r"--ae-text:\s*(\d+)px", projector).group(1)) >= 20


# --- the tasks ----------------------------------------------------------------------------------------------------
def test_start_outputs_are_the_course_matrix():
    assert START_OUTPUTS == pytest.approx((3.5933, 4.4067, 4.0), **TOL)


def test_task_nlp_ticks_when_q_is_dragged_towards_k_nlp(state, learner, view):
    assert not learner.progress.task("nlp").done and "☐" in task(view, "nlp")
    weights, output = recipe((0, 1))
    assert weights == pytest.approx([0.1978, 0.4011, 0.4011], **TOL) and output == pytest.approx(4.4067, **TOL)
    state.move_query(0, 1.2)  # straight up: love and NLP still tie
    assert not learner.progress.task("nlp").done
    for x in (0.25, 0.5):  # a drag to the right, towards (1, 1)
        state.move_query(x, 1)
    done = learner.progress.task("nlp")
    # first position where NLP leads: q = (0.25, 1); by hand, scores (0.1768, 0.7071, 0.8839)
    weights, output = recipe((0.25, 1))
    assert done.done and done.seen["q"] == [0.25, 1.0] and done.seen["row"] == "love"
    assert done.seen["weights"] == pytest.approx(weights, **TOL) and done.seen["output"] == pytest.approx(output, **TOL)
    assert weights[2] > max(weights[:2]) and abs(output - 4) < abs(4.4067 - 4) and done.seen["start"] == 4.4067
    html = task(view, "nlp")
    assert "✓" in html and "Task 1 — done" in html and "q = (0.25, 1)" in html and "from 4.4067" in html


def test_task_nlp_needs_a_lead_the_page_shows_not_a_two_pixel_click(state, learner, view):
    """A click 2 px right of q (0.005 to 0.02 of a unit, at 400 to 100 px a unit) puts NLP ahead of love by 0.0014 to
    0.0057, which the page shows as a near tie: no tick. It ticks once NLP leads by 0.05 and the output has come 0.05
    nearer 4 (by hand, q = (0.2, 1): weights 0.2088, 0.3677, 0.4235, output 4.3177)."""
    for x in (0.005, 0.02, 0.1, 0.15):
        state.move_query(x, 1)
        weights, output = recipe((x, 1))
        assert weights[2] > weights[1] and output < 4.4067  # NLP ahead, the output lower: the old rule's tick
        assert not learner.progress.task("nlp").done, x
    state.move_query(0.2, 1)
    seen = learner.progress.task("nlp").seen
    assert seen["weights"] == pytest.approx([0.2088, 0.3677, 0.4235], **TOL) and seen["output"] == 4.3177
    assert seen["weights"][2] - seen["weights"][1] >= 0.05 and 4.4067 - seen["output"] >= 0.05
    assert "Task 1 — done" in task(view, "nlp")


def test_task_nlp_at_k_nlp_reads_the_course_numbers(state, learner):
    state.move_query(1, 1)  # q on k_NLP: the course's NLP row, (0.2483, 0.2483, 0.5035), and output 4
    seen = learner.progress.task("nlp").seen
    assert seen["weights"] == pytest.approx([0.2483, 0.2483, 0.5035], **TOL) and seen["output"] == 4.0
    assert recipe((1, 1))[1] == pytest.approx(4.0)  # 2a + 6a + 4(1 - 2a) = 4


@pytest.mark.parametrize("q", [(0, 2), (-0.5, 1), (1, -0.2), (10, 0.01)])
def test_task_nlp_does_not_tick_otherwise(state, learner, q):
    state.move_query(*q)
    weights, output = recipe(q)
    assert not (weights[2] > max(weights[:2]) and abs(output - 4) < 0.4067)  # the course's arithmetic agrees
    assert not learner.progress.task("nlp").done


def test_task_nlp_counts_from_where_the_row_started(state, learner):
    state.select_row(2)  # NLP's own query: NLP leads already, but nothing moved towards 4
    assert not learner.progress.task("nlp").done
    state.select_row(0)  # row I starts at 3.5933
    state.move_query(1, 0.5)
    weights, output = recipe((1, 0.5))
    assert weights[2] > max(weights[:2]) and abs(output - 4) < abs(3.5933 - 4)
    assert learner.progress.task("nlp").seen["row"] == "I" and learner.progress.task("nlp").seen["start"] == 3.5933


@pytest.mark.parametrize("change, why", [
    (lambda s: setattr(s, "scale", False), "scaling by √d_k is switched off"),
    (lambda s: setattr(s, "causal", True), "the causal mask is on"),
    (lambda s: s.set_value(2, 0, "4.5"), "not the Section 6 example's"),
    (lambda s: s.set_key(0, 1, "0.5"), "not the Section 6 example's"),
    (lambda s: setattr(s, "preset", "Module 2: vector values"), "not the Section 6 example's"),
    (lambda s: s.next_step(), "the step-through still hides the output"),
])
def test_tasks_wait_when_the_numbers_are_not_the_courses(state, learner, view, change, why):
    change(state)
    assert why in learner.paused("nlp") and escape(why) in task(view, "nlp")
    state.move_query(1, 1)
    state.select_row(0)
    assert not learner.progress.task("nlp").done and "I" not in learner.progress.task("rows").seen
    state.preset = "Section 6: scalar values"
    state.reset()
    state.guided = False
    assert learner.paused("nlp") == "" and "Not counting right now" not in task(view, "nlp")
    state.move_query(1, 1)
    assert learner.progress.task("nlp").done


def test_tasks_wait_while_following_a_presenter(state, learner):
    learner.following = True
    state.move_query(1, 1)
    assert not learner.progress.task("nlp").done and "presenter" in learner.paused("rows")
    learner.following = False
    state.move_query(1, 0.9)
    assert learner.progress.task("nlp").done


def test_task_rows_ticks_once_every_row_was_selected(state, learner, view):
    state.select_row(0)
    state.select_row(2)
    record = learner.progress.task("rows")
    assert not record.done and set(record.seen) == {"I", "NLP"} and "love: not selected yet" in task(view, "rows")
    state.select_row(1)  # the row already selected at the start: clicking it counts
    record = learner.progress.task("rows")
    assert record.done and "✓" in task(view, "rows") and "Task 2 — done" in task(view, "rows")
    assert record.seen["love"]["weights"] == pytest.approx([0.1978, 0.4011, 0.4011], **TOL)
    assert round(record.seen["love"]["weights"][0], 2) == 0.20 and round(record.seen["love"]["weights"][1], 2) == 0.40
    assert record.seen["I"]["weights"] == pytest.approx([0.4011, 0.1978, 0.4011], **TOL)
    assert record.seen["NLP"]["weights"] == pytest.approx([0.2483, 0.2483, 0.5035], **TOL)
    assert all(r["sum"] == 1.0 for r in record.seen.values())
    assert "love: 0.1978 + 0.4011 + 0.4011 = 1.0000" in task(view, "rows")


def test_task_rows_needs_the_rows_own_query(state, learner):
    state.move_query(0.5, 0.5)
    state.selected = 0  # row I, but still with the dragged q: not the matrix's row I
    state.selected = 1
    assert learner.progress.task("rows").seen == {}
    state.select_row(1)
    assert set(learner.progress.task("rows").seen) == {"love"}


def test_tasks_tick_before_the_tab_is_built(state, learner):
    state.move_query(1, 1)
    for row in (0, 1, 2):
        state.select_row(row)
    view = CheckView(learner=learner)
    assert "Task 1 — done" in task(view, "nlp") and "Task 2 — done" in task(view, "rows")


def test_on_section_6(state):
    assert on_section_6(state)
    state.rename_token(2, "nlp")
    assert not on_section_6(state)


# --- kept in the browser ------------------------------------------------------------------------------------------
def test_every_change_goes_to_the_store(state, learner, view):
    assert learner.store.value == "" and learner.store.key == STORAGE_KEY == "attention-explorer.progress.v1"
    answer(view, "key-role", 1)
    stored = json.loads(learner.store.value)
    assert stored["answers"]["key-role"]["credit"] is True and stored["version"] == 1
    state.move_query(1, 1)
    assert json.loads(learner.store.value)["tasks"]["nlp"]["done"] is True


def test_a_reload_gets_the_progress_back(state, learner, view):
    answer(view, "key-role", 0)
    answer(view, "weighted-output", "7.80")
    answer(view, "dot-product", "6")
    state.move_query(1, 1)
    stored = learner.store.value
    # a reload, or a server restart: a new session with a new state; the browser sends what it kept
    again = LearnerProgress(state=AttentionState())
    fresh = CheckView(learner=again)
    again.store.receive({"stored": stored})
    assert again.progress == learner.progress and again.store.value == stored and again.unreadable == ()
    records = fresh.records()
    assert records["key-role"]["value"] == 0
    assert escape(BY_ID["key-role"].choices[0].feedback) in records["key-role"]["feedback"]
    assert records["weighted-output"]["value"] == "7.80"
    assert "every one of them must be right" not in records["weighted-output"]["feedback"]
    assert "1 of 3 tries used" in records["weighted-output"]["feedback"]
    assert records["dot-product"]["done"] and "Right on try 1 — credit." in records["dot-product"]["feedback"]
    assert "Task 1 — done" in task(fresh, "nlp") and "Score: 1 of 14 with credit" in fresh.tab.score
    assert fresh.tab.notice == ""


def test_stored_progress_merges_with_a_task_done_before_it_arrived(state, learner):
    earlier = LearnerProgress(state=AttentionState())
    earlier.answer("key-role", 1)
    state.move_query(1, 1)  # done on this page before its browser sent the store
    learner.store.receive({"stored": earlier.store.value})
    assert learner.progress.task("nlp").done and learner.progress.of("key-role").credit


@pytest.mark.parametrize("stored", ["{broken", json.dumps({"format": "someone-else", "version": 1}), "[]", ""])
def test_a_store_that_cannot_be_read_is_said_and_no_question_is_fresh_again(learner, view, stored):
    """The browser sends "" for a text over the limit, and anything at all from an edited store: the tab says it
    could not read the progress, and no question can then be credited "on try 1" as if never seen."""
    learner.store.receive({"stored": stored})
    assert "could not be read" in view.tab.notice and "No question earns credit now" in view.tab.notice
    r = answer(view, "key-role", 1)
    assert escape(RIGHT_AFTER_UNREADABLE) in r["feedback"]
    assert learner.score_text == "0 of 14 with credit"
    # kept in the browser as such: the next page (a reload) reads it, and the question stays without credit
    again = LearnerProgress(state=AttentionState())
    again.store.receive({"stored": learner.store.value})
    assert again.unreadable == () and again.progress == learner.progress
    assert again.answer("dot-product", "6").message == RIGHT_AFTER_UNREADABLE
    view.tab._handle_msg({"restart": "ask"})
    view.tab._handle_msg({"restart": "confirm"})  # Start again: a fresh start, said so
    assert view.tab.notice == "" and learner.answer("dot-product", "6").message == "Right on try 1 — credit."


def test_a_record_that_fails_its_check_is_said_and_that_question_earns_no_credit(learner, view):
    """One record the page could not have written (here, credit without a right answer, and markup for an answer):
    the others load, the tab names that question, and it cannot be credited afterwards."""
    good = LearnerProgress(state=AttentionState())
    good.answer("dot-product", "6")
    data = json.loads(good.store.value)
    data["answers"]["key-role"] = {"tries": 1, "right": False, "shown": "", "credit": True, "last": XSS}
    learner.store.receive({"stored": json.dumps(data)})
    assert learner.unreadable == ("key-role",) and learner.progress.of("dot-product").credit
    assert "could not be read" in view.tab.notice and "Question 1" in view.tab.notice and "<img" not in view.tab.notice
    r = view.records()["key-role"]
    assert escape("This question's saved record could not be read, so it no longer earns credit.") in r["feedback"]
    assert not r["shown"]  # the answer is not shown for it: Show answer still applies
    r = answer(view, "key-role", 1)
    assert "could not be read, so no credit this time" in r["feedback"] and learner.score_text == "1 of 14 with credit"


def test_another_tab_starting_again_clears_this_page(learner, view):
    answer(view, "key-role", 1)
    learner.store.receive({"stored": None})  # the key was removed in another tab
    assert learner.progress.empty and view.records()["key-role"]["feedback"] == ""
    for junk in ("not a message", {"other": 1}, None):
        learner.store.receive(junk)  # ignored
    assert learner.progress.empty


def test_the_store_is_one_div_kept_in_local_storage_by_the_pages_own_script():
    store = ProgressStore()
    assert isinstance(store.div, Div) and store.div.name == STORE_NAME == "learner-progress"
    assert not store.div.visible
    store.value = '{"a": 1}'
    assert store.div.text == '{"a": 1}'  # what the browser is to store
    esm = BrowserBridge._esm
    assert json.dumps(STORE_NAME) in esm and json.dumps(STORAGE_KEY) in esm and "localStorage.setItem" in esm
    for away in ("fetch", "XMLHttpRequest", "sendBeacon", "WebSocket"):  # nowhere but this page's own session
        assert away not in esm
    # the bridge hands the browser's messages about the progress to the store, and nothing else
    bridge = BrowserBridge(state=AttentionState())
    heard = []
    store.on_stored, bridge.on_stored = heard.append, store.receive
    bridge._handle_msg({"stored": "kept"})
    bridge._handle_msg({"stored": None})
    bridge._handle_msg({"key": "1"})
    assert heard == ["kept", None] and bridge.state.selected == 0


def test_learners_are_independent():
    a, b = LearnerProgress(state=AttentionState()), LearnerProgress(state=AttentionState())
    a.answer("key-role", 1)
    a.state.move_query(1, 1)
    assert b.progress.empty and b.store.value == "" and a.store is not b.store


def test_the_tab_scrolls_within_itself(view):
    # the page never scrolls (static/app.css): fourteen questions must scroll inside the tab, long choices wrap
    layout = view.__panel__()
    assert layout.scroll and layout.sizing_mode == "stretch_both"
    assert re.search(r"label \{[^}]*white-space: normal", CHECK_CSS)


# --- on the page (app.py) and the lab ---------------------------------------------------------------------------------
def test_the_page_makes_the_progress_and_its_store_and_builds_the_check_tab_when_first_shown():
    from app import create_app
    from widgets.check import LAB_NOTEBOOK, PRIVACY

    page = create_app()
    (bridge,) = page.select(BrowserBridge)
    store = bridge.on_stored.__self__  # the browser's progress arrives through the page's script when it renders
    learner = store.on_stored.__self__
    assert isinstance(learner, LearnerProgress) and learner.store is store
    assert learner.state is page.state and not learner.following
    doc = Document()
    doc.add_root(page.get_root(doc))
    # no component of the Check tab's on the first page: the page's one script stores the progress
    assert [m.name for m in doc.models if isinstance(m, ReactiveESM)] == ["BrowserBridge"]
    tabs = page.select(pn.Tabs)[0]
    check = [title for title, _ in zip(tabs._names, tabs.objects, strict=True)].index("Check")
    assert isinstance(tabs.objects[check], pn.Spacer)  # nothing built before the tab is shown
    page.state.move_query(1.0, 1.0)  # the task ticks before the tab was ever opened
    assert learner.progress.task("nlp").done
    tabs.active = check
    view = tabs.objects[check]
    assert view.name == "check"  # the Check tab's own layout
    (tab,) = view.select(CheckTab)
    assert "Task 1 — done" in dict(tab.tasks)["nlp"] and escape(PRIVACY) in tab.intro
    lab = view.select(pn.widgets.FileDownload)
    assert len(lab) == 1 and lab[0].file == str(LAB_NOTEBOOK) and lab[0].filename == "attention_lab.ipynb"
    assert not lab[0].embed and LAB_NOTEBOOK.read_bytes().startswith(b"{")  # sent when pressed, as the repo has it


def test_the_train_task_ticks_when_two_heads_train_a_painted_target_below_one_heads_floor(learner):
    t = learner.state.training
    t.activate()
    t.choose_target("yourself")
    for i, j in ((1, 0), (1, 1), (2, 1), (2, 2)):  # previous token on "I love NLP": one head's floor is log 2
        t.paint(i, j)
    t.show(500, False)
    assert not learner.progress.task("train").done  # one head stops at its floor
    t.set_heads(2)
    assert not learner.progress.task("train").done  # not played yet: the page shows the random start
    t.show(0, True)  # Play: the run's end is below the floor
    record = learner.progress.task("train")
    assert record.done and record.seen["pattern"] == "100.100.010"
    assert record.seen["loss"] < record.seen["floor"] == pytest.approx(0.6931, abs=1e-4)
    # the record survives the browser's store, and a forged one (a loss above its floor) does not
    assert Progress.from_json(learner.progress.to_json()).task("train").done
    forged = learner.progress.to_json().replace('"floor":0.6931', '"floor":0.1')
    assert not Progress.from_json(forged).task("train").done
