"""Classroom features without a browser: address, keys, step-through, export, projector styling.

Expected numbers come from the course example ("I love NLP", d_k = 2), worked by
hand: for q = q_love = (0, 1) the scores are (0, 1/√2, 1/√2), the weights
(1, e^{1/√2}, e^{1/√2}) / (1 + 2 e^{1/√2}) = (0.1978, 0.4011, 0.4011), the output 4.4067.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from bokeh.models import Plot

from app import create_app
from link.browser import handle_key
from session.address import address_of, apply_address, parse_address
from session.state import AttentionState, shown
from widgets.dk import DkPanel
from widgets.export import to_csv, to_json
from widgets.matrix import AttentionMatrix
from widgets.query_plot import QueryPlot
from widgets.stepper import step_latex
from widgets.steps import Announcer, Inspector, Readout
from widgets.style import FigureStyler
from widgets.weights import OutputLine, WeightBars

TOKENS = ["I", "love", "NLP"]
E = math.exp(1 / math.sqrt(2))
ROOT = Path(__file__).resolve().parents[1]
LOVE = [1 / (1 + 2 * E), E / (1 + 2 * E), E / (1 + 2 * E)]
LOVE_OUT = 2 * LOVE[0] + 6 * LOVE[1] + 4 * LOVE[2]


@pytest.fixture
def state():
    return AttentionState()


# --- the page address -------------------------------------------------------------------------------------

def test_a_full_address_sets_every_part(state):
    apply_address(state, {"q": [b"0.5,0.25"], "row": [b"nlp"], "step": [b"2"], "mode": [b"projector"],
                          "theme": [b"dark"]})
    assert (state.query, state.selected, state.guided, state.step) == ((0.5, 0.25), 2, True, 2)
    assert (state.mode, state.theme, state.notice) == ("projector", "dark", "")


@pytest.mark.parametrize("name, raw", [
    ("q", "abc"), ("q", "nan,1"), ("q", "1,inf"), ("q", "9e6,0"), ("q", "1"), ("q", "1,2,3"), ("q", ""),
    ("q", "1_000,0"), ("q", "0x10,1"), ("q", "1" * 4301 + ",0"), ("row", "9" * 5000), ("step", "1" * 4301),
    ("row", "<b>love</b>"), ("row", "Paris"), ("row", "1"), ("step", "4"), ("step", "0"), ("step", "two"),
    ("mode", "loud"), ("theme", "<script>alert(1)</script>"), ("zoom", "2"),
    ("preset", "Paris"), ("preset", "<i>Module 2</i>"), ("tokens", "I;love"), ("tokens", "I;<b>love</b>;NLP"),
    ("tokens", "I;I;NLP"), ("tokens", "a;b;c;d"), ("tokens", "I"), ("keys", "1,0;0,1"), ("keys", "1,0;0,1;1"),
    ("keys", "1,0;nan,1;1,1"), ("keys", "1,0,0;0,1,0;1,1,0"), ("keys", "1e7,0;0,1;1,1"), ("values", "2;6"),
    ("values", "2;6;x"), ("values", "1,2,3;4,5,6;7,8,9"), ("values", "2;6,1;4"), ("scale", "maybe"),
    ("causal", "1"), ("trap", "<b>on</b>"),
])
def test_a_bad_argument_is_named_and_the_default_kept(state, name, raw):
    apply_address(state, {name: [raw.encode()]})
    assert (state.query, state.selected, state.guided, state.mode, state.theme) == ((0.0, 1.0), 1, False,
                                                                                      "normal", "light")
    # the course example, as the course writes it
    assert (state.preset, state.tokens, state.scale, state.causal, state.trap) == (
        "Section 6: scalar values", ["I", "love", "NLP"], True, False, False)
    assert state.keys.tolist() == [[1, 0], [0, 1], [1, 1]] and state.values.tolist() == [2, 6, 4]
    assert state.notice.startswith("Some of the page address was ignored")
    assert f"{name} = {shown(raw)}" in state.notice or f"unknown argument {name!r}" in state.notice


def test_whatever_the_page_writes_reopens_the_same_view(state):
    """A typed q outside the plotted plane, token names that differ only in case, edited data."""
    state.rename_token(2, "LOVE")
    state.set_query_coordinate(0, "5")
    assert state.query == (5.0, 1.0)
    args = address_of(state)
    again = AttentionState()
    apply_address(again, {k: [v.encode()] for k, v in args.items()})
    assert again.notice == "" and (again.query, again.selected, again.tokens) == ((5.0, 1.0), 1, ["I", "love", "LOVE"])
    state.select_row(2)
    apply_address(again, {k: [v.encode()] for k, v in address_of(state).items()})
    assert again.notice == "" and again.selected == 2 and again.tokens[again.selected] == "LOVE"
    # a row in another case than written is taken only when it names one token
    apply_address(again, {"row": [b"nlp"], "tokens": [b"I;love;NLP"], "keys": [b"1,0;0,1;1,1"],
                          "values": [b"2;6;4"]})
    assert again.selected == 2 and again.notice == ""
    fresh = AttentionState()
    apply_address(fresh, {"tokens": [b"I;love;LOVE"], "keys": [b"1,0;0,1;1,1"], "values": [b"2;6;4"],
                          "row": [b"Love"]})
    assert fresh.selected == 1 and "row = 'Love' ignored" in fresh.notice


def test_bad_tokens_leave_the_keys_and_values_of_the_address_unapplied(state):
    apply_address(state, {"tokens": [b"I;<b>;NLP"], "keys": [b"2,0;0,2;2,2"], "values": [b"1;1;1"]})
    assert state.tokens == ["I", "love", "NLP"] and state.keys.tolist() == [[1, 0], [0, 1], [1, 1]]
    assert state.values.tolist() == [2, 6, 4] and state.result.output[1] == pytest.approx(4.4067, abs=1e-4)
    assert "tokens and keys and values ignored" in state.notice and "tokens = 'I;<b>;NLP'" in state.notice
    # and the other way round: good tokens do not come with bad values
    fresh = AttentionState()
    apply_address(fresh, {"tokens": [b"a;b;c"], "keys": [b"2,0;0,2;2,2"], "values": [b"1;x;1"]})
    assert fresh.tokens == ["I", "love", "NLP"] and fresh.keys.tolist() == [[1, 0], [0, 1], [1, 1]]


@pytest.mark.parametrize("typed, number", [("１", 1.0), ("−2", -2.0), (".5", 0.5), ("5.", 5.0), (" 3e-2 ", 0.03),
                                           ("+1.25", 1.25), ("１．５", 1.5), ("٣", 3.0), ("١٫٥", 1.5)])
def test_a_number_is_read_the_same_in_the_editor_and_the_address(typed, number):
    edited = AttentionState()
    assert edited.set_key(0, 0, typed) and edited.keys[0, 0] == number
    addressed = AttentionState()
    apply_address(addressed, {"keys": [f"{typed},0;0,1;1,1".encode()], "q": [f"{typed},{typed}".encode()]})
    assert addressed.notice == "" and addressed.keys[0, 0] == number and addressed.query == (number, number)


@pytest.mark.parametrize("typed", ["1_000", "1,5", "0x10", "1 000", "1e", "--1", "٬5", "½"])
def test_what_is_not_a_number_is_refused_the_same_in_the_editor_and_the_address(typed):
    edited = AttentionState()
    assert not edited.set_key(0, 0, typed) and edited.keys[0, 0] == 1
    # a comma on an English page is a number written the other way: the message says how to write it
    assert ("has a comma" if typed == "1,5" else "is not a number") in edited.message
    addressed = AttentionState()
    apply_address(addressed, {"keys": [f"{typed},0;0,1;1,1".encode()]})
    assert addressed.keys[0, 0] == 1 and "keys = " in addressed.notice


def test_a_refused_name_is_quoted_short(state):
    assert not state.rename_token(1, "<" * 1000)
    assert len(state.message) < 200 and "…" in state.message


def test_good_arguments_survive_a_bad_neighbour(state):
    settings, problems = parse_address({"q": ["0.1,1"], "mode": ["x"]}, TOKENS)
    assert settings == {"query": (0.1, 1.0)} and len(problems) == 1 and "mode = 'x'" in problems[0]


def test_the_address_restores_the_same_view(state):
    state.select_row(0)
    state.move_query(0.123456789, -0.987654321)
    state.param.update(mode="projector", theme="dark")
    state.next_step(), state.next_step()
    again = AttentionState()
    apply_address(again, {k: [v.encode()] for k, v in address_of(state).items()})
    for name in ("query", "selected", "guided", "step", "mode", "theme"):
        assert getattr(again, name) == getattr(state, name), name
    assert again.notice == ""


def test_the_address_restores_an_edited_example_and_its_switches(state):
    state.preset = "Module 2: vector values"
    state.rename_token(2, "Paris")
    state.set_key(0, 1, "0.1")
    state.set_value(1, 0, "-3.25")
    state.add_token()
    state.param.update(scale=False, causal=True, trap=True)
    state.select_row(2)
    state.move_query(0.3, -0.7)
    args = address_of(state)
    assert args["preset"] == "Module 2: vector values" and args["tokens"] == "I;love;Paris;t4"
    again = AttentionState()
    apply_address(again, {k: [v.encode()] for k, v in args.items()})
    assert again.notice == ""
    for name in ("preset", "origin", "tokens", "scale", "causal", "trap", "query", "selected"):
        assert getattr(again, name) == getattr(state, name), name
    assert again.keys.tolist() == [[1.0, 0.1], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    assert again.values.tolist() == [[10.0, 0.0], [-3.25, 10.0], [5.0, 5.0], [0.0, 0.0]]
    np.testing.assert_array_equal(again.result.weights, state.result.weights)
    again.reset()  # Reset returns to the preset the edits started from
    assert again.values.tolist() == [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]]


def test_a_named_preset_alone_is_written_by_name(state):
    state.preset = "Module 2: vector values"
    args = address_of(state)
    assert args["preset"] == "Module 2: vector values" and not {"tokens", "keys", "values"} & args.keys()
    again = AttentionState()
    apply_address(again, {"preset": [b"module 2: VECTOR values"]})
    assert again.values.tolist() == [[10, 0], [0, 10], [5, 5]] and again.preset == "Module 2: vector values"


def test_switches_and_data_from_the_address_give_the_hand_worked_weights(state):
    # scaling off, q = q_love = (0, 1): scores (0, 1, 1), weights (1, e, e) / (1 + 2e)
    apply_address(state, {"scale": [b"off"]})
    e = math.e
    assert state.result.weights[1] == pytest.approx([1 / (1 + 2 * e), e / (1 + 2 * e), e / (1 + 2 * e)])
    # the causal mask: "I" sees only itself
    apply_address(state, {"causal": [b"on"], "row": [b"I"]})
    assert state.result.weights[0].tolist() == [1.0, 0.0, 0.0]
    # every key at the origin: every score is 0, the weights are equal, the output is the values' mean
    fresh = AttentionState()
    apply_address(fresh, {"tokens": [b"a;b;c;d"], "keys": [b"0,0;0,0;0,0;0,0"], "values": [b"3;6;9;2"]})
    assert fresh.notice == "" and fresh.preset == "Custom" and fresh.tokens == ["a", "b", "c", "d"]
    assert fresh.result.weights[1] == pytest.approx([0.25] * 4) and fresh.result.output[1] == pytest.approx(5.0)


def test_create_app_reads_the_address():
    page = create_app(args={"q": [b"1,1"], "row": [b"I"]})
    assert page.state.query == (1.0, 1.0) and page.state.selected == 0


def test_a_built_page_passes_bokehs_own_checks():
    """The served page skips Bokeh's document validation (server/serve.py): this is that check, once."""
    import panel as pn
    from bokeh.core.validation.check import check_integrity
    from bokeh.document import Document

    page = create_app()
    doc = Document()
    page.server_doc(doc)
    tabs = page.select(pn.Tabs)[0]
    for i in range(len(tabs)):  # every tab's views, built
        tabs.active = i
    issues = check_integrity(doc.models)
    assert not issues.error and not issues.warning, issues


