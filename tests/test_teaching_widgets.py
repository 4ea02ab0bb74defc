"""Editing, presets, mask, trap and the d_k panel through the state and the views, without a browser."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.scaling import scaling_experiment
from session.state import CUSTOM, AttentionState
from widgets.dk import DkPanel
from widgets.edit import Editor
from widgets.matrix import AttentionMatrix
from widgets.query_plot import QueryPlot
from widgets.steps import Inspector, Readout
from widgets.style import is_marked_invalid
from widgets.trap import TrapPanel
from widgets.weights import ValuesView

TOL = dict(rtol=0, atol=5e-5)
M2 = "Module 2: vector values"
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def state():
    return AttentionState()


def test_module_2_preset_in_state_readout_and_matrix(state):
    matrix, readout = AttentionMatrix(state=state), Readout(state=state)
    state.preset = M2
    assert state.values.shape == (3, 2) and state.preset == M2
    state.select_row(0)
    np.testing.assert_allclose(state.result.weights[0], [0.4011, 0.1978, 0.4011], **TOL)
    np.testing.assert_allclose(state.result.output[0], [6.0167, 3.9833], **TOL)
    assert readout.div.text.endswith("Output Σ aᵢvᵢ = (6.0167, 3.9833) ≈ (6.02, 3.98)")
    assert matrix._outputs.data["label"][0] == "(6.0167, 3.9833)"


def test_the_query_plot_is_marked_while_the_values_are_vectors(state):
    """static/app.css leaves the readout a line more under a plot marked ``vector-values``: Module 2's, not
    Section 6's, and a page opened on Module 2 is marked from the start."""
    view = QueryPlot(state=state)
    assert "vector-values" not in view.figure.css_classes
    state.preset = M2
    assert "vector-values" in view.figure.css_classes
    state.preset = "Section 6: scalar values"
    assert "vector-values" not in view.figure.css_classes
    state.preset = M2
    assert list(QueryPlot(state=state).figure.css_classes) == ["vector-values"]


def test_value_plane_shows_values_and_output(state):
    built = []
    view = ValuesView(state=state, on_build=built.append)
    # the number line only: the plane is built the first time the values are vectors
    assert view.plane is None and built == [view.line] and _shown(view) == [view.line.__panel__()]
    state.preset = M2
    assert built == [view.line, view.plane] and _shown(view) == [view.plane.__panel__()]
    state.select_row(0)
    plane = view.plane
    assert plane._values.data["x"] == [10.0, 0.0, 5.0] and plane._values.data["y"] == [0.0, 10.0, 5.0]
    assert plane._output.data["label"] == ["output (6.0167, 3.9833)"]
    assert plane.figure.name == "value-plane"
    state.preset = "Section 6: scalar values"
    assert _shown(view) == [view.line.__panel__()] and view.line.shown["label"] == ["4.4067"]
    assert len(built) == 2  # each built once


def test_plot_labels_isolate_words_and_names_so_a_vector_keeps_its_order(state):
    """A plot's text is drawn left to right: after an Arabic word, without an isolate, Unicode's bidi algorithm made
    the digits Arabic numbers and the vector came out reversed, "المخرج (6.0167 ,3.9833)". The output word in Arabic
    is isolated right to left (U+2067…U+2069), and a token's name first-strong (U+2068…U+2069) in any language, so
    the coordinates stay in order; the drag preview writes the same output word (link/rules.py, readout_words)."""
    from link.rules import readout_words

    values, plot = ValuesView(state=state), QueryPlot(state=state)
    state.preset = M2
    state.lang = "ar"
    out = values.plane._output.data["label"][0]
    assert out == "\u2067المخرج\u2069 (3.9833,\u00a06.0167)"
    assert out.startswith(readout_words("ar")["output_word"] + " ")
    state.lang = "en"
    state.rename_token(0, "سلام")  # a learner's own token, in an English page
    assert values.plane._output.data["label"][0] == "output (3.9833, 6.0167)"
    assert values.plane._values.data["label"][0] == "v \u2068سلام\u2069 (10, 0)"
    assert plot._keys.data["label"][0] == "\u2068سلام\u2069 (1, 0)"


