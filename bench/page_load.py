"""A page's load in a real browser: the time until the explorer's first tab has drawn, and the CPU the load costs.

Opens the app ``--loads`` times (1024×768, projector mode), each in a fresh browser context, after one load to
warm the server. For each: the wall time from navigation until the first tab's figures have drawn, and the
machine's CPU (all its cores, from ``/proc/stat``: the browser's processes and the server's) from navigation until
1.5 s after that, when the page has done what it does as it settles. Prints the medians and every load. Run it on
a quiet machine: the CPU figure counts whatever else runs.

    python -m bench.page_load --loads 8
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.stats import median
from testing.browser import APP_LOADED, BROWSER_FIRST, CHROMIUM_ARGS, TAB_BUILT
from testing.browser import chromium as find_chromium
from testing.server import serve

SETTLE_MS = 1500


def machine_cpu() -> float:
    """Seconds of CPU the machine has spent, all cores, since it started (``/proc/stat``'s first line)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # not idle, not waiting on I/O


def one_load(browser, url: str) -> tuple[float, float]:
    """(seconds until the first tab has drawn, seconds of machine CPU until SETTLE_MS after it)."""
    context = browser.new_context(viewport={"width": 1024, "height": 768}, locale="en-US")
    page = context.new_page()
    cpu, start = machine_cpu(), time.perf_counter()
    page.goto(url + "?mode=projector")
    page.wait_for_function(APP_LOADED, timeout=60_000, polling="raf")
    page.wait_for_function(TAB_BUILT, timeout=60_000, polling="raf")
    drawn = time.perf_counter() - start
    page.wait_for_timeout(SETTLE_MS)
    cpu = machine_cpu() - cpu
    context.close()
    return drawn, cpu


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=8)
    args = parser.parse_args(argv)
    path = find_chromium(BROWSER_FIRST)
    if not path:
        sys.exit("no Chromium found: set $CHROMIUM")
    with serve() as (url, _process), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        one_load(browser, url)  # the server's first page builds what every later one reuses
        loads = [one_load(browser, url) for _ in range(args.loads)]
        browser.close()
    result = {"loads": len(loads), "drawn_s_p50": round(median([d for d, _ in loads]), 2),
              "cpu_s_p50": round(median([c for _, c in loads]), 2),
              "each": [[round(d, 2), round(c, 2)] for d, c in loads]}
    print("| loads | first tab drawn, p50 (s) | machine CPU to 1.5 s after, p50 (s) |\n| ---: | ---: | ---: |")
    print(f"| {result['loads']} | {result['drawn_s_p50']} | {result['cpu_s_p50']} |")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