# --- keyboard -----------------------------------------------------------------------------------------------

def test_right_arrow_nudges_q_by_a_tenth(state):
    assert handle_key(state, "ArrowRight")
    assert state.query == (0.1, 1.0)
    handle_key(state, "ArrowDown", shift=True)
    assert state.query == (0.1, 0.99)
    for _ in range(9):
        handle_key(state, "ArrowRight")
    assert state.query == (1.0, 0.99)  # no float drift after ten nudges


def test_nudges_stop_at_the_edge_of_the_plane(state):
    for _ in range(30):
        handle_key(state, "ArrowUp")
    assert state.query == (0.0, 2.5)


def test_number_keys_select_rows_and_r_resets(state):
    handle_key(state, "3")
    assert state.selected == 2 and state.query == (1.0, 1.0)
    handle_key(state, "1")
    assert state.selected == 0 and state.query == (1.0, 0.0)
    handle_key(state, "r")
    assert state.selected == 1 and state.query == (0.0, 1.0)
    assert not handle_key(state, "x") and not handle_key(state, "4")


def test_space_starts_the_steps_and_arrows_walk_them(state):
    handle_key(state, " ")
    assert state.guided and state.step == 1
    handle_key(state, "ArrowRight")
    handle_key(state, "ArrowRight")
    handle_key(state, "ArrowRight")
    assert state.step == 3 and state.query == (0.0, 1.0)  # → steps in guided mode, never past 3
    handle_key(state, "ArrowLeft")
    assert state.step == 2
    handle_key(state, "ArrowRight", in_plot=True)  # the focused plot keeps its arrows
    assert state.step == 2 and state.query == (0.1, 1.0)
    handle_key(state, "ArrowUp")
    assert state.query == (0.1, 1.1)


