"""Every tab, in both modes, on every screen a class uses: nothing overlaps, nothing is cut off, nothing scrolls
sideways.

One page per kind of device (desktop or touch), mode, theme and language, walked through every tab on the first
of its screens (the tabs build their views when first shown), then resized to each of its other screens and
walked again (checked to fail when a layout goes wrong only at a size the page was resized to). The checks are
in ``layout_checks.js``: text over text, text over a figure or a chart's marks, text cut off outside any scroll
container, inputs too narrow for their numbers, Bokeh labels over labels or markers or out of their frame, titles
wider than their figure, the page scrolling, less room for the shown tab's scrolling area than
:data:`MIN_TAB_HEIGHT`, and in projector mode from 1024×768 up, text under 20 px. On a phone, each tapped tab also
comes into view with the answer (``test_arabic_and_phones.py``'s ``answer_problems``), and in Arabic the tabs that
read left to right inside right-to-left text are checked as they are shown (its ``arabic_problems``). A screenshot
of a tab that fails lands in ``tests/ui/screenshots/``; with ``SCREENSHOTS=1``, one of every tab on every screen.

The Projections tab's planes are swept on the screens where they are smallest: every preset and the first
"New draw" results, with each W chosen, no label over another or a marker, none out of its frame.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from testing.browser import APP_LOADED, TAB_BUILT
from tests.ui.conftest import EVERY_SCREENSHOT, SCREENSHOTS
from tests.ui.helpers import (
    _DEEP,
    PATIENCE,
    QUERY_PLOT_READY,
    READOUT,
    SHOWN_TAB,
    settle,
    show_tab,
    wait_for_drawn,
    wait_for_readout,
    wait_for_stage,
    wait_for_tab,
)
from tests.ui.test_arabic_and_phones import (
    TAPPED,
    answer_line_follows_a_row_key,
    answer_problems,
    arabic_problems,
    stage_answer_problems,
)

CHECKS = (Path(__file__).parent / "layout_checks.js").read_text()
TABS = ("Weights", "Matrix", "All steps", "Recipe", "Edit", "Trap", "√d_k", "Projections", "Heads · n²", "Train",
        "Real model", "Check", "Export", "Keys")
#: name: (viewport, browser context options)
SCREENS = {
    "800x600": ({"width": 800, "height": 600}, {}),
    "1024x768": ({"width": 1024, "height": 768}, {}),
    "1280x800": ({"width": 1280, "height": 800}, {}),
    # a laptop's and many a projector's: in projector mode the left column is 28.6 readout ems wide, where Spanish's
    # readout wraps to eight lines (it hid its Output line under the seven and a half kept from 28em)
    "1366x768": ({"width": 1366, "height": 768}, {}),
    "1920x1080": ({"width": 1920, "height": 1080}, {}),
    "tablet-768x1024": ({"width": 768, "height": 1024}, {"has_touch": True, "is_mobile": True}),
    "tablet-1024x768": ({"width": 1024, "height": 768}, {"has_touch": True, "is_mobile": True}),
    "phone-390x844": ({"width": 390, "height": 844}, {"has_touch": True, "is_mobile": True}),
    "phone-844x390": ({"width": 844, "height": 390}, {"has_touch": True, "is_mobile": True}),
}
#: The tabs that take the stage while shown (widgets/stage.py): the query plot, its readout and the step-through
#: step aside into a strip.
STAGE_TABS = ("Train", "Real model")
#: Screens where the page is one column that scrolls as a whole, the tabs below the plot and the readout: a tapped
#: tab scrolls the readout away to show the tab (the answer is in view on the first screen only).
SCROLLING = ("phone-390x844", "phone-844x390")


def _min_font(screen: str, mode: str) -> int:
    """In projector mode everything a class reads is at least 20 px, on every screen."""
    return 20 if mode == "projector" else 0


#: The room the tabs give the shown tab's scrolling area, below their titles, is at least this tall (CSS px) on
#: every screen: a figure, or a table's first rows, fits in it (an 800×600 projector's full-size header and tab
#: titles left it 127 px).
MIN_TAB_HEIGHT = 250
#: What the walks check on a tab just shown, in one call to the page (each call costs a round trip and the page's
#: work to answer it, as much as a check): the layout checks, with ``answer`` the answer's too; the width and height
#: of the plot, the readout and the shown tab's title (0 if not shown); the room the tabs give the shown tab's
#: scrolling area below their titles (null if its contents do not scroll inside the tabs); and the part of that
#: area inside the window (CSS px), with its height.
TAB_REPORT = SHOWN_TAB + _DEEP + """({minFont, answer}) => {
  const checks = (%s)
  const size = (el) => { const r = el?.getBoundingClientRect(); return r ? [r.width, r.height] : [0, 0] }
  const first = (test) => { for (const el of deep(document)) if (test(el)) return el; return null }
  const plot = first((el) => el.classList.contains('ae-query-plot'))
  const readout = first((el) => el.getAttribute('data-testid') === 'readout')
  const {el, root, area} = shownTab()
  const a = area.getBoundingClientRect()
  const strip = first((el) => el.classList.contains('stage-toggle'))
  return {
    found: checks({minFont}),
    answer: answer ? checks({answer: true}) : [],
    boxes: {plot: size(plot), readout: size(readout?.shadowRoot?.querySelector('.bk-clearfix') ?? readout),
            title: size(root.querySelector('.bk-tab.bk-active')), strip: size(strip)},
    room: getComputedStyle(area).overflowY !== 'auto' ? null
      : el.getBoundingClientRect().height - root.querySelector('.bk-header').getBoundingClientRect().height,
    inView: [Math.min(a.bottom, window.innerHeight) - Math.max(a.top, 0), a.height],
  }
}""" % CHECKS


def _case_id(case) -> str:
    return "-".join(case)


#: The six languages of the page.
LANGUAGES = ("en", "fr", "es", "de", "zh", "ar")
#: The screens by the kind of device (a browser context is one or the other), in the order a page is resized
#: through them: each kind's first screen is the one the page opens on.
DEVICES = {"desktop": [s for s, (_, o) in SCREENS.items() if not o], "touch": [s for s, (_, o) in SCREENS.items() if o]}


def _walks(cases) -> list[tuple]:
    """``(lang, screen, mode, theme)`` cases as ``(lang, device, mode, theme, screens)``: one page per language,
    kind of device, mode and theme, walked on each of its screens in :data:`DEVICES`' order."""
    groups: dict[tuple, list[str]] = {}
    for lang, screen, mode, theme in cases:
        device = "touch" if SCREENS[screen][1] else "desktop"
        groups.setdefault((lang, device, mode, theme), []).append(screen)
    return [(*key, sorted(screens, key=DEVICES[key[1]].index)) for key, screens in groups.items()]


