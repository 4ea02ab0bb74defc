"""Drag preview over a delayed network: pointermove → first readout change, and → the server's numbers.

The full app is measured twice, alternating: directly on loopback, and through :mod:`testing.proxy`, which
delays every chunk ``--delay-ms`` in each direction (default 25 ms, i.e. a 50 ms round trip). In each
page, headless system Chromium holds the button on the query plot and moves around a circle; per move:

* **first change**: from the ``pointermove`` to the first change of the readout's text (a
  ``MutationObserver`` on its shadow root), as in :mod:`bench.drag`. With the in-browser preview that is
  the page's own write and should not depend on the network.
* **from dispatch**: the same, but from the moment the page receives the event (a capturing listener on
  ``window``). Chromium holds pointer moves back until just before the next animation frame, so the
  event's own time stamp can be up to one frame (16.7 ms at 60 Hz) before any page code can run; that
  wait ("dispatch wait") is reported too.
* **confirmed**: from the ``pointermove`` to the moment the readout Div *model*'s text (which only the
  server changes; the preview writes into the element) is set to the preview's text of this move or of a
  later one, i.e. the server has caught up with the hand. Measured on the model's ``change`` signal, after
  the Div has re-rendered the text. "Of which page": from the last websocket frame before it.

Two drags per page: a **paced** one like :mod:`bench.drag` (each move once the readout has changed, then
20 ms), where the server's answers can meet the next moves (and would coalesce at a hand's rate, which this
harness does not reach: it delivers 6–8 moves/s here), and a **one at a time** one,
where each move waits for its confirmation, which shows round trip + processing alone.

    python -m bench.preview_latency --moves 100 --single 30 --rounds 2 --delay-ms 25
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

from bench.drag import _FIND_READOUT, _ON_MOVE, _TO_PAGE, _WS_CLOCK, CHROMIUM_ARGS, chromium
from bench.stats import median, pct
from testing.proxy import running_proxy
from testing.server import ROOT, free_port, serve

MISS_TIMEOUT_MS = 2000
CONFIRM_TIMEOUT_MS = 5000

# Each move: t0 (its pointermove), first (ms to the first text change), text (what the readout then showed,
# the preview's), confirm (ms to the server's text of this move or a later one), exact (the server sent
# this move's own numbers, not only a later move's). As in bench.drag, the observer follows the readout's
# current view, which can be rebuilt while the page settles.
_INSTALL = """() => {
  const L = window.__pl = {moves: [], observed: null, model: null, lastServer: null, unmatched: 0,
                           notInDom: 0, serverChanges: 0};
  const observer = new MutationObserver(() => {
    const m = L.moves[L.moves.length - 1];
    if (m && m.first === null) {
      const now = performance.now();
      m.first = now - m.t0;
      m.fromDispatch = now - m.dispatched;
      m.text = readout().view.markup_el.textContent;
    }
  });
  // the look-up walks every view of the page: redone only once the readout's view has gone
  const readout = () => {
    if (L.found == null || L.found.view == null || L.found.view.is_destroyed)
      L.found = (() => { """ + _FIND_READOUT + """ return {model, view}; })();
    return L.found;
  };
  const onServerText = () => {
    const now = performance.now();
    const {model, view} = readout();
    if (view == null || model.text === L.lastServer) return;
    L.lastServer = model.text;
    L.serverChanges += 1;
    if (view.markup_el.textContent !== model.text) L.notInDom += 1;
    let k = L.moves.length - 1;
    while (k >= 0 && L.moves[k].text !== model.text) k--;
    if (k < 0) { L.unmatched += 1; return; }
    L.moves[k].exact = true;
    L.moves[k].confirmPage = now - window.__wsLast;
    for (let i = k; i >= 0 && L.moves[i].confirm === null; i--) L.moves[i].confirm = now - L.moves[i].t0;
  };
  const attach = () => {
    """ + _FIND_READOUT + """
    const target = view && (view.el.shadowRoot || view.el);
    if (target && target !== L.observed) {
      observer.disconnect();
      observer.observe(target, {subtree: true, childList: true, characterData: true});
      L.observed = target;
    }
    // connected after the view's own handler, so the Div has re-rendered the text when this runs
    if (model && model !== L.model) { model.change.connect(onServerText); L.model = model; L.lastServer = model.text; }
  };
  const beginMove = (e, dispatched) => L.moves.push({t0: e.timeStamp, dispatched, first: null, fromDispatch: null,
                                                    text: null, confirm: null, confirmPage: null, exact: false});
  attach();
  """ + _ON_MOVE + """
}"""


def _summary(values: list[float]) -> dict:
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "max": max(values) if values else None}


def measure(browser, url: str, moves: int, single: int) -> dict:
    """One page: a paced drag of ``moves`` moves, then ``single`` moves each waiting for its confirmation."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.add_init_script(_WS_CLOCK)
    try:
        page.goto(url)
        page.wait_for_function("() => { if (!(window.Bokeh && Bokeh.documents.length > 0)) return false; "
                               + _FIND_READOUT + " return view != null && Bokeh.documents[0].is_idle; }",
                               timeout=120_000)
        page.wait_for_timeout(1000)  # and the server has run the page's onload callbacks
        page.evaluate(_INSTALL)
        out = {}
        for name, n, wait_confirm in (("paced", moves, False), ("single", single, True)):
            if n:
                out[name] = _drag(page, n, wait_confirm)
    finally:
        context.close()
    return out


