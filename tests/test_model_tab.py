"""The Real model tab's state (session/model.py) and view (widgets/model.py) without a browser: what a learner types,
the address, a room, the queue off the loop, hostile clicks and the downloads. Expected tokens and weights come from
the reference implementation (tests/data/minilm_reference.*)."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from session.address import address_of, apply_address
from session.model import MAX_SENTENCE_CHARS, compute
from session.state import AttentionState
from widgets.model import ModelView

DATA = Path(__file__).with_name("data")
REFERENCE = json.loads((DATA / "minilm_reference.json").read_text())
ATTENTION = np.load(DATA / "minilm_reference.npz")
CAT = "The cat sat on the mat."


def shown(state) -> str:
    return state.tr(state.model_message)


@pytest.fixture
def view():
    state = AttentionState()
    return ModelView(state=state)


def test_the_tab_opens_on_i_love_nlp_as_the_model_sees_it(view):
    r = view.state.model_result
    assert list(r.tokens) == REFERENCE["tokens"]["I love NLP"]
    np.testing.assert_allclose(r.weights, ATTENTION["attention_0"], atol=1e-5)


def test_a_typed_sentence_is_shown_and_kept_in_the_address(view):
    s = view.state
    assert s.set_sentence(f"  {CAT}\n")
    assert s.sentence == CAT and list(s.model_result.tokens) == REFERENCE["tokens"][CAT]
    s.show_head(0, 2)
    s.show_row(3)
    assert {k: address_of(s).get(k) for k in ("sentence", "model_layer", "model_head", "model_row")} == {
        "sentence": CAT, "model_layer": None, "model_head": "3", "model_row": "3"}
    other = AttentionState()
    apply_address(other, {k: [v.encode()] for k, v in address_of(s).items()})
    assert (other.sentence, other.model_layer, other.model_head, other.model_row) == (CAT, 0, 2, 3)
    assert other.notice == ""


@pytest.mark.parametrize(("text", "says"), [
    ("", "Type a sentence first"), ("\t\x00\x07  ", "Type a sentence first"),
    ("x" * 10_000, f"10000 characters: the Real model tab takes at most {MAX_SENTENCE_CHARS}"),
    ("word " * 60, "60 word pieces: the Real model tab takes at most 48"),
])
def test_bad_sentences_are_refused_with_a_message_and_change_nothing_else(view, text, says):
    s = view.state
    before = (s.sentence, s.model_result, s.model_layer, s.model_head, s.model_row)
    s.set_sentence(text)
    assert says in shown(s)
    assert (s.sentence, s.model_result, s.model_layer, s.model_head, s.model_row) == before
    assert view.message.object.startswith('<p class="field-message" role="alert">')


@pytest.mark.parametrize("text", ["I ❤️ NLP 🙂🚀", "我爱自然语言处理", "أحب معالجة اللغات الطبيعية", "!!!???...",
                                  "<script>alert('hi')</script> <b>bold</b> &amp;"])
def test_emoji_scripts_punctuation_and_markup_give_the_reference_tokens_shown_as_text(view, text):
    s = view.state
    assert s.set_sentence(text) and shown(s) == ""
    assert list(s.model_result.tokens) == REFERENCE["tokens"][text]
    assert "<script>" not in view.tokens.object and "<b>" not in view.tokens.object
    assert "<script>" not in view.inspector.object


def test_control_characters_become_spaces():
    s = AttentionState()
    s.require_model()
    s.set_sentence("I\tlove\x07NLP\n")
    assert s.sentence == "I love NLP"


def test_an_address_sentence_too_long_or_a_head_outside_the_model_is_ignored_with_a_notice():
    s = AttentionState()
    apply_address(s, {"sentence": [b"x" * 301], "model_head": [b"13"], "model_layer": [b"0"]})
    assert (s.sentence, s.model_head, s.model_layer) == ("I love NLP", 0, 0)
    notice = s.tr(s.notice)
    assert "sentence = " in notice and "up to 300 characters" in notice
    assert "model_head = '13' ignored: choose 1 to 12." in notice and "model_layer = '0' ignored" in notice


def test_a_room_shares_the_sentence_and_the_head_and_each_page_runs_it():
    presenter, follower = AttentionState(), AttentionState()
    presenter.require_model()
    follower.require_model()
    presenter.set_sentence(CAT)
    presenter.show_head(1, 8)
    follower.apply_snapshot(presenter.snapshot())
    assert (follower.sentence, follower.model_layer, follower.model_head) == (CAT, 1, 8)
    assert follower.model_result is presenter.model_result  # one forward pass per process for one sentence
    assert "model_result" in AttentionState.LOCAL_PARAMS and "model_message" in AttentionState.LOCAL_PARAMS


def test_sentences_typed_while_one_is_computed_wait_and_only_the_last_is_run():
    s = AttentionState()
    asked = []
    s.model_scheduler = lambda show, work: asked.append((show, work))
    s.require_model()
    assert len(asked) == 1  # "I love NLP", off the loop
    s.set_sentence("one")
    s.set_sentence("two")
    s.set_sentence(CAT)
    assert len(asked) == 1 and s.model_result is None  # at most one waiting per page
    show, work = asked.pop()
    show(work())  # the work takes the sentence typed last when its turn comes: "one" and "two" are never run
    assert s.sentence == CAT and not asked
    s.set_sentence("I love NLP")
    show, work = asked.pop()
    s.set_sentence("two")  # typed while the worker runs "I love NLP": shown, then "two" asked for
    show(compute("I love NLP"))
    assert s.sentence == "I love NLP" and len(asked) == 1
    show, work = asked.pop()
    show(work())
    assert s.sentence == "two" and not asked


def test_the_recipe_shows_the_reference_weights_and_its_scores_over_root_32(view):
    s = view.state
    s.set_sentence(CAT)
    s.show_head(0, 2)
    s.show_row(3)  # "sat"
    i = REFERENCE["attention"].index(CAT)
    html = view.inspector.object
    weights = [float(x) for x in html.split('data-weight="')[1:] for x in [x.split('"')[0]]]
    np.testing.assert_allclose(weights, ATTENTION[f"attention_{i}"][0, 2, 3], atol=1e-5)
    assert "Row sat: layer 1, head 3" in html and f"√32 = {math.sqrt(32):.4f}" in html


def test_hostile_clicks_are_ignored(view):
    s = view.state
    for x, y in ((math.nan, 1.0), (1.0, math.inf), ([1], 2), (-5.0, 3.0), (1e9, 1e9), ("1", "2")):
        view._on_grid_tap(SimpleNamespace(x=x, y=y))
    for y in (math.nan, -math.inf, [2], "2", -3.0, 1e9):
        view._on_matrix_tap(SimpleNamespace(x=1.0, y=y))
    assert (s.model_layer, s.model_head, s.model_row) == (0, 0, 2)
    assert not s.show_head(6, 0) and "is not in the model" in shown(s)
    assert not s.show_row(99)
    # True is an int to Python: it was taken as layer 1 (and row 1), then r.weights[True, 1] had an extra axis and
    # drawing the head raised ValueError
    assert not s.show_head(True, 1) and not s.show_head(0, False) and not s.show_row(True)
    assert (s.model_layer, s.model_head, s.model_row) == (0, 0, 2)
    assert s.show_head(np.int64(1), np.int64(4)) and s.show_row(np.int64(3))
    assert (s.model_layer, s.model_head, s.model_row) == (1, 4, 3)


def test_the_downloads_hold_the_head_and_write_tokens_as_text(view):
    s = view.state
    s.set_sentence("=1+2 -3 @4")
    s.show_head(2, 5)
    rows = list(csv.DictReader(io.StringIO(view.to_csv())))
    n = len(s.model_result.tokens)
    assert len(rows) == n * n and rows[0]["layer"] == "3" and rows[0]["head"] == "6"
    assert {r["query_token"] for r in rows} >= {"'=", "'+", "'-", "'@"}  # no cell a spreadsheet would compute
    data = json.loads(view.to_json())
    np.testing.assert_allclose(np.sum(data["weights"], axis=1), 1.0, atol=1e-12)
    assert len(data["queries"][0]) == 32 and data["d_k"] == 32
    s_row = np.array(data["scores"][1])
    np.testing.assert_allclose(np.array(data["queries"][1]) @ np.array(data["keys"]).T / math.sqrt(32), s_row,
                               rtol=1e-9)



def test_the_previous_token_head_leads_to_the_train_tab_s_previous_token_target():
    state, opened = AttentionState(), []
    state.training.target = "yourself"
    view = ModelView(state=state, on_train=lambda: opened.append(True))
    state.set_sentence(CAT)
    assert view.train.visible
    view._open_train()
    assert opened == [True] and state.training.target == "previous"
    assert (state.model_layer, state.model_head) == (0, 2)  # the reference's previous-token head
    assert not ModelView(state=AttentionState()).train.visible  # no Train tab to lead to (a lesson without it)


def test_a_lone_surrogate_in_a_sentence_is_a_space_and_the_address_can_be_written():
    """A crafted message's sentence with a lone surrogate (no text box makes one) ran, and then the page's address
    could not be written (UTF-8 has no lone surrogates): the sentence shown nowhere, and Present gave no link."""
    from urllib.parse import urlencode

    from session.address import address_of
    from session.model import clean_sentence
    from session.state import AttentionState

    assert clean_sentence("\ud800 lone") == "lone"
    state = AttentionState()
    state.sentence = clean_sentence("I love\udfff NLP")
    urlencode(address_of(state))  # raised UnicodeEncodeError
