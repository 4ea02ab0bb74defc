"""The Projections and Heads tabs in a real browser: the page's mirror of the core, a drag, a head in the
explorer, the n² cost beside another learner, and the fit on a projector.

Expected numbers come from the NumPy core (for the page's mirror of it), the course, or the plain-loop
reference in tests/loop_reference.py.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from core import saturation, self_attention
from core.report import fmt
from link.projections import OUTPUTS
from session.i18n import translator
from tests.loop_reference import attention as loop_attention
from tests.ui.conftest import SCREENSHOTS, VIEWPORTS
from tests.ui.helpers import (
    _DEEP,
    PATIENCE,
    SHOWN_TAB,
    readout,
    settle,
    show_tab,
    slow_touch_drag,
    text_sizes,
    to_page,
    wait_for_readout,
    weights,
)
from widgets.projections import projection_status

# The page's functions exactly as it received them: the code of the planes' pointer callback, up to where it binds
# its Bokeh models.
PAGE_FUNCTIONS = """(cases) => {
  const axis = Bokeh.documents[0].get_model_by_name('projection-x').below[0];
  const args = axis.formatter.args;
  const code = (args.get ? args.get('attach') : args.attach).code;
  const lib = code.slice(0, code.indexOf('const a = {'));
  const {selfAttention, statusText} = new Function(lib + '; return {selfAttention, statusText};')();
  return cases.map((c) => {
    const r = selfAttention(c.X, c.WQ, c.WK, c.WV, c.T);
    return {r, text: c.tokens ? statusText(c.tokens, r, c.handle, c.at, c.words) : null};
  });
}"""


#: The English words the server sends the tab's script (link/projections.py, ProjectionChannel's inputs).
ENGLISH_WORDS = {**translator("en").number_format(), "outputs": translator("en")(OUTPUTS)}


def random_cases(n_cases=200, seed=19):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        n, d_model, d_k, d_v = (int(x) for x in (rng.integers(2, 7), rng.integers(1, 4), rng.integers(1, 4),
                                                 rng.integers(1, 4)))
        if i % 2:  # the tab's own shapes
            n, d_model, d_k, d_v = 3, 2, 2, 2
        scale = rng.choice([0.3, 1, 3])
        cases.append(dict(X=rng.normal(size=(n, d_model)) * scale, WQ=rng.normal(size=(d_model, d_k)),
                          WK=rng.normal(size=(d_model, d_k)), WV=rng.normal(size=(d_model, d_v)),
                          T=float(10 ** rng.uniform(-2, 2))))
    return cases


def test_the_pages_projections_and_attention_agree_with_the_core(page):
    show_tab(page, "Projections", "projection-x")
    cases = random_cases()
    payload = [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in c.items()} for c in cases]
    # the tab's text of the outputs, during a drag and at rest
    for i, (p, c) in enumerate(zip(payload, cases, strict=True)):
        if c["X"].shape == (3, 2) and c["WV"].shape == (2, 2):
            p.update(tokens=["I", "love", "NLP"], handle="x love" if i % 4 == 1 else "", at=[0.125, -1.5],
                     words=ENGLISH_WORDS)
    got = page.evaluate(PAGE_FUNCTIONS, payload)
    assert len(got) == len(cases) >= 200
    for c, p, g in zip(cases, payload, got, strict=True):
        ref = self_attention(c["X"], c["WQ"], c["WK"], c["WV"], temperature=c["T"])
        sat = saturation(ref.attention.weights)
        r = g["r"]
        for name, want in (("Q", ref.projections.Q), ("K", ref.projections.K), ("V", ref.projections.V),
                           ("dots", ref.attention.dots), ("scores", ref.attention.scores)):
            np.testing.assert_allclose(r[name], want, rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(r["weights"], ref.attention.weights, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(r["output"], ref.attention.output, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(r["maxWeight"], sat.max_weight, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(r["entropy"], sat.entropy, rtol=1e-9, atol=1e-12)
        if g["text"] is not None:
            assert g["text"] == projection_status(ref, p["handle"], p["at"])


# --- a drag ------------------------------------------------------------------------------------------------------

def outputs_text(out) -> str:
    """The tab's line of outputs for the outputs ``out`` of a reference computation."""
    return "Outputs Σ aⱼvⱼ: " + " · ".join(f"{t} ({fmt(o[0])}, {fmt(o[1])})"
                                           for t, o in zip(("I", "love", "NLP"), out, strict=True))


