"""Drag latency in a real browser: from each ``pointermove`` to the first change of the readout text.

Headless system Chromium (Playwright, never a downloaded browser) holds the button on the query plot and
moves the pointer around a circle one move at a time. Inside the page, a capture-phase ``pointermove``
listener notes the event's time and a ``MutationObserver`` on the readout's shadow root notes the first
text change after it; the difference is one sample. The same run measures the plain reference app
(:mod:`bench.reference_app`), alternating the two, ``--rounds`` times each.

    python -m bench.drag --moves 100 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

from bench.stats import median
from testing.browser import BROWSER_FIRST, CHROMIUM_ARGS
from testing.browser import chromium as find_chromium
from testing.server import ROOT, serve

MISS_TIMEOUT_MS = 2000

# The app's readout is the Div named "readout"; the reference's is its only Markdown (HTML) pane.
_FIND_READOUT = """const doc = Bokeh.documents[0];
  const model = doc.get_model_by_name('readout') ||
    [...doc.all_models].find(m => String(m.type || m.constructor.__qualified__).endsWith('HTML'));
  const view = model && Bokeh.index.find_one(model);"""

# Each input, with the button held, calls beginMove(e, dispatched) once, and attach() keeps the observer on
# the readout's current view; L.raw counts moves that began with a pointerrawupdate. On window, capturing:
# before any of the page's own listeners. Chromium dispatches pointermove just before the next animation
# frame, so its timeStamp (when the input came in) can be up to a frame earlier than this listener. A page
# may follow pointerrawupdate, dispatched as soon as the page is free, before the pointermove of the same
# input (same timeStamp): a move starts at whichever of the two comes first. A full look-up of the
# readout walks every model, so it is redone at once only when its view went away.
_ON_MOVE = """L.raw = 0;
  let lastStamp = null;
  const onMove = (e) => {
    const dispatched = performance.now();
    if (!(L.observed && L.observed.isConnected)) attach(); else setTimeout(attach, 0);
    if (!e.buttons || e.timeStamp === lastStamp) return;
    lastStamp = e.timeStamp;
    if (e.type === 'pointerrawupdate') L.raw += 1;
    beginMove(e, dispatched);
  };
  window.addEventListener('pointerrawupdate', onMove, {capture: true});
  window.addEventListener('pointermove', onMove, {capture: true});"""

# The readout's view can be rebuilt while the page settles, so the observer follows the current view: it is
# (re)attached on each pointermove, before the move reaches the server.
_INSTALL = """() => {
  const L = window.__lat = {t0: null, samples: [], page: [], misses: 0, observed: null};
  const observer = new MutationObserver(() => {
    if (L.t0 !== null) {
      const now = performance.now();
      L.samples.push(now - L.t0);
      L.page.push(now - Math.max(window.__wsLast, L.t0));
      L.t0 = null;
    }
  });
  const attach = () => {
    """ + _FIND_READOUT + """
    const target = view && (view.el.shadowRoot || view.el);
    if (target && target !== L.observed) {
      observer.disconnect();
      observer.observe(target, {subtree: true, childList: true, characterData: true});
      L.observed = target;
    }
  };
  const beginMove = (e) => { L.t0 = e.timeStamp; };
  attach();
  """ + _ON_MOVE + """
}"""

# Before the page's scripts run: note when each websocket frame arrives, so a sample can be split into the
# time until the update's last frame arrived (network and server) and the time the page then took.
_WS_CLOCK = """(() => {
  const Native = window.WebSocket;
  window.__wsLast = 0;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => { window.__wsLast = performance.now(); });
    }
  };
})();"""

_TO_PAGE = """([x, y]) => {
  const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('query-plot'));
  view.el.scrollIntoView({block: "nearest"});
  const r = view.canvas_view.el.getBoundingClientRect();
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)];
}"""


def chromium() -> str:
    path = find_chromium(BROWSER_FIRST)
    if not path:
        sys.exit("no Chromium found: install Debian's `chromium` or set $CHROMIUM")
    return path


def measure(browser, url: str, moves: int) -> dict:
    """One page, one drag of ``moves`` pointer moves; returns the samples in ms and the misses."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.add_init_script(_WS_CLOCK)
    try:
        page.goto(url)
        # ready: the readout is rendered and the document is idle (websocket open, everything drawn)
        page.wait_for_function("() => { if (!(window.Bokeh && Bokeh.documents.length > 0)) return false; "
                               + _FIND_READOUT + " return view != null && Bokeh.documents[0].is_idle; }",
                               timeout=120_000)
        page.wait_for_timeout(1000)  # and the server has run the page's onload callbacks
        page.evaluate(_INSTALL)
        cx, cy, r = 0.5, 0.5, 0.8
        points = [page.evaluate(_TO_PAGE, [cx + r * math.cos(2 * math.pi * k / moves),
                                           cy + r * math.sin(2 * math.pi * k / moves)]) for k in range(moves + 1)]
        # Bokeh reads a press held still for 300 ms as a long press, not a pan; on a loaded machine the first
        # move can come later than that. So: press, nudge, and retry until the nudge moves the readout.
        for _attempt in range(8):
            page.mouse.move(*points[0])
            page.mouse.down()
            page.mouse.move(points[0][0] + 8, points[0][1])
            try:
                page.wait_for_function("() => window.__lat.samples.length > 0", timeout=MISS_TIMEOUT_MS, polling=5)
                break
            except Exception:
                page.mouse.up()
                page.wait_for_timeout(300)
        page.evaluate("() => { window.__lat.samples = []; window.__lat.page = []; window.__lat.t0 = null; }")
        for k in range(1, moves + 1):
            page.mouse.move(*points[k])
            try:
                page.wait_for_function("n => window.__lat.samples.length + window.__lat.misses >= n", arg=k,
                                       timeout=MISS_TIMEOUT_MS, polling=5)
            except Exception:
                page.evaluate("() => { window.__lat.misses += 1; window.__lat.t0 = null; }")
            page.wait_for_timeout(20)
        page.mouse.up()
        out = page.evaluate("() => ({samples: window.__lat.samples, page: window.__lat.page, "
                            "misses: window.__lat.misses})")
    finally:
        context.close()
    s = sorted(out["samples"])

    def pick(p):
        return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] if s else None

    in_page = sorted(out["page"])
    return {"n": len(s), "misses": out["misses"], "p50": pick(50), "p95": pick(95), "max": s[-1] if s else None,
            # of each sample, the time from the update's last websocket frame to the text change
            "page_p50": in_page[len(in_page) // 2] if in_page else None}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moves", type=int, default=100, help="pointer moves per drag (at least 80)")
    ap.add_argument("--rounds", type=int, default=3, help="drags per app, alternating with the reference")
    ap.add_argument("--app", default=str(ROOT / "app.py"))
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    rounds = {"app": [], "reference": []}
    with serve(args.app) as (app_url, _), serve(ROOT / "bench" / "reference_app.py") as (ref_url, _):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
            try:
                for _ in range(args.rounds):
                    rounds["reference"].append(measure(browser, ref_url, args.moves))
                    rounds["app"].append(measure(browser, app_url, args.moves))
            finally:
                browser.close()
    result = {"bench": "drag", "moves": args.moves, "rounds": rounds, "load_avg": psutil.getloadavg(),
              "cores": psutil.cpu_count()}
    for name, rs in rounds.items():
        result[name] = {k: median([r[k] for r in rs]) for k in ("p50", "p95", "max", "misses", "page_p50")}
    print(json.dumps({k: result[k] for k in ("app", "reference", "load_avg")}), flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    return result


if __name__ == "__main__":
    main()
