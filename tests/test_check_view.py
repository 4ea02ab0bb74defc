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

from widgets.browser import BrowserBridge
from widgets.check import (
    CHECK_CSS, START_OUTPUTS, STORAGE_KEY, STORE_NAME, CheckView, LearnerProgress, ProgressStore, on_section_6,
)
from widgets.questions import BY_ID, PRACTICE, QUESTIONS, TRAIN_QUESTIONS, Progress
from widgets.state import AttentionState

ROOT = Path(__file__).resolve().parents[1]
TOL = dict(rel=0, abs=5e-5)
XSS = "<img src=x onerror=alert(1)>"


def recipe(q, keys=((1, 0), (0, 1), (1, 1)), values=(2, 6, 4)):
    """The course's three steps for one query, in plain Python: scores / sqrt(2), softmax, weighted sum."""
    scores = [(q[0] * k[0] + q[1] * k[1]) / math.sqrt(2) for k in keys]
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    weights = [x / sum(e) for x in e]
    return weights, sum(w * v for w, v in zip(weights, values))


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
    card = view.cards[qid]
    card.input.value = value
    card.check.clicks += 1
    return card


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


# --- questions through the view's widgets -----------------------------------------------------------------------
def test_every_question_is_shown_in_order_with_its_hook(view):
    root = view.__panel__()
    hooks = [c for col in root.objects for c in col.css_classes if c.startswith("question-")]
    assert hooks == [f"question-{q.id}" for q in (*QUESTIONS, *TRAIN_QUESTIONS)]  # the Train tab's two after
    for q in QUESTIONS:
        card = view.cards[q.id]
        assert f"feedback-{q.id}" in card.feedback.css_classes and "check-feedback" in card.feedback.css_classes
        assert f"Question {q.number}" in card.prompt.object and escape(q.prompt) in card.prompt.object
        if q.kind == "choice":
            assert list(card.input.options) == [c.text for c in q.choices] and card.input.value is None
        else:
            assert isinstance(card.input, pn.widgets.TextInput)
        assert ("<summary>Hint</summary>" in card.prompt.object) == bool(q.hint)
        assert escape(q.hint) in card.prompt.object


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.kind == "choice"], ids=lambda q: q.id)
def test_each_wrong_choice_gives_its_own_explanation_and_the_right_one_credit(view, q):
    card = view.cards[q.id]
    wrong = [i for i in range(len(q.choices)) if i != q.answer]
    for n, i in enumerate(wrong[:2], start=1):
        answer(view, q.id, i)
        assert escape(q.choices[i].feedback) in card.feedback.object
        assert all(escape(q.choices[j].feedback) not in card.feedback.object for j in wrong if j != i)
        assert f"Not yet — {n} of 3 tries used" in card.feedback.object
        assert escape(q.why) not in card.feedback.object  # the Why waits for a right answer
    answer(view, q.id, q.answer)
    assert "Right on try 3 — credit." in card.feedback.object and escape(q.why) in card.feedback.object
    assert card.check.disabled and card.show.disabled and card.input.disabled


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.kind == "number"], ids=lambda q: q.id)
def test_each_number_question_accepts_its_printed_answer(view, q):
    card = answer(view, q.id, q.answer)
    assert "Right on try 1 — credit." in card.feedback.object and escape(q.why) in card.feedback.object


def test_the_third_wrong_choice_shows_the_answer(view, learner):
    q = BY_ID["why-scale"]
    card = view.cards[q.id]
    for i in (0, 2, 3):
        answer(view, q.id, i)
    assert "Answer shown after three tries — this one no longer earns credit." in card.feedback.object
    assert escape(q.choices[3].feedback) in card.feedback.object  # the last wrong choice's explanation stays
    assert f"Answer: {escape(q.answer_text)}" in card.feedback.object and escape(q.why) in card.feedback.object
    assert card.show.disabled and not card.check.disabled
    answer(view, q.id, q.answer)
    assert "Right — the answer had already been shown, so no credit this time." in card.feedback.object
    assert learner.score_text == "0 of 14 with credit"


def test_show_answer_button(view, learner):
    q = BY_ID["two-key-softmax"]
    card = view.cards[q.id]
    card.show.clicks += 1
    assert "You chose to see the answer — this one earns no credit." in card.feedback.object
    assert "Answer: 0.731" in card.feedback.object and card.show.disabled
    assert learner.progress.of(q.id).shown == "asked" and learner.progress.of(q.id).tries == 0