# Every position the page writes into the channel, with the last answer it had then; every change the server
# makes to the planes' data or the numbers' text (the page's own preview changes them in place: no event).
WATCH_DRAG = """() => {
  const doc = Bokeh.documents[0], by = (name) => doc.get_model_by_name(name);
  const channel = by('projection-channel'), confirmed = by('projection-confirmed');
  const drawn = new Set(['projection-x-points', 'projection-basis', 'projection-qkv', 'projection-numbers']
                        .map((name) => by(name).id));
  window.dragLog = {writes: [], server: []};
  channel.connect(channel.properties.data.change, () => window.dragLog.writes.push(
    {seq: channel.data.seq[0], end: channel.data.end[0], answered: confirmed.data.seq[0]}));
  doc.on_change((ev) => {
    if (ev.model != null && drawn.has(ev.model.id) && (ev.attr === 'data' || ev.attr === 'text'))
      window.dragLog.server.push(ev.model.name);
  }, true);
}"""

CELL = """([m, i, j]) => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('projection-numbers')).markup_el
  .querySelector(`[data-m="${m}"][data-i="${i}"][data-j="${j}"]`).textContent"""
STATUS_ON_PAGE = ("() => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('projection-status'))"
                  ".markup_el.textContent")
LAST_POSITION = "() => [...window.attentionExplorerProjections.values()][0].last"
SERVER_X = "() => Bokeh.documents[0].get_model_by_name('projection-inputs').data.X[0]"
#: x_love[1]'s box drawn as refused: its border the page's red (#b00020)
MARKED = """() => { const m = [...Bokeh.documents[0].all_models].find(
    (m) => (m.css_classes || []).includes('field-x-1-0'))
  const input = Bokeh.index.find_one(m).shadow_el.querySelector('input')
  return getComputedStyle(input).borderTopColor === 'rgb(176, 0, 32)' }"""
#: How far the shown tab's contents are scrolled (px).
TAB_SCROLL = SHOWN_TAB + "() => shownTab().area.scrollTop"


def test_a_drag_of_an_embedding_is_drawn_by_the_page_and_taken_by_the_server_at_the_release(page):
    show_tab(page, "Projections", "projection-x")
    page.evaluate(WATCH_DRAG)
    (x0, y0), (x1, y1) = to_page(page, "projection-x", 0.0, 1.0), to_page(page, "projection-x", 1.0, 0.5)
    page.mouse.move(x0, y0)
    page.mouse.down()
    for i in range(1, 13):
        page.mouse.move(x0 + (x1 - x0) * i / 12, y0 + (y1 - y0) * i / 12)
    at = page.evaluate(LAST_POSITION)
    assert at == pytest.approx([1.0, 0.5], abs=0.03)
    # the button is still held: the page's own numbers for where the hand is, the server's answer to the press
    # (for where it was) not over them
    X = [[1.0, 0.0], at, [1.0, 1.0]]  # Q = K = V = X: the first head projects nothing
    _, want, out = loop_attention(X, X, X)
    page.wait_for_function("""() => Bokeh.documents[0].get_model_by_name('projection-confirmed').data.seq[0]
                              >= [...window.attentionExplorerProjections.values()][0].seq""", timeout=PATIENCE)
    assert page.evaluate(STATUS_ON_PAGE) == f"x love ({fmt(at[0], 2)}, {fmt(at[1], 2)}) → " + outputs_text(out)
    for j in range(3):
        assert page.evaluate(CELL, ["weights", 1, j]) == fmt(want[1][j])
    assert page.evaluate(CELL, ["output", 2, 0]) == fmt(out[2][0])
    # the session's state takes the position at the release: until then the server only answers
    assert page.evaluate(SERVER_X) == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    assert page.evaluate("() => window.dragLog.server") == []
    page.mouse.up()
    page.wait_for_function(f"() => ({SERVER_X})()[1][1] !== 1", timeout=PATIENCE)
    assert page.evaluate(SERVER_X)[1] == at
    page.wait_for_function(f"""() => Bokeh.documents[0].get_model_by_name('projection-status').text ===
                               ({STATUS_ON_PAGE})()""", timeout=PATIENCE)
    assert page.evaluate(STATUS_ON_PAGE) == outputs_text(out)
    for j in range(3):
        assert page.evaluate(CELL, ["weights", 1, j]) == fmt(want[1][j])
    # twelve moves, two messages: the press, and once it was answered the release, with the last position
    log = page.evaluate("() => window.dragLog")
    assert [w["end"] for w in log["writes"]] == [False, True], log["writes"]
    assert log["writes"][1]["answered"] == log["writes"][0]["seq"], log["writes"]



