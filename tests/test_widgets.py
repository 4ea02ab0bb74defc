"""State and views without a browser: set the state, read the Bokeh data sources and text."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bokeh import events

from app import create_app
from link.browser import BrowserBridge
from link.drag import DragChannel
from link.rules import MAX_LINE_WIDTH
from link.shown import PlotsShown
from session.state import AttentionState
from widgets.matrix import AttentionMatrix
from widgets.query_plot import QueryPlot
from widgets.steps import Inspector, Readout
from widgets.weights import OutputLine, WeightBars

LOVE = [0.1978, 0.4011, 0.4011]
NLP = [0.2483, 0.2483, 0.5035]


@pytest.fixture
def state():
    return AttentionState()


#: What the page's drag script sends with a position (link/drag.js): a press, a move, the release, a tap.
PRESS, MOVE, RELEASE, TAP = dict(start=True), {}, dict(end=True), dict(start=True, end=True)


def drag_channel(state, plot=None, bars=None) -> DragChannel:
    """The server's end of a page's drag over ``state``, with the views it needs."""
    return DragChannel(plot or QueryPlot(state=state), Readout(state=state), bars or WeightBars(state=state),
                       state=state)


def test_state_starts_at_the_love_query(state):
    assert state.query == (0.0, 1.0) and state.selected == 1 and state.tokens == ["I", "love", "NLP"]
    np.testing.assert_allclose(state.result.weights[1], LOVE, atol=5e-5)
    np.testing.assert_allclose(state.result.output[1], 4.4067, atol=5e-5)


def test_select_row_moves_the_query_to_that_token(state):
    state.select_row(0)
    assert state.query == (1.0, 0.0)
    np.testing.assert_allclose(state.result.output[0], 3.5933, atol=5e-5)
    state.select_row(2)
    assert state.query == (1.0, 1.0)
    np.testing.assert_allclose(state.result.weights[2], NLP, atol=5e-5)


def test_dragging_replaces_only_the_selected_query(state):
    state.select_row(0)
    state.move_query(0.0, 1.0)  # token I now asks what love asks
    np.testing.assert_allclose(state.result.weights[0], LOVE, atol=5e-5)
    np.testing.assert_allclose(state.result.weights[2], NLP, atol=5e-5)  # other rows keep q = k


@pytest.mark.parametrize("bad", [(math.nan, 0), (0, math.inf), (-math.inf, 1), (2e6, 0), ("a", 1), (None, 1)])
def test_bad_query_changes_nothing_but_the_message(state, bad):
    before = (state.query, state.result)
    assert state.move_query(*bad) is False
    assert (state.query, state.result) == before
    assert state.message.startswith("Query refused")
    assert state.move_query(0.5, 0.5) is True and state.message == ""


def test_bad_row_is_refused(state):
    state.select_row(7)
    assert state.selected == 1 and "does not exist" in state.message


def test_reset(state):
    state.select_row(2)
    state.move_query(-1, 2)
    state.scale = False
    state.reset()
    assert (state.query, state.selected, state.scale) == ((0.0, 1.0), 1, True)
    np.testing.assert_allclose(state.result.output[1], 4.4067, atol=5e-5)


def test_sessions_do_not_share_arrays():
    a, b = AttentionState(), AttentionState()
    assert a.keys is not b.keys
    a.select_row(2)
    a.move_query(-1, -1)
    assert b.query == (0.0, 1.0) and b.selected == 1


def test_query_plot_follows_the_state(state):
    view = QueryPlot(state=state)
    state.move_query(1.0, 1.0)
    assert view._query.data["x"] == [1.0] and view._query.data["y"] == [1.0]
    widths = view._lines.data["width"]
    assert widths[2] == pytest.approx(1 + (MAX_LINE_WIDTH - 1) * 0.5035, abs=1e-3)
    assert widths[0] == widths[1] < widths[2]
    assert view._keys.data["label"] == ["\u2068I\u2069 (1, 0)", "\u2068love\u2069 (0, 1)", "\u2068NLP\u2069 (1, 1)"]
    assert view.figure.name == "query-plot"


def test_a_query_outside_the_plane_is_an_arrow_at_its_edge_pointing_to_it(state):
    view = QueryPlot(state=state)
    assert view._query.data["marker"] == ["circle"]
    state.set_query_coordinate(0, "5")  # q = (5, 1): right of the plane, which ends at 2.5
    d = view._query.data
    # on the line from the plane's centre (0.5, 0.5) to q: (0.5 + 2t·2.25... ) reaches x = 2.5 at t = 2/4.5
    assert d["marker"] == ["triangle"] and d["x"] == [2.5] and d["y"] == [pytest.approx(0.5 + 0.5 * 2 / 4.5)]
    assert d["angle"] == [pytest.approx(math.atan2(0.5, 4.5) - math.pi / 2)]  # pointing right, a little up
    assert d["label"] == ["q (5.00, 1.00)"]
    assert view._lines.data["xs"][0] == [5.0, 1.0]  # the lines still run from q itself
    state.move_query(0.5, 2.0)
    assert view._query.data["marker"] == ["circle"] and view._query.data["x"] == [0.5]


def test_a_drag_of_q_holds_the_plots_data_until_the_release(state):
    # the page draws each position of its own drag; the server sends the readout's text for each and
    # the plots' data once, at the release
    plots = PlotsShown(state=state)  # what the page's plots show, one for all of them
    plot, bars, line = (QueryPlot(state=state, plots=plots), WeightBars(state=state, plots=plots),
                        OutputLine(state=state, plots=plots))
    matrix, readout = AttentionMatrix(state=state, plots=plots), Readout(state=state)
    bridge = BrowserBridge(state, plots=plots)
    channel = drag_channel(state, plot, bars)
    channel.receive(0.0, 1.0, seq=1, **PRESS)  # on q = k_love: a drag of q
    channel.receive(0.5, 1.0, seq=2)
    channel.receive(1.0, 1.0, seq=3)
    assert plots.previewing and state.query == (1.0, 1.0)
    assert channel.confirmed.data == {"x": [1.0], "y": [1.0], "seq": [3]}  # each position is answered
    assert "Output Σ aᵢvᵢ = 4.0000" in readout.div.text
    assert plot._query.data["x"] == [0.0] and bars.shown["top"] == pytest.approx(LOVE, abs=5e-5)
    assert line.shown["x"] == pytest.approx([4.4067], abs=5e-5)
    assert matrix._outputs.data["label"][1] == "4.4067"
    assert "q=0.0%2C1.0" in bridge.address  # the address, too, waits for the release
    channel.receive(1.0, 1.0, seq=4, **RELEASE)
    assert not plots.previewing and "q=1.0%2C1.0" in bridge.address
    assert channel.confirmed.data["seq"] == [4]  # answered, although q did not move
    assert plot._query.data["x"] == [1.0] and bars.shown["top"] == pytest.approx(NLP, abs=5e-5)
    assert line.shown["x"] == pytest.approx([4.0], abs=1e-12)
    assert matrix._outputs.data["label"][1] == "4.0000"


def test_a_drag_of_a_key_a_tap_or_a_new_row_is_plotted_at_once(state):
    plots = PlotsShown(state=state)
    plot, bars = QueryPlot(state=state, plots=plots), WeightBars(state=state, plots=plots)
    channel = drag_channel(state, plot, bars)
    # a key is not previewed by the page: its drag is plotted as it goes
    channel.receive(1.05, 0.02, **PRESS)
    channel.receive(1.0, 1.0)
    assert not plots.previewing and state.keys[0].tolist() == [1.0, 1.0]
    assert bars.shown["top"][0] == pytest.approx(bars.shown["top"][2])  # k_I = k_NLP now
    channel.receive(1.0, 1.0, **RELEASE)
    state.reset()
    channel.receive(1.0, 1.0, **TAP)
    assert not plots.previewing and bars.shown["top"] == pytest.approx(NLP, abs=5e-5)
    # a drag of q, then the row changes under it (key "1"): the preview's inputs changed, the plots follow
    channel.receive(1.0, 1.0, **PRESS)
    channel.receive(0.0, 1.0)
    assert plots.previewing and bars.shown["top"] == pytest.approx(NLP, abs=5e-5)
    state.select_row(2)  # q = k_NLP = (1, 1)
    assert not plots.previewing and bars.shown["top"] == pytest.approx(NLP, abs=5e-5)
    assert plot._query.data["x"] == [1.0] and plot._query.data["y"] == [1.0]
    # a drag whose end never reaches the server (a broken or hostile client): a move from anywhere else
    # (an arrow key, the address, a typed q) is plotted at once
    state.select_row(1)
    channel.receive(0.0, 1.0, **PRESS)
    channel.receive(1.0, 1.0)
    assert plots.previewing and bars.shown["top"] == pytest.approx(LOVE, abs=5e-5)
    state.move_query(1.0, 1.0)  # where the drag already put q (an arrow key against the plane's edge)
    assert not plots.previewing and bars.shown["top"] == pytest.approx(NLP, abs=5e-5)
    channel.receive(1.0, 1.0, **PRESS)
    channel.receive(0.0, 1.0)
    assert plots.previewing and bars.shown["top"] == pytest.approx(NLP, abs=5e-5)
    assert state.set_query_coordinate(1, "0")  # a typed q = (0, 0): every weight 1/3
    assert not plots.previewing and bars.shown["top"] == pytest.approx([1 / 3] * 3, abs=1e-12)
    channel.receive(math.nan, 1.0, **PRESS)  # refused: nothing for the page to draw
    assert not plots.previewing


def test_drag_positions_move_the_query_and_are_clamped_to_the_plane(state):
    channel = drag_channel(state)
    channel.receive(0.0, 1.0, **PRESS)
    channel.receive(1.0, 1.0)
    assert state.query == (1.0, 1.0)
    channel.receive(40.0, -9.0)
    assert state.query == (2.5, -1.5)
    channel.receive(0.25, 0.5, **TAP)
    assert state.query == (0.25, 0.5)


def test_matrix_shows_every_weight_and_row_sums(state):
    view = AttentionMatrix(state=state)
    assert view._cells.data["label"] == ["0.4011", "0.1978", "0.4011", "0.1978", "0.4011", "0.4011",
                                         "0.2483", "0.2483", "0.5035"]
    assert view._sums.data["label"] == ["1.0000"] * 3
    assert view.figure.name == "attention-matrix"
    from bokeh.models import LinearColorMapper

    mapper = view.figure.select_one({"type": LinearColorMapper})
    assert (mapper.low, mapper.high) == (0.0, 1.0)


def test_tapping_a_row_selects_it_and_moves_the_query(state):
    view, readout = AttentionMatrix(state=state), Readout(state=state)
    view._on_tap(events.Tap(view.figure, x=2.9, y=0.3, sx=0, sy=0))
    assert state.selected == 0 and state.query == (1.0, 0.0)
    assert view._highlight.data["y"] == [0]
    assert "Output Σ aᵢvᵢ = 3.5933 ≈ 3.59" in readout.div.text
    view._on_tap(events.Tap(view.figure, x=0.0, y=0.1, sx=0, sy=0))  # the selected row again
    assert state.selected == 0
    view._on_tap(events.Tap(view.figure, x=0.0, y=5.0, sx=0, sy=0))  # below the matrix: ignored
    assert state.selected == 0 and state.message == ""


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), [1], "1", None, True])
def test_pointer_events_a_browser_never_sends_change_nothing(state, bad, caplog):
    """A broken or hostile client's coordinates: no exception, and nothing on the page changes. A position that is not
    a finite number (BokehJS writes NaN and ±inf as numbers) is dropped, with one log line for the page: clamped, ±inf
    moved q to the plane's edge, and NaN put the state's "Query refused" on the page."""
    matrix = AttentionMatrix(state=state)
    channel = drag_channel(state)

    def page():
        return state.query, state.selected, state.message, dict(channel.confirmed.data), channel.hand, \
            channel.plots.previewing

    before = page()
    for kind in (TAP, PRESS, MOVE, RELEASE):
        for x, y in ((bad, 1.0), (0.0, bad)):
            channel._on_channel("data", None, {"x": [x], "y": [y], "seq": [1], "start": [kind.get("start", False)],
                                               "end": [kind.get("end", False)]})
    for junk in ({}, {"x": []}, {"x": [1.0], "y": [1.0], "seq": ["1"], "start": [True], "end": [False]},
                 {"x": [1.0], "y": [1.0], "seq": [1], "start": ["yes"], "end": [False]}, None):
        channel._on_channel("data", None, junk)
    matrix._on_tap(events.Tap(matrix.figure, x=0.0, y=bad, sx=0, sy=0))
    assert page() == before
    said = [r.getMessage() for r in caplog.records if "not a finite number" in r.getMessage()]
    assert len(said) == (1 if isinstance(bad, float) else 0), said


def test_bars_and_output_line(state):
    bars, line = WeightBars(state=state), OutputLine(state=state)
    assert bars.shown["label"] == ["0.1978", "0.4011", "0.4011"]
    assert line.shown["label"] == ["4.4067"]
    # the line runs from min(v) - 0.5 to max(v) + 0.5 (values 2, 6, 4); the output sits at (4.4067 - 1.5) / 5
    assert 'data-lo="1.5" data-hi="6.5"' in line.div.text and 'x="58.133%"' in line.div.text  # 4.406672
    state.select_row(2)
    assert line.shown["x"] == [pytest.approx(4.0, abs=1e-12)]
    assert bars.shown["label"] == ["0.2483", "0.2483", "0.5035"]


def test_a_value_s_label_keeps_its_order_after_an_arabic_name(state):
    """The number line is drawn left to right in every language: after an Arabic token's name, Unicode's bidi
    algorithm took "= 2" for part of the Arabic run and drew "v 2 = سلام". The name is isolated."""
    state.tokens = ["سلام", "love", "NLP"]
    line = OutputLine(state=state)
    assert "v \u2068سلام\u2069 = 2</text>" in line.div.text, line.div.text
    assert "v \u2068love\u2069 = 6</text>" in line.div.text


def test_readout_text(state):
    r = Readout(state=state)
    assert r.div.text == (
        'Query of "love": q = (0.000, 1.000)\n'
        "Dot products q·k: I 0.0000, love 1.0000, NLP 1.0000\n"
        "Scores s = q·k / √2: I 0.0000, love 0.7071, NLP 0.7071\n"
        "Weights a = softmax(s): I 0.1978, love 0.4011, NLP 0.4011\n"
        "Output Σ aᵢvᵢ = 4.4067 ≈ 4.41"
    )
    assert r.div.render_as_text and "aria-live" not in r.div.html_attributes  # the Announcer speaks, throttled


def test_inspector_shows_every_step_and_escapes_tokens(state):
    view = Inspector(state=state)
    html = view._pane.object
    for step in ("1. q·k", "÷ √2", "3. s<sub>i</sub> − max", "4. exp", "5. a<sub>i</sub> = exp ÷ Σ",
                 "6. a<sub>i</sub>·v<sub>i</sub>",
                 '7. output = <span dir="ltr">0.3956 + 2.4067 + 1.6044 = 4.4067</span>'):
        assert step in html
    # row I of the scores: q·k, s and s − max, a negative number with the minus sign (U+2212), as the formulas
    # beside it write it; of the output: its value 2, exp = e^(-1/√2), its weight and a·v
    assert "(1, 0)</span></th><td>0.0000</td><td>0.0000</td><td>\u22120.7071</td>" in html
    assert ">2</span></th><td>0.4931</td><td>0.1978</td><td>0.3956</td>" in html
    assert '<th scope="row">Σ</th><td>2.4931</td><td>1.0000</td><td>4.4067</td>' in html  # Σ exp = 2 + e^(-1/√2)
    # a key and a value as typed, never rounded to whole numbers (a key (0.5, 1) read "(0, 1)")
    state.keys = np.array([[0.5, 1.0], [0.0, 1.0], [1.0, 1.0]])
    state.values = np.array([2.5, 6.0, 4.0])
    assert ">(0.5, 1)</span></th>" in view._pane.object and ">2.5</span></th>" in view._pane.object
    state.tokens = ["<img src=x onerror=alert(1)>", "love", "NLP"]
    assert "<img" not in view._pane.object and "&lt;img src=x onerror=alert(1)&gt;" in view._pane.object


def test_app_builds_one_state_per_page():
    a, b = create_app(), create_app()
    assert a.state is not b.state


def test_label_sides_face_away_from_the_other_points_and_off_the_edge():
    from widgets.query_plot import label_sides

    # hemmed in on three sides: the free lower left, whatever its small extra count
    hemmed = np.array([[0.0, 0.0], [1.0, 1.0], [-1.0, 1.0], [1.0, -1.0]])
    assert label_sides(hemmed[:1], hemmed).tolist() == [[-1, -1]]
    # alone, a point takes the first side (up and right) unless that runs off the plane: at the right edge, up-left
    assert label_sides([[0.0, 0.0]], [[0.0, 0.0]]).tolist() == [[1, 1]]
    assert label_sides([[2.4, 0.0]], [[2.4, 0.0]]).tolist() == [[-1, 1]]
    # at the top right corner of the bounds given: down and left
    assert label_sides([[0.9, 0.9]], [[0.9, 0.9]], bounds=(-1.0, 1.0)).tolist() == [[-1, -1]]
    # a point of `among` on the labelled point does not count, the one up and right does: up-left and down-right
    # tie at 0 (each at right angles to it), and the first of them in SIDES wins
    assert label_sides([[0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0], [0.5, 0.5]]).tolist() == [[-1, 1]]