def _shown(view) -> list:
    """What a ValuesView shows: the panes in its layout whose Bokeh model is visible."""
    return [o for o in view._layout.objects if o.object.visible]


def test_unscaled_love_row_in_the_readout(state):
    readout = Readout(state=state)
    state.scale = False
    np.testing.assert_allclose(state.result.weights[1], [0.1554, 0.4223, 0.4223], **TOL)
    assert "Scores s = q·k (unscaled)" in readout.div.text
    assert readout.div.text.endswith("Output Σ aᵢvᵢ = 4.5339 ≈ 4.53")


def test_causal_mask_in_matrix_inspector_and_readout(state):
    matrix, inspector, readout = AttentionMatrix(state=state), Inspector(state=state), Readout(state=state)
    state.causal = True
    # upper triangle: masked, drawn apart from the colour-mapped cells
    assert list(zip(matrix._masked.data["x"], matrix._masked.data["y"], strict=True)) == [(1, 0), (2, 0), (2, 1)]
    assert matrix._masked.data["label"] == ["masked"] * 3
    assert len(matrix._cells.data["weight"]) == 6 and "0.0000" not in matrix._cells.data["label"]
    assert matrix._sums.data["label"] == ["1.0000"] * 3
    assert matrix._outputs.data["label"] == ["2.0000", "4.6790", "4.0000"]
    assert "Weights a = softmax(s): I 0.3302, love 0.6698, NLP 0.0000" in readout.div.text
    assert "Scores s = q·k / √2: I 0.0000, love 0.7071, NLP masked" in readout.div.text
    assert "-inf" not in inspector._pane.object and "<td>masked</td>" in inspector._pane.object
    state.select_row(0)
    np.testing.assert_allclose(state.result.weights[0], [1, 0, 0], rtol=0)
    assert readout.div.text.endswith("Output Σ aᵢvᵢ = 2.0000 ≈ 2.00")


@pytest.mark.parametrize("text, why", [("", "is empty"), ("abc", "is not a number"), ("nan", "not a finite"),
                                       ("inf", "not a finite"), ("-inf", "not a finite"), ("2e6", "outside ±1e+06"),
                                       (math.nan, "not a finite"), (None, "is not a number")])
def test_bad_coordinates_are_refused_and_nothing_changes(state, text, why):
    before = (state.keys.copy(), state.values.copy(), state.query, state.result, state.preset)
    for ok in (state.set_key(1, 0, text), state.set_value(2, 0, text), state.set_query_coordinate(1, text)):
        assert ok is False and why in state.message
    assert state.message_field == "q[2]" and state.message.startswith("q[2] refused:")
    np.testing.assert_array_equal(state.keys, before[0])
    np.testing.assert_array_equal(state.values, before[1])
    assert (state.query, state.result, state.preset) == before[2:]


def test_field_names_in_messages(state):
    state.set_key(1, 0, "x")
    assert state.message_field == "k_love[1]"
    state.set_value(2, 0, "x")
    assert state.message_field == "v_NLP"
    state.preset = M2
    state.set_value(2, 1, "x")
    assert state.message_field == "v_NLP[2]"


def test_edits_make_the_preset_custom_and_reset_returns_to_it(state):
    state.preset = M2
    assert state.set_value(0, 1, " 2.5 ") and state.values[0, 1] == 2.5 and state.preset == CUSTOM
    assert state.set_key(2, 0, "-1") and state.keys[2, 0] == -1.0
    state.causal = True
    state.reset()
    assert state.preset == M2 and not state.causal
    np.testing.assert_array_equal(state.values, [[10, 0], [0, 10], [5, 5]])
    np.testing.assert_array_equal(state.keys, [[1, 0], [0, 1], [1, 1]])


