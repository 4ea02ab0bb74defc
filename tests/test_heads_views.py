"""The Projections and Heads tabs' views, their drag channel and the n² cost, without a browser.

Expected numbers come from the course text or the plain-loop reference in tests/loop_reference.py.
"""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import panel as pn
import pytest
from bokeh.document import Document

from core.report import fmt
from session.state import COST_SIZES, AttentionState
from tests.loop_reference import attention as loop_attention
from widgets.cost import CACHE_KEY, CostCache, CostView, bytes_text, cost_cache, count_text
from widgets.glyphs import shown_extent
from widgets.heads import HeadsView
from widgets.projections import ProjectionsView
from widgets.style import is_marked_invalid

X_COURSE = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
PRESS, MOVE, RELEASE = dict(start=True), {}, dict(end=True)


@pytest.fixture
def state():
    return AttentionState()


@pytest.fixture
def view(state):
    return ProjectionsView(state=state)


def cells(view: ProjectionsView, m: str) -> dict[tuple[int, int], str]:
    """The numbers the tab's table shows for quantity ``m``, by (row, column)."""
    found = re.findall(rf"data-m='{m}' data-i='(\d)'(?: data-j='(\d)')?>([^<]*)<", view.numbers.text)
    return {(int(i), int(j) if j else 0): text for i, j, text in found}


def outputs_text(output) -> str:
    return "Outputs Σ aⱼvⱼ: " + " · ".join(f"{t} ({fmt(o[0])}, {fmt(o[1])})" for t, o in zip(("I", "love", "NLP"),
                                                                                               output, strict=True))


# --- the Projections tab ---------------------------------------------------------------------------------------

def test_the_tables_show_the_heads_numbers(view, state):
    scores, weights, output = loop_attention(X_COURSE, X_COURSE, X_COURSE)
    assert cells(view, "weights")[(1, 0)] == "0.1978" and cells(view, "weights")[(1, 1)] == "0.4011"
    assert cells(view, "scores") == {(i, j): fmt(s) for i, row in enumerate(scores) for j, s in enumerate(row)}
    assert cells(view, "output") == {(i, j): fmt(o) for i, row in enumerate(output) for j, o in enumerate(row)}
    # largest weight and entropy in nats, by hand: NLP's row is e^√2 / (2 + e^√2) and the rest
    w = weights[2]
    assert cells(view, "maxWeight")[(2, 0)] == fmt(max(w))
    assert cells(view, "entropy")[(2, 0)] == fmt(-sum(a * math.log(a) for a in w))
    assert view.status.text == outputs_text(output)
    state.load_projection_preset("Section 6")
    V = [[2, 0], [6, 0], [8, 0]]
    assert view.status.text == outputs_text(loop_attention(X_COURSE, X_COURSE, V)[2])
    assert "2 + 6 = 8 there, not 4" in view.reachable.text


def test_typed_numbers_go_to_the_state_and_bad_ones_are_marked(view, state):
    box = view._inputs[("x", 1, 0)]
    box.value = "0.5"
    assert state.embeddings[1, 0] == 0.5 and box.value == "0.5"
    box.value = "zero"
    assert state.embeddings[1, 0] == 0.5  # nothing else changed
    assert is_marked_invalid(box) and "field-message" in view.field_message.object
    assert "x_love[1] refused: &#x27;zero&#x27; is not a number" in view.field_message.object  # escaped
    view._inputs[("w1", 0, 1)].value = "2"  # W_K[1,2]
    assert state.projections[0, 1, 0, 1] == 2.0 and not is_marked_invalid(box)
    view._inputs[("t",)].value = "0.5"
    assert state.temperature == 0.5 and view.t_slider.value == 0.5
    view.t_slider.value = 10.0
    assert state.temperature == 10.0 and view._inputs[("t",)].value == "10"