def test_a_new_row_restarts_the_steps(state):
    state.param.update(guided=True, step=3)
    state.select_row(0)
    assert state.step == 1


# --- step-through -------------------------------------------------------------------------------------------

def test_unreached_steps_show_placeholders_everywhere(state):
    readout, inspector = Readout(state=state), Inspector(state=state)
    bars, line, matrix, plot = WeightBars(state=state), OutputLine(state=state), AttentionMatrix(state=state), \
        QueryPlot(state=state)
    state.next_step()  # step 1: scores only
    text = readout.div.text
    assert "Scores s = q·k / √2: I 0.0000, love 0.7071, NLP 0.7071" in text
    assert "Weights a = softmax(s): I ?, love ?, NLP ?" in text and text.endswith("Output Σ aᵢvᵢ = ?")
    assert "0.1978" not in inspector._pane.object and "4.4067" not in inspector._pane.object
    assert "<td>0.7071</td>" in inspector._pane.object
    for view in (matrix, plot):
        shown, hidden = view._reveal
        assert not any(r.visible for r in shown) and all(r.visible for r in hidden)
    # the SVG charts draw a "?" per bar and "output = ?", and no number of a later step
    assert bars.div.text.count(">?</text>") == 3 and "rect" not in bars.div.text and "0.1978" not in bars.div.text
    assert "output = ?" in line.div.text and "4.4067" not in line.div.text
    state.next_step()  # step 2: weights
    assert "Weights a = softmax(s): I 0.1978, love 0.4011, NLP 0.4011" in readout.div.text
    assert bars.div.text.count('class="bar"') == 3 and ">0.1978</text>" in bars.div.text
    assert "output = ?" in line.div.text and "4.4067" not in inspector._pane.object
    state.next_step()  # step 3: output
    assert readout.div.text.endswith("Output Σ aᵢvᵢ = 4.4067 ≈ 4.41")
    assert ">4.4067</text>" in line.div.text and "= 4.4067</span></p>" in inspector._pane.object