@pytest.mark.parametrize("name", [XSS, "<b>", "a&b", "", "   ", 'say "hi"', "x" * 17, "love"])
def test_bad_token_names_are_refused(state, name):
    assert state.rename_token(0, name) is False
    assert state.tokens == ["I", "love", "NLP"] and state.message.startswith("name of token 1 refused")


def test_rename_add_remove_tokens(state):
    assert state.rename_token(0, "Je")
    assert state.tokens == ["Je", "love", "NLP"] and state.preset == CUSTOM
    while len(state.tokens) < 8:
        assert state.add_token()
    assert state.add_token() is False and "at most 8" in state.message
    assert state.result.weights.shape == (8, 8) and state.values.shape == (8,)
    state.select_row(2)
    assert state.remove_token(0) and state.selected == 1 and state.tokens[1] == "NLP"
    while len(state.tokens) > 2:
        state.remove_token(len(state.tokens) - 1)
    assert state.remove_token(0) is False and "at least 2" in state.message
    np.testing.assert_allclose(state.result.weights.sum(axis=1), 1.0)


def test_dragging_near_a_key_moves_that_key(state):
    from tests.test_widgets import MOVE, PRESS, RELEASE, drag_channel

    view = QueryPlot(state=state)
    channel = drag_channel(state, view)
    # k_I = (1, 0) is far from q = (0, 1): a drag starting on it moves the key, not q
    channel.receive(1.05, 0.02, **PRESS)
    channel.receive(0.5, -0.5, **MOVE)
    channel.receive(0.5, -0.5, **RELEASE)
    np.testing.assert_array_equal(state.keys[0], [0.5, -0.5])
    assert state.query == (0.0, 1.0) and state.preset == CUSTOM
    assert view._keys.data["label"][0] == "\u2068I\u2069 (0.5, -0.5)"
    # q sits on k_love: a drag starting there moves q (q wins ties)
    channel.receive(0.0, 1.0, **PRESS)
    channel.receive(0.2, 0.8, **MOVE)
    assert state.query == (0.2, 0.8) and state.keys[1].tolist() == [0.0, 1.0]


def test_trap_panel_scalar_explains_and_vector_compares(state):
    view = TrapPanel(state=state)
    assert not view._figure_pane.visible
    state.trap = True
    assert state.trap_result is None and "is not defined" in view._text.object
    assert "v<sub>love</sub> = 6.00" in view._text.object and not view._figure_pane.visible
    state.preset = M2
    state.trap = True
    assert view._figure_pane.visible
    bars = dict(zip(view._bars.data["x"], view._bars.data["top"], strict=True))
    assert bars[("love", "keys")] == pytest.approx(0.4011, abs=5e-5)
    # q_love·v = (0, 10, 5) / √2: scipy-free check with exp
    e = np.exp(np.array([0, 10, 5]) / math.sqrt(2))
    assert bars[("love", "values")] == pytest.approx(e[1] / e.sum(), rel=1e-12)


def test_dk_panel_shows_variances_and_softmax_summary(state):
    assert state.scaling is None  # drawn only once a view needs it
    view = DkPanel(state=state)
    state.dk_experiment = 1024
    e = state.scaling
    assert e.d_k == 1024
    assert view._dots_note.data["text"][0] == f"variance {e.var_dots:.2f} (≈ d_k = 1024)"
    assert view._scaled_note.data["text"][0].startswith("variance ") and "(≈ 1)" in view._scaled_note.data["text"][0]
    assert 0.85 < e.var_scaled < 1.15 and sum(view._scaled.data["top"]) > 0.99 * e.scaled.size
    assert f"<td>{e.max_weight_unscaled:.3f}</td>" in view._summary.object
    seed = state.dk_seed
    view.redraw.clicks += 1
    assert state.dk_seed == seed + 1
    view.typed.value = 7
    assert state.dk_experiment == 7 and view.slider.value == 7 and state.scaling.d_k == 7