@pytest.mark.parametrize("which", ["temperature", "n"])
def test_a_discrete_sliders_option_is_shown_by_the_slider_without_a_panel_link(state, which):
    """Panel's DiscreteSlider shows its option in a text above it through a Panel link, and from the first link in
    the process Panel walked every page after each change of a layout
    (server/patches/panel_link_callbacks.py); the page also wrote that text, which the server refuses. Here no link is
    registered, and the slider's own title shows the option, formatted in the page from the options' labels,
    also for new labels (another language)."""
    from panel.links import Callback

    view = ProjectionsView(state=state) if which == "temperature" else CostView(state=state)
    slider = view.t_slider if which == "temperature" else view.n
    root = view.__panel__().get_root(Document())
    ref = root.ref["id"]

    def shown():
        assert not Callback.registry.get(slider._slider) and not slider._text.visible
        model = slider._slider._models[ref][0]
        labels = model.format.args["labels"]
        assert model.show_value and model.format.code == "return labels[tick]"
        return model.title, labels[model.value], labels[-1]

    english = {"temperature": ("Temperature T", "1.4142 = √d_k", "100"), "n": ("n (tokens)", "256", "4096")}
    french = {"temperature": ("Température T", "1,4142 = √d_k", "100"), "n": ("n (jetons)", "256", "4096")}
    assert shown() == english[which]
    first = slider._slider
    state.lang = "fr"  # new labels (Panel makes a new slider for them)
    assert slider._slider is not first and shown() == french[which]


def test_a_box_the_view_fills_during_a_held_document_is_not_read_back_as_input(view, state):
    """A Bokeh document on hold (as the server holds a page's while it takes an event) calls a text box's
    callbacks after the view's own write has ended: the 4-decimal text it wrote must not round the state."""
    from bokeh.document import Document

    doc = Document()
    doc.add_root(view.__panel__().get_root(doc))
    doc.hold("combine")
    state.move_embedding(1, 0.123456789, 1.0)
    assert view._inputs[("x", 1, 0)].value == "0.1235"
    doc.unhold()  # the box's change reaches its callback now
    assert state.embeddings[1, 0] == 0.123456789


def test_the_table_of_temperatures_runs_from_argmax_to_uniform(view, state):
    state.load_projection_preset("Section 6")  # q_love scores 0, 1, 1
    weights, outputs = ({t: re.findall(r"<td>([^<]*)</td>", tds) for t, tds in re.findall(
        r"<tr[^>]*><th scope='row'>([^<]*)</th>((?:<td>[^<]*</td>)+)</tr>", table)}
        for table in view.limits.text.split("</table>")[:2])
    assert list(weights) == list(outputs) == ["0.01", "0.1", "1", "√d_k", "10", "100"]
    assert weights["0.01"] == ["0.0000", "0.5000", "0.5000"]  # argmax, the tie shared
    assert weights["√d_k"] == ["0.1978", "0.4011", "0.4011"]  # Section 6
    e = [math.exp(c / 100) for c in (0, 1, 1)]
    assert weights["100"] == [fmt(x / sum(e)) for x in e]  # nearly 1/3 each
    assert outputs["100"][-1] == fmt(-sum(x / sum(e) * math.log(x / sum(e)) for x in e))  # nearly ln 3 = 1.0986
    assert outputs["0.01"][:3] == ["7.0000", "0.0000", "0.5000"]  # the mean of v_love and v_NLP; max a = 1/2
    assert "class='current'" in view.limits.text


# --- the drag channel ------------------------------------------------------------------------------------------

def test_a_drag_is_answered_by_the_core_and_taken_at_the_release(view, state):
    channel = view.channel
    drawn = (dict(view._x_points.data), dict(view._qkv.data), view.numbers.text)
    channel.receive(0.0, 1.0, plane="x", seq=1, **PRESS)  # on x_love
    channel.receive(0.5, 0.25, plane="x", seq=2, **MOVE)
    X = [[1.0, 0.0], [0.5, 0.25], [1.0, 1.0]]
    _, _, out = loop_attention(X, X, X)
    assert channel.confirmed.data == dict(seq=[2], text=["x love (0.50, 0.25) → " + outputs_text(out)])
    # the state, and with it every view, the address and a room, waits for the release
    np.testing.assert_array_equal(state.embeddings, X_COURSE)
    assert (dict(view._x_points.data), dict(view._qkv.data), view.numbers.text) == drawn
    channel.receive(0.5, 0.25, plane="x", seq=3, **RELEASE)
    np.testing.assert_array_equal(state.embeddings, X)
    assert channel.confirmed.data["seq"] == [3] and view.status.text == outputs_text(out)


