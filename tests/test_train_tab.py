"""The Train tab as the server builds it and takes what its page sends (link/train.py, widgets/train.py, the queue of
reports in services/train_queue.py), without a browser.

What is expected comes from the tab's contract, not from the code: the page draws the tab (so the server holds one
component, its data and its stylesheets, and no figure or widget); a report the page writes is taken later, the
newest of a page's reports once per turn, and never before what the page sent ahead of it; a download holds the
core's own run (core/training/), full precision.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from types import SimpleNamespace

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import ImportedStyleSheet, Plot, Widget
from panel.models.esm import ReactiveESM

import app
from core.training import TRAINING_PRESETS, train
from link.train import REPORT_GAP, TrainLink
from services import train_queue
from services.train_queue import TrainQueue
from session.training import RUN_STEPS
from widgets.tabs import LazyTabs

TITLES = ["Weights", "Matrix", "All steps", "Recipe", "Edit", "Trap", "√d_k", "Projections", "Heads · n²", "Train",
          "Real model", "Check", "Export", "Keys"]


class ServedDoc(Document):
    """A page's document, served once the page is built (:meth:`serve`): then its callbacks run when the test says."""

    session_context = None

    def __init__(self):
        super().__init__()
        self.ticks, self.timeouts = [], []

    def serve(self) -> None:
        self.session_context = SimpleNamespace(id="served", request=SimpleNamespace(arguments={}, headers={},
                                                                                      cookies={}))

    def add_next_tick_callback(self, fn):
        self.ticks.append(fn)

    def add_timeout_callback(self, fn, ms):
        self.timeouts.append((ms, fn))


def open_tab(doc=None):
    """A page with its Train tab shown; its runs computed at once. Returns (page, doc, the tab's component)."""
    page = app.create_app()
    doc = doc if doc is not None else Document()
    doc.add_root(page.get_root(doc))
    layout = next(o for o in page.select(LazyTabs))
    layout.active = TITLES.index("Train")
    tab = next(o for o in layout[layout.active].select(TrainLink))
    doc.add_root(tab.report)  # as a served page's view adds it (TrainLink.attach)
    return page, doc, tab


def write_report(doc, tab: TrainLink, step, playing, seq) -> None:
    """What link/train.js writes into the report row, as a page's patch."""
    new = {"type": "map", "entries": [["step", [step]], ["playing", [playing]], ["seq", [seq]]]}
    doc.apply_json_patch({"events": [{"kind": "ModelChanged", "model": {"id": tab.report.id}, "attr": "data",
                                      "new": new}]})


def send(doc, tab: TrainLink, **data) -> None:
    """What the tab's script sends with model.send_msg, as a page's patch."""
    model = next(iter(tab._models.values()))[0]
    values = {"type": "map", "entries": [["model", {"id": model.id}],
                                         ["data", {"type": "map", "entries": list(data.items())}]]}
    doc.apply_json_patch({"events": [{"kind": "MessageSent", "msg_type": "bokeh_event",
                                      "msg_data": {"type": "event", "name": "data_event", "values": values}}]})


def test_the_tab_is_one_component_the_page_draws():
    _, doc, tab = open_tab()
    model = next(iter(tab._models.values()))[0]
    models = model.references()
    # the component, its data and its stylesheets: no figure, no source, no widget (Panel's and Bokeh's for the
    # same tab were 116 models, about 0.2 s of the server's CPU each time a learner opened it)
    assert sum(isinstance(m, ReactiveESM) for m in models) == 1
    assert not [m for m in models if isinstance(m, (Plot, Widget))]
    assert {type(m) for m in models} - {type(model), type(model.data), ImportedStyleSheet} == set()
    assert len(models) <= 6
    # everything the tab shows comes with it: the run, the settings, its texts and what was learned
    run = train(TRAINING_PRESETS["attend to the previous token"], seed=0, steps=RUN_STEPS)
    assert list(tab.run["loss"]) == run.loss.tolist() and tab.run["tokens"] == ["attention", "is", "all", "you", "need"]
    assert tab.settings == {"target": "previous", "seed": 0, "learning_rate": 0.05, "temperature": 1.0, "scale": True,
                            "heads": 1}
    assert tab.words["targets"]["paint"] == "Paint your own" and tab.words["play"] == "Play"
    assert "What was learned" in tab.summary and "data-swap" in tab.summary
    # the constant the page shares with the server comes with it too: the matrix's ink, in one place
    from link.rules import INK_THRESHOLD

    assert tab.ink_threshold == INK_THRESHOLD and model.data.ink_threshold == INK_THRESHOLD