#: Every screen in both modes (a 1024x768 tablet in projector mode is the 1024x768 projector), and the dark theme on
#: the classroom's projector: its colours are the same on every screen and in both modes, its layout the light
#: theme's (the colours' contrast in each theme: test_classroom_page.py's accessibility test).
#: 1366x768 in normal mode is 1280x800's band of every CSS rule and container step (at least 1280 px wide, 721 to
#: 800 px high, a left column of 34 to 44 readout ems): its walk, in projector mode, is where the ems differ. In
#: projector mode 1280x800 is 1366x768's band (8.5 readout lines both): its tabs have the rules of the 1024x768
#: projector's, with more room (691 px wide against 553, 32 px taller); its header with the full-screen button's
#: words is the vector answer test's (every desktop screen), its Train stage is that stage's own test's.
WALKS = _walks([("en", screen, mode, "light") for screen in SCREENS for mode in ("normal", "projector")
                if not (screen == "tablet-1024x768" and mode == "projector")
                and not (screen == "1366x768" and mode == "normal")
                and not (screen == "1280x800" and mode == "projector")])
WALKS += _walks([("en", "1024x768", "projector", "dark")])


def _walk_id(walk) -> str:
    return "-".join([*walk[:4], "+".join(walk[4])])


@pytest.mark.parametrize(("lang", "device", "mode", "theme", "screens"), WALKS, ids=[_walk_id(w) for w in WALKS])
def test_every_tab_fits_the_screen(open_page, lang, device, mode, theme, screens):
    """One page per kind of device, mode and theme, opened on its first screen and walked through every tab,
    then resized to each of its other screens and walked again (the layout follows the window's size alone)."""
    _every_tab_fits(open_page, screens, mode, theme, lang)


#: English is not among them: its walks (:func:`test_every_tab_fits_the_screen`) check the answer on each screen in
#: both modes, in the first view and beside every tab (on a phone, each tapped tab brings it back into view).
ANSWER_CASES = [(lang, device, mode) for lang in LANGUAGES if lang != "en" for device in DEVICES
                for mode in ("normal", "projector")]


@pytest.mark.parametrize(("lang", "device", "mode"), ANSWER_CASES, ids=[_case_id(c) for c in ANSWER_CASES])
def test_the_answer_is_in_view_on_every_screen_in_every_language(open_page, lang, device, mode):
    """The output is the answer to every question on the page: the readout's Weights and Output lines are inside
    the window and not cut by any box around them, with nothing scrolled, on every screen, in both modes and every
    language (1024x768 in projector mode once hid the Output line under seven reserved lines for eight).

    One page per language, mode and kind of device, opened on the first screen of its kind and then resized to
    each of the others, as a window is resized or a phone or tablet turned (the layout follows the window's size
    alone: CSS media queries and Bokeh's resize observers)."""
    first, *others = DEVICES[device]
    viewport, options = SCREENS[first]
    page = open_page(f"?mode={mode}&lang={lang}", viewport=viewport, **options)
    settle(page, mode)
    problems = [f"{first}: {p}" for p in page.evaluate(CHECKS, {"answer": True})]
    for screen in others:
        _resize(page, screen)
        problems += [f"{screen}: {p}" for p in page.evaluate(CHECKS, {"answer": True})]
    assert not problems, "\n".join(problems)


#: A query whose numbers are widest (two negative coordinates: every number on the readout's lines has its sign) in
#: the languages whose readout wraps most, on the projectors where its room is the smallest for its band of widths.
WIDE_NUMBERS = [("fr", "1024x768"), ("de", "800x600")]


@pytest.mark.parametrize(("lang", "screen"), WIDE_NUMBERS, ids=["-".join(c) for c in WIDE_NUMBERS])
def test_the_answer_stays_in_view_when_the_readout_has_more_lines_than_its_room(open_page, lang, screen):
    """The readout's room under the plot is in lines, the most any language wraps to with the first example's
    numbers: a query at (−1.5, −1.5) wraps French at 1024x768 in projector mode to nine lines, where 8.5 are kept,
    and its Output line was under the screen's edge. The readout keeps its end in view, Weights and Output, its
    first line scrolled away instead (the query is where the plot shows it)."""
    page = open_page(f"?mode=projector&lang={lang}&q=-1.5,-1.5", viewport=SCREENS[screen][0])
    settle(page, "projector")
    wait_for_readout(page, r"1[.,]500")
    problems = page.evaluate(CHECKS, {"answer": True})
    if problems:
        page.screenshot(path=SCREENSHOTS / f"wide-numbers-{lang}-{screen}.png")
    assert not problems, "\n".join(problems)


