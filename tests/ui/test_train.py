"""The Train tab in a real browser: pick a target and play; pause, step and scrub; what was learned and the swap;
a painted target one head cannot learn, and two heads; the page's mirror of the core; the address; Present; Export.

Expected numbers come from the NumPy core (core/training/, itself checked against finite differences and the
course's claims in tests/test_core_training.py) and from the course: "I love NLP"'s embeddings make NLP's scores
the sum of I's and love's, so "attend to the previous token" on them stops at log 2 for one head.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from core.training import TRAINING_PRESETS, swapped_loss, train, weights_task
from tests.ui.helpers import PATIENCE, SHOWN_PLOT, show_tab
from tests.ui.test_follow import close, follower, new_page, present, room_server  # noqa: F401 (a fixture)

RUN = "window.attentionExplorerTrain"
#: What the page shows of its run: the step drawn, the loss and swapped loss it computed, and every number.
SHOWN = """() => {
  const root = window.attentionExplorerTrain, player = root.root;
  const cells = {};
  for (const td of player.querySelectorAll('.weights td[data-i]'))
    cells[td.dataset.i + ',' + td.dataset.j] = Number(td.dataset.value);
  const w = {};
  for (const td of player.querySelectorAll('table[data-w] td')) {
    const t = td.closest('table');
    w[`${t.dataset.w},${t.dataset.h},${td.dataset.r},${td.dataset.c}`] = Number(td.dataset.value);
  }
  return {step: Number(player.dataset.step), loss: Number(player.querySelector('.readout').dataset.loss),
          swapped: Number(player.querySelector('.swap-loss').dataset.loss), weights: cells, w,
          readout: player.querySelector('.readout').textContent, runs: root.state.runs,
          playing: root.state.playing};
}"""


def shown(page) -> dict:
    return page.evaluate(SHOWN)


def weights_of(s: dict, n: int) -> np.ndarray:
    return np.array([[s["weights"][f"{i},{j}"] for j in range(n)] for i in range(n)])


def open_train(open_page, address: str = ""):
    page = open_page(address)
    show_tab(page, "Train")
    page.wait_for_function(f"() => {RUN} && {RUN}.state.runs > 0 && {RUN}.run() != null", timeout=PATIENCE)
    return page


def runs(page) -> int:
    return page.evaluate(f"() => {RUN}.state.runs")


def wait_new_run(page, before: int) -> None:
    page.wait_for_function(f"(n) => {RUN}.state.runs > n", arg=before, timeout=PATIENCE)


def choose(page, label: str) -> None:
    before = runs(page)
    page.locator(".train-targets").get_by_role("button", name=label).click()
    wait_new_run(page, before)


def play_to_end(page) -> None:
    page.locator(".train-player button.play").click()
    page.wait_for_function(f"() => {RUN}.state.step === {RUN}.run().steps && !{RUN}.state.playing", timeout=PATIENCE)


def summary_text(page) -> str:
    return " ".join(page.locator(".train-summary p").all_text_contents())


def address(page) -> str:
    return page.evaluate("() => Bokeh.documents[0].get_model_by_name('page-address').text")


def wait_address(page, part: str) -> None:
    page.wait_for_function("(p) => Bokeh.documents[0].get_model_by_name('page-address').text.includes(p)", arg=part,
                           timeout=PATIENCE)


def scrub_to(page, step: int) -> None:
    """Drag the scrub slider to ``step`` and let go: the input events a range input sends."""
    page.locator(".train-player .scrub").evaluate(
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input', {bubbles: true}));"
        " el.dispatchEvent(new Event('change', {bubbles: true})); }", step)


# --- 1. pick a target and press Play ------------------------------------------------------------------------------

#: How many steps the loss curve has drawn (its path's points after the first).
CURVE_STEPS = """() => {
  const find = (root) => { const hit = root.querySelector('.loss-curve path.curve'); if (hit) return hit
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) { const h = find(e.shadowRoot); if (h) return h }
    return null }
  return (find(document)?.getAttribute('d').match(/L/g) ?? []).length }"""


def test_the_loss_curve_is_drawn_up_to_the_step_shown(open_page):
    """The class watches the loss fall: the curve ends at the step shown (it was the whole run from step 0)."""
    page = open_train(open_page)
    scrub_to(page, 0)
    page.wait_for_function(f"() => ({CURVE_STEPS})() === 0", timeout=PATIENCE)
    scrub_to(page, 120)
    page.wait_for_function(f"() => ({CURVE_STEPS})() === 120", timeout=PATIENCE)
    play_to_end(page)
    assert page.evaluate(CURVE_STEPS) == page.evaluate(f"() => {RUN}.run().steps") == 500


def test_a_preset_played_brings_the_loss_down_and_the_weights_onto_the_target(open_page):
    page = open_train(open_page)
    choose(page, "Attend to yourself")
    start = shown(page)
    assert start["step"] == 0
    # the random start: the roles indistinguishable, every token attends almost evenly (weights near 1/3)
    assert np.allclose(weights_of(start, 3), 1 / 3, atol=0.05)
    # every step the page draws, as it draws it
    page.evaluate(f"""() => {{ window.trainSteps = new Set(); const root = {RUN}.root;
      new MutationObserver(() => window.trainSteps.add(Number(root.dataset.step)))
        .observe(root, {{attributes: true, attributeFilter: ['data-step']}}); }}""")
    play_to_end(page)
    end = shown(page)
    assert end["step"] == 500
    # the course's promise for this preset (core/training/__init__.py's table): under 0.01 by step 200
    assert end["loss"] < 0.01 < start["loss"]
    assert np.all(np.diag(weights_of(end, 3)) > 0.95)  # each token on itself, as the target asks
    steps = page.evaluate("() => [...window.trainSteps]")
    assert len(steps) > 5 and 0 < sorted(steps)[len(steps) // 2] < 500  # played through, not jumped to the end


# --- 2. pause, step, scrub: the numbers of that step ------------------------------------------------------------

def test_pause_step_and_scrub_show_the_numbers_of_that_step(open_page):
    page = open_train(open_page)
    run = train(TRAINING_PRESETS["attend to the previous token"], seed=0, steps=500)

    def check(step):
        s = shown(page)
        assert s["step"] == step
        assert s["loss"] == pytest.approx(run.loss[step], rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(weights_of(s, 5), run.weights[step], rtol=1e-9, atol=1e-12)
        for name, W in (("W_Q", run.W_Q), ("W_K", run.W_K)):
            for r in range(2):
                for c in range(2):
                    assert s["w"][f"{name},0,{r},{c}"] == pytest.approx(W[step, 0, r, c], rel=1e-12, abs=1e-15)
        assert f"Step {step} of 500" in s["readout"]

    scrub_to(page, 120)
    check(120)
    wait_address(page, "train_step=120")  # the scrub's release told the server
    page.locator(".train-player button.fwd").click()
    page.locator(".train-player button.fwd").click()
    check(122)
    wait_address(page, "train_step=122")
    page.locator(".train-player button.play").focus()
    page.locator(".train-player .swap-box").focus()  # out of any button: Space now plays and pauses
    page.locator(".train-player .swap-box").blur()
    page.keyboard.press("Space")
    page.wait_for_function(f"() => {RUN}.state.step > 130", timeout=PATIENCE)
    page.keyboard.press("Space")
    page.wait_for_function(f"() => !{RUN}.state.playing", timeout=PATIENCE)
    paused = shown(page)["step"]
    check(paused)
    if paused < 500:  # paused by the key (a very slow machine may have played to the end first: nothing is sent)
        wait_address(page, f"train_step={paused}")
    page.keyboard.press("ArrowLeft")
    check(paused - 1)


# --- 3. what was learned, and the swap ----------------------------------------------------------------------------

def test_the_summary_says_what_each_w_did_and_the_swap_raises_the_loss(open_page):
    page = open_train(open_page)
    play_to_end(page)
    summary = page.locator(".train-summary")
    summary.get_by_text("the query of position i points where the key of i − 1 points").wait_for(timeout=PATIENCE)
    assert "no longer interchangeable" in summary_text(page)
    run = train(TRAINING_PRESETS["attend to the previous token"], seed=0, steps=500)
    page.locator(".train-player .swap-box").check()
    s = shown(page)
    assert s["swapped"] == pytest.approx(swapped_loss(run, 500), rel=1e-9)
    # the loss jumps back up: after training, "previous token" swapped is "next token" (core: more than 1 nat)
    assert s["swapped"] > s["loss"] + 1
    assert page.locator(".train-player .swap-loss").text_content() == (
        f"loss {s['loss']:.4f} → swapped {s['swapped']:.4f}")
    # at the random start the roles are interchangeable: the swap changes the loss by little
    scrub_to(page, 0)
    s0 = shown(page)
    assert abs(s0["swapped"] - s0["loss"]) < 0.1


# --- 4. the limits of one head ------------------------------------------------------------------------------------

def paint(page, i: int, j: int) -> None:
    before = runs(page)
    page.locator(f".train-player .target button.paint[data-i='{i}'][data-j='{j}']").click()
    wait_new_run(page, before)


def test_a_painted_target_one_head_cannot_learn_stops_at_its_floor_and_two_heads_go_below(open_page):
    page = open_train(open_page)
    choose(page, "Attend to yourself")
    # painting starts from the target shown, each token to itself: the same run, its target's cells now buttons
    page.locator(".train-targets").get_by_role("button", name="Paint your own").click()
    page.locator(".train-player .target button.paint").first.wait_for(timeout=PATIENCE)
    # "previous token" on "I love NLP": I → I, love → I, NLP → love
    for i, j in ((1, 0), (1, 1), (2, 1), (2, 2)):
        paint(page, i, j)
    # a row with nothing to attend to is refused, and nothing else changes
    before = runs(page)
    page.locator(".train-player .target button.paint[data-i='0'][data-j='0']").click()
    page.get_by_text("would attend to nothing").wait_for(timeout=PATIENCE)
    assert runs(page) == before
    play_to_end(page)
    end = shown(page)
    # x_NLP = x_I + x_love: NLP's scores are I's plus love's for any W, and one head stops at log 2
    assert end["loss"] == pytest.approx(math.log(2), abs=2e-3)
    summary = page.locator(".train-summary")
    summary.get_by_text("One head cannot learn this target").wait_for(timeout=PATIENCE)
    assert "x_NLP = 1 x_I + 1 x_love" in summary_text(page)
    before = runs(page)
    page.locator(".train-two-heads").get_by_role("button").click()
    wait_new_run(page, before)
    play_to_end(page)
    two = shown(page)
    core = train(weights_task([[1, 0, 0], [1, 0, 0], [0, 1, 0]]), seed=0, steps=500, heads=2)
    assert two["loss"] == pytest.approx(core.loss[-1], rel=1e-9)
    assert two["loss"] < math.log(2) - 0.05
    summary.get_by_text("below one head's floor").wait_for(timeout=PATIENCE)


# --- the page's mirror of the core ---------------------------------------------------------------------------------

MIRROR = f"""(steps) => {{
  const t = {RUN}, run = t.run();
  return steps.map((k) => {{
    const f = t.forward(run, t.stepWeights(run, k)), s = t.forward(run, t.stepWeights(run, k, true));
    return {{loss: f.loss, swapped: s.loss, weights: f.weights, outputs: f.outputs,
             Q: f.heads.map((h) => h.Q), K: f.heads.map((h) => h.K), heads: f.heads.map((h) => h.weights)}}; }});
}}"""


@pytest.mark.parametrize("address, preset, heads", [
    ("", "attend to the previous token", 1),
    ("?train=retrieve", "retrieve the value", 1),
    ("?train=retrieve&train_heads=2", "retrieve the value", 2),
    ("?train=nlp&train_heads=2&train_scale=off&train_t=0.5&lr=0.2&train_seed=7", "everyone attends to NLP", 2),
])
def test_the_pages_forward_pass_agrees_with_the_core(open_page, address, preset, heads):
    page = open_train(open_page, address)
    kw = dict(heads=heads)
    if "train_seed=7" in address:
        kw.update(seed=7, scale=False, temperature=0.5, learning_rate=0.2)
    run = train(TRAINING_PRESETS[preset], seed=kw.pop("seed", 0), steps=500, **kw)
    steps = [0, 1, 37, 250, 500]
    got = page.evaluate(MIRROR, steps)
    X = run.task.X
    for k, g in zip(steps, got, strict=True):
        assert g["loss"] == pytest.approx(run.loss[k], rel=1e-12, abs=1e-12)
        assert g["swapped"] == pytest.approx(swapped_loss(run, k), rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(g["weights"], run.weights[k], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g["heads"], run.head_weights[k], rtol=1e-12, atol=1e-12)
        outputs = run.outputs[k] if run.outputs[k].ndim == 2 else run.outputs[k][:, None]
        np.testing.assert_allclose(g["outputs"], outputs, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g["Q"], X @ run.W_Q[k], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g["K"], X @ run.W_K[k], rtol=1e-12, atol=1e-12)


def test_the_rate_and_temperature_sliders_send_the_stop_they_show(open_page):
    """A slider's key moves it one stop (session/training.py's LEARNING_RATES, TEMPERATURES); the page shows the
    stop and the server trains with it."""
    page = open_train(open_page)
    for box, key, text, part in ((".train-rate", "ArrowRight", "0.1", "lr=0.1"),
                                 (".train-temperature", "ArrowLeft", "0.5", "train_t=0.5")):
        before = runs(page)
        page.locator(f"{box} input").focus()
        page.keyboard.press(key)
        assert page.locator(f"{box} output").text_content() == text
        wait_new_run(page, before)
        wait_address(page, part)
        assert page.locator(".train-root .field-message").text_content() == ""


# --- the address, Present, Export ---------------------------------------------------------------------------------

def test_a_link_reopens_the_same_run_at_the_same_step_and_bad_values_get_a_notice(open_page):
    link = "?train=100.100.010&lr=0.1&train_seed=3&train_step=240&train_heads=2"
    page = open_train(open_page, link)
    run = train(weights_task([[1, 0, 0], [1, 0, 0], [0, 1, 0]]), seed=3, steps=500, learning_rate=0.1, heads=2)
    page.wait_for_function(f"() => {RUN}.state.step === 240", timeout=PATIENCE)
    s = shown(page)
    assert s["loss"] == pytest.approx(run.loss[240], rel=1e-9)
    np.testing.assert_allclose(weights_of(s, 3), run.weights[240], rtol=1e-9, atol=1e-12)
    assert page.locator(".train-player .target button.paint").count() == 9  # the painted target, paintable
    # the address the page writes back is the link's own (as the state holds it)
    for part in ("train=100.100.010", "lr=0.1", "train_seed=3", "train_step=240", "train_heads=2"):
        wait_address(page, part)
    bad = open_train(open_page, "?train=nowhere&lr=2&train_step=9999")
    bad.get_by_text("train = 'nowhere' ignored").wait_for(timeout=PATIENCE)
    notice = bad.get_by_text("Some of the page address was ignored").text_content()
    assert "lr = '2' ignored" in notice and "train_step = '9999' ignored" in notice
    assert shown(bad)["step"] == 0 and bad.evaluate(f"() => {RUN}.run().n") == 5  # the defaults: previous token


def test_the_run_downloads_as_csv_and_json(open_page):
    page = open_train(open_page, "?train=retrieve&train_heads=2")
    run = train(TRAINING_PRESETS["retrieve the value"], seed=0, steps=500, heads=2)
    with page.expect_download() as got:
        page.locator(".train-json").get_by_text("Run as JSON").click()
    data = json.loads(open(got.value.path()).read())
    assert data["steps"] == 500 and data["heads"] == 2 and data["tokens"] == ["I", "love", "NLP"]
    np.testing.assert_array_equal(data["loss"], run.loss)
    np.testing.assert_array_equal(data["W_Q"], run.W_Q)
    np.testing.assert_array_equal(data["W_O"], run.W_O)
    with page.expect_download() as got:
        page.locator(".train-csv").get_by_text("Run as CSV").click()
    rows = list(csv.reader(io.StringIO(open(got.value.path()).read())))
    assert rows[0] == ["quantity", "head", "step", "row", "column", "value"]
    loss = [float(r[5]) for r in rows if r[0] == "loss"]
    assert loss == run.loss.tolist()
    w_k = {(int(r[1]), int(r[2]), int(r[3]), int(r[4])): float(r[5]) for r in rows if r[0] == "W_K"}
    assert w_k[(2, 500, 1, 0)] == run.W_K[500, 1, 1, 0] and len(w_k) == 501 * 2 * 4


def test_present_shares_play_and_the_step_with_a_follower(browser, room_server):  # noqa: F811 (the fixture)
    teacher = new_page(browser, room_server + "?train=yourself")
    code, link = present(teacher)
    student = follower(browser, link)
    for p in (teacher, student):
        show_tab(p, "Train")
        p.wait_for_function(f"() => {RUN} && {RUN}.state.runs > 0 && {RUN}.run().n === 3", timeout=PATIENCE)
    teacher.locator(".train-player button.play").click()
    # the teacher's Play plays on the student's page, from the same step, drawn by the student's page
    student.wait_for_function(f"() => {RUN}.state.playing || {RUN}.state.step === 500", timeout=PATIENCE)
    student.wait_for_function(f"() => {RUN}.state.step === 500 && !{RUN}.state.playing", timeout=PATIENCE)
    # the teacher scrubs back: the student's page shows that step, with the numbers of that step
    scrub_to(teacher, 150)
    student.wait_for_function(f"() => {RUN}.state.step === 150", timeout=PATIENCE)
    run = train(TRAINING_PRESETS["attend to yourself"], seed=0, steps=500)
    assert shown(student)["loss"] == pytest.approx(run.loss[150], rel=1e-9)
    student.get_by_text("Following room").wait_for(timeout=PATIENCE)  # it still follows: it did nothing itself
    # the teacher plays again from there: the student's page plays again too
    teacher.locator(".train-player button.play").click()
    student.wait_for_function(f"() => {RUN}.state.step > 150", timeout=PATIENCE)
    close(teacher, student)


# --- touch, on a landscape phone ----------------------------------------------------------------------------------

#: Whether an element of the tab lies inside the part of the tab one sees (the tab scrolls inside itself).
ON_SCREEN = """(el) => {
  const host = el.getRootNode().host, r = el.getBoundingClientRect(), t = host.getBoundingClientRect();
  return r.width > 0 && r.top >= t.top - 1 && r.bottom <= t.bottom + 1 && r.left >= t.left - 1 && r.right <= t.right + 1
    && r.bottom <= window.innerHeight + 1;
}"""


def touch_drag(page, locator, x0: float, x1: float, moves: int = 12) -> None:
    """A finger on ``locator`` at x0 (share of its width), moved to x1 and lifted: the touch events a phone sends."""
    box = locator.bounding_box()
    y = box["y"] + box["height"] / 2
    xs = [box["x"] + box["width"] * (x0 + (x1 - x0) * k / moves) for k in range(moves + 1)]
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": xs[0], "y": y}]})
    for x in xs[1:]:
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def test_a_landscape_phone_plays_scrubs_and_paints_by_touch(open_page):
    page = open_page("?train=yourself", viewport={"width": 844, "height": 390}, has_touch=True, is_mobile=True)
    show_tab(page, "Train")
    page.wait_for_function(f"() => {RUN} && {RUN}.state.runs > 0 && {RUN}.run() != null", timeout=PATIENCE)
    play = page.locator(".train-player button.play")
    # a class is told "open the Train tab and press Play": Play is there as the tab opens, no scrolling
    assert play.evaluate(ON_SCREEN)
    play.tap()
    page.wait_for_function(f"() => {RUN}.state.step === 500 && !{RUN}.state.playing", timeout=PATIENCE)
    # the tab scrolls under the player's controls, which stay in reach
    page.locator(".train-root .downloads").scroll_into_view_if_needed()
    assert play.evaluate("(el) => el.getRootNode().host.scrollTop") > 100
    assert play.evaluate(ON_SCREEN)
    # a finger drags the scrub slider from its start to about its middle: the page shows that step's numbers
    touch_drag(page, page.locator(".train-player .scrub"), 0.02, 0.5)
    page.wait_for_function(f"() => {RUN}.state.step > 100 && {RUN}.state.step < 400 && !{RUN}.state.scrubbing",
                           timeout=PATIENCE)
    s = shown(page)
    run = train(TRAINING_PRESETS["attend to yourself"], seed=0, steps=500)
    assert s["loss"] == pytest.approx(run.loss[s["step"]], rel=1e-9)
    wait_address(page, f"train_step={s['step']}")  # the finger's release told the server
    # painting by tapping cells: "Paint your own" starts from the target shown (each token to itself: the same run)
    page.locator(".train-targets").get_by_role("button", name="Paint your own").tap()
    page.locator(".train-player .target button.paint").first.wait_for(timeout=PATIENCE)
    before = runs(page)
    page.locator(".train-player .target button.paint[data-i='0'][data-j='1']").tap()
    wait_new_run(page, before)
    wait_address(page, "train=110.010.001")
    assert page.evaluate(f"() => Array.from({RUN}.run().target)") == [0.5, 0.5, 0, 0, 1, 0, 0, 0, 1]


# --- the lesson takes the stage, and its words -----------------------------------------------------------------

def test_the_train_tab_takes_the_stage_and_the_query_s_tabs_give_the_plot_back(open_page):
    """On the Train tab the query plot, its readout and the step-through step aside into a strip whose button brings
    them back; a tab about the query brings them back by itself (the Train tab was a column beside them)."""
    page = open_train(open_page, "?mode=projector")
    page.wait_for_function(SHOWN_PLOT, arg=False, timeout=PATIENCE)
    assert page.locator(".stepper").first.is_hidden()
    strip = page.locator(".stage-toggle button")
    assert strip.text_content() == "Show the query plot"
    strip.click()
    page.wait_for_function(SHOWN_PLOT, arg=True, timeout=PATIENCE)
    assert page.locator(".stepper").first.is_visible() and strip.text_content() == "Hide the query plot"
    strip.click()
    page.wait_for_function(SHOWN_PLOT, arg=False, timeout=PATIENCE)
    show_tab(page, "Weights")
    page.wait_for_function(SHOWN_PLOT, arg=True, timeout=PATIENCE)
    assert page.locator(".stage-strip").first.is_hidden()
    show_tab(page, "Train")  # the stage again, the plot aside
    page.wait_for_function(SHOWN_PLOT, arg=False, timeout=PATIENCE)


#: Whether the query plot is laid out on the page as ``want`` says (shown or not).
def test_the_summary_reads_as_sentences_with_quoted_tokens_and_minus_signs(open_page):
    """What was learned: token names quoted ("the query of is points where the key of all points"), a sentence's
    first letter a capital, and −46° with the minus sign, as the page writes "−" elsewhere."""
    page = open_train(open_page)
    play_to_end(page)
    page.locator(".train-summary").get_by_text("The query of position i points", exact=False).wait_for(
        timeout=PATIENCE)
    text = summary_text(page)
    assert "The query of position i points where the key of i − 1 points" in text  # case-sensitive here
    assert "a turn by −46°" in text and "-46" not in text
    choose(page, "Everyone attends to NLP")
    page.locator(".train-summary").get_by_text("“love”", exact=False).wait_for(timeout=PATIENCE)
    assert "The query of “I” points where the key of “NLP” points, the query of “love” points" in summary_text(page)


def test_retrieve_the_value_says_why_w_v_learns_other_values(open_page):
    """"Retrieve the value" learns W_V = (3.98, 2.01, 6.00) for the targets (2, 6, 4): the page says each output is a
    mix of the values, and which value each token's output reads (core: I reads love's, love NLP's, NLP averages)."""
    page = open_train(open_page)
    choose(page, "Retrieve the value")
    note = page.locator(".train-root .target-note").text_content()
    assert "Each output is a mix of the values" in note and "need not be 2, 6 and 4" in note
    page.locator(".train-summary").get_by_text("reads the value of", exact=False).wait_for(timeout=PATIENCE)
    text = summary_text(page)
    assert "W_V learned the values I 3.98, love 2.01, NLP 6.00, not the targets in order" in text
    assert "“I” reads the value of “love” (weight 1.00), so its output is 2.02." in text
    assert "“love” reads the value of “NLP” (weight 0.99), so its output is 5.99." in text
    assert "“NLP” spreads its attention, so its output 4.00 is the weighted average of the values." in text


