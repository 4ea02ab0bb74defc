"""Reading and driving the page the way a learner does: through pixels and page text."""

from __future__ import annotations

import re

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from testing.browser import APP_LOADED, TAB_BUILT

_TO_PAGE = """([name, x, y]) => {
  const model = Bokeh.documents[0].get_model_by_name(name);
  const view = Bokeh.index.find_one(model);
  view.el.scrollIntoView({block: "nearest"});
  const r = view.canvas_view.el.getBoundingClientRect();
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)];
}"""

READOUT = "[data-testid=readout] .bk-clearfix"
#: How long a test waits for something the page must show (ms): generous, since CI machines are shared and
#: loaded (a server update that takes 20 ms alone can take seconds at load 4); tests assert values, not speed.
PATIENCE = 30_000


#: True once the page's query plot has drawn and listens to the pointer, and every stylesheet in the page has
#: loaded: Panel's components link theirs into their shadow roots, and one that comes late (a loaded machine)
#: resizes its component after the first drawing, moving what is below it (the header's buttons, the plot).
QUERY_PLOT_READY = """() => { const doc = window.Bokeh?.documents[0], m = doc?.get_model_by_name('query-plot')
  const v = m && Bokeh.index.find_one(m)
  if (v == null || !v.has_finished() || !(window.attentionExplorerPointers?.has(doc) ?? false)) return false
  const loaded = (root) => [...root.querySelectorAll('link[rel=stylesheet]')].every(l => l.sheet != null)
    && [...root.querySelectorAll('*')].every(e => e.shadowRoot == null || loaded(e.shadowRoot))
  return loaded(document) }"""