#: Module 2's vector values in every language in projector mode (the largest text), and in English, in German
#: (whose readout wraps most in a narrow column) and in Arabic in normal mode.
VECTOR_ANSWER_CASES = [(lang, "projector") for lang in LANGUAGES]
VECTOR_ANSWER_CASES += [(lang, "normal") for lang in ("en", "de", "ar")]
#: The bottoms (CSS px) of the readout's line boxes drawn outside its box or the window.
READOUT_LINES_OUT = _DEEP + """() => {
  const host = [...deep(document)].find(e => e.getAttribute('data-testid') === 'readout')
  const text = host.shadowRoot.querySelector('.bk-clearfix'), box = host.getBoundingClientRect()
  const range = document.createRange()
  range.selectNodeContents(text)
  return [...range.getClientRects()].filter(r => r.width >= 1 && (r.top < Math.max(box.top, 0) - 1
    || r.bottom > Math.min(box.bottom, window.innerHeight) + 1)).map(r => Math.round(r.bottom))
}"""


@pytest.mark.parametrize(("lang", "mode"), VECTOR_ANSWER_CASES, ids=[_case_id(c) for c in VECTOR_ANSWER_CASES])
def test_a_vector_answer_is_in_view_on_every_desktop_screen(open_page, lang, mode):
    """Module 2's output is a vector: its Output line, "(3.9833, 6.0167) ≈ (3.98, 6.02)" for the query of "love", is
    a line longer than the scalar example's "4.4067 ≈ 4.41" in a narrow column. The readout's Weights and Output
    lines are inside the window and every box around them, and every line of the readout inside its box and the
    window, on every desktop screen (at 1024x768 on a projector the Output line wrapped onto a ninth line under the
    eight and a half kept for the scalar example's, and its end, "6.02)", was below the screen). One page, resized,
    as in :func:`test_the_answer_is_in_view_on_every_screen_in_every_language`."""
    first, *others = DEVICES["desktop"]
    page = open_page(f"?mode={mode}&lang={lang}&preset=module-2", viewport=SCREENS[first][0])
    settle(page, mode)
    wait_for_readout(page, r"6[.,]0167")  # the vector output of the course's Module 2
    problems = []
    for n, screen in enumerate([first, *others]):
        if n > 0:
            _resize(page, screen)
        found = page.evaluate(CHECKS, {"answer": True})
        out = page.evaluate(READOUT_LINES_OUT)
        if out:
            found.append(f"{len(out)} of the readout's lines are out of its box or the window (bottoms at {out})")
        problems += [f"{screen}: {p}" for p in found]
        if found:
            page.screenshot(path=SCREENSHOTS / f"vector-answer-{lang}-{screen}-{mode}.png")
    assert not problems, "\n".join(problems)


#: The screens where text has least room, in the language whose words are longest (German) and the one laid out
#: right to left (Arabic): the smallest projector and a phone, and in Arabic also a landscape phone and the 1024x768
#: projector, the issue's (elsewhere a language that fits 800x600 fits it: the same two columns, more room). French,
#: Spanish and Chinese words are shorter than German's: their tabs are not walked, their answer is checked on every
#: screen in both modes (:func:`test_the_answer_is_in_view_on_every_screen_in_every_language`).
LANGUAGE_CASES = [(lang, screen, mode) for lang in ("de", "ar")
                  for screen, mode in (("800x600", "projector"), ("phone-390x844", "normal"))]
LANGUAGE_CASES += [("ar", "1024x768", "projector"), ("ar", "phone-844x390", "normal")]
LANGUAGE_WALKS = _walks([(lang, screen, mode, "light") for lang, screen, mode in LANGUAGE_CASES])


@pytest.mark.parametrize(("lang", "device", "mode", "theme", "screens"), LANGUAGE_WALKS,
                         ids=[_walk_id(w) for w in LANGUAGE_WALKS])
def test_every_tab_fits_the_screen_in_each_language(open_page, lang, device, mode, theme, screens):
    """As :func:`test_every_tab_fits_the_screen`, in the languages and on the screens of :data:`LANGUAGE_CASES`;
    in Arabic with its own checks of the charts, the matrix, All steps and the Recipe on each screen."""
    _every_tab_fits(open_page, screens, mode, theme, lang)


#: A teacher's lesson link (docs/classroom.md, "Lesson links"): four tabs, whose titles keep 20 px on an 800×600
#: projector.
LESSON = ("weights,matrix,steps,check", ("Weights", "Matrix", "All steps", "Check"))
#: Each tab title's font size and whether it lies whole inside the tabs' header (none cut off or scrolled away).
TAB_TITLES = """() => {
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  const root = Bokeh.index.find_one(tabs).el.shadowRoot, header = root.querySelector('.bk-header')
  const box = header.getBoundingClientRect()
  return [...root.querySelectorAll('.bk-tab')].map(t => { const r = t.getBoundingClientRect()
    return {font: parseFloat(getComputedStyle(t).fontSize),
            inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.width > 0
                    && t.scrollWidth <= t.clientWidth}
  })
}"""


def test_a_lesson_s_four_tabs_fit_an_800x600_projector_with_20px_titles(open_page):
    titles = _every_tab_fits(open_page, ["800x600"], "projector", "light", lesson=LESSON)
    assert len(titles) == 4 and all(t["font"] >= 20 and t["inside"] for t in titles), titles


