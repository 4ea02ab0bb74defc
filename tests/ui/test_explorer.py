"""The explorer in a real browser: live drag, row clicks, independence of pages."""

from __future__ import annotations

import pytest

from tests.ui.conftest import SCREENSHOTS
from tests.ui.helpers import (
    PATIENCE,
    move_seen,
    open_app,
    output,
    readout,
    show_tab,
    to_page,
    wait_for_drawn,
    wait_for_readout,
    wait_for_server_readout,
    weights,
)


def test_first_view_shows_the_love_query(page):
    text = readout(page)
    assert 'Query of "love": q = (0.000, 1.000)' in text
    assert weights(page) == pytest.approx([0.1978, 0.4011, 0.4011], abs=1e-4)
    assert "4.4067 ≈ 4.41" in text


def test_drag_updates_numbers_before_release_and_ends_at_nlp(page):
    x0, y0 = to_page(page, "query-plot", 0.0, 1.0)
    x1, y1 = to_page(page, "query-plot", 1.0, 1.0)
    page.mouse.move(x0, y0)
    page.mouse.down()
    seen = set()
    for i in range(1, 21):  # each move waits for the readout to follow it: a drawn preview, not a time
        seen.add(move_seen(page, x0 + (x1 - x0) * i / 20, y0 + (y1 - y0) * i / 20).splitlines()[0])
    # still holding the button: the page already shows the query at k_NLP
    text = wait_for_readout(page, r"q = \(1\.000, 1\.000\)")
    assert len(seen) == 20, f"the readout followed only {len(seen)} of 20 moves: {seen}"
    assert weights(page) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)
    assert output(page) == pytest.approx(4.0, abs=1e-4)
    assert "Dot products q·k: I 1.0000, love 1.0000, NLP 2.0000" in text
    page.mouse.up()
    show_tab(page, "Matrix", "attention-matrix")
    # the selected row of the matrix is the dragged query's row
    cells = page.evaluate("""() => {
        const src = Bokeh.documents[0].get_model_by_name('attention-matrix').renderers[0].data_source;
        return src.data.label; }""")
    assert list(cells[3:6]) == ["0.2483", "0.2483", "0.5035"]


@pytest.mark.parametrize("row, token, out, q", [(0, "I", "3.5933 ≈ 3.59", "(1.000, 0.000)"),
                                                 (1, "love", "4.4067 ≈ 4.41", "(0.000, 1.000)"),
                                                 (2, "NLP", "4.0000 ≈ 4.00", "(1.000, 1.000)")])
def test_clicking_a_matrix_row_inspects_that_query(page, row, token, out, q):
    show_tab(page, "Matrix", "attention-matrix")
    # click the last key column of the row, then the row-sum column: both select it
    for col in (2, 3):
        page.mouse.click(*to_page(page, "attention-matrix", col, row))
        text = wait_for_readout(page, f'Query of "{token}": q = {q.replace("(", "[(]").replace(")", "[)]")}')
        assert out in text
    show_tab(page, "All steps")
    page.get_by_text(f"Inspector: query of “{token}”, q = {q}").wait_for()
    assert page.get_by_text("7. output =").text_content().endswith(f" = {out.split()[0]}")


def test_clicking_the_selected_row_keeps_it_selected(page):
    show_tab(page, "Matrix", "attention-matrix")
    page.mouse.click(*to_page(page, "attention-matrix", 0, 2))
    wait_for_readout(page, 'Query of "NLP"')
    page.mouse.click(*to_page(page, "attention-matrix", 1, 2))
    # a key after the click: once its answer is in, the server has taken the click (a page's events in order)
    page.keyboard.press("ArrowUp")
    wait_for_server_readout(page, r'q = \(1\.000, 1\.100\)')
    assert 'Query of "NLP"' in readout(page)
    highlight = page.evaluate("""() => Bokeh.documents[0].get_model_by_name('attention-matrix')
        .renderers[3].data_source.data.y[0]""")
    assert highlight == 2


def test_reset_restores_the_example(page):
    page.mouse.click(*to_page(page, "query-plot", 2.0, -1.0))
    wait_for_readout(page, r"q = \(2\.000, -1\.000\)")
    page.get_by_role("button", name="Reset example").click()
    wait_for_readout(page, r'Query of "love": q = \(0\.000, 1\.000\)')
    assert output(page) == pytest.approx(4.4067, abs=1e-4)


def test_two_pages_are_independent(browser, server, page):
    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_app(other, server)
    show_tab(page, "Matrix", "attention-matrix")
    page.mouse.click(*to_page(page, "attention-matrix", 0, 0))
    wait_for_readout(page, 'Query of "I"')
    other.mouse.click(*to_page(other, "query-plot", 1.0, 1.0))
    wait_for_readout(other, r"q = \(1\.000, 1\.000\)")
    assert 'Query of "I": q = (1.000, 0.000)' in readout(page)
    assert 'Query of "love": q = (1.000, 1.000)' in readout(other)
    # the first page's own query of "love", after the other's move was taken: still the example's
    page.keyboard.press("2")
    wait_for_readout(page, 'Query of "love"')
    assert 'Query of "love": q = (0.000, 1.000)' in readout(page)
    # a fresh page starts from the example, whatever others did
    third = browser.new_context().new_page()
    open_app(third, server)
    assert 'Query of "love": q = (0.000, 1.000)' in readout(third)
    other.context.close()
    third.context.close()


def test_screenshot_1280x800(page):
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "explorer-1280x800.png", full_page=True)
    assert (SCREENSHOTS / "explorer-1280x800.png").stat().st_size > 20_000