def _drag(page, moves: int, wait_confirm: bool) -> dict:
    cx, cy, r = 0.5, 0.5, 0.8 if not wait_confirm else 0.6  # a different circle: every text is new
    points = [page.evaluate(_TO_PAGE, [cx + r * math.cos(2 * math.pi * k / moves),
                                       cy + r * math.sin(2 * math.pi * k / moves)]) for k in range(moves + 1)]
    reset = ("() => { window.__pl.moves = []; window.__pl.unmatched = 0; window.__pl.notInDom = 0;"
             " window.__pl.serverChanges = 0; window.__pl.raw = 0; }")
    page.evaluate(reset)
    # as in bench.drag: a press held still for 300 ms is a long press, so press, nudge, retry until it pans
    for _attempt in range(8):
        page.mouse.move(*points[0])
        page.mouse.down()
        page.mouse.move(points[0][0] + 8, points[0][1])
        try:
            page.wait_for_function("() => window.__pl.moves.some(m => m.first !== null)",
                                   timeout=MISS_TIMEOUT_MS, polling=5)
            break
        except Exception:
            page.mouse.up()
            page.wait_for_timeout(300)
    # the warm-up's confirmation first, so that it is not counted against the first move
    _wait(page, "() => window.__pl.moves.every(m => m.confirm !== null)", CONFIRM_TIMEOUT_MS)
    page.evaluate(reset)
    wall0 = time.perf_counter()
    misses = 0
    for k in range(1, moves + 1):
        page.mouse.move(*points[k])
        cond = ("n => window.__pl.moves.length >= n && window.__pl.moves[n - 1].confirm !== null" if wait_confirm
                else "n => window.__pl.moves.length >= n && window.__pl.moves[n - 1].first !== null")
        if not _wait(page, cond, CONFIRM_TIMEOUT_MS if wait_confirm else MISS_TIMEOUT_MS, k):
            misses += 1
        page.wait_for_timeout(20)
    # the last move's numbers from the server, while the button is still down
    _wait(page, "n => window.__pl.moves.length >= n && window.__pl.moves[n - 1].confirm !== null",
          CONFIRM_TIMEOUT_MS, moves)
    wall = time.perf_counter() - wall0
    page.mouse.up()
    data = page.evaluate("() => ({moves: window.__pl.moves, unmatched: window.__pl.unmatched,"
                         " notInDom: window.__pl.notInDom, serverChanges: window.__pl.serverChanges,"
                         " raw: window.__pl.raw})")
    ms = data["moves"]
    first = [m["first"] for m in ms if m["first"] is not None]
    from_dispatch = [m["fromDispatch"] for m in ms if m["fromDispatch"] is not None]
    dispatch_delay = [m["dispatched"] - m["t0"] for m in ms]
    confirm_page = [m["confirmPage"] for m in ms if m["confirmPage"] is not None]
    confirm = [m["confirm"] for m in ms if m["confirm"] is not None]
    t0s = [m["t0"] for m in ms]
    span_s = (t0s[-1] - t0s[0]) / 1000 if len(t0s) > 1 else None
    return {
        "moves": len(ms), "misses": misses, "began_raw": data["raw"],
        "first": _summary(first), "from_dispatch": _summary(from_dispatch), "confirm": _summary(confirm),
        "first_ms": first, "confirm_ms": confirm,
        "from_dispatch_ms": from_dispatch, "dispatch_delay_ms": dispatch_delay, "confirm_page_ms": confirm_page,
        "unconfirmed": sum(m["confirm"] is None for m in ms),
        "exact": sum(m["exact"] for m in ms),  # moves whose own numbers the server sent (others coalesced)
        "server_texts": data["serverChanges"], "unmatched_server_texts": data["unmatched"],
        "server_text_not_in_dom": data["notInDom"],
        "moves_per_s": (len(ms) - 1) / span_s if span_s else None, "wall_s": wall,
    }