def test_number_box_precision_and_enter(view, learner):
    card = view.cards["two-key-softmax"]
    answer(view, "two-key-softmax", "0.73")
    assert "Not precise enough: this question asks for 3 decimal places, and 0.73 has 2." in card.feedback.object
    assert learner.progress.of("two-key-softmax").tries == 1
    card.input.value = ".731"
    card.input.param.trigger("enter_pressed")  # Enter in the box checks too
    assert "Right on try 2 — credit." in card.feedback.object


def test_a_non_number_is_refused_with_a_message_and_is_not_a_try(view, learner):
    card = answer(view, "scaled-score", XSS)
    assert "is not a number" in card.feedback.object
    assert "<img" not in card.feedback.object and escape(XSS[:20]) in card.feedback.object
    assert learner.progress.of("scaled-score").tries == 0 and learner.progress.empty
    answer(view, "scaled-score", "4.2426")
    assert "Right on try 1 — credit." in card.feedback.object


def test_no_choice_made_is_refused(view, learner):
    card = view.cards["row-sum"]
    card.check.clicks += 1
    assert "Choose one of the answers first." in card.feedback.object and learner.progress.empty


def test_the_same_wrong_answer_twice_is_one_try(view, learner):
    card = answer(view, "dot-product", "5")
    card.check.clicks += 1  # a double click
    assert "already tried that answer" in card.feedback.object and learner.progress.of("dot-product").tries == 1


def test_score_line(view, learner):
    score = view._score
    assert "check-score" in score.css_classes and text_of(score.object) == "Score: 0 of 14 with credit"
    answer(view, "key-role", 1)
    answer(view, "dot-product", "6.0")
    view.cards["row-sum"].show.clicks += 1
    answer(view, "row-sum", 1)
    assert text_of(score.object) == "Score: 2 of 14 with credit"


def test_practice_is_built_when_opened_and_does_not_count(view, learner):
    assert not any(q.id in view.cards for q in PRACTICE) and not view._practice.visible
    assert "does not count" in " ".join(p.object for p in view.__panel__().objects if isinstance(p, pn.pane.HTML))
    view._practice_toggle.value = True
    assert view._practice.visible and [c.css_classes[-1] for c in view._practice.objects] == [
        f"question-{q.id}" for q in PRACTICE]
    card = answer(view, "practice-softmax", "0.881")
    assert "Practice problems do not count toward your progress." in card.feedback.object
    assert "Practice problem 4" in card.prompt.object and learner.score_text == "0 of 14 with credit"
    view._practice_toggle.value = False
    assert not view._practice.visible and "practice-softmax" in view.cards  # built once


def test_start_again_asks_then_clears_everything(view, learner, state):
    answer(view, "key-role", 1)
    answer(view, "weighted-output", "7.8")
    state.select_row(0)
    view._start.clicks += 1
    assert view._confirm.visible and view._keep.visible and not view._start.visible
    view._keep.clicks += 1
    assert not learner.progress.empty and view._start.visible
    view._start.clicks += 1
    view._confirm.clicks += 1
    assert learner.progress == Progress() and learner.store.value == ""
    assert view.cards["key-role"].input.value is None and view.cards["weighted-output"].input.value == ""
    assert view.cards["key-role"].feedback.object == "" and not view.cards["key-role"].check.disabled
    assert text_of(view._score.object) == "Score: 0 of 14 with credit"
    assert "I: not selected yet" in view._tasks["rows"].object