def _resize(page, screen: str) -> None:
    """The page's window resized to ``screen``, and the page laid out again for it."""
    page.set_viewport_size(SCREENS[screen][0])
    # Bokeh lays the page out again on the next animation frame, after its resize observers; the figures drawn at
    # their new size, the labels placed and the fonts loaded are enough (across 96 resizes in three languages,
    # both modes, desktop and touch screens and two tabs, no element moved in the 700 ms after them)
    wait_for_drawn(page)
    width = SCREENS[screen][0]["width"]
    assert page.evaluate("() => window.innerWidth") == width, f"the page is not laid out for {screen}"


def _every_tab_fits(open_page, screens: list[str], mode: str, theme: str, lang: str = "en",
                    lesson=None) -> list[dict]:
    """Opens the page on ``screens[0]`` and walks every tab, then resizes it to each of the other screens (all of
    one kind of device) and walks them again; returns the tab titles' fonts and places on the last screen."""
    viewport, options = SCREENS[screens[0]]
    tabs = TABS if lesson is None else lesson[1]
    page = open_page(f"?mode={mode}&theme={theme}" + (f"&lang={lang}" if lang != "en" else "")
                     + (f"&tabs={lesson[0]}" if lesson else ""), viewport=viewport, **options)
    if lesson:
        expect(page.locator(".bk-tab")).to_have_count(len(tabs), timeout=PATIENCE)
    settle(page, mode, theme)
    SCREENSHOTS.mkdir(exist_ok=True)
    problems = {}
    prefix = ("screen" if lang == "en" else f"screen-{lang}") + ("-lesson" if lesson else "")
    assert page.evaluate("() => window.innerWidth") == viewport["width"], "the page is not laid out for the screen"
    for n, screen in enumerate(screens):
        if n > 0:
            _resize(page, screen)
        # the answer is in view on the first screen, before anything is tapped (on a screen the page was resized to,
        # where the page is one column that scrolls, the last walk left the column scrolled to the tabs)
        first = page.evaluate(CHECKS, {"answer": True}) if n == 0 or screen not in SCROLLING else []
        if n == 0 and screen in SCROLLING:
            first += answer_problems(page, "first view", tapped=False)
        if first:
            problems[f"{screen}, first view"] = first
        for k, tab in enumerate(tabs):  # by place: their titles are the page's language
            found = _tab_problems(page, screen, mode, k, tab, built=n > 0)
            if screen in SCROLLING and tab in TAPPED:
                found += answer_problems(page, tab)
            if screen in SCROLLING and tab in STAGE_TABS:
                found += stage_answer_problems(page, tab)
            if lang == "ar":
                found += arabic_problems(page, screen, mode, tab)
            if found:
                problems[f"{screen}, {tab}"] = found
            if found or EVERY_SCREENSHOT:
                slug = re.sub(r'[^a-z0-9]+', '_', tab.lower())
                page.screenshot(path=SCREENSHOTS / f"{prefix}-{screen}-{mode}-{theme}-{slug}.png")
    if screens[-1] in SCROLLING and "Export" in tabs:  # last: it selects another row
        found = answer_line_follows_a_row_key(page, screens[-1], tabs.index("Export"))
        if found:
            problems[f"{screens[-1]}, Export, key 3"] = found
            page.screenshot(path=SCREENSHOTS / f"{prefix}-{screens[-1]}-{mode}-{theme}-row-key.png")
    assert not problems, "\n".join(f"{where}: {p}" for where, ps in problems.items() for p in ps)
    return page.evaluate(TAB_TITLES)


def _tab_problems(page, screen: str, mode: str, k: int, tab: str, built: bool) -> list[str]:
    """Taps the ``k``-th tab's title and checks what it shows on ``screen`` (``built``: shown before, on the
    screen before)."""
    title = page.locator(".bk-tab").nth(k)
    # on a desktop's screen the titles are in view and still: a click's own checks wait two more frames on each tab
    # of the walks; on a touch screen's column the tabs' script may still be moving the tabs up (widgets/tabs.js)
    title.click(force=screen in DEVICES["desktop"])
    expect(title).to_have_class(re.compile(r"\bbk-active\b"), timeout=PATIENCE)
    wait_for_tab(page)
    staged = tab in STAGE_TABS
    wait_for_stage(page, staged)
    if built:  # typeset before: only the figures' labels are placed again at the new size (widgets/labels.js)
        page.wait_for_function("() => (window.attentionExplorerLabels ?? new Set()).size === 0", timeout=PATIENCE,
                               polling="raf")
    else:  # KaTeX typesets (its fonts load the first time a formula needs them), Bokeh lays the tab out
        wait_for_drawn(page)
    report = page.evaluate(TAB_REPORT, {"minFont": _min_font(screen, mode),
                                        "answer": screen not in SCROLLING and not staged})
    # the plot, the readout and the tabs are always there to reach (a tab's title may be two Chinese characters,
    # about 32 px); a tab that takes the stage has set them aside, behind the strip's button that brings them back
    for where, least in (("strip", 15), ("title", 24)) if staged else (("plot", 40), ("readout", 40), ("title", 24)):
        width, height = report["boxes"][where]
        assert width > least and height > 15, f"the {where} has no room on the {tab} tab on {screen}"
    found = report["found"]
    room = report["room"]
    if room is None or room < MIN_TAB_HEIGHT:
        found.append(f"the tab's scrolling area has {room} px of height, under {MIN_TAB_HEIGHT}")
    # a tapped tab shows its contents: as much of them as the tabs give room for is inside the window
    # (the first title is the tab shown already: tapping it changes nothing, and moves nothing)
    seen, height = report["inView"]
    if k > 0 and seen < min(MIN_TAB_HEIGHT, height) - 1:
        found.append(f"only {seen:.0f} px of the tab's {height:.0f} px are in the window")
    # and, but on a phone (one column that scrolls: the tabs below the readout), the answer stays in view beside it
    return found + report["answer"]


