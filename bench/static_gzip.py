"""The server CPU a page's scripts cost to send, gzip-compressed, with each static file compressed once per process
(server/static_gzip.py) and, for comparison, compressed again for every page as Tornado's gzip does; and in Brotli,
as a browser that accepts it gets them once the server has made them.

A server of its own (``python app.py``) on a free port; the scripts the page's HTML loads (BokehJS, Panel) fetched
``--pages`` times with ``Accept-Encoding: gzip`` as a browser with an empty cache fetches them; the server process's
CPU time per page (load-independent as long as it gets a core). The first page's compression is part of the
first mode's figure. Brotli: the server's CPU from a first fetch of each script until each comes in Brotli (its
worker thread compressing them, once per process), then per page as above with ``Accept-Encoding: gzip, deflate,
br, zstd`` (Chromium's).

    python -m bench.static_gzip --pages 20
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from testing.server import free_port, stop, wait_for_http

ROOT = Path(__file__).resolve().parents[1]
#: The app with what is kept bounded to nothing: every response compressed anew, as Tornado's own gzip does.
UNKEPT = ("import runpy, server.static_gzip as s; s.MAX_KEPT = 0; "
          "runpy.run_path('app.py', run_name='__main__')")


def measure(pages: int, kept: bool, brotli: bool = False) -> tuple[float, float, int, float]:
    """(server CPU ms per page, compressed MB per page, scripts per page, server CPU s to make the Brotli bodies)."""
    port = free_port()
    command = [sys.executable, "app.py"] if kept else [sys.executable, "-c", UNKEPT]
    proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PORT": str(port)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"
    try:
        wait_for_http(base, proc)
        html = urllib.request.urlopen(base).read().decode()
        scripts = [base + u.lstrip("/") for u in re.findall(r'src="([^"]+\.js[^"]*)"', html) if "://" not in u]
        server = psutil.Process(proc.pid)
        accept = "gzip, deflate, br, zstd" if brotli else "gzip"
        made = 0.0
        if brotli:
            start = sum(server.cpu_times()[:2])
            while not all(_fetch(url, accept)[1] == "br" for url in scripts):
                time.sleep(0.2)
            made = sum(server.cpu_times()[:2]) - start
        start, size = sum(server.cpu_times()[:2]), 0
        for _ in range(pages):
            for url in scripts:
                size += _fetch(url, accept)[0]
        return (sum(server.cpu_times()[:2]) - start) / pages * 1000, size / pages / 1e6, len(scripts), made
    finally:
        stop(proc)


def _fetch(url: str, accept: str) -> tuple[int, str | None]:
    """(bytes of the body as sent, its Content-Encoding)."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept})
    with urllib.request.urlopen(request) as r:
        return len(r.read()), r.headers.get("Content-Encoding")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20, help="pages' worth of scripts fetched from each server")
    args = parser.parse_args(argv)
    print(f"server CPU to send a page's scripts gzip-compressed, mean of {args.pages} pages:")
    for kept in (True, False):
        ms, mb, n, _ = measure(args.pages, kept)
        label = "each file compressed once" if kept else "compressed for every page"
        print(f"  {label:<27} {ms:6.1f} ms a page  ({n} scripts, {mb:.2f} MB compressed)")
    ms, mb, n, made = measure(args.pages, True, brotli=True)
    print(f"  {'Brotli, made once':<27} {ms:6.1f} ms a page  ({n} scripts, {mb:.2f} MB compressed); "
          f"making them: {made:.1f} s of the server's CPU, once per process, on its worker thread")


if __name__ == "__main__":
    main()
