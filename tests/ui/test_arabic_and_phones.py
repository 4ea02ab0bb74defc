"""What a class reads in Arabic (right to left) and on a phone, in a real browser.

Arabic, on every screen of the Arabic layout walks (among them a 1024×768 projector and a 390×844 phone): the number
line's labels whole, the recipe's formulas reachable by scrolling, the All steps tab's numbers and formulas read left
to right inside right-to-left text (bidi isolation), the matrix opening at its row names. Phones, in every language
walked on one: a tapped tab comes into view with the answer (the readout's Output line) still in view, and the answer
line follows a row chosen with its key; and the matrix's output column in view or plainly scrollable. Each check
reads the page as a learner sees it: where texts are drawn, not what the server sent.

The Arabic and tapped-tab checks run inside the layout walks (``test_layout_screens.py``), on the tab they are about
as the walk shows it: each walk already opens those pages and taps every tab, and a page opened again for them alone
would repeat its work. Their screenshots follow the walks' rule (``SCREENSHOTS=1``, or a tab that fails).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from tests.ui.conftest import SCREENSHOTS
from tests.ui.helpers import _DEEP, PATIENCE, READOUT, settle, wait_for_drawn, wait_for_tab

#: name: (viewport, browser context options)
SCREENS = {
    "1024x768": ({"width": 1024, "height": 768}, {}),
    "phone-390x844": ({"width": 390, "height": 844}, {"has_touch": True, "is_mobile": True}),
    "phone-844x390": ({"width": 844, "height": 390}, {"has_touch": True, "is_mobile": True}),
}
#: The Arabic screens of the issue, the projector a class reads and a learner's phone: on them a Recipe formula is
#: wider than its box, so its reach is checked where there is something to scroll.
ARABIC = [("1024x768", "projector"), ("phone-390x844", "normal")]


def _open(open_page, screen: str, mode: str, lang: str = "en", extra: str = ""):
    viewport, options = SCREENS[screen]
    page = open_page(f"?mode={mode}" + (f"&lang={lang}" if lang != "en" else "") + extra, viewport=viewport,
                     **options)
    settle(page, mode)
    return page


def _tap(page, k: int) -> None:
    """Taps the ``k``-th tab's title (by place: the titles are in the page's language), as a learner does."""
    title = page.locator(".bk-tab").nth(k)
    title.click()
    expect(title).to_have_class(re.compile(r"\bbk-active\b"), timeout=PATIENCE)
    wait_for_tab(page)
    wait_for_drawn(page)


# --- Arabic: the number line's labels -----------------------------------------------------------------------------

#: Each text of the Weights tab's two charts (the bars' numbers and names, the number line's labels) with its box and
#: its chart's: {text, box: [left, right], chart: [left, right]}.
CHART_TEXTS = _DEEP + """() => {
  const out = []
  for (const name of ['weight-bars', 'output-line']) {
    const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name(name))
    const svg = view.el.shadowRoot.querySelector('svg'), c = svg.getBoundingClientRect()
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect()
      out.push({text: t.textContent, box: [r.left, r.right], chart: [c.left, c.right]})
    }
  }
  return out
}"""


def _number_line_problems(page) -> list[str]:
    """A chart is drawn left to right in every language: its labels stay inside it (in a right-to-left page a label
    anchored at its "start" ran out of the chart: "v I = 2" cut at the left, "v love = 6" read "v lov")."""
    texts = page.evaluate(CHART_TEXTS)
    # a name is isolated in a chart's text (Translator.name_in_plot): its marks are invisible
    if not {"v I = 2", "v love = 6", "v NLP = 4"} <= {re.sub("[\u2066-\u2069]", "", t["text"]) for t in texts}:
        return [f"the number line's labels are not all drawn: {texts}"]
    out = [t for t in texts if t["box"][0] < t["chart"][0] - 1 or t["box"][1] > t["chart"][1] + 1]
    return [f"labels running out of their chart: {out}"] if out else []


# --- Arabic: the recipe's formulas scroll -------------------------------------------------------------------------

#: Each of the Recipe tab's three formulas (its KaTeX panes: the step-through's own has the class "formula"), scrolled
#: to one end of its box and to the other: whether its left edge and its right edge each came into the box's view at
#: one of them (a formula wider than the tab scrolls sideways).
FORMULA_REACH = _DEEP + """() => {
  const out = []
  const hosts = [...deep(document)].filter(el => el.shadowRoot && el.shadowRoot.querySelector('.katex-html')
    && !el.classList.contains('formula') && el.getBoundingClientRect().width > 0)
  for (const [k, host] of hosts.entries()) {
    const parts = [...host.shadowRoot.querySelectorAll('.katex-html .base')]
    const box = host.getBoundingClientRect()
    let left = false, right = false, width = 0
    for (const to of [-1e6, 1e6, 0]) {
      host.scrollLeft = to
      const rs = parts.map(p => p.getBoundingClientRect()).filter(r => r.width > 0)
      const l = Math.min(...rs.map(r => r.left)), r = Math.max(...rs.map(r => r.right))
      width = r - l
      left ||= l >= box.left - 1
      right ||= r <= box.right + 1
    }
    out.push({step: k + 1, left, right, width: Math.round(width), box: Math.round(box.width)})
  }
  return out
}"""


def _recipe_problems(page, screen: str, mode: str) -> list[str]:
    """The Normalise step's sum is wider than the tab: in English it scrolls sideways; in Arabic its end ran past the
    right edge of a right-to-left box, where nothing scrolls to. Every formula reads left to right and scrolls (on
    the screens of :data:`ARABIC` one is wider than its box: the check has something to scroll)."""
    reach = page.evaluate(FORMULA_REACH)
    if len(reach) != 3:
        return [f"not three formulas: {reach}"]
    problems = []
    if (screen, mode) in ARABIC and not any(f["width"] > f["box"] for f in reach):
        problems.append(f"no formula wider than its box to check: {reach}")
    if not all(f["left"] and f["right"] for f in reach):
        problems.append(f"a formula's edge cannot be scrolled into view: {reach}")
    return problems


# --- Arabic: All steps reads numbers and formulas left to right ---------------------------------------------------

#: Where each of ``parts`` (texts, in the order a reader meets them) is drawn inside the first element matching
#: ``selector`` in the All steps tab whose text contains them all: the box of each one's first character.
PLACES = _DEEP + """([selector, parts]) => {
  const pane = [...deep(document)].find(el => el.classList && el.classList.contains('inspector'))
  const el = [...pane.shadowRoot.querySelectorAll(selector)].find(e => parts.every(p => e.textContent.includes(p)))
  if (el == null) return null
  const nodes = [], walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT)
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n)
  const whole = nodes.map(n => n.textContent).join('')
  let from = 0
  return parts.map(part => {
    let at = whole.indexOf(part, from)
    from = at + part.length
    for (const n of nodes) {
      if (at < n.textContent.length) {
        const range = document.createRange()
        range.setStart(n, at)
        range.setEnd(n, at + 1)
        const r = range.getBoundingClientRect()
        return {part, left: r.left, top: r.top}
      }
      at -= n.textContent.length
    }
    return {part, left: NaN, top: NaN}
  })
}"""


def _out_of_order(page, selector: str, parts: list[str]) -> list[str]:
    """Unless ``parts`` are drawn in reading order for maths (each on a later line, or on the same line further
    right), what is not."""
    places = page.evaluate(PLACES, [selector, parts])
    if places is None:
        return [f"no {selector} holds {parts}"]
    for a, b in zip(places, places[1:], strict=False):
        same_line = abs(a["top"] - b["top"]) <= 3
        if not ((same_line and a["left"] < b["left"]) or b["top"] > a["top"] + 3):
            return [f"{selector}: {a['part']!r} is not read before {b['part']!r}: {places}"]
    return []


def _all_steps_problems(page) -> list[str]:
    """"0.7071-", "sᵢ − .3 / max", the query's coordinates lost in the title: each number, formula and sum is
    isolated left to right inside the right-to-left text around it (the columns keep the page's order)."""
    return (_out_of_order(page, "h3", ["q", "=", "0.000", "1.000"])  # q = (0.000, 1.000), after the token's name
            + _out_of_order(page, "td", ["−", "0.7071"])  # row I, s − max: −0.7071 (U+2212, as the page writes it)
            + _out_of_order(page, "thead th", ["3.", "s", "max"])
            + _out_of_order(page, "thead th", ["2.", "s", "√2"])
            + _out_of_order(page, "p.output", ["0.3956", "2.4067", "1.6044", "4.4067"]))  # 7. output = Σ aᵢvᵢ


# --- Arabic: the Real model tab's recipe reads left to right ------------------------------------------------------

#: Where each character of each of ``texts`` (and of every negative number in the recipe's table) is drawn, in the
#: Real model tab's inspector: ``[{text, places: [[left, top], ...]}]``, a text not found with no places.
LTR_TEXTS = _DEEP + """(texts) => {
  const host = [...deep(document)].find(el => el.classList && el.classList.contains('model-inspector'))
  const root = host?.shadowRoot
  if (root == null) return null
  const cells = [...root.querySelectorAll('table.model-recipe td')].map(td => td.textContent.trim())
  const out = []
  for (const text of [...texts, ...cells.filter(c => /^[-\u2212]/.test(c))]) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
    let node = walker.nextNode()
    while (node != null && (node.parentElement?.tagName === 'STYLE' || !node.textContent.includes(text))) {
      node = walker.nextNode()
    }
    const places = []
    if (node != null) {
      const at = node.textContent.indexOf(text)
      for (let k = 0; k < text.length; k++) {
        if (text[k] === ' ') continue
        const range = document.createRange()
        range.setStart(node, at + k)
        range.setEnd(node, at + k + 1)
        const r = range.getBoundingClientRect()
        places.push([r.left, r.top])
      }
    }
    out.push({text, places})
  }
  return out
}"""


def _model_problems(page) -> list[str]:
    """The Real model tab's recipe in Arabic: the steps' formulas and the table's negative numbers are drawn left to
    right inside the right-to-left text ("32√ = 5.6569", "0.6652-" and a mirrored softmax were drawn)."""
    from session.i18n import translator

    root = translator("ar").num(32 ** 0.5)
    found = page.evaluate(LTR_TEXTS, [f"√32 = {root}", "a_j = e^(s_j) / Σ e^(s_l)", "Σ a_j v_j"])
    if found is None:
        return ["the Real model tab has no inspector"]
    problems = [f"{f['text']!r} is not in the inspector" for f in found if not f["places"]]
    if len(found) <= 3:
        problems.append(f"no negative number in the recipe's table to check: {found}")
    for f in found:
        for (a, b) in zip(f["places"], f["places"][1:], strict=False):
            if not ((abs(a[1] - b[1]) <= 3 and a[0] < b[0]) or b[1] > a[1] + 3):
                problems.append(f"{f['text']!r} is not drawn left to right: {f['places']}")
                break
    return problems


# --- Arabic: the matrix opens at its row names ---------------------------------------------------------------------

#: The matrix figure's box, the box it scrolls in, and the query plot's axis-side labels: where the figure starts.
MATRIX_BOX = _DEEP + """() => {
  const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('attention-matrix'))
  let box = view.el
  for (let a = view.el.parentElement || view.el.getRootNode().host; a; a = a.parentElement || a.getRootNode().host)
    if (a instanceof Element && ['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) { box = a; break }
  const f = view.el.getBoundingClientRect(), b = box.getBoundingClientRect()
  const frame = view.frame.bbox, canvas = view.canvas_view.el.getBoundingClientRect()
  const outX = canvas.left + view.frame.x_scale.compute(view.model.x_range.end - 0.5)
  return {figure: [f.left, f.right, f.top, f.bottom], box: [b.left, b.right, b.top, b.bottom],
          scroll: [box.scrollLeft, box.scrollWidth, box.clientWidth], frameLeft: canvas.left + frame.left,
          output: outX, hint: getComputedStyle(box).getPropertyValue('--ae-scroll-hint').trim(),
          window: [innerWidth, innerHeight]}
}"""


def _matrix_problems(page) -> list[str]:
    """The matrix is drawn left to right: its box opens at its left end, the row names and the I column in view (it
    opened scrolled to its far end in Arabic, as a right-to-left box starts at its right)."""
    m = page.evaluate(MATRIX_BOX)
    if m["figure"][0] < m["box"][0] - 1:
        return [f"the matrix opens scrolled sideways: {m}"]
    if not (m["box"][0] - 1 <= m["frameLeft"] - 40 and m["frameLeft"] + 40 <= m["box"][1]):  # names, the I column
        return [f"the matrix's row names or its I column are out of its box: {m}"]
    return []


def arabic_problems(page, screen: str, mode: str, tab: str) -> list[str]:
    """The Arabic checks of the tab ``tab`` (its English title) just shown on ``screen`` in ``mode``: the
    number line's labels (Weights), the matrix's opening (Matrix), All steps' reading order, the Recipe's formulas'
    reach, the Real model tab's recipe read left to right; nothing for the other tabs. The page shows the first
    example's numbers, its row "love" selected (the Real model tab: "I love NLP", layer 1, head 1, row "love")."""
    if tab == "Weights":
        return _number_line_problems(page)
    if tab == "Matrix":
        return _matrix_problems(page)
    if tab == "All steps":
        return _all_steps_problems(page)
    if tab == "Recipe":
        return _recipe_problems(page, screen, mode)
    if tab == "Real model":
        return _model_problems(page)
    return []


# --- phones: a tapped tab, and the answer in view ------------------------------------------------------------------

#: The answer as the learner sees it: the readout's last line (its text, and whether it is inside the window and every
#: box around it), the answer line at the screen's bottom (drawn or not, its text and box), and the shown tab's
#: scrolling area (its box, and the part of it inside the window and above the answer line).
ANSWER = _DEEP + """() => {
  const readout = [...deep(document)].find(el => el.getAttribute && el.getAttribute('data-testid') === 'readout')
  const text = readout.shadowRoot.querySelector('.bk-clearfix')
  const nodes = [], walker = document.createTreeWalker(text, NodeFilter.SHOW_TEXT)
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n)
  const whole = nodes.map(n => n.textContent).join(''), last = whole.split('\\n').pop()
  let at = whole.length - last.length, node = nodes[0]
  for (const n of nodes) { node = n; if (at <= n.textContent.length) break; at -= n.textContent.length }
  const range = document.createRange()
  range.setStart(node, at)
  range.setEnd(node, node.textContent.length)
  const line = [...range.getClientRects()].filter(r => r.width > 1)
  const parentOf = (el) => el.parentElement || (el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null)
  const inside = (r, b) => r.top >= b.top - 1 && r.bottom <= b.bottom + 1 && r.left >= b.left - 1
    && r.right <= b.right + 1
  let seen = line.length > 0 && line.every(r => inside(r, {top: 0, left: 0, bottom: innerHeight, right: innerWidth}))
  for (let a = parentOf(text); seen && a && a !== document.documentElement; a = parentOf(a)) {
    const cs = getComputedStyle(a)
    if (cs.overflowX === 'visible' && cs.overflowY === 'visible') continue
    seen = line.every(r => inside(r, a.getBoundingClientRect()))
  }
  const bar = [...deep(document)].find(el => el.getAttribute?.('data-testid') === 'answer-line')
  const b = bar?.getBoundingClientRect()
  const drawn = bar != null && getComputedStyle(bar).display !== 'none'
    && getComputedStyle(bar).visibility === 'visible'
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  const root = Bokeh.index.find_one(tabs).el.shadowRoot
  const area = [...root.children].find(c => c.tagName === 'DIV' && !c.classList.contains('bk-header')
    && getComputedStyle(c).display !== 'none').getBoundingClientRect()
  const floor = drawn ? b.top : innerHeight
  return {last, readoutSeen: seen, bar: bar ? {drawn, text: bar.textContent, top: b.top, bottom: b.bottom} : null,
          area: {top: area.top, bottom: area.bottom, height: area.height,
                 seen: Math.min(area.bottom, floor) - Math.max(area.top, 0)}, window: innerHeight}
}"""

#: The tabs whose contents a tap brings into view above the answer line on a phone, by their English titles: every tab
#: about the query but the first (shown already: tapping it moves nothing). The Train and Real model tabs take the
#: stage instead (widgets/stage.py): the readout steps aside with the plot.
TAPPED = ("Matrix", "All steps", "Recipe", "Edit", "Trap", "√d_k", "Projections", "Heads · n²", "Check", "Export",
          "Keys")


def answer_problems(page, where: str, tapped: bool = True) -> list[str]:
    """On a phone, the Output line in view (the readout's, or the answer line's with the same text), and once a tab is
    tapped, its contents in view above the answer line (tapping a tab scrolled the page so that the Output line was
    above the screen, at y = −341 on a landscape phone). The layout walks check it on each tab they tap on a phone."""
    a = page.evaluate(ANSWER)
    problems = []
    if not a["readoutSeen"]:
        bar = a["bar"]
        if bar is None or not bar["drawn"]:
            problems.append(f"{where}: the Output line is out of view and nothing shows it: {a}")
        elif bar["text"] != a["last"] or bar["top"] < -1 or bar["bottom"] > a["window"] + 1:
            problems.append(f"{where}: the answer line is not the readout's Output line, in view: {a}")
    # the tab's contents in view, above the answer line
    if tapped and a["area"]["seen"] < min(250, a["area"]["height"]) - 1:
        problems.append(f"{where}: only {a['area']['seen']:.0f} px of the tab's contents are in view: {a}")
    return problems


#: Whether the answer line is not drawn at the screen's bottom.
ANSWER_LINE_AWAY = _DEEP + """() => {
  const bar = [...deep(document)].find(el => el.getAttribute?.('data-testid') === 'answer-line')
  return bar == null || getComputedStyle(bar).display === 'none' || getComputedStyle(bar).visibility !== 'visible'
}"""


def stage_answer_problems(page, where: str) -> list[str]:
    """On a phone, a tab that takes the stage (Train, Real model: widgets/stage.py) has set the readout aside with the
    query plot: the answer line, the readout's Output line, is not drawn under it (it showed the first example's
    "Output Σ aᵢvᵢ = 4.4067" under the real model's recipe, a number about neither)."""
    try:
        page.wait_for_function(ANSWER_LINE_AWAY, timeout=PATIENCE)
    except PlaywrightTimeoutError:
        return [f"{where}: the answer line is drawn while the readout is set aside"]
    return []


def answer_line_follows_a_row_key(page, where: str, export: int) -> list[str]:
    """The answer line follows the numbers: with the Export tab (the ``export``-th title) tapped on a phone, row NLP
    chosen with its key (2: love, 3: NLP), the answer line shows its output, 4.0000 (4,0000 where the page's
    language writes a decimal comma), and the Output line and the tab stay in view (:func:`answer_problems`).
    Leaves row NLP selected."""
    _tap(page, export)
    page.keyboard.press("3")
    page.locator(READOUT).filter(has_text=re.compile(r"4[.,]0000\D+4[.,]00")).wait_for(timeout=PATIENCE)
    page.wait_for_function(_DEEP + """() => { const bar = [...deep(document)].find(el => el.getAttribute?.(
        'data-testid') === 'answer-line'); return bar != null && /4[.,]0000/.test(bar.textContent) }""",
                           timeout=PATIENCE)
    return answer_problems(page, f"{where}, row NLP")


def test_the_answer_line_stays_away_on_a_two_column_screen(open_page):
    """On a desktop or projector the readout is always in view beside the tabs: no answer line is drawn."""
    page = _open(open_page, "1024x768", "projector")
    for k in (1, 2, 3):
        _tap(page, k)
        a = page.evaluate(ANSWER)
        assert a["readoutSeen"] and a["bar"] is not None and not a["bar"]["drawn"], a


# --- phones: the matrix's output column ----------------------------------------------------------------------------

#: How wide a strip just inside the right edge of the matrix's box is looked at (px), across its middle (the shadow is
#: strongest there): where more of the matrix waits, a learner sees the figure shaded.
EDGE_STRIP = 3


@pytest.mark.parametrize("mode", ["normal", "projector"])
def test_the_matrix_output_column_is_in_view_or_plainly_scrollable_on_a_phone(open_page, mode):
    """At 390 px the matrix is wider than its column (the output column showed "ou" and "3."): its box shows a
    shadow over the figure at the side where more waits (it was painted behind the canvas), the box and so its
    scroll bar are inside the screen (the bar was below it), and scrolled to its end the output column is in view."""
    page = _open(open_page, "phone-390x844", mode)
    _tap(page, 1)  # Matrix
    m = page.evaluate(MATRIX_BOX)
    a = page.evaluate(ANSWER)
    floor = a["bar"]["top"] if a["bar"] and a["bar"]["drawn"] else a["window"]
    assert m["box"][2] >= -1 and m["box"][3] <= floor + 1, f"the matrix's box runs off the screen: {m}, {a}"
    if m["scroll"][1] > m["scroll"][2] + 1:  # wider than its box: it scrolls, and shows it does
        assert m["hint"] == "1", m
        middle = (m["box"][2] + m["box"][3]) / 2
        clip = {"x": m["box"][1] - EDGE_STRIP - 1, "y": middle - 10, "width": EDGE_STRIP, "height": 20}
        png = page.screenshot(clip=clip)
        assert _lightest(png) < 235, "no shadow over the matrix at the side where more waits"
        box = page.evaluate(_DEEP + """() => { const v = Bokeh.index.find_one(Bokeh.documents[0]
            .get_model_by_name('attention-matrix')); let a = v.el
            while (a && !(a instanceof Element && getComputedStyle(a).overflowX === 'auto'))
              a = a.parentElement || a.getRootNode().host
            a.scrollLeft = 1e6; return a.scrollLeft }""")
        assert box > 0
        wait_for_drawn(page)
        m = page.evaluate(MATRIX_BOX)
    assert m["box"][0] <= m["output"] - 20 and m["output"] + 20 <= m["box"][1], f"the output column out of view: {m}"
    page.screenshot(path=SCREENSHOTS / f"phone-390x844-{mode}-matrix-end.png")


def _lightest(png: bytes) -> int:
    """The highest of the smallest RGB channel over a PNG's pixels (255: a white pixel among them)."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    pixels = getattr(image, "get_flattened_data", image.getdata)()  # getdata: deprecated, gone in Pillow 14
    return max(min(p) for p in pixels)
