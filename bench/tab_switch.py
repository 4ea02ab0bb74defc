"""Showing a tab again, in a real browser: from setting the tabs' ``active`` to two animation frames later.

Each round opens the app (1024×768, projector mode) once for each variant, shows every tab once (so each is
built), then shows the tabs in turn ``--switches`` times each, measured inside the page (``performance.now()``).
The variants put back, one at a time, what the page changes in BokehJS for its own documents (link/browser.js):
the lookup of a ``--bk-*`` CSS variable for every visual property it paints with (bokeh/bokeh#15286), and the
layout of every tab built so far on each switch (the page lays out the shown tab only); the difference is what
each costs a tab switch. Prints the median and p95 of each variant, and the page's p50 over each's.

    python -m bench.tab_switch --rounds 3 --switches 3
"""

from __future__ import annotations

import argparse
import json
import sys

from playwright.sync_api import sync_playwright

from bench.stats import median, pct
from testing.browser import APP_LOADED, BROWSER_FIRST, CHROMIUM_ARGS, TAB_BUILT
from testing.browser import chromium as find_chromium
from testing.server import serve

#: Shows tab k and resolves, two frames later, with the milliseconds it took.
SWITCH = """async (k) => {
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  const start = performance.now()
  tabs.active = k
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))
  return performance.now() - start
}"""
#: What each variant puts back of BokehJS as shipped, once the page has changed it.
VARIANTS = {
    "page": None,
    # its CSS lookup (the page keeps it as ``original``)
    "BokehJS's CSS lookup": """() => {
  const visual = Bokeh.require('core/visuals/visual').VisualProperties.prototype
  visual._get_css_value = visual._get_css_value.original
}""",
    # every built tab laid out (the page's own getter on the explorer's tabs' view)
    "every built tab laid out": """() => {
  const tabs = [...Bokeh.documents[0].all_models].find(m => (m.css_classes || []).includes('explorer-tabs'))
  delete Bokeh.index.find_one(tabs).layoutable_views
}""",
}
#: True once the page has made both changes.
CHANGED = """() => Bokeh.require('core/visuals/visual').VisualProperties.prototype._get_css_value.original != null &&
  Object.hasOwn(Bokeh.index.find_one([...Bokeh.documents[0].all_models]
    .find(m => (m.css_classes || []).includes('explorer-tabs'))), 'layoutable_views')"""


def one_round(browser, url: str, put_back: str | None, switches: int) -> list[float]:
    context = browser.new_context(viewport={"width": 1024, "height": 768}, locale="en-US")
    page = context.new_page()
    page.goto(url + "?mode=projector")
    page.wait_for_function(APP_LOADED, timeout=60_000)
    page.wait_for_function(CHANGED, timeout=60_000)  # the page's script changes BokehJS as it renders
    if put_back:
        page.evaluate(put_back)
    count = page.evaluate("() => [...Bokeh.documents[0].all_models]"
                          ".find(m => (m.css_classes || []).includes('explorer-tabs')).tabs.length")
    for k in [*range(1, count), 0]:  # each built once
        page.evaluate(SWITCH, k)
        page.wait_for_function(TAB_BUILT, timeout=60_000)
    page.wait_for_timeout(500)
    times = [page.evaluate(SWITCH, k) for _ in range(switches) for k in [*range(1, count), 0]]
    context.close()
    return times


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--switches", type=int, default=3, help="times each tab is shown again in a round")
    args = parser.parse_args(argv)
    path = find_chromium(BROWSER_FIRST)
    if not path:
        sys.exit("no Chromium found: set $CHROMIUM")
    runs: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with serve() as (url, _process), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        for _ in range(args.rounds):
            for name in runs:
                runs[name] += one_round(browser, url, VARIANTS[name], args.switches)
        browser.close()
    result = {name: {"n": len(t), "p50_ms": round(median(t), 1), "p95_ms": round(pct(t, 95), 1)}
              for name, t in runs.items()}
    for name in runs:
        result[name]["page_p50_over_this"] = round(result["page"]["p50_ms"] / result[name]["p50_ms"], 2)
    print("| variant | switches | p50 (ms) | p95 (ms) | the page's p50 over this |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in runs:
        r = result[name]
        print(f"| {name} | {r['n']} | {r['p50_ms']} | {r['p95_ms']} | {r['page_p50_over_this']} |")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