#: The screens where the Projections tab's planes are smallest, with the modes checked on each: on the desktop's
#: screens projector mode, whose labels are largest.
PLANE_CASES = [("800x600", "projector"), ("phone-390x844", "normal"), ("phone-390x844", "projector"),
               ("1024x768", "projector")]
#: How many "New draw" results the sweep looks at (the page's seeds 1 to this, in order: deterministic); with the two
#: presets and three W each, 18 placements a screen.
NEW_DRAWS = 4
PLANES = ["projection-x", "projection-w"]
#: The shown W (the page's preview inputs), or null until the chosen role's points are the ones labelled.
PLANE_DATA = """(role) => {
  const get = (name) => Bokeh.documents[0].get_model_by_name(name).data
  const inputs = get('projection-inputs'), qkv = get('projection-qkv').label, sub = ['_Q', '_K', '_V'][role]
  const shown = inputs.role[0] === role && get('projection-basis').label[0] === `e₁W${sub}` &&
    qkv.every((t, i) => (t !== '') === (Math.floor(i / 3) === role))
  return shown ? JSON.stringify(inputs.W) : null
}"""
#: The planes have drawn their data and the page has placed their labels (widgets/labels.js asks for an
#: animation frame per figure; a placement that moved a label draws the figure once more and asks again).
PLACED = """() => {
  const views = %r.map(n => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name(n)))
  return views.every(v => v != null && v.has_finished()) && (window.attentionExplorerLabels ?? new Set()).size === 0
}""" % PLANES


def _placed(page) -> None:
    for _ in range(2):  # settled twice, a frame apart: a label moved in the first frame is drawn in the next
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.wait_for_function(PLACED, timeout=PATIENCE, polling="raf")


@pytest.mark.parametrize(("screen", "mode"), PLANE_CASES, ids=["-".join(c) for c in PLANE_CASES])
def test_projection_labels_stay_clear(open_page, screen, mode):
    """Every preset and the first "New draw" results, with each W chosen: no plane label over another label or a
    marker, none out of its plane's frame (the requirement holds in any figure, mode or preset)."""
    viewport, options = SCREENS[screen]
    page = open_page(f"?mode={mode}", viewport=viewport, **options)
    settle(page, mode)
    show_tab(page, "Projections", "projection-w")
    _placed(page)
    problems = []
    # the page opens on the first preset (Q = K = V = X); each step changes the shown W
    steps = [("Q = K = V = X", None), ("Section 6", page.get_by_role("button", name="Section 6", exact=True))]
    steps += [(f"New draw {k}", page.get_by_role("button", name="New draw", exact=True))
              for k in range(1, NEW_DRAWS + 1)]
    shown = page.evaluate(PLANE_DATA, 0)
    for step, button in steps:
        for k, role in enumerate(("W_Q", "W_K", "W_V")):
            if button is not None or k > 0:  # the page opens on Q = K = V = X with W_Q chosen
                page.locator(".bk-btn:visible", has_text=re.compile(f"^{role}$")).click()
                page.wait_for_function(PLANE_DATA, arg=k, timeout=PATIENCE)
                if button is not None:  # a new W, shown with W_Q chosen
                    button.click()
                    button = None
                    page.wait_for_function(f"() => {{ const w = ({PLANE_DATA})(0); "
                                           f"return w != null && w !== {shown!r} }}",
                                           timeout=PATIENCE)
                shown = page.evaluate(PLANE_DATA, k)
                _placed(page)
            found = page.evaluate(CHECKS, {"figures": PLANES})
            problems += [f"{step}, {role}: {p}" for p in found]
            if found:
                page.screenshot(path=SCREENSHOTS / f"planes-{screen}-{mode}-{re.sub(r'[^a-z0-9]+', '_', step.lower())}"
                                                   f"-{role.lower()}.png")
    assert not problems, "\n".join(problems)


#: Module 2's vector values (V = [[10, 0], [0, 10], [5, 5]]) on the screens where the value plane is smallest.
VALUE_PLANE_CASES = [("800x600", "projector"), ("1024x768", "projector"), ("1024x768", "normal"),
                     ("phone-390x844", "projector"), ("phone-844x390", "normal")]


@pytest.mark.parametrize(("screen", "mode"), VALUE_PLANE_CASES, ids=["-".join(c) for c in VALUE_PLANE_CASES])
def test_value_plane_labels_stay_clear(open_page, screen, mode):
    """Each row of Module 2's example: no label of the value plane over another or a marker, none out of its frame,
    one unit as long across as up (row I once drew "output (6.0167, 3.9833)" over "v NLP (5, 5)"). The page opens
    on row I; rows love and NLP are chosen with their keys, 2 and 3."""
    viewport, options = SCREENS[screen]
    problems = []
    page = open_page(f"?mode={mode}&preset=module-2&row=I", viewport=viewport, **options)
    settle(page, mode)
    for key, row in ((None, "I"), ("2", "love"), ("3", "NLP")):
        if key:
            page.keyboard.press(key)
            wait_for_readout(page, f'Query of "{row}"')
        page.wait_for_function("""() => { const m = Bokeh.documents[0].get_model_by_name('value-plane')
            const v = m && Bokeh.index.find_one(m); return v != null && v.has_finished() &&
              (window.attentionExplorerLabels ?? new Set()).size === 0 }""", timeout=PATIENCE, polling="raf")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        found = page.evaluate(CHECKS, {"figures": ["value-plane", "query-plot"]})
        problems += [f"row {row}: {p}" for p in found]
        if found:
            page.screenshot(path=SCREENSHOTS / f"value-plane-{screen}-{mode}-{row}.png")
    assert not problems, "\n".join(problems)


