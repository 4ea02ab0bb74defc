"""Which Chromium the tests and the benchmarks drive (Playwright never downloads one here)."""

from __future__ import annotations

import os
import shutil

#: The executables looked for on the PATH, in order, when ``$CHROMIUM`` is not set. Debian's
#: ``chromium-headless-shell`` is Chromium's own engine without the browser around it (what Playwright itself
#: drives headless): a page costs it about a quarter less CPU to open, and the browser tests open hundreds.
HEADLESS_FIRST = ("chromium-headless-shell", "chromium", "chromium-browser")
#: A benchmark of what a learner's browser does prefers the full browser, when there is one.
BROWSER_FIRST = ("chromium", "chromium-browser", "chromium-headless-shell")
#: What the tests and the benchmarks launch it with: no sandbox (a container's root), no GPU, nothing of its own
#: fetched from the network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

#: A page's script: true once the app's document is in the page, its query plot among its models.
APP_LOADED = ("() => window.Bokeh && Bokeh.documents.length > 0 && "
              "Bokeh.documents[0].get_model_by_name('query-plot') != null")
#: A page's script: true once the explorer's shown tab has its contents (a tab is built on the server the first time
#: it is shown, a Spacer standing in until then) and every figure in the page has drawn.
TAB_BUILT = """() => {
  if (window.Bokeh?.documents[0] == null) return false  // a page that navigated (Present) has no document yet
  const models = [...Bokeh.documents[0].all_models]
  const tabs = models.find(m => (m.css_classes || []).includes('explorer-tabs'))
  if (tabs == null || tabs.tabs[tabs.active].child.type === 'Spacer') return false
  const views = models.filter(m => m.type === 'Figure').map(m => Bokeh.index.find_one(m))
  return views.every(v => v == null || !v.el.isConnected || v.has_finished())
}"""


def chromium(names: tuple[str, ...] = HEADLESS_FIRST) -> str | None:
    """``$CHROMIUM``, or the first of ``names`` on the PATH; None if there is none."""
    return os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, names)), None)
