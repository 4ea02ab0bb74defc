"""The Real model tab in a real browser: a learner types a sentence, finds the previous-token head and reads one row's
recipe with the model's own numbers; clicks a head in the grid; a sentence too long is refused naming the limit; the
address keeps the sentence, the head and the row.

Expected numbers come from the reference implementation (transformers and torch, stored in
tests/data/minilm_reference.*, written by tests/minilm_reference.py), never from the app's own core.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np

from tests.ui.helpers import PATIENCE, show_tab

DATA = Path(__file__).parents[1] / "data"
REFERENCE = json.loads((DATA / "minilm_reference.json").read_text())
SENTENCE = "The cat sat on the mat."
ATTENTION = np.load(DATA / "minilm_reference.npz")[f"attention_{REFERENCE['attention'].index(SENTENCE)}"]

#: The element matching a selector anywhere in the page, shadow roots included.
FIND = """(sel) => { const find = (root) => { const hit = root.querySelector(sel); if (hit) return hit
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) { const h = find(e.shadowRoot); if (h) return h }
    return null }
  return find(document) }"""
#: The text of the tab's pane with the class ``name`` (in its shadow root, without its stylesheets), '' while it is
#: not in the page.
PANE = f"""(name) => {{ const root = ({FIND})('.' + name)?.shadowRoot
  return root ? [...root.children].filter(e => !['STYLE', 'LINK'].includes(e.tagName)).map(e => e.textContent).join('')
    : '' }}"""
RECIPE = f"""() => {{ const t = ({FIND})('table.model-recipe')
  if (!t) return null
  const weights = [...t.querySelectorAll('td[data-weight]')].map(td => Number(td.dataset.weight))
  return {{query: t.dataset.query, weights, text: t.textContent}} }}"""


#: The head's matrix lies whole inside the window.
MATRIX_IN_VIEW = """() => { const r = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('model-matrix'))
  .el.getBoundingClientRect()
  return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight }"""


def to_page(page, name: str, x: float, y: float) -> tuple[float, float]:
    """Page pixels of the point (x, y) of the figure ``name``, scrolled to the middle of the tab first."""
    return tuple(page.evaluate("""([name, x, y]) => { const v = Bokeh.index.find_one(
        Bokeh.documents[0].get_model_by_name(name)); v.el.scrollIntoView({block: "center"})
      const r = v.canvas_view.el.getBoundingClientRect()
      return [r.left + v.frame.x_scale.compute(x), r.top + v.frame.y_scale.compute(y)] }""", [name, x, y]))


def pane(page, name: str) -> str:
    return page.evaluate(PANE, name)


def wait_pane(page, name: str, part: str) -> None:
    page.wait_for_function(f"([name, part]) => ({PANE})(name).includes(part)", arg=[name, part], timeout=PATIENCE)


def address(page) -> dict:
    text = page.evaluate("() => Bokeh.documents[0].get_model_by_name('page-address').text")
    return {k: v[-1] for k, v in parse_qs(text.lstrip("?")).items()}


def open_model(open_page, query: str = ""):
    page = open_page(query)
    show_tab(page, "Real model", figure="model-grid")
    wait_pane(page, "model-tokens", "[SEP]")
    return page


def type_sentence(page, sentence: str) -> None:
    box = page.locator(".model-sentence input")
    box.fill(sentence)
    box.press("Enter")


def test_a_learner_finds_the_previous_token_head_and_reads_one_row_s_recipe(open_page):
    page = open_page()
    asked = []  # every request of the tab's use: a school network may have no internet
    page.on("request", lambda request: asked.append(request.url))
    show_tab(page, "Real model", figure="model-grid")
    wait_pane(page, "model-tokens", "[SEP]")
    type_sentence(page, SENTENCE)
    wait_pane(page, "model-tokens", "mat")
    tokens = REFERENCE["tokens"][SENTENCE]
    shown = page.evaluate(f"""() => [...({FIND})('.model-tokens').shadowRoot.querySelectorAll('li[data-i]')]
        .map(li => li.lastChild.textContent.trim())""")
    assert shown == tokens
    assert f"The model sees {len(tokens)} tokens" in pane(page, "model-tokens")

    page.locator(".model-find-previous button").click()  # "Previous token: layer 1, head 3 (1.00)"
    wait_pane(page, "model-behaviour", "Layer 1, head 3 puts")
    layer, head = 0, 2  # 0-based: the reference's own previous-token head
    rows = np.arange(2, len(tokens) - 1)
    assert ATTENTION[layer, head, rows, rows - 1].min() > 0.99

    # click the row of "sat" in the head's matrix: its query's recipe, with the model's numbers
    row = tokens.index("sat")
    x, y = to_page(page, "model-matrix", 1, row)
    page.mouse.click(x, y)
    page.wait_for_function(f"() => ({RECIPE})()?.query === 'sat'", timeout=PATIENCE)
    recipe = page.evaluate(RECIPE)
    np.testing.assert_allclose(recipe["weights"], ATTENTION[layer, head, row], atol=1e-5)
    assert abs(sum(recipe["weights"]) - 1) < 1e-9
    assert "Row sat: layer 1, head 3" in recipe["text"] and "q·k/√32" in recipe["text"]
    steps = pane(page, "model-inspector")
    assert f"√32 = {math.sqrt(32):.4f}" in steps and "here cat, with 0.99" in steps
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('page-address').text.includes('model_row')",
                           timeout=PATIENCE)
    assert {k: address(page).get(k) for k in ("sentence", "model_layer", "model_head", "model_row")} == {
        "sentence": SENTENCE, "model_layer": None, "model_head": "3", "model_row": str(row)}
    origin = page.url.split("/", 3)[:3]
    assert all(url.split("/", 3)[:3] == origin for url in asked if not url.startswith(("data:", "blob:"))), asked


def test_a_click_on_the_grid_opens_that_head_and_the_address_reopens_it(open_page):
    page = open_model(open_page, "?sentence=The+cat+sat+on+the+mat.&model_layer=1&model_head=1")
    wait_pane(page, "model-tokens", "mat")
    x, y = to_page(page, "model-grid", 8 * 1.18 + 0.5, (6 - 1 - 1) * 1.18 + 0.5)  # layer 2, head 9
    page.mouse.click(x, y)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('page-address').text.includes('model_head=9')",
                           timeout=PATIENCE)
    assert {k: address(page).get(k) for k in ("model_layer", "model_head")} == {"model_layer": "2", "model_head": "9"}
    # the head it opened is in view: its matrix, below the grid, was under the screen's edge (a class saw only the
    # tile's outline change)
    page.wait_for_function(MATRIX_IN_VIEW, timeout=PATIENCE)
    # the next-token head, as the reference has it: each word's weight mostly on the word after it
    rows = np.arange(1, len(REFERENCE["tokens"][SENTENCE]) - 2)
    assert ATTENTION[1, 8, rows, rows + 1].mean() > 0.6


def test_a_sentence_too_long_is_refused_naming_the_limit_and_the_last_one_stays(open_page):
    page = open_model(open_page)
    type_sentence(page, "word " * 60)
    wait_pane(page, "model-message", "at most 48")
    assert "60 word pieces" in pane(page, "model-message")
    assert "love" in pane(page, "model-tokens")  # "I love NLP" still shown
    type_sentence(page, "<b>bold</b> <script>alert(1)</script> 🙂 مرحبا 你好")
    wait_pane(page, "model-tokens", "script")
    assert pane(page, "model-message") == ""
    assert "[UNK]" in pane(page, "model-tokens")


def test_in_arabic_the_recipe_s_formulas_and_negative_numbers_read_left_to_right(open_page):
    """In a right-to-left page the steps' formulas and the table's numbers stay mathematics, read left to right: the
    first step read "32√ = 5.6569", the softmax's fraction came out mirrored and a negative score "0.6652-"."""
    from session.i18n import translator
    from tests.ui.test_arabic_and_phones import arabic_problems

    page = open_page("?lang=ar", viewport={"width": 1024, "height": 768})
    show_tab(page, translator("ar")._("Real model"), figure="model-grid")
    wait_pane(page, "model-tokens", "[SEP]")
    page.wait_for_function(f"() => ({RECIPE})() != null", timeout=PATIENCE)
    assert arabic_problems(page, "1024x768", "normal", "Real model") == []