def test_typed_numbers_in_the_projections_boxes_reach_the_server_and_a_bad_one_is_marked(page):
    show_tab(page, "Projections", "projection-x")
    box = page.locator(".field-x-1-0 input")  # x_love[1]
    box.fill("0.5")
    box.press("Enter")
    page.wait_for_function(f"() => ({SERVER_X})()[1][0] === 0.5", timeout=PATIENCE)
    X = [[1.0, 0.0], [0.5, 1.0], [1.0, 1.0]]  # Q = K = V = X
    _, want, _ = loop_attention(X, X, X)
    page.wait_for_function(f"() => ({CELL})(['weights', 1, 0]) === '{fmt(want[1][0])}'", timeout=PATIENCE)
    box.fill("zero")  # Playwright scrolls the tab down to the box first
    scrolled = page.evaluate(TAB_SCROLL)
    assert scrolled > 100, "the box should be far down the tab"
    box.press("Enter")
    page.locator(".field-message").filter(has_text="x_love[1] refused").wait_for(timeout=PATIENCE)
    assert "'zero' is not a number" in page.locator(".field-message").text_content()
    page.wait_for_function(MARKED, timeout=PATIENCE)
    # the refusal leaves the tab where it was, the box in sight (the page's notice and relayout had scrolled the
    # tab back to its top); at most the notice's height further down, so the box stays in view. The notice
    # pushes the box down at once and the relayout that brings it back comes later: wait for it, however late
    page.wait_for_function("(b) => { const r = b.getBoundingClientRect(); "
                           "return r.top >= 0 && r.bottom <= innerHeight + 1 }",
                           arg=box.element_handle(), timeout=PATIENCE)
    assert abs(page.evaluate(TAB_SCROLL) - scrolled) < 120, (page.evaluate(TAB_SCROLL), scrolled)
    assert page.evaluate(SERVER_X)[1] == [0.5, 1.0]  # nothing else changed
    assert page.evaluate(CELL, ["weights", 1, 0]) == fmt(want[1][0])
    # a good number after a bad one is taken, and the box is no longer marked
    box.fill("0.25")
    box.press("Enter")
    page.wait_for_function(f"() => ({SERVER_X})()[1][0] === 0.25", timeout=PATIENCE)
    page.wait_for_function(f"() => !({MARKED})()", timeout=PATIENCE)


def test_a_slow_finger_drags_an_embedding(open_page):
    """A finger moving about a pixel per event drags x_love, three times over: the planes listen to the pointer
    themselves (link/outbox.js), as the query plot does; Bokeh's pan gesture never began for so slow a hand."""
    page = open_page(has_touch=True, is_mobile=True, viewport={"width": 1024, "height": 768})
    show_tab(page, "Projections", "projection-x")
    page.evaluate("""() => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('projection-x')).el
                     .scrollIntoView({block: 'nearest'})""")
    cdp = page.context.new_cdp_session(page)
    x, y = to_page(page, "projection-x", 0.0, 1.0)  # x_love of Section 6
    for attempt in range(1, 4):
        x = slow_touch_drag(page, cdp, x, y)
        # the session's state takes each release: x_love moved right, 12 px a drag, and stayed at height 1
        page.wait_for_function(f"""() => {{ const X = ({SERVER_X})();
            return X[1][0] > {0.02 * attempt} && Math.abs(X[1][1] - 1) < 0.02 }}""", timeout=PATIENCE)