def _luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2.2's relative luminance of an sRGB colour (0-255 channels)."""
    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = map(linear, rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a, b) -> float:
    """WCAG 2.2's contrast ratio of two sRGB colours, 1 to 21."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _rgb(css: str) -> tuple[float, ...]:
    """``#rrggbb`` or ``rgb(r, g, b)`` as three 0-255 channels."""
    if css.startswith("#"):
        return tuple(int(css[k:k + 2], 16) for k in (1, 3, 5))
    return tuple(float(v) for v in re.findall(r"[\d.]+", css)[:3])


def test_contrast_sanity():
    """The WCAG formula's own figures: black on white is 21:1, #767676 on white 4.54:1."""
    assert _contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21)
    assert _contrast(_rgb("#767676"), _rgb("rgb(255, 255, 255)")) == pytest.approx(4.54, abs=0.01)


#: The query plot's lines from q to the keys: each line's colour, its alpha, and the plane's background.
LINES = """() => {
  const fig = Bokeh.documents[0].get_model_by_name('query-plot')
  const out = []
  for (const r of fig.renderers) {
    const g = r.glyph
    if (g == null || g.type !== 'MultiLine' || !r.visible) continue
    const alpha = typeof g.line_alpha === 'number' ? g.line_alpha : g.line_alpha.value
    const field = g.line_color.field
    for (const c of (field ? r.data_source.data[field] : [g.line_color.value ?? g.line_color])) out.push([c, alpha])
  }
  return {lines: out, bg: fig.background_fill_color}
}"""
#: The Projections tab's W_Q, W_K, W_V buttons: whether each is the selected one, and its fill.
W_BUTTONS = _DEEP + """() => {
  return [...deep(document)].filter(el => el.classList.contains('bk-btn') && /^W_[QKV]$/.test(el.textContent.trim())
                                         && el.getBoundingClientRect().width > 0)
    .map(el => [el.classList.contains('bk-active'), getComputedStyle(el).backgroundColor])
}"""


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_lines_and_selected_buttons_stand_out(open_page, theme):
    """WCAG 2.2 non-text contrast (1.4.11), at least 3:1: the lines from q to the keys against the plane (drawn
    at their alpha over it), and the selected W_Q/W_K/W_V button against the others (in the dark theme the lines
    were 55 % opaque, blue at 2.1:1, and the selected button differed from the others by an inset shadow only)."""
    page = open_page(f"?mode=projector&theme={theme}", viewport={"width": 1280, "height": 800})
    settle(page, "projector", theme)
    drawn = page.evaluate(LINES)
    bg = _rgb(drawn["bg"])
    assert drawn["lines"], "no lines from q to the keys"
    for color, alpha in drawn["lines"]:
        seen = tuple(alpha * c + (1 - alpha) * b for c, b in zip(_rgb(color), bg, strict=True))
        assert _contrast(seen, bg) >= 3, f"the line in {color} at alpha {alpha} is {_contrast(seen, bg):.2f}:1"
    show_tab(page, "Projections", "projection-w")
    buttons = page.evaluate(W_BUTTONS)
    chosen = [_rgb(c) for active, c in buttons if active]
    others = [_rgb(c) for active, c in buttons if not active]
    assert len(chosen) == 1 and len(others) == 2, buttons
    for other in others:
        assert _contrast(chosen[0], other) >= 3, f"the selected W is {_contrast(chosen[0], other):.2f}:1 to the others"


# --- the lesson takes the stage: the Train tab, and the plot while presenting ----------------------------------------

#: What a class watches while the Train tab plays, in view together without scrolling: Play, the loss readout and
#: curve, the learned weights with the target beside them, and a head's plane.
TRAIN_STAGE = [["Play", ".train-player button.play"], ["the loss readout", ".train-player .readout"],
               ["the loss curve", ".train-player svg.loss-curve"],
               ["the learned weights", ".train-player figure.weights table"],
               ["the target", ".train-player figure.target table"], ["a plane", ".train-player svg.train-plane"]]
#: The weights' and the target's tables: their boxes (the target is beside the weights: level with them, to their
#: side).
BESIDE = _DEEP + """() => {
  const box = (sel) => { const el = [...deep(document)].find(e => e.matches(sel)); const r = el.getBoundingClientRect()
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom} }
  return {weights: box('.train-player figure.weights table'), target: box('.train-player figure.target table')}
}"""
#: The Train tab's run has arrived and its step is drawn.
TRAIN_DRAWN = ("(n) => window.attentionExplorerTrain && window.attentionExplorerTrain.state.runs > n && "
               "window.attentionExplorerTrain.run() != null")


