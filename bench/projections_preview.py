"""The Projections tab's drag in Chromium: from each pointer move to the page's new numbers.

The page computes every position of a drag of an embedding or a basis image itself (``link/projections.js``)
and writes the tab's numbers on the same frame; the server only confirms them. Measured here on the app as it
ships, in headless system Chromium: the tab is opened, x_love (left plane) and then e₂W_Q (right plane) are
dragged around a circle with the button held, one move at a time (each once the numbers have changed, then
20 ms, as :mod:`bench.drag` paces the query's drag). Per move:

* **from dispatch**: from the moment the page receives the ``pointermove`` (a capturing listener on
  ``window``) to the first change of the numbers' table (a ``MutationObserver``);
* **from the event**: the same from the event's own time stamp, which Chromium may hold back up to one
  frame before the next animation frame.

Target: the page's numbers within one frame (16.7 ms at 60 Hz) of the move.

    python -m bench.projections_preview --moves 100 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import math
import os

from playwright.sync_api import sync_playwright

from bench.drag import CHROMIUM_ARGS, chromium
from bench.stats import append_jsonl, median, pct
from testing.server import serve

_INSTALL = """() => {
  const doc = Bokeh.documents[0];
  // the Div's whole shadow root: the server's text of the numbers replaces the element the page writes into
  const view = Bokeh.index.find_one(doc.get_model_by_name('projection-numbers'));
  const el = view.shadow_el ?? view.el.shadowRoot;
  const L = window.__lat = {samples: [], stamps: [], t0: null, stamp: null};
  new MutationObserver(() => {
    if (L.t0 == null) return;
    const now = performance.now();
    L.samples.push(now - L.t0); L.stamps.push(now - L.stamp); L.t0 = null;
  }).observe(el, {childList: true, characterData: true, subtree: true});
  window.addEventListener('pointermove', (e) => {
    if (e.buttons && L.t0 == null) { L.t0 = performance.now(); L.stamp = e.timeStamp; }
  }, {capture: true});
}"""

#: The plane's handle is back at ``start`` in the server's data and the document is idle.
_AT_REST = """([name, start]) => {
  const doc = Bokeh.documents[0], inp = doc.get_model_by_name('projection-inputs').data;
  const at = name === 'projection-x' ? inp.X[0][1] : inp.W[0][0][1];
  return doc.is_idle && at[0] === start[0] && at[1] === start[1];
}"""

_TO_PAGE = """([name, x, y]) => {
  const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name(name));
  view.el.scrollIntoView({block: 'nearest'});  // the planes stack on a narrow tab: the second may be below
  const r = view.canvas_view.el.getBoundingClientRect();
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)];
}"""


def _drag(page, plane: str, start: tuple[float, float], moves: int) -> dict:
    # every drag from the same embeddings and projections: the first preset, drawn by the server
    page.get_by_role("button", name="Q = K = V = X").click()
    page.wait_for_function(_AT_REST, arg=[plane, list(start)], timeout=60_000)
    page.wait_for_timeout(1000)
    page.evaluate("() => { window.__lat.samples = []; window.__lat.stamps = []; window.__lat.t0 = null; }")
    r = 0.3
    points = [page.evaluate(_TO_PAGE, [plane, start[0] + r * math.sin(1.5 * math.pi * k / moves),
                                       start[1] + r * math.cos(1.5 * math.pi * k / moves) - r])
              for k in range(moves + 1)]
    page.mouse.move(*points[0])
    page.mouse.down()
    misses = 0
    for k in range(1, moves + 1):
        page.mouse.move(*points[k])
        try:
            page.wait_for_function("n => window.__lat.samples.length >= n", arg=k - misses, timeout=2000, polling=5)
        except Exception:
            misses += 1
            page.evaluate("() => { window.__lat.t0 = null; }")
        page.wait_for_timeout(20)
    page.mouse.up()
    out = page.evaluate("() => ({samples: window.__lat.samples, stamps: window.__lat.stamps})")
    s, t = out["samples"], out["stamps"]
    return {"n": len(s), "misses": misses, "p50": pct(s, 50), "p95": pct(s, 95), "max": max(s, default=None),
            "event_p50": pct(t, 50), "event_p95": pct(t, 95)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moves", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="append the result to this JSON-lines file")
    args = ap.parse_args(argv)
    rounds = {"embedding": [], "basis image": []}
    with serve() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle",
                               timeout=120_000)
        page.locator(".bk-tab", has_text="Projections").click()
        page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('projection-numbers') != null"
                               " && Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('projection-x'))",
                               timeout=120_000)
        page.wait_for_timeout(1500)
        page.evaluate(_INSTALL)
        for _ in range(args.rounds):
            rounds["basis image"].append(_drag(page, "projection-w", (0.0, 1.0), args.moves))  # e₂W_Q
            rounds["embedding"].append(_drag(page, "projection-x", (0.0, 1.0), args.moves))  # x_love
        browser.close()
    result = {"load_average": round(os.getloadavg()[0], 1), "moves": args.moves, "rounds": rounds}
    for kind, rs in rounds.items():
        result[kind] = {k: median([r[k] for r in rs]) for k in ("p50", "p95", "max", "event_p50", "event_p95",
                                                                  "misses")}
    print(json.dumps({k: result[k] for k in ("embedding", "basis image", "load_average")}, indent=1))
    if args.json:
        append_jsonl(args.json, result)
    return result


if __name__ == "__main__":
    main()