def test_a_pages_d_k_writes_and_draws_wait_for_one_experiment_at_a_time(state):
    """A served page's scheduler (services/train_queue.py) gets one call however many writes come before it runs, and
    the experiment it computes is the one of the values as they are then."""
    DkPanel(state=state)
    asked = []
    state.experiment_scheduler = lambda show, draw: asked.append((show, draw))
    first = state.scaling
    state.dk_experiment = 1023
    state.dk_experiment = 1024
    state.dk_seed += 1
    state.dk_seed += 1
    assert len(asked) == 1 and state.scaling is first  # nothing computed yet: the page keeps what it shows
    show, draw = asked.pop()
    drawn = draw()  # on the server's worker thread: it changes nothing the page shows
    assert state.scaling is first
    show(drawn)  # in the page's turn
    e = scaling_experiment(1024, 2)  # an independent draw of the same (d_k, seed)
    assert (state.scaling.d_k, state.scaling.seed) == (1024, 2) and np.array_equal(state.scaling.dots, e.dots)
    state.dk_experiment = 8
    assert len(asked) == 1, "the next write asks again"
    show, draw = asked.pop()
    drawn = draw()
    state.dk_seed += 1  # written while the draw was made: shown, and one more draw asked for the values now
    show(drawn)
    assert (state.scaling.d_k, state.scaling.seed) == (8, 2) and len(asked) == 1
    show, draw = asked.pop()
    show(draw())
    assert (state.scaling.d_k, state.scaling.seed) == (8, 3) and asked == []


def test_editor_refuses_bad_text_and_keeps_the_last_good_state(state):
    ed = Editor(state=state)
    field = ed._inputs[("k", 1, 0)]
    field.value = "abc"
    assert state.keys[1, 0] == 0.0 and is_marked_invalid(field)
    msg = ed._row_messages[1]
    assert msg.visible and "k_love[1] refused: &#x27;abc&#x27; is not a number" in msg.object
    ed._inputs[("name", 0, "")].value = XSS
    assert state.tokens[0] == "I" and "&lt;img src=x onerror=alert(1)&gt;" in ed._row_messages[0].object
    assert "<img" not in ed._row_messages[0].object
    ed._inputs[("v", 2, 0)].value = "7"
    assert state.values[2] == 7.0 and not any(p.object for p in ed._row_messages.values())
    assert not is_marked_invalid(field) and field.value == "0"


def test_editor_follows_presets_and_token_count(state):
    ed = Editor(state=state)
    state.preset = M2
    assert ed._inputs[("v", 0, 0)].value == "10" and ed._inputs[("v", 0, 1)].value == "0"
    assert state.preset == M2  # syncing the inputs did not count as an edit
    ed.add_button.clicks += 1
    assert ("name", 3, "") in ed._inputs and ed._inputs[("name", 3, "")].value == "t4"
    ed._inputs[("q", "", 0)].value = "0.5"
    assert state.query == (0.5, 1.0)


def test_editor_on_a_hidden_tab_catches_up_when_shown(state):
    """A new table is a model per number; the editor leaves it, and every change, until its tab is shown again."""
    ed = Editor(state=state)
    ed.shown_in_tab(False)
    table = list(ed._table.objects)
    state.preset = M2  # vector values: another shape of table
    state.query = (0.25, 0.5)
    assert ed._table.objects == table and ("v", 0, 1) not in ed._inputs  # nothing built while hidden
    state.add_token()  # a fourth token: still no row for it
    ed._inputs[("k", 2, 0)].value = "7"  # what a crafted message could write into the hidden, older table
    assert state.keys[2, 0] != 7 and len(state.tokens) == 4
    state.remove_token(3)
    ed.shown_in_tab(True)
    assert ed._inputs[("v", 0, 0)].value == "10" and ed._inputs[("v", 0, 1)].value == "0"
    assert ed._inputs[("q", "", 0)].value == "0.25" and ed._inputs[("q", "", 1)].value == "0.5"
    state.query = (1.0, 0.0)  # shown: it follows at once, as before
    assert ed._inputs[("q", "", 0)].value == "1"