def test_on_a_phone_the_first_example_s_output_is_not_pinned_under_the_tab(open_page):
    """The tab sets the query plot and its readout aside (widgets/stage.py); on a phone the readout's Output line,
    kept at the screen's bottom while the readout is out of view (link/answer.js), showed the first example's
    "Output Σ aᵢvᵢ = 4.4067" under the real model's recipe. It goes with the readout, and comes back with it."""
    from tests.ui.helpers import wait_for_stage
    from tests.ui.test_arabic_and_phones import answer_problems, stage_answer_problems

    page = open_page("", viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    show_tab(page, "Real model", figure="model-grid")
    wait_for_stage(page, True)
    wait_pane(page, "model-tokens", "[SEP]")
    assert stage_answer_problems(page, "Real model") == []
    show_tab(page, "Matrix", figure="attention-matrix")  # the readout back, and its Output line in view again
    wait_for_stage(page, False)
    assert answer_problems(page, "Matrix") == []


def test_present_shares_the_sentence_and_the_head_live(open_page):
    """A follower with the tab open sees the presenter's sentence as the model's tokens, and the head the presenter
    finds; what the follower types does not reach the room."""
    from tests.ui.test_follow import present

    teacher = open_page()
    code, _ = present(teacher)
    learner = open_model(open_page, f"?room={code}")
    learner.get_by_text("Following room").wait_for(timeout=PATIENCE)
    show_tab(teacher, "Real model", figure="model-grid")
    wait_pane(teacher, "model-tokens", "[SEP]")
    type_sentence(teacher, SENTENCE)
    wait_pane(learner, "model-tokens", "mat")
    teacher.locator(".model-find-previous button").click()
    wait_pane(learner, "model-inspector", "Row cat: layer 1, head 3")
    type_sentence(learner, "A learner's own sentence")
    wait_pane(learner, "model-tokens", "own")
    assert "mat" in pane(teacher, "model-tokens") and "own" not in pane(teacher, "model-tokens")