def test_step_formulas_carry_the_live_numbers(state):
    assert r"s_i = q \cdot k_i / \sqrt{2} &= (0.0000,\ 0.7071,\ 0.7071)" in step_latex(state, 1)
    assert r"\textstyle\sum_j e_j &= 2.4931" in step_latex(state, 2)  # 1 + 2 e^0 with the max shifted out
    assert r"(0.1978,\ 0.4011,\ 0.4011)" in step_latex(state, 2)
    assert step_latex(state, 3).endswith(r"= 4.4067 \end{aligned}$$")
    with pytest.raises(ValueError, match="step must be 1, 2 or 3"):
        step_latex(state, 4)


def test_the_announcer_speaks_weights_and_output_but_not_hidden_steps(state):
    a = Announcer(state=state)
    state.move_query(1.0, 1.0)
    assert a.div.text == 'Query of "love". Weights: I 0.2483, love 0.2483, NLP 0.5035. Output 4.0000.'
    assert a.div.html_attributes["aria-live"] == "polite"
    state.next_step()
    assert a.div.text == 'Step 1 of 3. Query of "love".'


def test_the_announcer_speaks_a_vector_output():
    # course text, Module 2: row "I" weights (0.4011, 0.1978, 0.4011), output (6.0167, 3.9833)
    state = AttentionState(preset="Module 2: vector values")
    a = Announcer(state=state)
    state.select_row(0)
    assert a.div.text == 'Query of "I". Weights: I 0.4011, love 0.1978, NLP 0.4011. Output (6.0167, 3.9833).'


