"""The explorer in a Jupyter notebook: a notebook executed by a real kernel, its saved output opened in Chromium.

What is tested is the output a notebook keeps (what a learner sees when the cell has run, and what a saved or
shared notebook shows): the whole explorer at its own height, two displays each with its own state, each one's
drag and keys previewed on it alone, and not one request leaving the machine. The live kernel's comm (a drag
reaching Python) needs a running Jupyter server and is not exercised here; the state behind each display is
checked in Python by the notebook itself.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from contextlib import contextmanager
from urllib.parse import urlparse

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from testing.notebooks import execute
from tests.ui.conftest import ROOT, SCREENSHOTS
from tests.ui.helpers import KATEX_FONTS, PATIENCE, failed_requests, wait_for_drawn

CELLS = [
    "from app import NOTEBOOK_HEIGHT, create_app",
    # the second display's q moves; the first one's must not
    "a = create_app()\na",
    "b = create_app()\nb.state.move_query(1.0, 1.0)\nb",
    "import json\nprint(json.dumps([list(a.state.query), list(b.state.query), NOTEBOOK_HEIGHT]))",
]

#: The documents of the explorer's displays, in the page's order. Not Bokeh.documents' order: each output's script
#: waits for BokehJS on a timer of its own and embeds its document when that timer next fires, so the documents are
#: made in any rotation of the outputs' order (the pn.extension output's, with no explorer, among them).
EXPLORERS = """Bokeh.documents.filter((doc) => doc.get_model_by_name('query-plot')).sort((a, b) =>
  Bokeh.index.find_one(a.roots()[0]).el.compareDocumentPosition(Bokeh.index.find_one(b.roots()[0]).el)
    & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1)"""

#: Each display's plot, readout and tabs: their heights and the readout's first lines.
DISPLAYS = """() => """ + EXPLORERS + """.map((doc) => {
  const box = (name) => { const m = doc.get_model_by_name(name); const v = m && Bokeh.index.find_one(m)
    return v ? v.el.getBoundingClientRect().height : 0 }
  const readout = Bokeh.index.find_one(doc.get_model_by_name('readout'))
  let tabs = 0
  for (const m of doc.all_models) if (m.type === 'Tabs' || (m.css_classes || []).includes('explorer-tabs')) {
    const v = Bokeh.index.find_one(m); if (v) tabs = Math.max(tabs, v.el.getBoundingClientRect().height) }
  const root = Bokeh.index.find_one(doc.roots()[0])
  return {plot: box('query-plot'), readout: box('readout'), tabs, root: root.el.getBoundingClientRect().height,
          text: readout.markup_el.textContent,
          mode: root.el.parentElement.dataset.mode}
})"""


def _run_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb = execute(nb, path=ROOT)
    nbformat.write(nb, tmp_path / "explorer.ipynb")
    return nb


def _html(nb) -> str:
    """The notebook's outputs as one page, in order, as a notebook front end shows them."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/javascript" in data:
                parts.append(f"<script>{data['application/javascript']}</script>")
            elif "text/html" in data:
                parts.append(f"<div class='output'>{data['text/html']}</div>")
    return "<!doctype html><html><head><meta charset='utf-8'></head><body style='width: 1200px'>" + \
        "".join(parts) + "</body></html>"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The notebook run by a real kernel, and its outputs as one page served on loopback: (notebook, page address)."""
    tmp = tmp_path_factory.mktemp("notebook")
    nb = _run_notebook(tmp)
    (tmp / "explorer.html").write_text(_html(nb))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield nb, f"http://127.0.0.1:{httpd.server_port}/explorer.html"
    finally:
        httpd.shutdown()


@contextmanager
def _opened(browser, url):
    """The saved page in a fresh browser once both displays are drawn; yields (page, outside, errors): the requests
    that tried to leave the machine, and the page's uncaught errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside, errors = [], []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.failed = failed_requests(page)  # on the machine too: a font the page names that is not there

        def route(r):
            if urlparse(r.request.url).hostname != "127.0.0.1":
                outside.append(r.request.url)
                r.abort()
            else:
                r.continue_()
        page.route("**/*", route)
        page.goto(url)
        # (pn.extension's own output is a document too, with no explorer in it)
        try:
            page.wait_for_function("() => { const docs = (window.Bokeh?.documents ?? []).filter("
                                   "(d) => d.get_model_by_name('query-plot')); return docs.length === 2 && "
                                   "docs.every((d) => Bokeh.index.find_one(d.get_model_by_name('query-plot'))"
                                   "?.has_finished()) }", timeout=60_000)
        except PlaywrightTimeoutError:
            assert not outside, f"requests leaving the machine: {outside}"  # why BokehJS never came
            raise
        yield page, outside, errors
    finally:
        context.close()