def test_few_bokeh_models_per_question(view):
    for qid in ("key-role", "dot-product"):
        models = Counter(type(m).__name__ for m in view.cards[qid].layout.get_root().references())
        own = sum(n for name, n in models.items() if name != "ImportedStyleSheet")  # the page's shared sheets
        assert own == 7, models


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
    assert not learner.progress.task("nlp").done and "☐" in view._tasks["nlp"].object
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
    html = view._tasks["nlp"].object
    assert "✓" in html and "Task 1 — done" in html and "q = (0.25, 1)" in html and "from 4.4067" in html


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
    assert why in learner.paused("nlp") and escape(why) in view._tasks["nlp"].object
    state.move_query(1, 1)
    state.select_row(0)
    assert not learner.progress.task("nlp").done and "I" not in learner.progress.task("rows").seen
    state.preset = "Section 6: scalar values"
    state.reset()
    state.guided = False
    assert learner.paused("nlp") == "" and "Not counting right now" not in view._tasks["nlp"].object
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
    rows = view._tasks["rows"]
    state.select_row(0)
    state.select_row(2)
    record = learner.progress.task("rows")
    assert not record.done and set(record.seen) == {"I", "NLP"} and "love: not selected yet" in rows.object
    state.select_row(1)  # the row already selected at the start: clicking it counts
    record = learner.progress.task("rows")
    assert record.done and "✓" in rows.object and "Task 2 — done" in rows.object
    assert record.seen["love"]["weights"] == pytest.approx([0.1978, 0.4011, 0.4011], **TOL)
    assert round(record.seen["love"]["weights"][0], 2) == 0.20 and round(record.seen["love"]["weights"][1], 2) == 0.40
    assert record.seen["I"]["weights"] == pytest.approx([0.4011, 0.1978, 0.4011], **TOL)
    assert record.seen["NLP"]["weights"] == pytest.approx([0.2483, 0.2483, 0.5035], **TOL)
    assert all(r["sum"] == 1.0 for r in record.seen.values())
    assert "love: 0.1978 + 0.4011 + 0.4011 = 1.0000" in rows.object


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
    assert "Task 1 — done" in view._tasks["nlp"].object and "Task 2 — done" in view._tasks["rows"].object


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
    answer(view, "weighted-output", "7.8")
    answer(view, "dot-product", "6")
    state.move_query(1, 1)
    stored = learner.store.value
    # a reload, or a server restart: a new session with a new state; the browser sends what it kept
    again = LearnerProgress(state=AttentionState())
    fresh = CheckView(learner=again)
    again.store.receive({"stored": stored})
    assert again.progress == learner.progress and again.store.value == stored
    cards = fresh.cards
    assert cards["key-role"].input.value == 0
    assert escape(BY_ID["key-role"].choices[0].feedback) in cards["key-role"].feedback.object
    assert cards["weighted-output"].input.value == "7.8"
    assert "Not precise enough" in cards["weighted-output"].feedback.object
    assert cards["dot-product"].check.disabled and "Right on try 1 — credit." in cards["dot-product"].feedback.object
    assert "Task 1 — done" in fresh._tasks["nlp"].object and "Score: 1 of 14 with credit" in fresh._score.object


def test_stored_progress_merges_with_a_task_done_before_it_arrived(state, learner):
    earlier = LearnerProgress(state=AttentionState())
    earlier.answer("key-role", 1)
    state.move_query(1, 1)  # done on this page before its browser sent the store
    learner.store.receive({"stored": earlier.store.value})
    assert learner.progress.task("nlp").done and learner.progress.of("key-role").credit


@pytest.mark.parametrize("stored", ["{broken", json.dumps({"format": "someone-else", "version": 1}), "[]",
                                    json.dumps({"format": "attention-explorer.progress", "version": 1,
                                                "answers": {"key-role": {"tries": 1, "right": False, "shown": "",
                                                                         "credit": True, "last": XSS}},
                                                "tasks": {}}), 42, {"x": 1}])
def test_a_corrupted_store_loads_as_nothing(learner, view, stored):
    learner.store.receive({"stored": stored})
    assert learner.progress == Progress() and view.cards["key-role"].feedback.object == ""


def test_another_tab_starting_again_clears_this_page(learner, view):
    answer(view, "key-role", 1)
    learner.store.receive({"stored": None})  # the key was removed in another tab
    assert learner.progress.empty and view.cards["key-role"].feedback.object == ""
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
    check = [title for title, _ in zip(tabs._names, tabs.objects)].index("Check")
    assert isinstance(tabs.objects[check], pn.Spacer)  # nothing built before the tab is shown
    page.state.move_query(1.0, 1.0)  # the task ticks before the tab was ever opened
    assert learner.progress.task("nlp").done
    tabs.active = check
    view = tabs.objects[check]
    assert view.name == "check"  # the Check tab's own layout
    html = " ".join(p.object for p in view.select(pn.pane.HTML))
    assert "Task 1 — done" in html and escape(PRIVACY) in html
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