# --- heads ---------------------------------------------------------------------------------------------------------

def test_two_heads_attend_to_different_tokens_and_one_is_shown_in_the_explorer(page):
    show_tab(page, "Heads", "cost-time")
    page.get_by_role("button", name="Two heads: previous token, itself").click()
    figures = page.locator("[data-head]")
    figures.nth(1).wait_for(timeout=PATIENCE)
    assert figures.nth(0).locator("figcaption").text_content() == "Head 1: previous token"
    assert figures.nth(1).locator("figcaption").text_content() == "Head 2: itself"
    # love's query in head 1 is 2.5 x_I; the keys are 2 x_j, 60 degrees apart: scores 5 / sqrt(2) (1, 1/2, -1/2)
    e = [math.exp(5 / math.sqrt(2) * c) for c in (1.0, 0.5, -0.5)]
    love = [x / sum(e) for x in e]
    page.get_by_role("button", name="Explore head 1").click()
    wait_for_readout(page, r'Query of "love": q = \(2\.500, 0\.000\)', timeout=PATIENCE)
    assert weights(page) == pytest.approx(love, abs=5e-5)
    assert "Dot products q·k: I 5.0000, love 2.5000, NLP -2.5000" in readout(page)


def test_the_temperature_slider_shows_its_option_as_it_moves(page):
    """The temperature's slider names its option in its title as it moves (formatted by the page: widgets/base.py,
    DiscreteSlider), the server takes the value (its box shows it), and the page writes nothing the server refuses
    (Panel's own slider wrote its text above, refused: the fixture's check of the server's log)."""
    show_tab(page, "Projections", "projection-x")
    title = page.locator(".bk-slider-title", has_text="Temperature T")
    assert title.text_content().replace("\u00a0", " ") == "Temperature T: 1.4142 = √d_k"
    title.locator("xpath=..").locator(".noUi-handle").focus()
    page.keyboard.press("End")
    page.wait_for_function("(el) => el.textContent.endsWith('100')", arg=title.element_handle(), timeout=PATIENCE)
    page.wait_for_function("(box) => box.value === '100'", arg=page.locator(".field-t input").element_handle(),
                           timeout=PATIENCE)


# --- the n² cost beside another learner ----------------------------------------------------------------------------

def test_another_learner_is_served_while_n_4096_is_measured(open_page):
    """The core on n = 4096 holds about 690 MB for a second or more; it runs on a worker thread, and a second
    session's numbers come back while it does."""
    other = open_page()
    page = open_page("?n=4096")
    show_tab(page, "Heads", "cost-time")
    measuring = page.locator(".cost-progress p", has_text="Measuring n = 4,096")
    measuring.wait_for(timeout=60_000)
    other.keyboard.press("3")  # another learner chooses NLP's query: its server's numbers arrive meanwhile
    wait_for_readout(other, r'Query of "NLP": q = \(1\.000, 1\.000\)', timeout=PATIENCE)
    assert weights(other) == pytest.approx([0.2483, 0.2483, 0.5035], abs=5e-5)
    assert measuring.is_visible()  # still measuring when the other learner had its numbers
    done = page.get_by_text(re.compile(r"On this server, n = 4,096: computing attention once took"))
    done.wait_for(timeout=120_000)
    assert not measuring.is_visible()
    assert "take 688 MB, 41 bytes for each pair of tokens" in done.text_content()  # 41 × 4096² bytes kept
    assert page.get_by_text("100,000,000 (10⁸)").count() == 1 and page.get_by_text("800 MB").count() == 1


# --- the screen --------------------------------------------------------------------------------------------------

TABS = {"Projections": "projection-x", "Heads": "cost-time"}

SCROLLER = """(name) => {
  const find = (root) => { for (const el of root.querySelectorAll('*')) {
    if (el.classList.contains(name) && el.scrollHeight !== undefined) return el;
    if (el.shadowRoot) { const f = find(el.shadowRoot); if (f) return f; } } return null; };
  const el = find(document);
  return el && {scroll: el.scrollHeight, client: el.clientHeight, top: el.scrollTop, wide: el.scrollWidth,
                width: el.clientWidth, bottom: el.getBoundingClientRect().bottom};
}"""

