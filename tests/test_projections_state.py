"""The Projections and Heads tabs' state, page address and export, without a browser.

Expected numbers come from the course text (Section 6, Module 2) or from the plain-loop reference in
tests/loop_reference.py, never from the code under test.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from core import random_projections
from services.rooms import RoomRegistry
from session.address import address_of, apply_address, parse_address
from session.state import DEFAULT_TEMPERATURE, AttentionState
from tests.loop_reference import attention as loop_attention
from tests.loop_reference import matmul
from tests.loop_reference import multi_head as loop_multi_head
from widgets.export import to_csv, to_json
from widgets.room import RoomControls

X_COURSE = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # Section 6's keys, also its queries
LOVE = [0.1978, 0.4011, 0.4011]  # Section 6: the weights of q_love = (0, 1)
EYE = [[1.0, 0.0], [0.0, 1.0]]


@pytest.fixture
def state():
    return AttentionState()


def shared(state: AttentionState) -> dict:
    return state.snapshot()


def assert_same_view(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(np.asarray(a[name], dtype=object), np.asarray(b[name], dtype=object),
                                      err_msg=name)


# --- the first head: Q = K = V = X, the course's example ------------------------------------------------------

def test_the_first_head_projects_nothing_and_gives_module_2s_weights(state):
    np.testing.assert_array_equal(state.embeddings, X_COURSE)
    r = state.head_self_attention()
    for P in r.projections:
        np.testing.assert_array_equal(P, X_COURSE)  # Q = K = V = X
    _, weights, output = loop_attention(X_COURSE, X_COURSE, X_COURSE)
    np.testing.assert_allclose(r.attention.weights, weights, rtol=1e-12)
    np.testing.assert_allclose(r.attention.weights[1], LOVE, atol=5e-5)
    np.testing.assert_allclose(r.attention.output, output, rtol=1e-12)


def test_identity_projections_give_symmetric_scores_and_learned_ones_break_them(state):
    S = state.head_self_attention().attention.scores
    np.testing.assert_array_equal(S, S.T)  # X Xᵀ / √2: s(I, love) = s(love, I)
    np.testing.assert_allclose(S, np.array([[1, 0, 1], [0, 1, 1], [1, 1, 2]]) / math.sqrt(2), rtol=1e-15)
    assert state.new_projection_draw()
    S = state.head_self_attention().attention.scores
    assert not np.allclose(S, S.T)


def test_section_6_preset_gives_the_course_weights_and_values_2_6_8(state):
    assert state.load_projection_preset("Section 6")
    r = state.head_self_attention()
    np.testing.assert_allclose(r.attention.weights[1], LOVE, atol=5e-5)  # q_love = (0, 1) against (1,0), (0,1), (1,1)
    assert r.projections.V[:, 0].tolist() == [2.0, 6.0, 8.0]  # 8 = 2 + 6 where the course has 4
    # the love row's output by hand: 0.1978 * 2 + 0.4011 * 6 + 0.4011 * 8
    _, weights, output = loop_attention(X_COURSE, X_COURSE, [[2, 0], [6, 0], [8, 0]])
    np.testing.assert_allclose(r.attention.output, output, rtol=1e-12)


def test_a_new_draw_takes_the_next_seed(state):
    assert state.new_projection_draw() and state.new_projection_draw()
    assert state.projection_seed == 2
    p = random_projections(2, d_k=2, d_v=2)
    for k, W in enumerate((p.W_Q, p.W_K, p.W_V)):
        np.testing.assert_array_equal(state.projections[0, k], W)
    np.testing.assert_array_equal(state.embeddings, X_COURSE)


# --- editing: bad input changes nothing but the message ---------------------------------------------------------

@pytest.mark.parametrize("edit, field, why", [
    (lambda s: s.set_embedding(1, 0, "abc"), "x_love[1]", "'abc' is not a number"),
    (lambda s: s.set_embedding(2, 1, "nan"), "x_NLP[2]", "not a finite number"),
    (lambda s: s.move_embedding(0, 1e7, 0), "x_I", "outside ±1e+06"),
    (lambda s: s.set_projection(0, 0, 1, "1,5"), "W_Q[1,2]", "'1,5' has a comma: this page writes a decimal point"),
    (lambda s: s.move_basis_image(2, 1, "inf", 0), "W_V[2]", "not a finite number"),
    (lambda s: s.set_w_o(0, 0, ""), "W_O[1,1]", "is empty"),
    (lambda s: s.set_temperature("0"), "T", "outside 0.01 to 100"),
    (lambda s: s.set_temperature("1e3"), "T", "outside 0.01 to 100"),
    (lambda s: s.set_temperature("<b>1</b>"), "T", "is not a number"),
    (lambda s: s.set_heads(5), "heads", "from 1 to 4"),
    (lambda s: s.set_heads(True), "heads", "from 1 to 4"),
    (lambda s: s.select_head(1), "head", "choose 1 to 1"),
    (lambda s: s.show_head_in_explorer(2), "head", "choose 1 to 1"),
    (lambda s: s.load_projection_preset("mine"), "preset", "is not one of"),
])
def test_bad_input_is_refused_with_a_message_and_changes_nothing_else(state, edit, field, why):
    before = shared(state)
    assert edit(state) is False
    assert state.message_field == field and why in state.message and "The last good value stays" in state.message
    assert_same_view(shared(state), before)


def test_edits_of_x_and_w_change_the_numbers(state):
    assert state.set_embedding(1, 0, "0.5") and state.set_projection(1, 0, 1, "−1")  # the minus sign, as typed
    X = [[1.0, 0.0], [0.5, 1.0], [1.0, 1.0]]
    W_K = [[1.0, -1.0], [0.0, 1.0]]
    np.testing.assert_array_equal(state.embeddings, X)
    np.testing.assert_array_equal(state.projections[0, 1], W_K)
    r = state.head_self_attention()
    _, weights, _ = loop_attention(matmul(X, EYE), matmul(X, W_K), matmul(X, EYE))
    np.testing.assert_allclose(r.attention.weights, weights, rtol=1e-12)
    assert state.move_basis_image(2, 0, 3, -2)  # e₁W_V = (3, -2): W_V's first row
    np.testing.assert_array_equal(state.projections[0, 2], [[3.0, -2.0], [0.0, 1.0]])
    assert state.message == ""


def test_the_same_number_again_changes_nothing(state):
    seen = []
    state.param.watch(lambda e: seen.append(e.name), ["embeddings", "projections"])
    assert state.set_embedding(0, 0, "1") and state.move_embedding(2, 1, 1) and state.set_projection(0, 1, 1, "1.0")
    assert seen == []


# --- temperature ------------------------------------------------------------------------------------------------

def test_temperature_sqrt_d_k_is_the_paper_and_its_limits_are_argmax_and_uniform(state):
    assert state.temperature == DEFAULT_TEMPERATURE == math.sqrt(2)
    state.load_projection_preset("Section 6")
    np.testing.assert_allclose(state.head_self_attention().attention.weights[1], LOVE, atol=5e-5)
    assert state.set_temperature("0.01")
    # q_love scores 0, 1, 1 against the keys: all the weight on the two largest, shared
    np.testing.assert_allclose(state.head_self_attention().attention.weights[1], [0, 0.5, 0.5], atol=1e-40)
    assert state.set_temperature(100)
    w = state.head_self_attention().attention.weights[1]
    np.testing.assert_allclose(w, 1 / 3, atol=0.0035)
    _, want, _ = loop_attention(X_COURSE, X_COURSE, [[2, 0], [6, 0], [8, 0]], divide_by=100.0)
    np.testing.assert_allclose(w, want[1], rtol=1e-12)


# --- heads -------------------------------------------------------------------------------------------------------

def test_more_heads_reset_w_o_to_their_average(state):
    assert state.set_heads(3)
    np.testing.assert_array_equal(state.w_o, np.vstack([np.eye(2) / 3] * 3))
    r = state.head_attention()
    assert len(r.heads) == 3 and r.concat.shape == (3, 6)
    np.testing.assert_allclose(r.output, sum(np.asarray(h.attention.output) for h in r.heads) / 3, rtol=1e-12)
    assert state.select_head(2) and state.set_heads(2) and state.head == 1  # the shown head stays a running one


def test_the_two_head_preset_attends_to_the_previous_token_and_to_itself(state):
    assert state.load_heads_preset()
    assert state.heads == 2 and state.temperature == math.sqrt(2)
    r = state.head_attention()
    assert r.heads[0].attention.weights.argmax(axis=1).tolist() == [0, 0, 1]
    assert r.heads[1].attention.weights.argmax(axis=1).tolist() == [0, 1, 2]
    P = state.projections
    heads, concat, output = loop_multi_head(state.embeddings, P[:2, 0], P[:2, 1], P[:2, 2], state.w_o)
    np.testing.assert_allclose(r.output, output, rtol=1e-12, atol=1e-15)


def test_a_head_shown_in_the_explorer_gives_it_its_keys_values_and_query(state):
    state.load_heads_preset()
    assert state.show_head_in_explorer(0)
    X = state.embeddings
    c, s = 0.5, math.sqrt(3) / 2
    np.testing.assert_allclose(state.keys, 2 * np.asarray(X), rtol=1e-15)  # W_K = 2 I
    np.testing.assert_allclose(state.values, X, rtol=1e-15)  # W_V = I
    # love's query in head 1 is x_love turned back by 60 degrees, 2.5 times: 2.5 x_I
    assert state.selected == 1 and state.query == pytest.approx((2.5, 0.0), abs=1e-15)
    assert state.tokens == ["I", "love", "NLP"] and state.preset == "Custom" and state.scale
    q = matmul([[c, s]], [[2.5 * c, -2.5 * s], [2.5 * s, 2.5 * c]])  # x_love W_Q, by hand
    np.testing.assert_allclose(q, [[2.5, 0.0]], atol=1e-15)
    _, weights, output = loop_attention(q, 2 * np.asarray(X), X)
    np.testing.assert_allclose(state.result.weights[1], weights[0], rtol=1e-12)
    np.testing.assert_allclose(state.result.output[1], output[0], rtol=1e-12)
    assert state.head == 0


def test_a_head_too_large_for_the_explorer_is_refused(state):
    state.move_embedding(0, 1e6, 0)
    state.move_basis_image(1, 0, 1e6, 0)
    before = (state.tokens, state.keys, state.values, state.query)
    assert not state.show_head_in_explorer(0)
    assert "leave ±1e+06" in state.message
    assert (state.tokens, state.keys, state.values, state.query) == before


def test_a_follower_takes_the_heads_and_their_numbers():
    teacher, student = AttentionState(), AttentionState()
    teacher.load_heads_preset()
    teacher.set_temperature("0.5")
    teacher.cost_n = 1024
    student.apply_snapshot(teacher.snapshot())
    for name in ("embeddings", "projections", "heads", "head", "w_o", "temperature", "cost_n"):
        np.testing.assert_array_equal(getattr(student, name), getattr(teacher, name), err_msg=name)
    np.testing.assert_array_equal(student.head_attention().output, teacher.head_attention().output)


def test_a_room_follows_the_presenters_heads_temperature_and_n():
    registry = RoomRegistry(end_after=120)
    teacher, student = AttentionState(), AttentionState()
    presenter = RoomControls(state=teacher, registry=registry)
    presenter._on_present(None)
    follower = RoomControls(state=student, registry=registry)
    follower._enter(presenter.code, None)
    teacher.load_heads_preset()
    teacher.set_temperature("0.25")
    teacher.cost_n = 2048
    assert follower.following and (student.heads, student.temperature, student.cost_n) == (2, 0.25, 2048)
    np.testing.assert_array_equal(student.projections, teacher.projections)
    np.testing.assert_array_equal(student.head_attention().output, teacher.head_attention().output)
    student.select_head(1)  # the learner's own move: they explore on their own
    assert not follower.following and teacher.head == 0


# --- the page address --------------------------------------------------------------------------------------------

def test_the_default_page_writes_none_of_the_new_arguments(state):
    assert address_of(state) == {"q": "0.0,1.0", "row": "love", "mode": "normal", "theme": "light"}


def _reopen(address: dict) -> AttentionState:
    state = AttentionState()
    apply_address(state, {k: [v.encode()] for k, v in address.items()})
    return state


def test_whatever_the_page_writes_reopens_the_same_view(state):
    state.load_heads_preset()
    state.set_heads(3)
    state.select_head(2)
    state.set_w_o(4, 1, "0.25")
    state.new_projection_draw()
    state.move_embedding(1, 0.1, 0.7)
    state.set_temperature("0.3")
    state.cost_n = 4096
    address = address_of(state)
    assert {"embeddings", "heads", "head", "wq3", "wk3", "wv3", "wo", "temperature", "n", "seed"} <= address.keys()
    again = _reopen(address)
    assert again.notice == ""
    assert_same_view(shared(again), shared(state))
    assert address_of(again) == address
    np.testing.assert_array_equal(again.head_attention().output, state.head_attention().output)


@pytest.mark.parametrize("args, problem", [
    ({"embeddings": "1,0;0,1"}, "embeddings = '1,0;0,1' ignored: 3 rows"),
    ({"embeddings": "1,0;0,1;1,nan"}, "embeddings = '1,0;0,1;1,nan' ignored"),
    ({"heads": "0"}, "heads = '0' ignored: choose 1 to 4."),
    ({"head": "2"}, "head = '2' ignored: there is 1 head, 1"),
    ({"heads": "2", "head": "3"}, "head = '3' ignored: choose one of the 2 heads"),
    ({"wq1": "1,0;0"}, "wq1 = '1,0;0' ignored: head 1's W_Q is 2 rows"),
    ({"wv5": "1,0;0,1"}, "unknown argument 'wv5' ignored."),
    ({"wo": "1,0;0,1;1,1"}, "wo = '1,0;0,1;1,1' ignored: W_O of 1 head is 2 rows"),
    ({"heads": "2", "wo": "1,0;0,1"}, "wo = '1,0;0,1' ignored: W_O of 2 heads is 4 rows"),
    ({"temperature": "0.001"}, "temperature = '0.001' ignored: a number from 0.01 to 100."),
    ({"temperature": "sqrt2"}, "temperature = 'sqrt2' ignored"),
    ({"n": "100"}, "n = '100' ignored: choose one of 3, 8, 16"),
    ({"seed": "-3"}, "seed = '-3' ignored: a whole number from 0 to 2147483647."),
    ({"seed": "٣"}, "seed = '٣' ignored"),
])
def test_bad_arguments_are_ignored_with_a_notice(args, problem):
    settings, problems = parse_address({k: [v.encode()] for k, v in args.items()}, ["I", "love", "NLP"])
    assert any(p.startswith(problem) for p in problems), problems
    state = _reopen(args)
    assert problem.split(" ignored")[0] in state.notice
    # what is refused keeps its default; what is good is taken
    np.testing.assert_array_equal(state.embeddings, X_COURSE)
    assert state.temperature == math.sqrt(2) and state.cost_n == 256 and state.projection_seed == 0
    if "heads" in args and args["heads"] == "2":
        assert state.heads == 2 and state.head == 0 and state.w_o.shape == (4, 2)


def test_arguments_read_together_with_the_rest_of_the_address():
    state = _reopen({"heads": "2", "head": "2", "wk2": "0,1;1,0", "temperature": "2", "n": "8", "q": "1,1"})
    assert (state.heads, state.head, state.temperature, state.cost_n, state.query) == (2, 1, 2.0, 8, (1.0, 1.0))
    np.testing.assert_array_equal(state.projections[1, 1], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(state.w_o, np.vstack([np.eye(2) / 2] * 2))
    with pytest.raises(ValueError):  # read-only, as the state's own arrays
        state.projections[0, 0, 0, 0] = 5.0


# --- export ------------------------------------------------------------------------------------------------------

def test_json_export_holds_the_heads_numbers(state):
    state.load_heads_preset()
    state.set_temperature("0.5")
    data = json.loads(to_json(state))["projections"]
    assert data["tokens"] == ["I", "love", "NLP"] and data["temperature"] == 0.5 and data["d_k"] == 2
    assert len(data["heads"]) == 2 and data["shown_head"] == 1
    P = state.projections
    heads, concat, output = loop_multi_head(data["embeddings"], P[:2, 0], P[:2, 1], P[:2, 2], data["W_O"],
                                            divide_by=0.5)
    for got, (Q, _, _, weights, out) in zip(data["heads"], heads, strict=True):
        np.testing.assert_allclose(got["Q"], Q, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got["weights"], weights, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(got["output"], out, rtol=1e-12)
        np.testing.assert_allclose(got["max_weight"], [max(row) for row in weights], rtol=1e-12)
        H = [-sum(a * math.log(a) for a in row if a > 0) for row in weights]
        np.testing.assert_allclose(got["entropy"], H, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(data["concat"], concat, rtol=1e-12)
    np.testing.assert_allclose(data["output"], output, rtol=1e-12)


def test_csv_export_has_the_heads_numbers_one_per_line(state):
    state.load_projection_preset("Section 6")
    rows = list(csv.DictReader(io.StringIO(to_csv(state))))
    by = {(r["quantity"], r["query_token"], r["key_token"], r["dimension"]): float(r["value"]) for r in rows}
    assert by[("temperature", "", "", "")] == math.sqrt(2)
    assert by[("embedding", "", "NLP", "1")] == 1.0
    assert by[("head1_W_V", "", "", "[1][0]")] == 6.0  # e₂W_V = (6, 0)
    assert by[("head1_V", "", "NLP", "0")] == 8.0
    assert [by[("head1_weight", "love", k, "")] for k in ("I", "love", "NLP")] == pytest.approx(LOVE, abs=5e-5)
    assert by[("head1_output", "love", "", "0")] == pytest.approx(
        sum(a * v for a, v in zip(LOVE, (2, 6, 8), strict=True)), abs=5e-4)
    assert by[("W_O", "", "", "[1][1]")] == 1.0
    assert sum(1 for r in rows if r["quantity"].startswith("head1_")) == 3 * 4 + 3 * 3 * 2 + 9 * 2 + 3 * 2 + 3 * 2