# --- export -------------------------------------------------------------------------------------------------

def test_json_export_holds_every_number(state):
    data = json.loads(to_json(state))
    assert data["q"] == [0.0, 1.0] and data["selected"] == "love" and data["tokens"] == TOKENS
    assert data["keys"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]] and data["values"] == [2.0, 6.0, 4.0]
    assert data["scores"] == pytest.approx([0, 1 / math.sqrt(2), 1 / math.sqrt(2)], abs=1e-15)
    assert data["weights"] == pytest.approx(LOVE, abs=1e-15)
    assert data["output"] == pytest.approx(LOVE_OUT, abs=1e-14)
    assert len(data["weight_matrix"]) == 3 and data["weight_matrix"][1] == pytest.approx(LOVE, abs=1e-15)
    assert all(sum(row) == pytest.approx(1, abs=1e-15) for row in data["weight_matrix"])


#: Every row's output, by hand: each token's key is its query (q = k_love for love). Row I: scores (1/√2, 0, 1/√2),
#: weights (E, 1, E) / (1 + 2E), output (2E + 6 + 4E) / (1 + 2E) = 3.5933; row NLP: scores (1/√2, 1/√2, 2/√2),
#: weights (E, E, E²) / (2E + E²), output (2E + 6E + 4E²) / (2E + E²) = (8 + 4E) / (2 + E) = 4 exactly (the
#: Matrix tab's output column: 3.59, 4.41, 4.00).
OUTPUTS = [(6 * E + 6) / (1 + 2 * E), LOVE_OUT, 4.0]


def test_json_export_holds_every_rows_numbers(state):
    data = json.loads(to_json(state))
    assert data["queries"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    assert data["dot_matrix"] == [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 2.0]]
    assert data["score_matrix"][2] == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2), math.sqrt(2)], abs=1e-15)
    assert data["outputs"] == pytest.approx(OUTPUTS, abs=1e-14)
    assert data["outputs"][0] == pytest.approx(3.5933, abs=5e-5)
    # the causal mask: row I sees only itself, and its masked scores are null (JSON has no infinity)
    state.causal = True
    text = to_json(state)
    assert "Infinity" not in text
    data = json.loads(text)
    assert data["score_matrix"][0] == [pytest.approx(1 / math.sqrt(2)), None, None]
    assert data["outputs"][0] == 2.0 and data["weight_matrix"][0] == [1.0, 0.0, 0.0]