CANVAS_FONTS = """(names) => {
  const small = [];
  for (const m of Bokeh.documents[0].all_models) {
    for (const [name, p] of Object.entries(m.properties ?? {})) {
      if (!name.endsWith('_font_size') || /^(hover|muted|nonselection|selection)_/.test(name)) continue;
      let v = p.get_value(); v = v && typeof v === 'object' ? v.value : v;
      if (typeof v === 'string' && v.endsWith('px') && parseFloat(v) < 20) small.push(m.type + '.' + name + '=' + v);
    }
  }
  return small;
}"""


# the projector's screen with its largest text and the widest screen: the layout walks (test_layout_screens.py) show
# these tabs on every screen in both modes
@pytest.mark.parametrize(("size", "mode"), [("1024x768", "projector"), ("1920x1080", "normal")])
def test_the_tabs_fit_the_screen_and_scroll_within_themselves(open_page, size, mode):
    viewport = VIEWPORTS[size]
    page = open_page(f"?mode={mode}", viewport=viewport)
    settle(page, mode)
    SCREENSHOTS.mkdir(exist_ok=True)
    for tab, figure in TABS.items():
        show_tab(page, tab, figure)
        page.screenshot(path=SCREENSHOTS / f"heads-{tab.lower()}-{size}-{mode}.png")
        doc = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        assert doc[0] <= viewport["width"] and doc[1] <= viewport["height"], f"{tab}: the page scrolls: {doc}"
        box = page.evaluate(SCROLLER, "heads-tab")
        assert box is not None and box["bottom"] <= viewport["height"] + 1, box
        assert box["wide"] <= box["width"] + 1, f"{tab}: wider than its tab: {box}"  # no sideways scrolling
        if box["scroll"] > box["client"]:  # taller than the screen: reached by scrolling the tab
            page.mouse.move(viewport["width"] * 0.75, viewport["height"] * 0.8)
            for _ in range(40):
                page.mouse.wheel(0, 400)
            page.wait_for_function(f"() => {{ const b = ({SCROLLER})('heads-tab'); "
                                   "return b.top + b.client >= b.scroll - 2; }")  # its end is reached
        if mode == "projector" and size == "1024x768":
            small = [t for t in text_sizes(page) if t["size"] < 20]
            assert not small, f"text under 20 px on the {tab} tab: {small}"
            assert not page.evaluate(CANVAS_FONTS, None), f"canvas text under 20 px on the {tab} tab"


ROW_NAMES_OVER_BOXES = _DEEP + """() => {
  const all = [...deep(document)];
  const rect = (el) => el.getBoundingClientRect();
  const names = all.filter((el) => el.matches('span.label') && el.getRootNode().host?.classList.contains('row-name'));
  const boxes = all.filter((el) => el.matches('input[type=text]') && rect(el).width > 0);
  const over = [];
  for (const n of names) for (const b of boxes) {
    const r = rect(n), s = rect(b);
    const w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
    const h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    if (w > 1 && h > 1) over.push(`${n.textContent} over a box by ${w.toFixed(0)} px`);
  }
  return {names: names.length, over};
}"""


@pytest.mark.parametrize("size", [(800, 600), (390, 844)], ids=["800x600", "phone"])
def test_the_projections_row_names_clear_their_boxes_on_a_projector(open_page, size):
    # at a fixed 70 px, "x_love" and "x_NLP" in projector text ran into their first box
    width, height = size
    page = open_page("?mode=projector", viewport={"width": width, "height": height}, is_mobile=width < 500,
                     has_touch=width < 500)
    settle(page, "projector")
    show_tab(page, "Projections", "projection-x")
    page.locator(".field-x-1-0 input").scroll_into_view_if_needed()
    found = page.evaluate(ROW_NAMES_OVER_BOXES)
    assert found["names"] == 13, found  # X: its title and 3 rows; W_Q, W_K, W_V: a title and 2 rows each
    assert not found["over"], found["over"]
