"""Debian's ``redis-server`` on a free loopback port, for the tests and benchmarks of rooms shared across processes.

It keeps nothing on disk (``--save '' --appendonly no``): a restart starts it empty, the hardest case for the
processes sharing rooms through it (``services/rooms_redis.py`` puts back what they hold). ``restart()`` stops it and
starts it again on the same port; ``stop()`` and ``kill()`` leave it stopped. :func:`redis_server` is the pytest
fixture of one for a test.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from testing.server import free_port


def redis_binary() -> str:
    path = os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/local/bin/redis-server") if os.access(p, os.X_OK)), None)
    if not path:
        raise RuntimeError("no redis-server found: install Debian's `redis-server` (scripts/test does, as root) "
                           "or set $REDIS_SERVER")
    return path


class RedisServer:
    """``redis-server`` on 127.0.0.1 and a free port (``port``, ``url``); its log in ``directory``."""

    def __init__(self, directory: Path, port: int | None = None):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.returned_at: float | None = None  # when it last started answering (time.monotonic)

    def start(self, timeout: float = 30) -> RedisServer:
        log = open(self.directory / "redis.log", "a")
        self.proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory), "--protected-mode", "no"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: see {self.directory}/redis.log")
            if time.monotonic() > deadline:
                raise TimeoutError(f"redis-server did not answer on port {self.port} within {timeout} s")
            time.sleep(0.02)
        self.returned_at = time.monotonic()
        return self

    def ping(self) -> bool:
        """Whether it answers PING (in Redis's own protocol, without a client library)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop it as a service manager would (SIGTERM), and wait for it."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """Stop it at once (SIGKILL), as a crash would."""
        self._end(signal.SIGKILL)

    def _end(self, sig) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def redis_server_fixture(tmp_path):
    """A test's own Redis, stopped after it (``redis_server``, below, is the fixture a test module imports)."""
    with RedisServer(tmp_path / "redis") as server:
        yield server


try:  # the fixture, where pytest is installed (the tests); the benchmarks use RedisServer alone
    import pytest

    redis_server = pytest.fixture(redis_server_fixture, name="redis_server")
except ImportError:  # pragma: no cover
    pass