def test_csv_export_has_one_number_per_line(state):
    rows = list(csv.DictReader(io.StringIO(to_csv(state))))
    by = {(r["quantity"], r["query_token"], r["key_token"], r["dimension"]): float(r["value"]) for r in rows}
    assert by[("q", "love", "", "0")] == 0.0 and by[("q", "love", "", "1")] == 1.0
    assert by[("value", "", "love", "")] == 6.0
    assert by[("weight", "love", "NLP", "")] == pytest.approx(LOVE[2], abs=1e-15)
    assert by[("weight", "NLP", "NLP", "")] == pytest.approx(math.exp(2 / math.sqrt(2)) / (
        2 * E + math.exp(2 / math.sqrt(2))), abs=1e-15)
    # every row of the matrix, not only the selected one's
    assert [by[("output", t, "", "")] for t in TOKENS] == pytest.approx(OUTPUTS, abs=1e-14)
    assert [by[("query", "I", "", d)] for d in "01"] == [1.0, 0.0]
    assert by[("dot", "NLP", "NLP", "")] == 2.0 and by[("score", "I", "love", "")] == 0.0
    explorer = [r for r in rows if r["quantity"] in ("q", "key", "value", "query", "dot", "score", "weight",
                                                      "output")]
    assert len(explorer) == 2 + 6 + 3 + 6 + 3 * 9 + 3  # the Projections and Heads tabs' rows follow


def test_csv_export_of_vector_values_gives_each_coordinate():
    # course text, Module 2: row I's output (6.0167, 3.9833); each output lies among the values (10, 0), (0, 10),
    # (5, 5), and row NLP's is (5, 5) by symmetry
    state = AttentionState(preset="Module 2: vector values")
    rows = list(csv.DictReader(io.StringIO(to_csv(state))))
    by = {(r["quantity"], r["query_token"], r["key_token"], r["dimension"]): float(r["value"]) for r in rows}
    assert (by[("value", "", "I", "0")], by[("value", "", "I", "1")]) == (10.0, 0.0)
    assert (by[("output", "I", "", "0")], by[("output", "I", "", "1")]) == pytest.approx((6.0167, 3.9833), abs=5e-5)
    assert (by[("output", "NLP", "", "0")], by[("output", "NLP", "", "1")]) == pytest.approx((5, 5), abs=1e-12)


def test_a_token_name_a_spreadsheet_would_compute_is_written_as_text(state):
    assert state.rename_token(2, "-2-3") and state.rename_token(0, "-A")
    text = to_csv(state)
    rows = list(csv.DictReader(io.StringIO(text)))
    cells = {r["key_token"] for r in rows} | {r["query_token"] for r in rows}
    assert "'-2-3" in cells and "'-A" in cells and not any(c.startswith(("=", "+", "-", "@")) for c in cells)
    # numbers stay numbers, negative ones too
    state.set_value(0, 0, "-1.5")
    assert any(r["quantity"] == "value" and r["value"] == "-1.5" for r in csv.DictReader(io.StringIO(to_csv(state))))


# --- projector and themes -----------------------------------------------------------------------------------

def _font_sizes(fig: Plot):
    for model in fig.references():
        for name, val in model.properties_with_values(include_defaults=True).items():
            if name.endswith("_font_size") and not name.startswith(("hover_", "muted_", "nonselection_")):
                val = getattr(val, "value", val)
                val = val.get("value") if isinstance(val, dict) else val
                if val is not None:
                    yield f"{type(model).__name__}.{name}", float(str(val).removesuffix("px"))


