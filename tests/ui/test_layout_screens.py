"""Every tab, in both modes, on every screen a class uses: nothing overlaps, nothing is cut off, nothing scrolls sideways.

One page per screen and mode, walked through every tab (the tabs build their views when first shown). The
checks are in ``layout_checks.js``: text over text, text over a figure or a chart's marks, text cut off outside
any scroll container, inputs too narrow for their numbers, Bokeh labels over labels or markers or out of their
frame, titles wider than their figure, the page scrolling, less room for the shown tab's scrolling area than
:data:`MIN_TAB_HEIGHT`, and in projector mode from 1024×768 up, text under 20 px. A screenshot of each lands in
``tests/ui/screenshots/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ui.conftest import SCREENSHOTS
from tests.ui.helpers import READOUT, settle

CHECKS = (Path(__file__).parent / "layout_checks.js").read_text()
TABS = ("Weights", "Matrix", "All steps", "Recipe", "Edit", "Trap", "√d_k", "Projections", "Heads · n²", "Export",
        "Keys")
#: name: (viewport, browser context options)
SCREENS = {
    "800x600": ({"width": 800, "height": 600}, {}),
    "1024x768": ({"width": 1024, "height": 768}, {}),
    "1280x800": ({"width": 1280, "height": 800}, {}),
    "1920x1080": ({"width": 1920, "height": 1080}, {}),
    "tablet-768x1024": ({"width": 768, "height": 1024}, {"has_touch": True, "is_mobile": True}),
    "tablet-1024x768": ({"width": 1024, "height": 768}, {"has_touch": True, "is_mobile": True}),
    "phone-390x844": ({"width": 390, "height": 844}, {"has_touch": True, "is_mobile": True}),
}
CASES = [(screen, mode, "light") for screen in SCREENS for mode in ("normal", "projector")
         if not (screen == "tablet-1024x768" and mode == "projector")]  # the same as the 1024x768 projector
CASES += [("1024x768", "projector", "dark"), ("1920x1080", "normal", "dark")]


def _min_font(screen: str, mode: str) -> int:
    viewport, _ = SCREENS[screen]
    return 20 if mode == "projector" and viewport["width"] >= 1024 and viewport["height"] >= 768 else 0


#: The room the tabs give the shown tab's scrolling area, below their titles, is at least this tall (CSS px) on
#: every screen: a figure, or a table's first rows, fits in it (an 800×600 projector's full-size header and tab
#: titles left it 127 px).
MIN_TAB_HEIGHT = 250
#: That room (null if the shown tab's contents do not scroll inside the tabs).
TAB_ROOM = """() => {
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  const el = Bokeh.index.find_one(tabs).el, root = el.shadowRoot
  const area = [...root.children].find(c => c.tagName === 'DIV' && !c.classList.contains('bk-header'))
  if (getComputedStyle(area).overflowY !== 'auto') return null
  return el.getBoundingClientRect().height - root.querySelector('.bk-header').getBoundingClientRect().height
}"""


def _case_id(case) -> str:
    return "-".join(case)


@pytest.mark.parametrize(("screen", "mode", "theme"), CASES, ids=[_case_id(c) for c in CASES])
def test_every_tab_fits_the_screen(open_page, screen, mode, theme):
    viewport, options = SCREENS[screen]
    page = open_page(f"?mode={mode}&theme={theme}", viewport=viewport, **options)
    settle(page, mode, theme)
    assert page.evaluate("() => window.innerWidth") == viewport["width"], "the page is not laid out for the screen"
    SCREENSHOTS.mkdir(exist_ok=True)
    problems = {}
    for tab in TABS:
        page.locator(".bk-tab", has_text=tab).click()
        page.locator(".bk-tab.bk-active", has_text=tab).wait_for()
        _wait_for_tab(page)
        # the plot, the readout and the tabs are always there to reach
        for where in (page.locator(".ae-query-plot"), page.locator(READOUT),
                      page.locator(".bk-tab.bk-active", has_text=tab)):
            box = where.first.bounding_box()
            assert box and box["width"] > 40 and box["height"] > 15, f"{where} has no room on the {tab} tab"
        found = page.evaluate(CHECKS, _min_font(screen, mode))
        room = page.evaluate(TAB_ROOM)
        if room is None or room < MIN_TAB_HEIGHT:
            found.append(f"the tab's scrolling area has {room} px of height, under {MIN_TAB_HEIGHT}")
        if found:
            problems[tab] = found
        page.screenshot(path=SCREENSHOTS / f"screen-{screen}-{mode}-{theme}-{re.sub(r'[^a-z0-9]+', '_', tab.lower())}.png")
    assert not problems, "\n".join(f"{tab}: {p}" for tab, ps in problems.items() for p in ps)


def _wait_for_tab(page) -> None:
    """Until the shown tab's contents are in the page and every figure in it has drawn, and two frames more."""
    # a tab's contents are built on the server the first time it is shown (a Spacer stands in until then), and
    # the tabs' headers are drawn again when they arrive
    page.wait_for_function("""() => {
      const models = [...Bokeh.documents[0].all_models]
      const tabs = models.find(m => (m.css_classes || []).includes('explorer-tabs'))
      if (tabs == null || tabs.tabs[tabs.active].child.type === 'Spacer') return false
      const views = models.filter(m => m.type === 'Figure').map(m => Bokeh.index.find_one(m))
      return views.every(v => v == null || !v.el.isConnected || v.has_finished())
    }""", timeout=30000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(250)  # KaTeX typesets, Bokeh relays out once the tab is visible
