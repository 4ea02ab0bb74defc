"""A lecture hall on loopback: a real Redis and several app processes sharing rooms through it.

Each process is ``python app.py`` on its own free port with the settings docs/operations.md gives for a lecture
hall (``EXPLORER_REDIS_URL``, one ``EXPLORER_ROOM_SECRET`` for all), reached directly (``urls[i]``), so a test
chooses which process each page is on. For the tests of rooms across processes and ``bench/lecture.py``.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from testing.redis import RedisServer
from testing.server import ROOT, free_port, stop, wait_for_http


class Hall:
    """``processes`` app processes sharing rooms through ``redis`` (started unless ``start_redis`` is False: its
    port is then one where nothing answers yet); logs in ``directory``. Stop with :meth:`close`."""

    def __init__(self, directory: Path, processes: int = 2, env: dict[str, str] | None = None,
                 start_redis: bool = True):
        self.directory = Path(directory)
        self.redis = RedisServer(self.directory / "redis")
        self.procs: list[subprocess.Popen] = []
        self.urls: list[str] = []
        self.log_paths: list[Path] = []
        self.secret = secrets.token_urlsafe(32)
        try:
            if start_redis:
                self.redis.start()
            for _ in range(processes):
                self.start_process(env)
            for proc, url in zip(self.procs, self.urls, strict=True):
                wait_for_http(url + "liveness", proc, timeout=180)
        except BaseException:
            self.close()
            raise

    def start_process(self, env: dict[str, str] | None = None) -> int:
        """One more app process; returns its index (wait for it with ``wait_for_http``)."""
        port = free_port()
        settings = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1",
                    "BOKEH_ALLOW_WS_ORIGIN": f"127.0.0.1:{port}", "EXPLORER_ROOM_SECRET": self.secret,
                    "EXPLORER_REDIS_URL": self.redis.url, **(env or {})}
        path = self.directory / f"app-{len(self.procs)}-{port}.log"
        with open(path, "w") as log:
            self.procs.append(subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=settings, stdout=log,
                                               stderr=subprocess.STDOUT))
        self.urls.append(f"http://127.0.0.1:{port}/")
        self.log_paths.append(path)
        return len(self.procs) - 1

    def ws(self, i: int) -> str:
        """Process ``i``'s page's websocket address (``python app.py`` serves the page at /app)."""
        return self.urls[i].replace("http://", "ws://", 1) + "app/ws"

    def log(self, i: int) -> str:
        return self.log_paths[i].read_text()

    def kill(self, i: int) -> None:
        """Process ``i`` dies at once (SIGKILL): no goodbye to Redis, its pages cut off."""
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def wait_for_log(self, i: int, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while text not in (log := self.log(i)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"process {i} did not log {text!r}:\n{log[-3000:]}")
            time.sleep(0.05)
        return log

    def close(self) -> str:
        """Stop every process, once its pages' websockets have closed (a process stopped while one is open logs
        Bokeh's AssertionError), then Redis; returns the processes' logs."""
        running = [i for i, p in enumerate(self.procs) if p.poll() is None]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(
                (log := self.log(i)).count("WebSocket connection opened") > log.count("WebSocket connection closed")
                for i in running):
            time.sleep(0.1)
        stop(*[self.procs[i] for i in running])
        self.redis.stop()
        return "".join(path.read_text() for path in self.log_paths)