def test_projector_mode_makes_every_canvas_text_at_least_20px(state):
    views = [QueryPlot(state=state), AttentionMatrix(state=state)]
    figs = [v.figure for v in views]
    FigureStyler(state=state, figures=figs)
    normal = {f.id: dict(_font_sizes(f)) for f in figs}
    assert min(min(s.values()) for s in normal.values()) < 20  # the normal view is denser
    state.mode = "projector"
    for f in figs:
        small = {k: v for k, v in _font_sizes(f) if v < 20}
        assert not small, f"{f.name}: {small}"
    state.mode = "normal"
    assert {f.id: dict(_font_sizes(f)) for f in figs} == normal  # back exactly as built


def test_the_svg_charts_are_laid_out_for_the_projectors_larger_text(state):
    """Their text sizes come from CSS (--ae-num, 22 px in projector mode); the server leaves them the room."""
    bars, line = WeightBars(state=state), OutputLine(state=state)

    def room():  # the bars' room for text above them (their numbers) and below (the tokens); the line's height
        svg = bars.div.text.split("<svg")[1]
        top, bottom, height = (int(svg.split(f'{a}="')[1].split('"')[0]) for a in ("data-top", "data-bottom", "height"))
        return [top, height - bottom, int(line.div.text.split('height="')[1].split('"')[0])]

    normal = room()
    state.mode = "projector"
    projector = room()  # (the bars themselves are shorter there, leaving a 1024x768 screen room for the line)
    assert all(p > n for p, n in zip(projector, normal, strict=True)), (normal, projector)
    css = (ROOT / "static" / "charts.css").read_text()
    assert "font-size: var(--ae-num" in css and "--ae-num: 22px" in (ROOT / "static" / "theme.css").read_text()


def test_a_tab_is_built_when_first_shown_and_its_figures_follow_the_projector(monkeypatch):
    import panel as pn
    from bokeh.document import Document

    import app
    built = []
    monkeypatch.setitem(app.TEACHING, "dk", lambda **kw: built.append(1) or DkPanel(**kw))
    page = create_app(args={"mode": [b"projector"]})
    doc = Document()
    page.server_doc(doc)
    assert built == [] and doc.get_model_by_name("dk-softmax") is None  # the page opens without it
    tabs = page.select(pn.Tabs)[0]
    tabs.active = tabs._names.index("√d_k")
    fig = doc.get_model_by_name("dk-softmax")
    assert built == [1] and fig is not None
    assert min(v for _, v in _font_sizes(fig)) >= 20  # styled for the projector, opened after it was on
    page.state.mode = "normal"
    assert min(v for _, v in _font_sizes(fig)) < 20
    tabs.active = 0
    tabs.active = tabs._names.index("√d_k")
    assert built == [1]  # built once
    # and every tab keeps its own title
    assert tabs._names == ["Weights", "Matrix", "All steps", "Recipe", "Edit", "Trap", "√d_k", "Projections",
                           "Heads · n²", "Train", "Real model", "Check", "Export", "Keys"]


def test_dark_theme_recolours_figures_in_place(state):
    plot = QueryPlot(state=state)
    FigureStyler(state=state, figures=[plot.figure])
    fig_id = plot.figure.id
    state.theme = "dark"
    assert plot.figure.id == fig_id and plot.figure.background_fill_color == "#121212"
    assert plot.figure.title.text_color == "#f2f2f2"
    state.theme = "light"
    assert plot.figure.background_fill_color == "#ffffff"


@pytest.mark.parametrize("name", ["module-2", "Module-2", "Module 2: vector values"])
def test_a_short_preset_name_in_the_address_loads_the_preset(state, name):
    apply_address(state, {"preset": name, "row": "I"})
    assert state.notice == ""
    # Module 2's course numbers: row "I" weighs 0.4011, 0.1978, 0.4011 and outputs (6.0167, 3.9833)
    assert state.result.weights[0] == pytest.approx([0.4011, 0.1978, 0.4011], abs=5e-5)
    assert state.result.output[0] == pytest.approx([6.0167, 3.9833], abs=5e-5)