def _wait(page, cond: str, timeout_ms: int, arg=None) -> bool:
    try:
        page.wait_for_function(cond, arg=arg, timeout=timeout_ms, polling=5)
        return True
    except Exception:
        return False


def _combine(rounds: list[dict]) -> dict:
    """Percentiles over all rounds' moves together (a p95 of 200 moves is steadier than a median of two p95s
    of 100); counts summed; moves per second the median of the rounds'."""
    out = {}
    for drag in ("paced", "single"):
        rs = [r[drag] for r in rounds if drag in r]
        if rs:
            out[drag] = {what: _summary([x for r in rs for x in r[f"{what}_ms"]])
                         for what in ("first", "from_dispatch", "dispatch_delay", "confirm", "confirm_page")}
            out[drag].update({k: sum(r[k] for r in rs) for k in ("moves", "misses", "began_raw", "unconfirmed", "exact",
                                                                 "unmatched_server_texts", "server_text_not_in_dom")})
            out[drag]["moves_per_s"] = median([r["moves_per_s"] for r in rs])
    return out


def table(result: dict) -> list[str]:
    """The result as a Markdown table, in ms."""
    f = lambda x: "–" if x is None else f"{x:.1f}"  # noqa: E731
    lines = [f"{result['cores']} cores, load average " + " / ".join(f"{x:.1f}" for x in result["load_avg_start"])
             + " at the start, " + " / ".join(f"{x:.1f}" for x in result["load_avg_end"]) + " at the end; "
             f"proxy {result['delay_ms']:g} ms each way", "",
             "| network | drag | moves | moves/s | first change p50 / p95 / max | from dispatch p50 / p95 / max "
             "| dispatch wait p50 / p95 | server's numbers p50 / p95 / max | of which page p50 | own numbers sent |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for net in ("direct", "proxy"):
        for drag, d in result[net].items():
            three = lambda s: " / ".join(f(s[k]) for k in ("p50", "p95", "max"))  # noqa: E731
            lines.append(f"| {net} | {drag} | {d['moves']} | {f(d['moves_per_s'])} | {three(d['first'])} "
                         f"| {three(d['from_dispatch'])} | {f(d['dispatch_delay']['p50'])} / "
                         f"{f(d['dispatch_delay']['p95'])} | {three(d['confirm'])} | {f(d['confirm_page']['p50'])} "
                         f"| {d['exact']} |")
    return lines


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay-ms", type=float, default=25, help="proxy delay in each direction (default 25)")
    ap.add_argument("--moves", type=int, default=100, help="moves of the paced drag (at least 80)")
    ap.add_argument("--single", type=int, default=30, help="moves one at a time, each waiting for the server")
    ap.add_argument("--rounds", type=int, default=2, help="pages per condition, alternating direct and proxied")
    ap.add_argument("--app", default=str(ROOT / "app.py"))
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    load_start = psutil.getloadavg()
    rounds: dict[str, list[dict]] = {"direct": [], "proxy": []}
    proxy_port = free_port()
    with serve(args.app, extra_origins=(f"127.0.0.1:{proxy_port}",)) as (url, _):
        server_port = int(url.split(":")[2].split("/")[0])
        with running_proxy(server_port, args.delay_ms, listen_port=proxy_port) as port:
            proxied = url.replace(f":{server_port}/", f":{port}/", 1)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
                try:
                    for _ in range(args.rounds):
                        rounds["direct"].append(measure(browser, url, args.moves, args.single))
                        rounds["proxy"].append(measure(browser, proxied, args.moves, args.single))
                finally:
                    browser.close()
    result = {"bench": "preview_latency", "delay_ms": args.delay_ms, "moves": args.moves, "single": args.single,
              "cores": psutil.cpu_count(), "load_avg_start": load_start, "load_avg_end": psutil.getloadavg(),
              "rounds": rounds}
    for name, rs in rounds.items():
        result[name] = _combine(rs)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    print("\n".join(table(result)), flush=True)
    return result


if __name__ == "__main__":
    main()