def test_a_served_pages_reports_are_taken_paced_the_newest_once_a_turn(monkeypatch):
    waits = []
    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)), share=train_queue.REPORTS_SHARE)
    monkeypatch.setattr("link.train.get_report_queue", lambda: queue)
    page, doc, tab = open_tab(ServedDoc())
    t = page.state.training
    doc.serve()
    # Play, Pause, Play within a moment: nothing is taken while the page writes, and the page waits in the queue once
    for seq, (step, playing) in enumerate([(0, True), (37, False), (37, True)], start=1):
        write_report(doc, tab, step, playing, seq)
    assert (t.step, t.playing, t.plays) == (0, False, 0)
    assert len(queue) == 1 and len(waits) == 1
    waits.pop()[1]()  # the queue's turn: the page's take is handed to its document
    clock = iter([10.0, 10.002])  # the queue's clock: the take began at 10.0 s and ended 2 ms later
    monkeypatch.setattr(train_queue, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    monkeypatch.setattr("link.train.time", SimpleNamespace(perf_counter=lambda: 10.0))
    doc.ticks.pop()()
    # the newest report, counted once; the reports' queue rests three times what it took (a quarter of the loop)
    assert (t.step, t.playing, t.plays) == (37, True, 1)
    assert waits[0][0] == pytest.approx(0.006)
    # the next report of this page, within REPORT_GAP of the last, waits for the gap before it queues
    write_report(doc, tab, 120, False, 4)
    assert len(doc.timeouts) == 1 and doc.timeouts[0][0] == round(REPORT_GAP * 1000) and len(queue) == 0
    doc.timeouts.pop()[1]()
    assert len(queue) == 1 and t.step == 37


def test_a_choice_takes_the_report_the_page_sent_before_it(monkeypatch):
    queue = TrainQueue(later=lambda delay, fn: None)
    monkeypatch.setattr("link.train.get_report_queue", lambda: queue)
    page, doc, tab = open_tab(ServedDoc())
    t = page.state.training
    doc.serve()
    write_report(doc, tab, 240, True, 1)  # Play from 240, waiting its turn
    send(doc, tab, action="learning_rate", value=0.2)  # then a new learning rate: its run opens at step 0, paused
    assert (t.learning_rate, t.step, t.playing, t.plays) == (0.2, 0, False, 1)
    doc.ticks.clear()
    for fn in queue.waiting():  # the queue's later turn finds nothing left to take
        fn[1]()()
    assert (t.step, t.playing) == (0, False)


@pytest.mark.parametrize("row", [
    {"step": ["5"], "playing": [True]}, {"step": [True], "playing": [True]}, {"step": [2.5], "playing": [False]},
    {"step": [5], "playing": ["yes"]}, {"step": [5]}, {"playing": [True]}, {"step": [], "playing": []},
])
def test_a_report_row_no_page_writes_is_ignored(row):
    page, doc, tab = open_tab()
    t = page.state.training
    before = t.view()
    entries = [[k, v] for k, v in {**row, "seq": [1]}.items()]
    doc.apply_json_patch({"events": [{"kind": "ModelChanged", "model": {"id": tab.report.id}, "attr": "data",
                                      "new": {"type": "map", "entries": entries}}]})
    assert t.view() == before and t.message == ""


def test_a_step_outside_the_run_gets_a_message_and_changes_nothing_else():
    page, doc, tab = open_tab()
    t = page.state.training
    before = t.view()
    write_report(doc, tab, RUN_STEPS + 1, False, 1)
    assert t.view() == before
    assert tab.message == "Step 501 refused: a whole number from 0 to 500."


def test_the_choices_reach_the_state_and_a_bad_one_gets_a_message():
    page, doc, tab = open_tab()
    t = page.state.training
    send(doc, tab, action="target", target="yourself")
    send(doc, tab, action="seed")
    send(doc, tab, action="temperature", value=2.0)
    send(doc, tab, action="scale", on=False)
    send(doc, tab, action="heads", heads=2)
    assert (t.target, t.seed, t.temperature, t.scale, t.heads) == ("yourself", 1, 2.0, False, 2)
    assert tab.settings == {"target": "yourself", "seed": 1, "learning_rate": 0.05, "temperature": 2.0,
                            "scale": False, "heads": 2}
    before = t.view()
    send(doc, tab, action="learning_rate", value=2)
    assert t.view() == before
    assert tab.message == "Learning rate 2 refused: a number above 0 and at most 1.0."
    send(doc, tab, action="paint", row=0, col=1)  # a painted cell: the target becomes the pattern
    assert t.target == "paint" and t.pattern.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1]] and tab.paintable
    assert tab.message == ""