def test_lazy_tabs_tell_a_built_tab_when_it_is_shown_or_hidden():
    import panel as pn

    from widgets.tabs import lazy_tabs

    seen = []

    def build():
        column = pn.Column("second")
        column.shown_in_tab = seen.append
        return column
    tabs = lazy_tabs(("one", lambda: pn.Column("first")), ("two", build))
    assert seen == []  # not built yet
    tabs.active = 1
    tabs.active = 0
    tabs.active = 1
    assert seen == [True, False, True]


def test_a_tab_a_served_page_shows_is_built_in_one_turn_and_put_in_the_page_in_a_later_one(monkeypatch):
    """In one turn of the server's loop, building a tab's views and putting their models in the page took 150-250 ms,
    which every other page's answer waited behind; the second half now runs in a later turn, after as long as the
    first took (other pages' answers come between), the document held. The page's first tab is in it at once."""
    from types import SimpleNamespace

    import panel as pn
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from widgets.tabs import Unbuilt, lazy_tabs

    served = SimpleNamespace(id="s", request=SimpleNamespace(arguments={}, headers={}, cookies={}))
    monkeypatch.setattr(Document, "session_context", property(lambda self: served))  # as a served page's
    doc, later = Document(), []
    doc.add_timeout_callback = lambda callback, ms: later.append((callback, ms))
    second = pn.Column("second")
    now = [100.0]  # the tabs' clock: the build's time is the test's own, however busy the machine
    monkeypatch.setattr("widgets.tabs.time", SimpleNamespace(perf_counter=lambda: now[0]))

    def build():
        now[0] += 0.05  # a build of 50 ms
        return second
    with set_curdoc(doc):
        tabs = lazy_tabs(("one", lambda: pn.Column("first")), ("two", build))
        root = tabs.get_root(doc)
        doc.add_root(root)
        assert not isinstance(tabs[0], Unbuilt) and later == []  # the first tab: built and placed as the page loads
        tabs.active = 1
        assert isinstance(tabs[1], Unbuilt) and len(later) == 1  # built, not yet in the page
        (place, ms), = later
        assert ms == 50  # put in the page after as long as the build took
        held = []
        monkeypatch.setattr(doc, "hold", lambda *a, **k: (held.append(a), Document.hold(doc, *a, **k)))
        place()
    assert tabs[1] is second and held
    assert tabs._models[root.ref["id"]][0].tabs[1].child is second._models[root.ref["id"]][0]


def test_a_layout_changed_in_a_page_with_lazy_tabs_is_not_followed_by_a_walk_of_the_whole_page():
    """Panel walks every model of a page after any change of a layout in it when something in the page has a
    Panel link (``jscallback``, ``jslink``), as the tabs had for bringing a tapped tab into view; the tabs' model
    now carries that script itself (Bokeh's ``js_on_change``)."""
    import panel as pn
    from bokeh.document import Document
    from bokeh.model import Model

    from widgets.tabs import INTO_VIEW_JS, lazy_tabs

    changing = pn.Column(pn.pane.HTML("a"))
    tabs = lazy_tabs(("one", lambda: changing), ("two", lambda: pn.Column(*(pn.pane.HTML(str(i)) for i in range(50)))))
    tabs.active = 1
    tabs.active = 0
    doc = Document()
    root = pn.Column(tabs).get_root(doc)
    doc.add_root(root)
    model = tabs._models[root.ref["id"]][0]
    assert [cb.code for cb in model.js_property_callbacks["change:active"]] == [INTO_VIEW_JS]
    walked = []
    select = Model.select

    def counting(self, selector):
        walked.append(self)
        return select(self, selector)

    Model.select = counting
    try:
        changing[:] = [pn.pane.HTML("b"), pn.pane.HTML("c")]
    finally:
        Model.select = select
    assert root not in walked