def test_a_drag_of_a_basis_image_edits_the_chosen_w(view, state):
    view.role.value = "W_K"
    assert view.channel.inputs.data["role"] == [1] and view.channel.inputs.data["names_w"] == [["e₁W_K", "e₂W_K"]]
    view.channel.receive(0.02, 0.99, plane="w", seq=1, **PRESS)  # e₂W_K = (0, 1)
    view.channel.receive(-1.0, 1.0, plane="w", seq=2, **RELEASE)
    np.testing.assert_array_equal(state.projections[0, 1], [[1.0, 0.0], [-1.0, 1.0]])
    np.testing.assert_array_equal(state.projections[0, 0], np.eye(2))  # W_Q untouched


def test_a_release_sends_only_the_planes_it_changed_and_a_release_that_changed_nothing_sends_both(view, state):
    # in a document, as served: Bokeh sends a data source's data even when it equals what the page has
    doc = Document()
    doc.add_root(view.__panel__().get_root(doc))
    names = {view._x_points: "x", view._qkv: "w"}
    sent = []
    doc.on_change(lambda event: sent.append(names[event.model]) if event.model in names else None)
    view.channel.receive(0.02, 0.99, plane="w", seq=1, **PRESS)  # e₂W_Q = (0, 1)
    view.channel.receive(-1.0, 1.0, plane="w", seq=2, **RELEASE)
    np.testing.assert_array_equal(state.projections[0, 0], [[1.0, 0.0], [-1.0, 1.0]])
    assert sent == ["w"]  # X as it was: the page puts back the embeddings it previewed, nothing to send
    # pressed and let go where it is: the state is unchanged, and both planes go again over the page's preview
    view.channel.receive(-1.0, 1.0, plane="w", seq=3, **PRESS)
    view.channel.receive(-1.0, 1.0, plane="w", seq=4, **RELEASE)
    assert sent == ["w", "x", "w"]
    view.channel.receive(0.0, 1.0, plane="x", seq=5, **PRESS)  # x_love
    view.channel.receive(0.5, 0.5, plane="x", seq=6, **RELEASE)
    assert sent == ["w", "x", "w", "x", "w"] and view._x_points.data["x"] == [1.0, 0.5, 1.0]
    # whatever a page wrote into a plane's source goes at the next release, even one that leaves X as it was
    view._x_points.data = {**view._x_points.data, "x": [-0.9, -0.9, -0.9]}
    view.channel.receive(-1.0, 1.0, plane="w", seq=7, **PRESS)
    view.channel.receive(-0.5, 1.0, plane="w", seq=8, **RELEASE)
    assert view._x_points.data["x"] == [1.0, 0.5, 1.0]


def test_a_press_away_from_every_handle_moves_nothing(view, state):
    before = state.snapshot()
    view.channel.receive(-0.9, -0.9, plane="x", seq=1, **PRESS)
    view.channel.receive(0.0, 0.0, plane="x", seq=2, **RELEASE)
    assert view.channel.confirmed.data == dict(seq=[2], text=[""])  # answered, so the page's next position may go
    np.testing.assert_array_equal(state.embeddings, before["embeddings"])