def _train_target(page, slug: str | None) -> None:
    """Choose the Train tab's target ``slug`` (None: the one shown) and wait until its run is drawn."""
    runs = page.evaluate("() => window.attentionExplorerTrain?.state.runs ?? 0")
    if slug == "paint":  # painting starts from the target shown: the same run, its target's cells now buttons
        page.locator(".train-target-paint").click()
        page.locator(".train-player .target button.paint").first.wait_for(timeout=PATIENCE)
    elif slug is not None:
        page.locator(f".train-target-{slug}").click()
        page.wait_for_function(TRAIN_DRAWN, arg=runs, timeout=PATIENCE)
    else:
        page.wait_for_function(TRAIN_DRAWN, arg=0, timeout=PATIENCE)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def _stage_problems(page, screen: str, mode: str, slugs=(None, "yourself", "retrieve")) -> list[str]:
    """The Train stage's problems for each target in ``slugs``: what a class watches not in view together, the
    target not beside the weights, and anything the layout checks find (text under 20 px on a projector)."""
    problems = []
    for slug in slugs:
        _train_target(page, slug)
        found = page.evaluate(CHECKS, {"together": TRAIN_STAGE})
        found += page.evaluate(CHECKS, {"minFont": _min_font(screen, mode)})
        boxes = page.evaluate(BESIDE)
        w, t = boxes["weights"], boxes["target"]
        if not (t["left"] >= w["right"] - 1 or t["right"] <= w["left"] + 1) or abs(t["bottom"] - w["bottom"]) > 4:
            found.append(f"the target is not beside the weights: {boxes}")
        problems += [f"{slug or 'previous'}: {p}" for p in found]
        if found:
            page.screenshot(path=SCREENSHOTS / f"train-stage-{screen}-{mode}-{slug or 'previous'}.png")
    return problems


TRAIN_STAGE_CASES = [("1024x768", "projector"), ("1280x800", "projector"), ("1920x1080", "normal"),
                     ("1024x768", "normal")]


@pytest.mark.parametrize(("screen", "mode"), TRAIN_STAGE_CASES, ids=["-".join(c) for c in TRAIN_STAGE_CASES])
def test_the_train_stage_shows_play_the_loss_the_weights_beside_the_target_and_a_plane_together(open_page, screen,
                                                                                                 mode):
    """The Train tab takes the stage: Play, the loss readout and curve, the learned weights with the target beside
    them, and a plane, in view together with nothing scrolled, every number at least 20 px on a projector, for a
    five-token target, a three-token one and one on the outputs (at 1024x768 on a projector the tab was a 538 px
    column, Play at y = 1,045 and the plane at 2,150)."""
    viewport, options = SCREENS[screen]
    page = open_page(f"?mode={mode}", viewport=viewport, **options)
    settle(page, mode)
    show_tab(page, "Train")
    problems = _stage_problems(page, screen, mode)
    assert not problems, "\n".join(problems)


def test_a_train_lesson_link_opens_on_the_train_stage(browser, server):
    """``?tabs=train`` is the Train stage, not the query plot beside a column: the plot, the readout and the
    step-through are set aside, the strip's button brings them back, and the stage is in view together."""
    context = browser.new_context(viewport={"width": 1024, "height": 768}, locale="en-US")
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server + "?mode=projector&tabs=train")
        page.wait_for_function(APP_LOADED, timeout=PATIENCE)
        page.wait_for_function(TAB_BUILT, timeout=PATIENCE)
        settle(page, "projector")
        assert page.locator(".ae-query-plot").first.bounding_box() is None, "the query plot is shown"
        assert page.locator(READOUT).bounding_box() is None, "the readout is shown"
        expect(page.locator(".stepper").first).to_be_hidden()
        problems = _stage_problems(page, "1024x768", "projector", slugs=(None,))
        assert not problems, "\n".join(problems)
        page.locator(".stage-toggle button").click()  # the way back
        expect(page.locator(".ae-query-plot").first).to_be_visible(timeout=PATIENCE)
        page.wait_for_function(QUERY_PLOT_READY, timeout=PATIENCE)
        wait_for_drawn(page)
        assert page.locator(".ae-query-plot").first.bounding_box()["width"] > 200
    finally:
        context.close()
    assert not errors, errors


def test_the_train_tab_fits_an_800x600_projector_with_nothing_cut_or_scrolled_sideways(open_page):
    """At 800x600 on a projector nothing of the Train tab is cut and nothing in it scrolls sideways, for a
    five-token target, a three-token one, one on the outputs and a painted one (its 5x5 tables were 496 px in a
    417 px column)."""
    page = open_page("?mode=projector", viewport=SCREENS["800x600"][0])
    settle(page, "projector")
    show_tab(page, "Train")
    problems = []
    for slug in (None, "yourself", "retrieve", "previous", "paint"):
        _train_target(page, slug)
        found = page.evaluate(CHECKS, {"minFont": 20})
        found += page.evaluate(_DEEP + """() => [...deep(document)]
          .filter(el => el.closest?.('.train-root') && el.scrollWidth > el.clientWidth + 1 &&
                        ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
          .map(el => `scrolls sideways: ${el.tagName.toLowerCase()}.${[...el.classList].join('.')} ` +
                     `(${el.scrollWidth} px in ${el.clientWidth})`)""")
        host = page.evaluate("() => { const h = window.attentionExplorerTrain.root.getRootNode().host;"
                             " return [h.scrollWidth, h.clientWidth] }")
        if host[0] > host[1] + 1:
            found.append(f"the tab scrolls sideways: {host[0]} px in {host[1]}")
        problems += [f"{slug or 'previous'}: {p}" for p in found]
        if found:
            page.screenshot(path=SCREENSHOTS / f"train-800x600-{slug or 'previous'}.png")
    assert not problems, "\n".join(problems)