def test_a_notebook_cell_shows_the_whole_explorer_with_nothing_from_outside(browser, saved):
    nb, url = saved
    printed = next(o["text"] for o in nb.cells[3].outputs if o.get("name") == "stdout")
    a_query, b_query, height = json.loads(printed)
    assert a_query == [0.0, 1.0] and b_query == [1.0, 1.0]  # each display has its own state
    with _opened(browser, url) as (page, outside, errors):
        wait_for_drawn(page)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "notebook.png", full_page=True)
        shown = page.evaluate(DISPLAYS)
        fonts = page.evaluate(KATEX_FONTS)
        failed = [f for f in page.failed if not any(url in f for url in outside)]
    assert not outside, f"requests leaving the machine: {outside}"
    # KaTeX's fonts come inside the output (data: URLs) under names of their own, as its script and stylesheet do:
    # its stylesheet's own url(fonts/...) points next to the notebook, where nothing is
    assert not failed, "requests that failed:\n" + "\n".join(failed)
    assert {"KaTeX_Main-inline normal loaded", "KaTeX_Math-inline italic loaded"} <= set(fonts["faces"]), fonts
    assert all(face.endswith(" loaded") for face in fonts["faces"]), fonts
    assert fonts["family"].startswith("KaTeX_Main-inline,"), fonts
    assert len(shown) == 2, shown
    for d in shown:
        # the explorer at its own height, its plot, readout and tabs all with room (not a cell's 0 px)
        assert abs(d["root"] - height) <= 2 and d["plot"] > 300 and d["readout"] > 60 and d["tabs"] > 200, d
    # each display shows its own q and the course's numbers for it: love's own key (Section 6: output 4.4067),
    # and (1, 1) moved in the notebook (weights 0.2483, 0.2483, 0.5035: output 4.0000)
    assert 'q = (0.000, 1.000)' in shown[0]["text"] and "Output Σ aᵢvᵢ = 4.4067" in shown[0]["text"], shown
    assert 'q = (1.000, 1.000)' in shown[1]["text"] and "NLP 0.5035" in shown[1]["text"], shown
    assert "Output Σ aᵢvᵢ = 4.0000" in shown[1]["text"], shown
    assert not errors, errors

def test_the_saved_notebook_holds_bokehjs_and_panel_once(saved):
    """pn.extension's output carried BokehJS, Panel and their extensions (about 4 MB) under two types with the same
    text, so a notebook with one explorer cell was saved at 8.7 MB: the bundle is stored once, as the script every
    front end runs (the page above is made from it, and shows both explorers working)."""
    nb, _ = saved
    texts = [value for cell in nb.cells for out in cell.get("outputs", []) for value in out.get("data", {}).values()
             if isinstance(value, str)]
    bundle = max(texts, key=len)
    assert len(bundle) > 1_000_000 and "Bokeh" in bundle
    assert texts.count(bundle) == 1, f"the {len(bundle) / 1e6:.1f} MB bundle is stored {texts.count(bundle)} times"
    # no other output carries one text twice either (Panel's extension script came under both types too)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            values = [v for v in out.get("data", {}).values() if isinstance(v, str) and len(v) > 1000]
            assert len(values) == len(set(values)), f"an output stores a text twice: {list(out['data'])}"
    # what is saved: the bundle once, each display's own document (about 0.5 MB each) and a little more
    assert len(nbformat.writes(nb)) < len(bundle) + 1_500_000