def test_positions_are_clamped_to_the_plane_and_junk_is_ignored(view, state):
    (_, x_hi), (y_lo, _) = shown_extent(view.x_fig)  # the plane the server drew
    edge = (x_hi, y_lo)
    view.channel.receive(1.0, 0.0, plane="x", seq=1, **PRESS)
    view.channel.receive(1e9, -1e9, plane="x", seq=2, **RELEASE)
    assert tuple(state.embeddings[0]) == edge  # the plane's corner, not 1e9
    before = state.snapshot()
    for junk in ({"x": ["a"], "y": [0], "seq": [3], "start": [True], "end": [True], "plane": ["x"]},
                 {"x": [0.0], "y": [0.0], "seq": [3], "start": [True], "end": [True], "plane": ["<b>"]},
                 {"x": [0.0]}, {"x": [True], "y": [0.0], "seq": [3], "start": [1], "end": [True], "plane": ["x"]},
                 # a whole number too large for a float: float() raises, and Bokeh would log each one in full
                 {"x": [10**400], "y": [1.0], "seq": [3], "start": [True], "end": [True], "plane": ["x"]},
                 # a seq past JavaScript's exact integers, which the answer would echo: Bokeh fails on 10**400
                 # (logging the whole message) and warns past 2**53
                 {"x": [0.0], "y": [1.0], "seq": [10**400], "start": [True], "end": [True], "plane": ["x"]},
                 {"x": [0.0], "y": [1.0], "seq": [2**53], "start": [True], "end": [True], "plane": ["x"]},
                 {"x": [0.0], "y": [1.0], "seq": [-1], "start": [True], "end": [True], "plane": ["x"]}):
        view.channel._on_channel("data", None, junk)
    np.testing.assert_array_equal(state.embeddings, before["embeddings"])
    assert view.channel.confirmed.data["seq"] == [2]


def test_a_page_that_writes_its_planes_ranges_changes_neither_the_grab_nor_the_clamp(view, state):
    edge = tuple(hi for _, hi in shown_extent(view.x_fig))
    view.x_fig.x_range.update(start=-1e300, end=1e300)  # as a page can: the figure's ranges are its to write
    view.x_fig.y_range.update(start=-1e300, end=1e300)
    view.channel.receive(-1.0, -1.0, plane="x", seq=1, **PRESS)  # far from every embedding: nothing picked up
    view.channel.receive(1e5, 1e5, plane="x", seq=2, **RELEASE)
    np.testing.assert_array_equal(state.embeddings, X_COURSE)
    view.channel.receive(0.0, 1.0, plane="x", seq=3, **PRESS)  # x_love
    view.channel.receive(1e5, 1e5, plane="x", seq=4, **RELEASE)
    assert tuple(state.embeddings[1]) == edge  # the corner of the plane the server drew, not 1e5


def test_a_position_that_is_not_a_number_mid_drag_is_answered_with_nothing(view, state):
    view.channel.receive(0.0, 1.0, plane="x", seq=1, **PRESS)  # x_love
    view.channel.receive(math.nan, 0.5, plane="x", seq=2, **MOVE)
    assert view.channel.confirmed.data == dict(seq=[2], text=[""])  # not the core's error, in English
    view.channel.receive(0.5, 0.5, plane="x", seq=3, **RELEASE)  # the drag goes on to its release
    assert tuple(state.embeddings[1]) == (0.5, 0.5)


def test_a_release_that_changes_nothing_draws_the_state_again(view, state):
    redrawn = []
    view.channel._refresh = lambda: redrawn.append(True)
    view.channel.receive(1.0, 1.0, plane="x", seq=1, **PRESS)
    view.channel.receive(1.0, 1.0, plane="x", seq=2, **RELEASE)  # let go where it started
    assert redrawn == [True]


# --- the Heads tab ---------------------------------------------------------------------------------------------