def test_the_editor_builds_its_table_once_for_examples_of_two_shapes_and_hides_what_one_does_not_need(state,
                                                                                                       monkeypatch):
    """A new table is a model per box (the costliest thing a click made the server do, 0.3-0.6 s under a flood
    of "Reset example" and "Explore head"); one table serves the examples' shapes, built for 2-D values from the
    first (the course's 1-D ones hide the second box), and what is written into a hidden box is not taken."""
    builds = []
    build = Editor._build
    monkeypatch.setattr(Editor, "_build", lambda self, *shape: (builds.append(shape), build(self, *shape)))
    ed = Editor(state=state)  # the course's example: 1-D values
    assert builds == [(3, 2, 2)] and not ed._built_inputs[("v", 0, 1)].visible
    state.preset = "Module 2: vector values"  # values of two entries: one box more a row, shown
    assert builds == [(3, 2, 2)]
    wide = ed._built_inputs[("v", 0, 1)]
    assert wide.visible and ed._inputs[("v", 0, 1)] is wide
    state.show_head_in_explorer(1)  # a head's 2-D values
    assert builds == [(3, 2, 2)] and wide.visible
    for _ in range(3):
        state.preset = "Section 6: scalar values"
        state.preset = "Module 2: vector values"
    state.preset = "Section 6: scalar values"
    assert builds == [(3, 2, 2)]
    assert not wide.visible and ("v", 0, 1) not in ed._inputs
    assert [h.object for h in ed._v_headers if h.visible] == ["<strong>v</strong>"]
    assert [ed._inputs[("v", i, 0)].value for i in range(3)] == ["2", "6", "4"]  # the course's values
    wide.value = "99"  # a crafted message into the hidden box
    assert list(state.values) == [2.0, 6.0, 4.0] and not state.message
    state.remove_token(2)
    row, message = ed._token_rows[2]
    assert not row.visible and ("name", 2, "") not in ed._inputs
    state.add_token()
    assert row.visible and ed._inputs[("name", 2, "")] is ed._built_inputs[("name", 2, "")] and builds == [(3, 2, 2)]
    state.add_token()  # a fourth token: a table of four rows, once
    assert builds == [(3, 2, 2), (4, 2, 2)] and ed._token_rows[3][0].visible


def test_where_the_lazy_tabs_no_longer_fit_panel_the_page_has_panel_s_own_tabs_built_when_shown(monkeypatch):
    """``server/patches/panel_tabs.py`` checks Panel's private code that :class:`~widgets.tabs.LazyTabs` extends; where
    it has moved (a Panel upgrade), the page's tabs are Panel's own, still built when first shown and retitled."""
    import panel as pn
    from bokeh.document import Document

    from widgets import tabs as tabs_module

    monkeypatch.setattr(tabs_module.TABS_PATCH, "_fits", False)
    tabs = tabs_module.lazy_tabs(("one", lambda: pn.Column("first")), ("two", lambda: pn.Column("second")))
    assert type(tabs) is tabs_module.PanelTabs
    assert isinstance(tabs[1], tabs_module.Unbuilt)
    tabs.active = 1
    assert not isinstance(tabs[1], tabs_module.Unbuilt)
    doc = Document()
    root = tabs.get_root(doc)
    doc.add_root(root)
    tabs_module.retitle(tabs, ["eins", "zwei"])
    assert [panel.title for panel in root.tabs] == ["eins", "zwei"]
    tabs_module.retitle(tabs, ["un", "deux"])
    assert [panel.title for panel in root.tabs] == ["un", "deux"]
    assert tabs[1][0][0].object == "second"  # boxed once, not once more for each new title