def open_app(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(APP_LOADED)
    page.locator(READOUT).wait_for()
    # The readout can show before the query plot is laid out, and the plot listens to the pointer only from its
    # first layout (link/drag.js, attach): a click before that does nothing, as it would for a learner's hand
    # on a plot not drawn yet.
    page.wait_for_function(QUERY_PLOT_READY, timeout=PATIENCE)


def show_tab(page, title: str, figure: str | None = None) -> None:
    """Bring the tab ``title`` to the front (Weights, Matrix, All steps, Recipe, Edit, Trap, √d_k, Export, Keys).

    A tab's models reach the page only while it is shown: with ``figure`` (a Bokeh figure name), wait until
    that figure is drawn.
    """
    page.locator(".bk-tab", has_text=title).click()
    page.locator(".bk-tab.bk-active", has_text=title).wait_for()
    wait_for_tab(page)
    if figure:
        page.wait_for_function("""(name) => { const m = Bokeh.documents[0].get_model_by_name(name)
            const v = m && Bokeh.index.find_one(m); return v != null && v.canvas_view != null }""", arg=figure,
                               timeout=PATIENCE)
    wait_for_drawn(page)  # the tab's figures lay themselves out once visible, its labels are placed after


def wait_for_tab(page) -> None:
    """Until the shown tab's contents are in the page and every figure in it has drawn, and two frames more."""
    # the tab's header turns at the click; its contents are built on the server the first time it is shown and
    # come after (a Spacer stands in until then: a test reading the tab then would read nothing), and the
    # tabs' headers are drawn again when they arrive
    page.wait_for_function(TAB_BUILT, timeout=PATIENCE)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


#: Whether the query plot is shown (``want``: true) or set aside by a tab that took the stage (widgets/stage.py).
SHOWN_PLOT = """(want) => {
  const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('query-plot'))
  const shown = view != null && view.el.getBoundingClientRect().width > 100
  return shown === want
}"""


def wait_for_stage(page, staged: bool) -> None:
    """Until the query plot is set aside (``staged``) or shown: the server sets the stage after a tab's title is
    tapped, one round trip after the title turned (and after a tab built before, whose contents are there at once);
    then Bokeh lays the page out again, on the next frame."""
    if not page.evaluate(SHOWN_PLOT, not staged):
        page.wait_for_function(SHOWN_PLOT, arg=not staged, timeout=PATIENCE, polling="raf")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def to_page(page, figure_name: str, x: float, y: float) -> tuple[float, float]:
    """Page pixel coordinates of data point (x, y) in the named Bokeh figure."""
    return tuple(page.evaluate(_TO_PAGE, [figure_name, x, y]))


def readout(page) -> str:
    return page.locator(READOUT).text_content()


def numbers(text: str, label: str) -> list[float]:
    """The numbers on the readout line that starts with ``label``, after its colon or '='."""
    line = next(ln for ln in text.splitlines() if ln.startswith(label))
    tail = re.split(r"[:=]", line, maxsplit=1)[1]
    return [float(x) for x in re.findall(r"-?\d+\.\d+", tail)]


def weights(page) -> list[float]:
    return numbers(readout(page), "Weights")


def output(page) -> float:
    return numbers(readout(page), "Output")[0]


def wait_for_readout(page, pattern: str, timeout: float = PATIENCE) -> str:
    """Until the readout matches ``pattern``; its text. A time-out says what the readout showed instead."""
    try:
        page.locator(READOUT).filter(has_text=re.compile(pattern)).wait_for(timeout=timeout)
    except PlaywrightTimeoutError:
        raise AssertionError(f"the readout never matched {pattern!r} in {timeout / 1000:g} s; "
                             f"it reads {readout(page)!r}") from None
    return readout(page)


#: The readout's text as the page shows it (what :func:`readout` reads), in the page.
READOUT_TEXT = "() => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('readout'))?.markup_el?.textContent"


def wait_for_new_readout(page, before: str, timeout: float = PATIENCE) -> str:
    """Until the readout shows something other than ``before`` (the page has handled what changes it: a move of
    the hand previews at once, a server's answer replaces the text); its text."""
    page.wait_for_function(f"(before) => {{ const text = ({READOUT_TEXT})(); return text != null && text !== before }}",
                           arg=before, timeout=timeout)
    return readout(page)


#: The readout's text as the server last sent it (the page's preview of a drag or a nudge writes the element, never the
#: model): when it changes, the server has answered.
SERVER_READOUT = "() => Bokeh.documents[0].get_model_by_name('readout').text"


def wait_for_server_readout(page, pattern: str, timeout: float = PATIENCE) -> str:
    """Until the readout's text as the server sent it matches ``pattern`` (a regular expression JavaScript reads
    as Python does: no named groups); that text. The server takes a page's events in order, so once it has
    answered one, it has taken every event the page sent before."""
    try:
        page.wait_for_function(f"(pattern) => new RegExp(pattern).test(({SERVER_READOUT})())", arg=pattern,
                               timeout=timeout)
    except PlaywrightTimeoutError:
        raise AssertionError(f"the server's readout never matched {pattern!r} in {timeout / 1000:g} s; "
                             f"it reads {page.evaluate(SERVER_READOUT)!r}") from None
    return page.evaluate(SERVER_READOUT)


def move_seen(page, x: float, y: float, **move) -> str:
    """Move the mouse to page pixel (x, y) and wait until the readout has followed (the drag's preview draws each
    position as it comes); its text. A hand moving at the page's pace, however slow the machine."""
    before = readout(page)
    page.mouse.move(x, y, **move)
    return wait_for_new_readout(page, before)


#: True once every drag of q on the page is over and answered: no hand down, no position waiting or in flight,
#: the preview handed back to the server's numbers (link/drag.js's and link/outbox.js's own state).
DRAG_SETTLED = """() => [...(window.attentionExplorerDrag?.values() ?? [])].every(st => !st.pressed && !st.dragging
  && st.outbox.length === 0 && st.inFlight === 0 && st.q == null)"""


def wait_for_drag_settled(page, timeout: float = PATIENCE) -> None:
    """Until the server has answered the page's last drag position (its release) and the page shows its numbers."""
    page.wait_for_function(DRAG_SETTLED, timeout=timeout)


def after_page_timers(page, ms: float) -> None:
    """Until every timer the page has set to run within ``ms`` from now has run, and two frames after: a timer of
    the page's own set now fires after them. So a test that checks nothing more happens waits on the page's clock,
    which a loaded machine slows as it slows the page, never on its own."""
    page.evaluate("(ms) => new Promise(r => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)),"
                  " ms))", ms)


#: BokehJS takes a second tap within this many ms of the first for a double tap, not a tap.
DOUBLE_TAP_MS = 300


def past_double_tap(page) -> None:
    """Let BokehJS's double-tap window close before the next tap, on the page's clock (BokehJS times taps by their
    events' time stamps): a pause between two inputs, as a hand makes, which a loaded machine only lengthens."""
    after_page_timers(page, DOUBLE_TAP_MS + 100)


#: Every element in the page, through shadow roots (Panel and Bokeh render into them).
#: A JavaScript function ``shownTab()`` for a script to begin with: the explorer's tabs' element and the scrolling area
#: of the tab shown (a tab opened before stays in the page, hidden).
SHOWN_TAB = """
const shownTab = () => {  // not "function shownTab": Playwright wraps a script that starts so in parentheses
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  const el = Bokeh.index.find_one(tabs).el, root = el.shadowRoot
  const area = [...root.children].find(c => c.tagName === 'DIV' && !c.classList.contains('bk-header')
    && getComputedStyle(c).display !== 'none')
  return {el, root, area}
};
"""

_DEEP = """
function* deep(root) {
  for (const el of root.querySelectorAll('*')) {
    yield el
    if (el.shadowRoot) yield* deep(el.shadowRoot)
  }
}
"""


def settle(page, mode: str = "normal", theme: str = "light") -> None:
    """Wait until the page shows ``mode`` and ``theme`` and has laid itself out again."""
    page.wait_for_function(f"() => document.documentElement.dataset.mode === {mode!r} && "
                           f"document.documentElement.dataset.theme === {theme!r}")
    wait_for_drawn(page)  # the relayout runs on the next animation frame, the canvases repaint after it


def wait_for_drawn(page) -> None:
    """Until every figure shown has drawn (in every document: a notebook's page has one per display), the page's
    labels are placed and its fonts (KaTeX's, loaded when a formula first needs them) have loaded, twice over two
    frames: a layout that moved a box is drawn on the frame after."""
    for _ in range(2):
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.wait_for_function("""() => window.Bokeh != null
            && Bokeh.documents.flatMap(d => [...d.all_models]).filter(m => m.type === 'Figure')
            .map(m => Bokeh.index.find_one(m)).every(v => v == null || !v.el.isConnected || v.has_finished())
            && (window.attentionExplorerLabels ?? new Set()).size === 0 && document.fonts.status === 'loaded'""",
                               timeout=PATIENCE, polling="raf")


def controls(page) -> list[dict]:
    """Visible buttons, inputs, tabs, figures and the readout: their names and page rectangles.

    A control scrolled out of a row that scrolls sideways (a projector's tab titles, which show that they scroll:
    test_layout_screens.py checks the hint) is not listed: it is one swipe away, not cut off."""
    return page.evaluate(_DEEP + """() => {
      const out = []
      const scrolledAway = (el, r) => {
        for (let p = el.parentNode; p; p = p.parentNode || p.host) {  // out of a shadow root: to its host
          if (!(p instanceof Element)) continue
          const ox = getComputedStyle(p).overflowX
          if ((ox === 'auto' || ox === 'scroll') && p.scrollWidth > p.clientWidth + 1) {
            const b = p.getBoundingClientRect()
            return r.right > b.right + 1 || r.left < b.left - 1
          }
        }
        return false
      }
      for (const el of deep(document)) {
        const tag = el.tagName, cls = el.classList
        const isControl = tag === 'BUTTON' || tag === 'INPUT' || cls.contains('bk-tab') || cls.contains('bk-Canvas')
                          || el.getAttribute('data-testid') === 'readout'
        if (!isControl) continue
        const r = el.getBoundingClientRect()
        if (r.width < 2 || r.height < 2) continue
        if (scrolledAway(el, r)) continue
        const label = el.labels && el.labels.length ? el.labels[0].textContent : el.textContent
        out.push({name: (label || el.getAttribute('aria-label') || tag + '.' + [...cls].join('.')).trim().slice(0, 40),
                  left: r.left, top: r.top, right: r.right, bottom: r.bottom})
      }
      return out }""")


def text_sizes(page) -> list[dict]:
    """Every visible text on the page with its computed font size (KaTeX's hidden MathML and sr-only text skipped)."""
    return page.evaluate(_DEEP + """() => {
      const out = []
      for (const el of deep(document)) {
        if (['STYLE', 'SCRIPT', 'TITLE', 'NOSCRIPT', 'TEMPLATE'].includes(el.tagName)) continue
        const text = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim()
        if (!text || text === '\\u200b') continue
        const r = el.getBoundingClientRect(), cs = getComputedStyle(el)
        if (r.width < 2 || r.height < 2 || cs.visibility === 'hidden' || el.closest('.katex-mathml')) continue
        const script = !!el.closest('.msupsub')  // KaTeX sub/superscript (index letters like the i of s_i)
        out.push({text: text.slice(0, 40), size: parseFloat(cs.fontSize), script})
      }
      return out }""")


def slow_touch_drag(page, cdp, x: float, y: float, pixels: int = 12) -> float:
    """A finger from page pixel (x, y) moving right one pixel per event, ``pixels`` times, 30 ms apart (through
    ``cdp``, the page's Chrome DevTools session); returns where it let go (x). The pauses are the finger's
    slowness, what is tested (a loaded machine only makes it slower), not a wait for the page."""
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for _ in range(pixels):
        x += 1
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
        page.wait_for_timeout(30)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    return x


def failed_requests(page) -> list[str]:
    """Every request of ``page`` from now on that fails or is answered with an error (a list that fills itself)."""
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: failed.append(f"{r.failure} {r.url}"))
    return failed


#: Once the page's fonts have loaded or failed: each KaTeX font face the page used, with its status, and the font
#: family a rendered formula is drawn in (the first one found, in its pane's shadow root).
KATEX_FONTS = """async () => {
  await document.fonts.ready
  const faces = [...document.fonts].filter((f) => f.family.startsWith('KaTeX_') && f.status !== 'unloaded')
  const find = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches('.katex')) return el
      const inner = el.shadowRoot && find(el.shadowRoot)
      if (inner) return inner
    }
    return null
  }
  const formula = find(document)
  return {faces: faces.map((f) => `${f.family} ${f.style} ${f.status}`),
          family: formula && getComputedStyle(formula).fontFamily}
}"""