def test_paint_your_own_on_the_sentence_the_teacher_picks(open_page):
    """"Paint your own" starts on the five-word sentence; the teacher picks "I love NLP" with one press (it took
    choosing a three-token target first), and back."""
    page = open_train(open_page)
    # painting starts from the target shown, the previous token on five words: the same run, its cells buttons
    page.locator(".train-targets").get_by_role("button", name="Paint your own").click()
    page.locator(".train-player .target button.paint").first.wait_for(timeout=PATIENCE)
    assert page.locator(".train-player .target button.paint").count() == 25
    sentence = page.locator(".train-sentence")
    assert sentence.get_by_role("button", name="attention is all you need").get_attribute("aria-pressed") == "true"
    before = runs(page)
    sentence.get_by_role("button", name="I love NLP").click()
    wait_new_run(page, before)
    assert page.locator(".train-player .target button.paint").count() == 9
    assert page.evaluate(f"() => Array.from({RUN}.run().tokens)") == ["I", "love", "NLP"]
    assert sentence.get_by_role("button", name="I love NLP").get_attribute("aria-pressed") == "true"
    wait_address(page, "train=100.010.001")
    paint(page, 0, 1)
    assert page.evaluate(f"() => Array.from({RUN}.run().target)") == [0.5, 0.5, 0, 0, 1, 0, 0, 0, 1]
    choose(page, "Attend to yourself")  # another target shows no sentence to pick
    assert sentence.is_hidden()


def test_all_steps_writes_a_negative_number_with_the_minus_sign(open_page):
    """All steps' s − max of I is −0.7071 (0 − 1/√2), written with U+2212 as the formulas beside it write it."""
    page = open_page()
    show_tab(page, "All steps")
    cells = page.locator("table.steps tbody tr").first.locator("td").all_text_contents()
    assert cells[2] == "\u22120.7071", cells  # 3. s_i − max, the row of I