def test_the_heads_matrices_show_each_heads_weights_and_pattern(state):
    heads = HeadsView(state=state)
    state.load_heads_preset()
    html = heads.matrices.object
    assert "<figcaption>Head 1: previous token</figcaption>" in html
    assert "<figcaption>Head 2: itself</figcaption>" in html
    e = [math.exp(5 / math.sqrt(2) * c) for c in (1.0, 0.5, -0.5)]  # head 1, love: previous token I
    assert f"love: I {fmt(e[0] / sum(e), 2)}, love {fmt(e[1] / sum(e), 2)}, NLP {fmt(e[2] / sum(e), 2)}" in html
    assert [b.visible for b in heads.explore] == [True, True, False, False]
    assert len(heads._inputs) == 4 * 2  # W_O : (2 heads · d_v, d_model)
    heads.count.value = "3"
    assert state.heads == 3 and len(heads._inputs) == 6 * 2 and [b.visible for b in heads.explore][:3] == [True] * 3
    heads.explore[1].clicks += 1
    assert state.tokens == ["I", "love", "NLP"] and state.head == 1
    np.testing.assert_allclose(state.keys, 2 * np.asarray(state.embeddings), rtol=1e-15)  # head 2: W_K = 2 I


def test_w_o_refuses_bad_input(state):
    heads = HeadsView(state=state)
    box = heads._inputs[(1, 0)]
    box.value = "1e7"
    assert is_marked_invalid(box) and "W_O[2,1] refused" in heads.field_message.object
    np.testing.assert_array_equal(state.w_o, np.eye(2))


def test_an_unclear_head_gets_no_pattern_name(state):
    heads = HeadsView(state=state)  # Q = K = V = X: rows of 0.40, 0.20, 0.40, whose argmax is a tie
    assert "<figcaption>Head 1</figcaption>" in heads.matrices.object


# --- the n² cost -------------------------------------------------------------------------------------------------

class Counting:
    """A stand-in for core.cost.measure_attention that counts its calls (and can be held)."""

    def __init__(self):
        self.calls, self.release = [], threading.Event()
        self.release.set()

    def __call__(self, n, image_size=64):
        from core import measure_attention
        self.release.wait(10)
        self.calls.append(n)
        return measure_attention(min(n, 64), image_size=image_size)


def test_the_cache_measures_each_size_once_and_no_other_sizes():
    measure = Counting()
    cache = CostCache(measure=measure)
    first = cache.measure(8).result(10)
    assert cache.measure(8).result(10) is first and cache.get(8) is first
    assert measure.calls == [8, 8, 8]  # three runs, the fastest kept, once
    for bad in (5, 100, 8192, "8", None):
        with pytest.raises(ValueError, match="n must be one of 3, 8, 16"):
            cache.measure(bad)
    assert [m.n for m in cache.measured()] == [8] and len(cache.sizes) == len(COST_SIZES) == 11


def test_two_pages_asking_at_once_share_one_run():
    measure = Counting()
    measure.release.clear()
    cache = CostCache(measure=measure)
    a, b = cache.measure(4096), cache.measure(4096)
    assert a is b
    measure.release.set()
    assert a.result(10) is cache.get(4096) and measure.calls == [4096]  # one run above 1024


def test_the_cache_lives_in_panels_cache_once_per_process(monkeypatch):
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, None)
    made = cost_cache()
    assert isinstance(made, CostCache) and cost_cache() is made and pn.state.cache[CACHE_KEY] is made


def test_the_servers_cache_traces_memory_in_a_process_of_its_own(monkeypatch):
    """tracemalloc stopped in a server's thread while its event loop allocates crashes CPython 3.12.1."""
    import tracemalloc

    def refuse(*_):
        raise AssertionError("tracemalloc started in the server's own process")
    monkeypatch.setattr(tracemalloc, "start", refuse)
    monkeypatch.delitem(pn.state.cache, CACHE_KEY, raising=False)
    m = cost_cache().measure(64).result(timeout=120)
    # the six (64, 64) float64 arrays the core keeps: 41 n² bytes (core/cost.py), traced in the child
    assert m.n == 64 and m.nn_bytes == 41 * 64 * 64 and m.nn_bytes <= m.peak_bytes <= 2 * m.nn_bytes + 1_000_000
    assert not tracemalloc.is_tracing()