#: A saved page has no kernel, so nothing from Python reaches it: each display's drag must take the pointer once its
#: plot is laid out (link/drag.js). Every text each readout shows is kept (window.seen[i] for display i, in the
#: page's order).
WATCH = """() => { window.seen = """ + EXPLORERS + """.map((doc, i) => {
  const el = Bokeh.index.find_one(doc.get_model_by_name('readout')).markup_el, seen = []
  new MutationObserver(() => seen.push(el.textContent))
    .observe(el, {childList: true, characterData: true, subtree: true})
  return seen }) }"""
#: Display i's readout now.
TEXT = "(i) => Bokeh.index.find_one(" + EXPLORERS + "[i].get_model_by_name('readout')).markup_el.textContent"
#: Viewport pixels of data point (x, y) on display i's query plot, scrolled into view.
TO_PAGE = """([i, x, y]) => {
  const view = Bokeh.index.find_one(""" + EXPLORERS + """[i].get_model_by_name('query-plot'))
  view.el.scrollIntoView({block: 'nearest'}); const r = view.canvas_view.el.getBoundingClientRect()
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)] }"""
#: Display i's readout has shown a text containing s.
SHOWN = "([i, s]) => window.seen[i].some((t) => t.includes(s))"
#: Display i's readout shows q within 0.02 of (x, y).
HELD = """([i, x, y]) => { const m = (""" + TEXT + """)(i).match(/q = \\((-?[0-9.]+), (-?[0-9.]+)\\)/)
  return m != null && Math.abs(+m[1] - x) <= 0.02 && Math.abs(+m[2] - y) <= 0.02 }"""


def test_each_displays_drag_and_keys_move_its_own_q_only(browser, saved):
    _, url = saved
    own = ["q = (0.000, 1.000)", "q = (1.000, 1.000)"]
    # ↑ nudges q by 0.1; the dot products with I (1, 0), love (0, 1) and NLP (1, 1) are q's coordinates and their sum
    nudged = ["q = (0.000, 1.100)\nDot products q·k: I 0.0000, love 1.1000, NLP 1.1000",
              "q = (1.000, 1.100)\nDot products q·k: I 1.0000, love 1.1000, NLP 2.1000"]
    with _opened(browser, url) as (page, outside, errors):
        page.evaluate(WATCH)
        for i in (0, 1):
            other = 1 - i
            # with no kernel to answer, a preview gives way to the display's own numbers again
            for j in (0, 1):
                page.wait_for_function(f"() => ({TEXT})({j}).includes({json.dumps(own[j])})", timeout=PATIENCE)
            page.evaluate("() => window.seen.forEach((s) => s.length = 0)")
            # a key, with focus inside display i (its readout takes focus)
            page.evaluate("(i) => Bokeh.index.find_one(" + EXPLORERS + "[i].get_model_by_name('readout')).el.focus()",
                          i)
            page.keyboard.press("ArrowUp")
            page.wait_for_function(SHOWN, arg=[i, nudged[i]], timeout=PATIENCE)
            # a drag of q on display i's plot, from (0.5, 0.5) (away from every key) to (-0.5, 0.5), held there
            page.mouse.move(*page.evaluate(TO_PAGE, [i, 0.5, 0.5]))
            page.mouse.down()
            for k in range(1, 6):
                page.mouse.move(*page.evaluate(TO_PAGE, [i, 0.5 - 0.2 * k, 0.5]))
            try:  # the pointer's position, within a pixel or two
                page.wait_for_function(HELD, arg=[i, -0.5, 0.5], timeout=PATIENCE)
            except PlaywrightTimeoutError:
                raise AssertionError(f"display {i} shows {page.evaluate(TEXT, i)!r} during the drag") from None
            finally:
                page.mouse.up()
            assert page.evaluate("(j) => window.seen[j]", other) == [], f"display {other} changed with display {i}"
    assert not outside, f"requests leaving the machine: {outside}"
    assert not errors, errors