#: Counts, from now on, the page's reads of a `--bk-*` CSS variable (BokehJS's lookup for a visual property).
COUNT_BOKEH_CSS_READS = """() => {
  window.bokehCssReads = 0
  const read = CSSStyleDeclaration.prototype.getPropertyValue
  CSSStyleDeclaration.prototype.getPropertyValue = function (name) {
    if (String(name).startsWith('--bk-')) window.bokehCssReads += 1
    return read.call(this, name)
  }
}"""


def test_painting_asks_the_css_cascade_for_no_visual_property(page):
    """BokehJS looks up a `--bk-*` CSS variable before each line, fill and text property it paints with (a style
    recalculation each, a third of a tab switch's time, bokeh/bokeh#15286); the app defines none, so its page
    paints from the models' values: no lookup through three tabs shown and a row chosen by its key."""
    page.evaluate(COUNT_BOKEH_CSS_READS)
    for title, figure in (("Matrix", "attention-matrix"), ("Projections", "projection-w"), ("Weights", None)):
        show_tab(page, title, figure)
    page.keyboard.press("3")
    wait_for_readout(page, 'Query of "NLP"')
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert page.evaluate("() => window.bokehCssReads") == 0


#: Counts the calls of every MutationObserver the page creates from now on (window.observedChanges).
COUNT_OBSERVED_CHANGES = """() => {
  window.observedChanges = 0
  const Native = window.MutationObserver
  window.MutationObserver = class extends Native {
    constructor(callback) { super((records, observer) => { window.observedChanges += 1; callback(records, observer) }) }
  }
}"""


def test_a_tab_switch_wakes_no_observer_for_each_change_in_the_tabs_contents(page):
    """A tapped tab's title is scrolled into its row, and again if the titles are redrawn (widgets/tabs.js): what
    is watched is the titles, by one observer. Watching the tabs' contents woke it for every change of class in
    them as BokehJS laid out each built tab again, a forced layout each time, for every tap of the last 5 s (54
    calls through these six taps; 14 now)."""
    page.evaluate(COUNT_OBSERVED_CHANGES)
    for _ in range(2):
        for title, figure in (("Matrix", "attention-matrix"), ("Projections", "projection-w"), ("Weights", None)):
            show_tab(page, title, figure)
    calls = page.evaluate("() => window.observedChanges")
    assert calls <= 3 * 6, f"{calls} calls of the page's observers through six taps"


#: Counts, from now on, each time a layout of the page is laid out from its top (its top view's update_layout: the
#: whole tree styled, measured and placed again), and each time the named figure is laid out.
COUNT_LAYOUTS = """(figure) => {
  const {LayoutDOMView} = Bokeh.require('models/layouts/layout_dom')
  window.wholeLayouts = 0
  window.figureLayouts = 0
  for (const m of Bokeh.documents[0].all_models) {
    const v = Bokeh.index.find_one(m)
    if (!(v instanceof LayoutDOMView)) continue
    const update = v.update_layout
    if (!(v.parent instanceof LayoutDOMView))
      v.update_layout = function () { window.wholeLayouts += 1; return update.call(this) }
    else if (m.name === figure)
      v.update_layout = function () { window.figureLayouts += 1; return update.call(this) }
  }
}"""


def test_a_change_of_mode_lays_the_page_out_once(page):
    """Text sizes come from CSS, which BokehJS does not watch, so a change of mode, theme or language lays the page
    out again (link/browser.js). It did so once for each of its views: 33 times for one change (and again as a page
    loads and first takes its mode, about half a second of its load); 6 now, once for each tree of layouts."""
    page.evaluate(COUNT_LAYOUTS, "")
    page.get_by_label("Projector").check()
    page.wait_for_function("() => document.documentElement.dataset.mode === 'projector'")
    # the server's change came in one message with the mode; the relayout runs on the next frame, and what it
    # moved is drawn on the frame after
    wait_for_drawn(page)
    layouts = page.evaluate("() => window.wholeLayouts")
    assert 1 <= layouts <= 12, f"the page was laid out {layouts} times for a change of mode"


#: Counts, from now on, the resizes the page's root views take (BokehJS's after_resize: they lay their trees out).
COUNT_ROOT_RESIZES = """() => {
  window.rootResizes = 0
  for (const m of Bokeh.documents[0].roots()) {
    const v = Bokeh.index.find_one(m)
    if (v == null) continue
    const resized = v.after_resize
    v.after_resize = function () { window.rootResizes += 1; return resized.call(this) }
  }
}"""


def test_a_tab_switch_lays_out_only_the_tab_it_shows(page):
    """BokehJS laid out every tab built so far on each switch, hidden ones too (and on each resize): a switch cost
    more the more tabs a learner had opened. A hidden tab's figures are laid out when it is shown."""
    show_tab(page, "Projections", "projection-w")
    show_tab(page, "Matrix", "attention-matrix")
    page.evaluate(COUNT_LAYOUTS, "projection-w")
    show_tab(page, "Weights")
    show_tab(page, "Matrix", "attention-matrix")
    page.evaluate(COUNT_ROOT_RESIZES)
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_function("() => window.rootResizes > 0", timeout=PATIENCE)  # the page took the resize
    wait_for_drawn(page)
    assert page.evaluate("() => window.figureLayouts") == 0, "a hidden tab's figure was laid out"
    show_tab(page, "Projections", "projection-w")
    assert page.evaluate("() => window.figureLayouts") > 0, "the figure of the tab shown was not laid out"