def test_module_2s_figures(monkeypatch, state):
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, CostCache(measure=Counting()))
    state.cost_n = 8
    view = CostView(state=state)
    html = view.figures.object
    assert "<th scope='row'>100</th><td>10,000 (10⁴)</td><td>80 kB</td>" in html
    assert "<th scope='row'>10,000</th><td>100,000,000 (10⁸)</td><td>800 MB</td>" in html
    assert "<th scope='row'>8</th><td>64</td><td>512 B</td>" in html
    assert view._times.data["x"] == [3, 8] and len(view._image.data["image"]) == 1
    assert count_text(10 ** 8) == "100,000,000 (10⁸)" and bytes_text(8 * 4096 ** 2) == "134 MB"


# --- the Heads tab in the page's language ------------------------------------------------------------------------

def test_the_heads_tab_speaks_the_pages_language(monkeypatch, state):
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, CostCache(measure=Counting()))
    heads = HeadsView(state=state)
    state.load_heads_preset()
    state.lang = "fr"
    html = heads.matrices.object
    assert "<figcaption>Tête 1\u00a0: jeton précédent</figcaption>" in html
    assert "<figcaption>Tête 2\u00a0: lui-même</figcaption>" in html
    e = [math.exp(5 / math.sqrt(2) * c) for c in (1.0, 0.5, -0.5)]  # head 1, love: previous token I
    row = "\u00a0; ".join(f"{t} {fmt(w / sum(e), 2).replace('.', ',')}"
                          for t, w in zip(("I", "love", "NLP"), e, strict=True))
    # French writes 0,14 and separates the list's numbers with " ; " (no break before ";")
    assert f"love: {row}" in html
    assert heads.explore[0].label == "Explorer la tête 1"
    assert heads.preset.label == "Deux têtes\u00a0: jeton précédent\u00a0; lui-même"
    assert heads._inputs[(0, 0)].value == "0,5"  # W_O averages the two heads
    state.cost_n = 8
    figures = next(p for p in heads._layout.select(pn.pane.HTML) if p.name == "cost-figures").object
    # CLDR's French groups digits with a narrow no-break space; a French teacher writes octets: ko, Mo
    assert "<th scope='row'>100</th><td>10\u202f000 (10⁴)</td><td>80 ko</td>" in figures
    assert "<td>100\u202f000\u202f000 (10⁸)</td><td>800 Mo</td>" in figures
    state.lang = "de"
    assert "<td>100.000.000 (10⁸)</td><td>800 MB</td>" in next(
        p for p in heads._layout.select(pn.pane.HTML) if p.name == "cost-figures").object



def test_w_o_boxes_are_built_once_for_the_most_heads_and_hidden_rows_take_nothing(state):
    """A page alternating head counts rebuilt W_O's boxes at each change (a model per box, 240-450 ms of the loop
    under a flood); now the rows for the most heads shown so far stay, those not used hidden."""
    view = HeadsView(state=state)
    builds = []
    build = view._build_w_o
    view._build_w_o = lambda rows, relabel=False: (builds.append(view._w_o_rows), build(rows, relabel))[1]
    state.set_heads(3)
    rows = view._w_o_rows
    assert len(rows) == 6 and all(r.visible for r in rows)
    for _ in range(3):
        state.set_heads(1)
        state.set_heads(3)
    state.set_heads(2)
    assert view._w_o_rows is rows and [r.visible for r in rows] == [True] * 4 + [False] * 2
    assert sorted(view._inputs) == [(r, c) for r in range(4) for c in range(2)]
    # W_O for two heads is their average (session/heads.py default_w_o): rows 1, 2 then 3, 4 halve each head
    assert [view._inputs[(r, r % 2)].value for r in range(4)] == ["0.5"] * 4
    hidden = view._built_inputs[(5, 1)]
    hidden.value = "7"  # a crafted message into a hidden row's box
    assert state.w_o.shape == (4, 2) and not state.message
    view._inputs[(0, 0)].value = "2"
    assert state.w_o[0, 0] == 2.0
