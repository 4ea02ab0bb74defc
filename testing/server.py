"""Start the app (or the reference app) as a real server on a free loopback port, and watch its process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]

#: Bokeh's own defaults, passed explicitly so the benchmark states what it ran with: a session whose
#: last websocket closed is destroyed after UNUSED_SESSION_LIFETIME_MS, checked every CHECK_UNUSED_MS.
UNUSED_SESSION_LIFETIME_MS = 15_000
CHECK_UNUSED_MS = 17_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Poll ``url`` until it answers 200; raise if ``proc`` exits first or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if getattr(proc, "stdout", None) else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {out}")
        try:
            # a page build can take seconds on a loaded machine: a short timeout would retry forever
            with urllib.request.urlopen(url, timeout=30) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def stop(*procs: subprocess.Popen, timeout: float = 60) -> None:
    """Stop servers with SIGTERM, as ``docker stop`` does, and kill any that outlives ``timeout`` s.

    All are signalled first, so they shut down side by side. Bokeh's orderly shutdown destroys every
    session still alive (about 0.2 s each here), and sessions live for a minute after their page
    closes: after a run that opened many pages, a loaded machine needs well over 10 s.
    """
    for proc in procs:
        proc.terminate()
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def shipped_app(log: Path, env: dict | None = None):
    """``python app.py`` with its shipped settings (server/serve.py) on a free loopback port, its output written to
    ``log``: yields ``(port, process)``. ``BOKEH_ALLOW_WS_ORIGIN`` is left out of its environment: only the served
    port's own pages connect, as on a machine that sets nothing. ``env``: variables set besides (a setting's)."""
    port = free_port()
    env = {**os.environ, **(env or {}), "PORT": str(port), "PYTHONUNBUFFERED": "1"}
    env.pop("BOKEH_ALLOW_WS_ORIGIN", None)
    with open(log, "w+") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/", proc)
            yield port, proc
        finally:
            stop(proc)


def _exit_on_sigterm(*_):
    raise SystemExit(143)  # unwinds through serve(), which stops the server


@contextmanager
def serve(app: str | Path = ROOT / "app.py", *, unused_lifetime_ms: int = UNUSED_SESSION_LIFETIME_MS,
          check_unused_ms: int = CHECK_UNUSED_MS, log: Path | None = None, extra_origins: tuple[str, ...] = (),
          watch: Path | None = None, env: dict | None = None):
    """APP served on 127.0.0.1:<free port>; yields (base URL, psutil.Process). Always stopped.

    The app itself runs as it ships (``python app.py``: server/serve.py's settings and routes), also the app of
    another checkout of the project (to compare code before and after a change); any other app (the reference
    app) under a plain ``panel serve``.

    ``extra_origins`` (``host:port``) may open its websocket too, e.g. a proxy in front of it. With ``watch``, every
    turn of the server's loop is timed and the long ones written to that file (``testing/loop_watch.py``; read them
    with ``testing.loop_watch.read``). ``env``: more environment variables for the server."""
    app = Path(app).resolve()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    port = free_port()
    origins = [f"127.0.0.1:{port}", *extra_origins]
    lifetimes = ["--unused-session-lifetime", str(unused_lifetime_ms), "--check-unused-sessions", str(check_unused_ms)]
    # the C library's allocator, as server/serve.py starts the app (server/housekeeping.py), unless the caller chose one
    env = {"PYTHONMALLOC": "malloc", **os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    # the app as it ships: `python app.py`, through server/serve.py's settings (this one's, or another checkout's)
    if app.name == "app.py" and (app.parent / "server" / "serve.py").is_file():
        cmd = [sys.executable, str(app), *lifetimes]
        env.update(PORT=str(port), ADDRESS="127.0.0.1", BOKEH_ALLOW_WS_ORIGIN=",".join(origins))
    else:
        cmd = [sys.executable, "-m", "panel", "serve", str(app), "--port", str(port), "--address", "127.0.0.1",
               *[a for o in origins for a in ("--allow-websocket-origin", o)], "--index", app.stem, *lifetimes]
    if watch is not None:  # the same server, its loop's turns timed from outside the code under test
        if cmd[1] != str(app):
            raise ValueError("only the app's own server (python app.py) can be watched")
        cmd[1:1] = [str(ROOT / "testing" / "loop_watch.py")]
        env["EXPLORER_LOOP_WATCH"] = str(watch)
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=app.parent, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/{app.stem}"
        wait_for_http(url, proc)
        yield url, psutil.Process(proc.pid)
    finally:
        stop(proc, timeout=10)
        if log:
            out.close()


def run_beside(server, scenario) -> dict:
    """Run ``scenario()`` (a coroutine function returning a dict) on an in-process Bokeh ``server``'s own loop, as a
    client beside it, until it ends; its result."""
    result = {}

    async def main():
        try:
            result.update(await scenario())
        finally:
            server.io_loop.stop()

    server.io_loop.add_callback(main)
    server.io_loop.start()
    return result


def ws_url(page_url: str) -> str:
    return page_url.replace("http://", "ws://", 1) + "/ws"


class Sampler:
    """Samples a process's CPU (fraction of one core) and resident memory every ``interval`` seconds."""

    def __init__(self, proc: psutil.Process, interval: float = 0.5):
        self.proc, self.interval = proc, interval
        self.cpu: list[float] = []
        self.rss: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.proc.cpu_percent(None)
        while not self._stop.wait(self.interval):
            try:
                self.cpu.append(self.proc.cpu_percent(None) / 100)
                self.rss.append(self.proc.memory_info().rss)
            except psutil.Error:
                return

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.cpu_times0 = self.proc.cpu_times()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        t = self.proc.cpu_times()
        self.elapsed = time.perf_counter() - self.t0
        self.cpu_seconds = (t.user + t.system) - (self.cpu_times0.user + self.cpu_times0.system)