#: What of the All steps tab a class cannot see without scrolling sideways: each box in it that scrolls sideways, and
#: each cell of its tables that is not wholly inside the tab's box (the tab's own area scrolls only up and down).
ALL_STEPS_SIDEWAYS = SHOWN_TAB + _DEEP + """() => {
  const box = shownTab().area.getBoundingClientRect()
  const pane = [...deep(document)].find(el => el.classList?.contains('inspector'))
  const found = [...deep(pane.shadowRoot)]
    .filter(el => el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
    .map(el => `scrolls sideways: ${el.tagName.toLowerCase()}.${el.className} ` +
               `(${el.scrollWidth} px in ${el.clientWidth})`)
  const out = [...pane.shadowRoot.querySelectorAll('th, td')].filter(cell => {
    const r = cell.getBoundingClientRect()
    return r.left < box.left - 1 || r.right > box.right + 1
  })
  if (out.length)
    found.push(`${out.length} cells out of the tab's ${Math.round(box.left)}-${Math.round(box.right)} px: ` +
               out.map(cell => cell.textContent.trim()).join(' | '))
  return found
}"""
#: A page per mode, resized through its screens: the issue's 1024x768 projector and the smallest one.
ALL_STEPS_SCREENS = [("normal", ["1024x768"]), ("projector", ["1024x768", "800x600"])]


@pytest.mark.parametrize(("mode", "screens"), ALL_STEPS_SCREENS, ids=[m for m, _ in ALL_STEPS_SCREENS])
def test_all_steps_shows_every_number_without_scrolling_sideways(open_page, mode, screens):
    """Every step's numbers of the selected query, from q·kᵢ to aᵢvᵢ, are in the All steps tab's width at 1024x768
    in both modes and on an 800x600 projector (one table of eight columns was 772 px in a 518 px box at 1024x768,
    1,008 px on a projector: the weights and the output's terms were out of view to the right, behind a scroll bar),
    and the tab's other layout checks hold."""
    page = open_page(f"?mode={mode}", viewport=SCREENS[screens[0]][0])
    settle(page, mode)
    show_tab(page, "All steps")
    problems = []
    for n, screen in enumerate(screens):
        if n > 0:
            _resize(page, screen)
        found = page.evaluate(ALL_STEPS_SIDEWAYS) + page.evaluate(CHECKS, {"minFont": _min_font(screen, mode)})
        problems += [f"{screen}: {p}" for p in found]
        if found:
            page.screenshot(path=SCREENSHOTS / f"all-steps-{screen}-{mode}.png")
    assert not problems, "\n".join(problems)


#: The query plot's frame's area (CSS px²).
PLOT_FRAME = """() => { const v = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('query-plot'))
  return v.frame.bbox.width * v.frame.bbox.height }"""
#: Presenting: the plot and the room's code in view together.
PRESENTING = [["the query plot", ".ae-query-plot"], ["the room's code", ".room-code"]]
PRESENT_CASES = [(device, mode) for device in DEVICES for mode in ("normal", "projector")]


@pytest.mark.parametrize(("device", "mode"), PRESENT_CASES, ids=["-".join(c) for c in PRESENT_CASES])
def test_presenting_keeps_the_plot_its_size_and_in_view_with_the_room_code(open_page, device, mode):
    """Presenting never makes the query plot smaller than it is on the same screen without presenting (at least
    90 % of its frame's area), with the bar expanded and folded, on every screen of its kind: the room's bar takes
    its height from the tabs. The plot, the readout's answer and the room's code are in view together (on a phone,
    whose page scrolls as one column, the plot and the answer). At 1024x768 on a projector the card took a 290 px
    band above everything and left the plot's frame 128x92 px of its 363x327."""
    from tests.ui.test_follow import present

    screens = DEVICES[device]
    viewport, options = SCREENS[screens[0]]
    plain = open_page(f"?mode={mode}", viewport=viewport, **options)
    presenter = open_page(f"?mode={mode}", viewport=viewport, **options)
    present(presenter)
    settle(presenter, mode)
    settle(plain, mode)
    problems = []
    for n, screen in enumerate(screens):
        if n > 0:
            _resize(plain, screen)
            _resize(presenter, screen)
        alone = plain.evaluate(PLOT_FRAME)
        for folded in (False, True):  # expanded, folded (and expanded again for the next screen)
            # as the page opens: pressing the fold button scrolled a phone's column down to it
            presenter.evaluate(_DEEP + "() => { for (const el of deep(document)) if (el.scrollTop) el.scrollTop = 0 }")
            wait_for_drawn(presenter)
            shown = presenter.evaluate(PLOT_FRAME)
            state = "folded" if folded else "expanded"
            if shown < 0.9 * alone:
                problems.append(f"{screen}, {state}: the plot's frame is {shown:.0f} px² presenting, "
                                f"{alone:.0f} px² alone")
            together = PRESENTING if screen not in SCROLLING else PRESENTING[:1]
            found = presenter.evaluate(CHECKS, {"together": together})
            code = presenter.evaluate(_DEEP + """() => parseFloat(getComputedStyle([...deep(document)]
              .find(el => el.classList.contains('room-code'))).fontSize)""")
            if code < 28:
                found.append(f"the room's code is {code} px, not large")
            if screen not in SCROLLING:
                found += presenter.evaluate(CHECKS, {"answer": True})
            problems += [f"{screen}, {state}: {p}" for p in found]
            if found or shown < 0.9 * alone:
                presenter.screenshot(path=SCREENSHOTS / f"present-{screen}-{mode}-{state}.png")
            _fold(presenter)
    assert not problems, "\n".join(problems)


def _fold(page) -> None:
    """Press the bar's fold button: the join link and its controls fold into the bar, or come out of it."""
    link = page.locator(".room-link")
    was = link.is_visible()
    page.locator(".room-fold button").click()
    (expect(link).to_be_hidden if was else expect(link).to_be_visible)(timeout=PATIENCE)
    wait_for_drawn(page)
