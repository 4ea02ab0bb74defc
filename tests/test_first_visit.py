"""What a first visit loads: only the scripts the page uses."""

from __future__ import annotations

import re
import urllib.request

import panel.io.server as panel_server
from bokeh.document import Document
from bokeh.models import Plot
from bokeh.plotting import figure

import app
from server.patches.panel_bundle_resources import install as leave_out_unused_bundles
from testing.server import serve, ws_url
from widgets.tabs import LazyTabs


def test_the_page_loads_no_script_of_an_extension_it_does_not_use():
    with serve() as (url, _proc):
        html = urllib.request.urlopen(url, timeout=120).read().decode()
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', html)
    assert any("bokeh.min.js" in s for s in scripts) and any("panel.min.js" in s for s in scripts), scripts
    # a Panel app that never calls pn.extension() gets every imported extension's scripts: 130 kB of 0.86 MB;
    # BokehJS's WebGL bundle came with every page (78 kB) though no figure draws with WebGL; KaTeX comes when a
    # formula with numbers is first shown (tests/ui/test_first_load.py)
    unused = [s for s in scripts
              if re.search(r"tabulator|luxon|plotly|vega|deck|echarts|ace|mathjax|bokeh-gl|katex", s)]
    assert not unused, unused


def _bundle_names(roots) -> list[str]:
    resources = panel_server.Resources(mode="server")
    bundle = panel_server.bundle_resources(roots, resources)
    return [str(url).rsplit("/", 1)[-1].split(".")[0] for url in bundle.js_files]


def test_the_webgl_bundle_comes_only_with_a_figure_drawn_in_webgl():
    leave_out_unused_bundles()
    plain, webgl = figure(), figure(output_backend="webgl")
    for fig in (plain, webgl):
        fig.line([0, 1], [0, 1])
        Document().add_root(fig)
    assert "bokeh-gl" not in _bundle_names([plain])
    assert "bokeh-gl" in _bundle_names([webgl])


def test_no_figure_of_any_tab_draws_in_webgl():
    # what makes leaving BokehJS's WebGL bundle out of the page right: a figure asking for WebGL would be drawn on
    # a canvas instead, Bokeh warning in the browser's console
    page = app.create_app()
    doc = Document()
    doc.add_root(page.get_root(doc))
    tabs = next(iter(page.select(LazyTabs)))
    for i in range(len(tabs)):
        tabs.active = i
    plots = [m for m in doc.models if isinstance(m, Plot)]
    assert len(plots) >= 10, len(plots)
    assert {p.output_backend for p in plots} == {"canvas"}


def test_the_page_s_own_css_is_in_its_head_once_not_in_every_component():
    # Panel copies pn.extension's raw_css into every component's shadow root, where the page's document-level CSS
    # (custom properties on <html>, the page frame) matches nothing: 20 copies, 85 kB of the page's document
    import asyncio
    import json

    from testing.protocol_client import Learner
    from widgets.style import PAGE_CSS

    async def document(url):
        page = Learner(ws_url(url))
        await page.connect(keep_doc=True)
        page.close()
        return json.dumps(page.doc)

    with serve() as (url, _proc):
        html = urllib.request.urlopen(url, timeout=120).read().decode()
        doc = asyncio.run(asyncio.wait_for(document(url), 120))
    marker = PAGE_CSS.strip().splitlines()[0]
    assert html.count(marker) == 1
    assert json.dumps(marker)[1:-1] not in doc
    assert "--ae-formula" in html  # the custom properties every component reads, inherited from <html>
