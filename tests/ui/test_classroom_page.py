"""The classroom features in a real browser: fit, projector sizes, keyboard, touch, shared address, a11y."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.ui.conftest import SCREENSHOTS, VIEWPORTS, pictures
from tests.ui.helpers import (
    PATIENCE,
    READOUT,
    controls,
    readout,
    settle,
    show_tab,
    slow_touch_drag,
    text_sizes,
    to_page,
    wait_for_drawn,
    wait_for_new_readout,
    wait_for_readout,
    weights,
)

MODES = {"normal": "", "projector": "?mode=projector"}


def _overlaps(boxes):
    pairs = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            w = min(a["right"], b["right"]) - max(a["left"], b["left"])
            h = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if w > 1 and h > 1:
                pairs.append((a["name"], b["name"]))
    return pairs


@pytest.mark.parametrize("mode", list(MODES))
def test_the_page_fits_without_scrolling_or_overlap(open_page, viewport, mode):
    page = open_page(MODES[mode] + ("&" if MODES[mode] else "?") + "step=2", viewport=viewport)
    settle(page, mode)
    scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    assert scroll[0] <= viewport["width"], f"horizontal scroll: {scroll[0]} px wide"
    assert scroll[1] <= viewport["height"], f"vertical scroll: {scroll[1]} px tall"
    boxes = controls(page)
    names = " | ".join(b["name"] for b in boxes)
    for needed in ("Reset", "Projector", "Dark", "Full screen", "Step through", "Back", "Next", "Weights", "Matrix"):
        assert needed in names, f"{needed} is not on screen: {names}"
    outside = [b["name"] for b in boxes if b["right"] > viewport["width"] + 1 or b["bottom"] > viewport["height"] + 1
               or b["left"] < -1 or b["top"] < -1]
    assert not outside, f"cut off at the edge: {outside}"
    assert not _overlaps(boxes), f"overlapping: {_overlaps(boxes)}"


def test_projector_text_is_at_least_20px_at_1024x768(open_page):
    page = open_page("?mode=projector&step=3", viewport=VIEWPORTS["1024x768"])
    settle(page, "projector")
    for tab in ("Weights", "Matrix", "All steps", "Keys"):
        show_tab(page, tab)
        texts = text_sizes(page)
        assert len(texts) > 10
        small = [t for t in texts if t["size"] < 20 and not (t["script"] and not re.search(r"\d", t["text"]))]
        assert not small, f"text under 20 px on the {tab} tab: {small}"
    canvas = page.evaluate("""() => {
      const small = []
      for (const m of Bokeh.documents[0].all_models) for (const [name, p] of Object.entries(m.properties ?? {})) {
        if (!name.endsWith('_font_size') || /^(hover|muted|nonselection|selection)_/.test(name)) continue
        let v = p.get_value(); v = v && typeof v === 'object' ? v.value : v
        if (typeof v === 'string' && v.endsWith('px') && parseFloat(v) < 20) small.push(m.type + '.' + name + '=' + v)
      }
      return small }""")
    assert not canvas, f"canvas text under 20 px: {canvas}"


def test_arrow_keys_nudge_q(open_page):
    page = open_page()
    page.keyboard.press("ArrowRight")
    text = wait_for_readout(page, r"q = \(0\.100, 1\.000\)")
    assert "Dot products q·k: I 0.1000, love 1.0000, NLP 1.1000" in text
    page.keyboard.press("Shift+ArrowUp")
    wait_for_readout(page, r"q = \(0\.100, 1\.010\)")
    page.keyboard.press("3")
    wait_for_readout(page, r'Query of "NLP": q = \(1\.000, 1\.000\)')
    page.keyboard.press("r")
    wait_for_readout(page, r'Query of "love": q = \(0\.000, 1\.000\)')
    assert page.evaluate("() => window.scrollY") == 0


def test_space_and_arrows_walk_the_steps(open_page):
    page = open_page()
    page.keyboard.press(" ")
    text = wait_for_readout(page, r"Weights a = softmax\(s\): I \?, love \?, NLP \?")
    assert text.endswith("Output Σ aᵢvᵢ = ?") and "Scores s = q·k / √2: I 0.0000, love 0.7071" in text
    page.get_by_text("Step 1 of 3 · score").wait_for()
    page.keyboard.press("ArrowRight")
    wait_for_readout(page, r"Weights a = softmax\(s\): I 0\.1978")
    page.get_by_text("Step 2 of 3 · normalise").wait_for()
    page.keyboard.press("ArrowRight")
    wait_for_readout(page, r"4\.4067 ≈ 4\.41")
    page.keyboard.press("ArrowLeft")
    wait_for_readout(page, r"Output Σ aᵢvᵢ = \?")
    page.get_by_role("button", name="◀ Back").click()
    wait_for_readout(page, r"I \?, love \?, NLP \?")


def test_tab_reaches_every_control_and_focus_is_visible(open_page):
    page = open_page()
    # the title's pane (Full screen, the language menu) is drawn after the readout the page waits for: a Tab
    # pressed before it came started past it, on a loaded machine
    page.locator("button.fullscreen").wait_for()
    page.locator(".language-menu select").wait_for()
    seen, rings = [], []
    for _ in range(25):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("""() => { let a = document.activeElement
            while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement
            const cs = getComputedStyle(a)
            const label = a.labels && a.labels.length ? a.labels[0].textContent : a.textContent
            return [(label || a.getAttribute('aria-label') || a.getAttribute('title') || a.tagName).trim().slice(0, 40),
                    cs.outlineStyle, parseFloat(cs.outlineWidth)] }"""))
    names = [s[0] for s in seen]
    for needed in ("Reset", "Projector", "Dark", "Full screen", "Step through", "Next ▶", "Weights", "Query plane"):
        assert any(needed in n for n in names), f"Tab never reaches {needed}: {names}"
    rings = [s for s in seen if s[0] in ("Reset example", "Full screen", "Next ▶")]
    assert rings and all(style != "none" and width >= 2 for _, style, width in rings), rings


def test_touch_drag_moves_q_live_without_scrolling(open_page):
    page = open_page(has_touch=True)
    touch_action = page.evaluate("""() => {
        const v = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('query-plot'))
        return getComputedStyle(v.el).touchAction }""")
    assert touch_action == "none"
    cdp = page.context.new_cdp_session(page)
    x0, y0 = to_page(page, "query-plot", 0.0, 1.0)
    x1, y1 = to_page(page, "query-plot", 1.0, 1.0)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
    seen = set()
    for i in range(1, 21):  # each move once the page has drawn the last
        before = readout(page)
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
            {"x": x0 + (x1 - x0) * i / 20, "y": y0 + (y1 - y0) * i / 20}]})
        seen.add(wait_for_new_readout(page, before).splitlines()[0])
    wait_for_readout(page, r"q = \(1\.000, 1\.000\)")  # the finger is still down
    assert len(seen) == 20, f"the readout followed only {len(seen)} of 20 moves"
    assert weights(page) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)
    assert page.evaluate("() => [window.scrollX, window.scrollY, window.visualViewport.scale]") == [0, 0, 1]
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def test_a_shared_address_restores_the_view(open_page):
    page = open_page("?q=0.5,0.25&row=NLP&step=2&mode=projector&theme=dark")
    settle(page, "projector", "dark")
    text = readout(page)
    assert 'Query of "NLP": q = (0.500, 0.250)' in text and text.endswith("Output Σ aᵢvᵢ = ?")
    page.get_by_text("Step 2 of 3 · normalise").wait_for()
    assert page.get_by_role("checkbox", name="Projector").is_checked()
    assert page.get_by_role("checkbox", name="Dark").is_checked()
    # the address follows what the class does next, and opening it again gives the same view
    page.keyboard.press("1")
    page.keyboard.press("ArrowUp")
    page.wait_for_function("() => location.search.includes('row=I') && location.search.includes('q=1.0%2C0.1')")
    again = open_page(page.url.removeprefix(page.url.split("?")[0]))
    settle(again, "projector", "dark")
    assert readout(again).splitlines()[0] == 'Query of "I": q = (1.000, 0.100)'
    again.get_by_text("Step 1 of 3 · score").wait_for()


def test_bad_address_shows_a_notice_and_defaults(open_page):
    page = open_page("?q=abc&row=%3Cb%3Ebold%3C/b%3E&mode=loud&step=NaN&zoom=2")
    notice = page.get_by_text("Some of the page address was ignored")
    notice.wait_for()
    text = notice.text_content()
    # (the server strips the tags from arguments before the page sees them; the value is still refused)
    for part in ("q = 'abc'", "row = '", "mode = 'loud'", "step = 'NaN'", "unknown argument 'zoom'"):
        assert part in text, text
    assert page.locator("b", has_text="bold").count() == 0  # shown as text, never as HTML
    assert readout(page).splitlines()[0] == 'Query of "love": q = (0.000, 1.000)'
    assert page.evaluate("() => document.documentElement.dataset.mode") == "normal"


def test_export_downloads_the_numbers(open_page):
    page = open_page("?q=1,1")
    page.locator(".bk-tab", has_text="Export").click()
    with page.expect_download() as info:
        page.get_by_text("Numbers as JSON").click()
    data = info.value.path().read_text()
    assert '"q": [\n    1.0,\n    1.0\n  ]' in data and '"output": 4.0' in data
    with page.expect_download() as info:
        page.get_by_text("Numbers as CSV").click()
    assert info.value.suggested_filename == "attention.csv"
    assert "weight,love,NLP,,0.5034" in info.value.path().read_text()


def test_export_holds_every_row_the_matrix_shows(open_page):
    """The Matrix tab shows three rows' outputs (3.59, 4.41, 4.00): the downloads hold every row, not only the
    selected query's. By hand, with E = e^(1/√2) and each token's key its query (q = k_love for love): row I's
    weights (E, 1, E) / (1 + 2E) give (6E + 6) / (1 + 2E) = 3.5933; love's 4.4067; NLP's (8 + 4E) / (2 + E) = 4."""
    e = math.exp(1 / math.sqrt(2))
    outputs = [(6 * e + 6) / (1 + 2 * e), (2 + 10 * e) / (1 + 2 * e), 4.0]
    page = open_page()
    page.locator(".bk-tab", has_text="Export").click()
    with page.expect_download() as info:
        page.get_by_text("Numbers as JSON").click()
    data = json.loads(info.value.path().read_text())
    assert data["outputs"] == pytest.approx(outputs, abs=1e-12)
    assert data["weight_matrix"][0] == pytest.approx([e / (1 + 2 * e), 1 / (1 + 2 * e), e / (1 + 2 * e)], abs=1e-12)
    assert data["queries"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]] and data["selected"] == "love"
    with page.expect_download() as info:
        page.get_by_text("Numbers as CSV").click()
    rows = list(csv.DictReader(io.StringIO(info.value.path().read_text())))
    shown = {r["query_token"]: float(r["value"]) for r in rows if r["quantity"] == "output"}
    assert shown == pytest.approx(dict(zip(("I", "love", "NLP"), outputs, strict=True)), abs=1e-12)
    assert {(r["query_token"], r["key_token"]) for r in rows if r["quantity"] == "score"} == {
        (a, b) for a in ("I", "love", "NLP") for b in ("I", "love", "NLP")}


# each theme's colours once (a mode changes sizes, not colours), each mode's layout once
@pytest.mark.parametrize("address", ["", "?mode=projector&theme=dark&step=2"])
def test_no_serious_accessibility_violations(open_page, address):
    page = open_page(address, viewport=VIEWPORTS["1024x768"])
    settle(page, "projector" if "projector" in address else "normal", "dark" if "dark" in address else "light")
    for tab in ("Weights", "Matrix", "All steps", "Export", "Keys"):
        show_tab(page, tab)
        serious = _serious_violations(page)
        if serious and all(rule == "aria-hidden-focus" for rule, *_ in serious):
            # Panel's Tabs set aria-hidden on a pane while it hides it; a run that lands mid-switch sees both:
            # again once every hidden pane is out of the layout (widgets/tabs.py's stylesheet)
            page.wait_for_function(HIDDEN_PANES_OUT, timeout=PATIENCE)
            wait_for_drawn(page)
            serious = _serious_violations(page)
        assert not serious, f"{tab}: {serious}"


#: True when every pane the explorer's tabs hide (aria-hidden) is out of the layout, nothing in it focusable.
HIDDEN_PANES_OUT = """() => {
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  const root = Bokeh.index.find_one(tabs).el.shadowRoot
  return [...root.querySelectorAll('[aria-hidden=true]')].every(el => getComputedStyle(el).display === 'none')
}"""


def _serious_violations(page) -> list:
    results = Axe().run(page)
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:4])
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


@pictures
@pytest.mark.parametrize("mode", list(MODES))
def test_screenshots(open_page, viewport, mode):
    page = open_page(MODES[mode], viewport=viewport)
    settle(page, mode)
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"classroom-{mode}-{viewport['width']}x{viewport['height']}.png"
    page.screenshot(path=path)
    assert path.stat().st_size > 20_000


def test_a_slow_finger_moves_q_every_time(open_page):
    """A finger moving about a pixel per event, six times over: each drag moves q (Bokeh's own pan gesture
    waited for a few pixels within a short time, and a slow finger never made one)."""
    page = open_page(has_touch=True, is_mobile=True, viewport={"width": 1024, "height": 768})
    cdp = page.context.new_cdp_session(page)
    x, y = to_page(page, "query-plot", 0.0, 1.0)
    moved = []
    for _ in range(6):
        before = readout(page).splitlines()[0]
        x = slow_touch_drag(page, cdp, x, y)
        try:
            page.locator(READOUT).filter(has_not_text=before).wait_for(timeout=PATIENCE)
            moved.append(True)
        except PlaywrightTimeout:
            moved.append(False)
    assert all(moved), f"q stayed put in {moved.count(False)} of 6 slow drags"
    # twelve pixels a drag, to the right: q's first coordinate grew, its second did not change
    qx, qy = (float(c) for c in re.findall(r"-?\d+\.\d+", readout(page).splitlines()[0]))
    assert qx > 0.2 and qy == pytest.approx(1.0, abs=0.02)
