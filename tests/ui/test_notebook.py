"""The explorer in a Jupyter notebook: a notebook executed by a real kernel, its saved output opened in Chromium.

What is tested is the output a notebook keeps (what a learner sees when the cell has run, and what a saved or
shared notebook shows): the whole explorer at its own height, two displays each with its own state, and not
one request leaving the machine. The live kernel's comm (a drag reaching Python) needs a running Jupyter
server and is not exercised here; the state behind each display is checked in Python by the notebook itself.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from urllib.parse import urlparse

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.ui.conftest import ROOT, SCREENSHOTS

CELLS = [
    "from app import NOTEBOOK_HEIGHT, create_app",
    # the second display's q moves; the first one's must not
    "a = create_app()\na",
    "b = create_app()\nb.state.move_query(1.0, 1.0)\nb",
    "import json\nprint(json.dumps([list(a.state.query), list(b.state.query), NOTEBOOK_HEIGHT]))",
]

#: Each display's plot, readout and tabs: their heights and the readout's first lines.
DISPLAYS = """() => Bokeh.documents.filter((doc) => doc.get_model_by_name('query-plot')).map((doc) => {
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
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
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


@pytest.mark.xfail(reason="sometimes the first display's readout shows the second display's q in the saved page (their Python "
                          "states stay apart): open", strict=False)
def test_a_notebook_cell_shows_the_whole_explorer_with_nothing_from_outside(browser, tmp_path):
    nb = _run_notebook(tmp_path)
    printed = next(o["text"] for o in nb.cells[3].outputs if o.get("name") == "stdout")
    a_query, b_query, height = json.loads(printed)
    assert a_query == [0.0, 1.0] and b_query == [1.0, 1.0]  # each display has its own state
    (tmp_path / "explorer.html").write_text(_html(nb))

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside, errors = [], []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))

        def route(r):
            if urlparse(r.request.url).hostname != "127.0.0.1":
                outside.append(r.request.url)
                r.abort()
            else:
                r.continue_()
        page.route("**/*", route)
        page.goto(f"http://127.0.0.1:{httpd.server_port}/explorer.html")
        # (pn.extension's own output is a document too, with no explorer in it)
        try:
            page.wait_for_function("() => { const docs = (window.Bokeh?.documents ?? []).filter("
                                   "(d) => d.get_model_by_name('query-plot')); return docs.length === 2 && "
                                   "docs.every((d) => Bokeh.index.find_one(d.get_model_by_name('query-plot'))"
                                   "?.has_finished()) }", timeout=60_000)
        except PlaywrightTimeoutError:
            assert not outside, f"requests leaving the machine: {outside}"  # why BokehJS never came
            raise
        page.wait_for_timeout(500)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "notebook.png", full_page=True)
        shown = page.evaluate(DISPLAYS)
    finally:
        context.close()
        httpd.shutdown()
    assert not outside, f"requests leaving the machine: {outside}"
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
