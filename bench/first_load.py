"""First page load: bytes over the wire and time until the page answers, compressed and not.

Runs ``python app.py`` with its default settings and counts every byte between Chromium and the
server with a TCP relay (HTTP and the websocket, as sent: Brotli or gzip and permessage-deflate included).
"Uncompressed" is the same page with ``Accept-Encoding: identity`` and websocket compression off.
Time to interactive: from navigation start until the page has connected its websocket and a click on
the matrix came back from the server in the readout.

The server is warmed first: one page load (not counted), then until its scripts come in Brotli, which the
server makes once per process on a worker thread after a script's first request (server/static_gzip.py); a
process's very first visitor gets them in gzip.

    .venv/bin/python -m bench.first_load [--runs 5]

Prints its section; the figures go into bench/RESULTS.md and bench/HISTORY.md by hand, as every benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from testing.browser import BROWSER_FIRST, CHROMIUM_ARGS, chromium  # noqa: E402
from tests.ui.conftest import free_port, wait_for_http  # noqa: E402
from tests.ui.helpers import open_app, show_tab, to_page, wait_for_readout  # noqa: E402

HEADING = "## First load"


class CountingRelay:
    """A loopback TCP relay that counts the bytes it carries each way."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.port = free_port()
        self.down = 0  # server -> browser
        self.up = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(10)

    def _run(self):
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_until_complete(server.serve_forever())

    async def _client(self, reader, writer):
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def pipe(src, dst, downstream: bool):
            try:
                while data := await src.read(65536):
                    if downstream:
                        self.down += len(data)
                    else:
                        self.up += len(data)
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True))

    def reset(self):
        self.down = self.up = 0


def start_server(env_extra: dict[str, str], relay_port: int) -> subprocess.Popen:
    port = free_port()
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1",
           "BOKEH_ALLOW_WS_ORIGIN": f"127.0.0.1:{relay_port}", **env_extra}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.port = port
    wait_for_http(f"http://127.0.0.1:{port}/liveness", proc)
    return proc


def load_once(browser, url: str, relay: CountingRelay, identity: bool) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 800},
                                  extra_http_headers={"Accept-Encoding": "identity"} if identity else None)
    page = context.new_page()
    per_kind: dict[str, int] = defaultdict(int)
    encodings: dict[str, str] = {}

    def finished(r):
        per_kind[kind(r.url)] += max(r.sizes()["responseBodySize"], 0)
        response = r.response()
        if response is not None and kind(r.url).endswith(".js"):
            encodings[kind(r.url)] = response.headers.get("content-encoding") or "none"
    page.on("requestfinished", finished)
    relay.reset()
    t0 = time.perf_counter()
    open_app(page, url)
    show_tab(page, "Matrix")
    page.mouse.click(*to_page(page, "attention-matrix", 0, 2))
    wait_for_readout(page, 'Query of "NLP"')
    tti = time.perf_counter() - t0
    page.wait_for_timeout(1000)  # late stylesheets and the click's reply
    result = {"down": relay.down, "up": relay.up, "tti": tti, "kinds": dict(per_kind), "encodings": encodings}
    context.close()
    return result


def kind(url: str) -> str:
    path = urlsplit(url).path
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".js"):
        return name
    if name.endswith(".css"):
        return "stylesheets"
    return "page" if path in ("", "/") else "other"


def measure(browser, env_extra: dict[str, str], identity: bool, runs: int) -> dict:
    relay = CountingRelay(0)
    proc = start_server(env_extra, relay.port)
    relay.target_port = proc.port
    try:
        url = f"http://127.0.0.1:{relay.port}/"
        load_once(browser, url, relay, identity)  # warm the server's caches; not counted
        if not identity:
            wait_for_brotli(f"http://127.0.0.1:{proc.port}/static/js/bokeh.min.js")
        samples = [load_once(browser, url, relay, identity) for _ in range(runs)]
    finally:
        proc.terminate()
        proc.wait(10)
    return {
        "down": statistics.median(s["down"] for s in samples),
        "up": statistics.median(s["up"] for s in samples),
        "tti": statistics.median(s["tti"] for s in samples),
        "tti_max": max(s["tti"] for s in samples),
        "kinds": samples[-1]["kinds"],
        "encodings": samples[-1]["encodings"],
    }


def wait_for_brotli(url: str, timeout: float = 300) -> None:
    """Until the server answers ``url`` (a script the page loads) in Brotli: its worker thread has made it."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        request = urllib.request.Request(url, headers={"Accept-Encoding": "br, gzip"})
        with urllib.request.urlopen(request, timeout=60) as r:
            if r.headers.get("Content-Encoding") == "br":
                return
        time.sleep(0.5)
    raise TimeoutError(f"{url} never came in Brotli")


def kb(n: float) -> str:
    return f"{n / 1000:,.0f} kB"


def report(compressed: dict, plain: dict, runs: int, load: tuple[float, float, float]) -> str:
    rows = sorted(set(compressed["kinds"]) | set(plain["kinds"]),
                  key=lambda k: -plain["kinds"].get(k, 0))
    lines = [
        HEADING, "",
        f"`bench/first_load.py`: a fresh browser (empty cache) opens the page, median of {runs} loads, loopback,",
        "2-core machine shared with other work. Bytes are counted on the TCP connection between Chromium and",
        "the server (HTTP headers and bodies, websocket frames as sent). Time to interactive: navigation start",
        "until a click on the matrix has come back from the server into the readout. Load average during",
        f"the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) on 2 cores: times from a busy",
        "machine are upper bounds; the byte counts do not depend on it.",
        "",
        "| | compressed (defaults) | uncompressed | ratio |",
        "| --- | ---: | ---: | ---: |",
        f"| bytes to the browser | **{kb(compressed['down'])}** | {kb(plain['down'])} | "
        f"{plain['down'] / compressed['down']:.1f}× |",
        f"| bytes from the browser | {kb(compressed['up'])} | {kb(plain['up'])} | |",
        f"| time to interactive (median / worst) | {compressed['tti']:.2f} s / {compressed['tti_max']:.2f} s | "
        f"{plain['tti']:.2f} s / {plain['tti_max']:.2f} s | |",
        "",
        "HTTP response bodies by file (websocket not included):",
        "",
        "| file | compressed | uncompressed |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {k} | {kb(compressed['kinds'].get(k, 0))} ({compressed['encodings'].get(k, '-')}) | "
              f"{kb(plain['kinds'].get(k, 0))} |" for k in rows]
    lines += [
        "",
        "Compressed: each static script in Brotli once the server has made it, else gzip (server/static_gzip.py),",
        "the page itself in gzip; the websocket uses permessage-deflate (`--websocket-compression-level 6`).",
        "Uncompressed: the same server asked with `Accept-Encoding: identity` and started with",
        "`EXPLORER_WS_COMPRESSION_LEVEL=0`.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    path = chromium(BROWSER_FIRST)
    if not path:
        sys.exit("no Chromium found: install Debian's `chromium` or set $CHROMIUM")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        compressed = measure(browser, {}, identity=False, runs=args.runs)
        plain = measure(browser, {"EXPLORER_WS_COMPRESSION_LEVEL": "0"}, identity=True, runs=args.runs)
        browser.close()
    print(report(compressed, plain, args.runs, os.getloadavg()))


if __name__ == "__main__":
    main()