def test_the_summary_quotes_its_tokens_in_sentences_and_says_why_w_v_learned_other_values():
    """What was learned reads as sentences: the tokens' names quoted ("the query of is points where the key of all
    points" read as nonsense), a capital first letter, the minus sign of −46°; "Retrieve the value" says why W_V's
    values are not the targets 2, 6, 4 in order: each output is a mix of them (core: I reads love's value, love
    NLP's, NLP averages the three)."""
    page, doc, tab = open_tab()
    t = page.state.training
    text = " ".join(re.sub("<[^>]+>", " ", tab.summary).split())
    assert "The query of position i points where the key of i − 1 points" in text
    assert "a turn by −46°" in text and "-46" not in text
    send(doc, tab, action="target", target="nlp")
    text = " ".join(re.sub("<[^>]+>", " ", tab.summary).split())
    assert "The query of “I” points where the key of “NLP” points, the query of “love” points" in text
    send(doc, tab, action="target", target="retrieve")
    text = html.unescape(" ".join(re.sub("<[^>]+>", " ", tab.summary).split()))
    assert "W_V learned the values I 3.98, love 2.01, NLP 6.00, not the targets in order: each output is a mix" in text
    assert "“I” reads the value of “love” (weight 1.00), so its output is 2.02." in text
    assert "“NLP” spreads its attention, so its output 4.00 is the weighted average of the values." in text
    assert "the values W_V learns need not be 2, 6 and 4" in tab.words["notes"]["retrieve"]
    send(doc, tab, action="sentence", tokens=3)  # painting on "I love NLP"
    assert t.target == "paint" and t.run.task.tokens == ("I", "love", "NLP") and tab.paintable
    assert tab.words["sentences"] == {"3": "I love NLP", "5": "attention is all you need"}


def test_a_download_holds_the_cores_run(monkeypatch):
    page, doc, tab = open_tab()
    sent = []
    monkeypatch.setattr(tab, "_send_msg", sent.append)
    send(doc, tab, action="target", target="retrieve")
    send(doc, tab, action="download", kind="json")
    send(doc, tab, action="download", kind="csv")
    send(doc, tab, action="download", kind="../../etc/passwd")  # no such file: nothing
    run = train(TRAINING_PRESETS["retrieve the value"], seed=0, steps=RUN_STEPS)
    assert [m["download"] for m in sent] == ["training-run.json", "training-run.csv"]
    data = json.loads(sent[0]["text"])
    assert data["loss"] == run.loss.tolist() and data["W_V"] == run.W_V.tolist()
    rows = list(csv.reader(io.StringIO(sent[1]["text"])))
    assert [float(r[5]) for r in rows if r[0] == "loss"] == run.loss.tolist()


def test_the_tab_speaks_the_pages_language():
    page, doc, tab = open_tab()
    with pn.io.hold(doc):
        page.state.lang = "fr"
    assert tab.words["play"] == "Lecture" and tab.words["decimal"] == ","
    assert "Ce qui a été appris" in tab.summary
