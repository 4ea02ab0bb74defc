"""``deploy/nginx.conf`` in front of several app processes on loopback: for the reverse-proxy test and benchmarks.

nginx runs in the foreground with a temporary prefix, on free ports; the app processes are ``python app.py``
with the settings docs/operations.md gives for running behind a proxy, sharing rooms through a Redis of their own
(``testing/redis.py``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

from testing.redis import RedisServer
from testing.server import ROOT, free_port, stop, wait_for_http

CONFIG = ROOT / "deploy" / "nginx.conf"


def nginx_binary() -> str:
    path = os.environ.get("NGINX") or shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)
    if not path:
        raise RuntimeError("no nginx found: install Debian's `nginx` (scripts/test does, as root) or set $NGINX")
    return path


def site_config(listen: int, backends: list[int], sticky: bool = True) -> str:
    """deploy/nginx.conf with its ports replaced; ``sticky=False`` drops the hash (round robin)."""
    text = CONFIG.read_text()
    text, n_listen = re.subn(r"listen 80;", f"listen 127.0.0.1:{listen};", text)
    servers = "".join(f"    server 127.0.0.1:{p};\n" for p in backends)
    text, n_up = re.subn(r"(    server 127\.0\.0\.1:\d+;\n)+", servers, text)
    assert (n_listen, n_up) == (1, 1), "deploy/nginx.conf no longer has the `listen 80;` / upstream lines"
    if not sticky:
        text, n_hash = re.subn(r"\n\s*hash \$explorer_route consistent;", "", text)
        assert n_hash == 1
    return text


def main_config(prefix: Path, site: Path) -> str:
    """What Debian's /etc/nginx/nginx.conf provides around conf.d/, kept inside ``prefix``."""
    temp = "\n".join(f"    {d}_temp_path {prefix / d};" for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""daemon off;
master_process on;
worker_processes 1;
pid {prefix / 'nginx.pid'};
error_log {prefix / 'error.log'} info;
events {{ worker_connections 256; }}
http {{
    access_log {prefix / 'access.log'};
{temp}
    include {site};
}}
"""


class Stack:
    """Two app processes behind nginx, and the Redis they share rooms through, all on loopback; stopped by
    ``close``."""

    def __init__(self, tmp: Path, sticky: bool = True, processes: int = 2, env: dict[str, str] | None = None):
        self.procs: list[subprocess.Popen] = []
        self.logs = []
        self.redis = RedisServer(tmp / "redis")
        self.listen = free_port()
        self.backends = [free_port() for _ in range(processes)]
        self.url = f"http://127.0.0.1:{self.listen}/"
        # every process signs and checks presenter links with the same key, as docs/operations.md tells a school: a
        # presenter link may reach any process
        secret = secrets.token_urlsafe(32)
        try:
            self.redis.start()
            for port in self.backends:
                settings = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1",
                            "BOKEH_ALLOW_WS_ORIGIN": f"127.0.0.1:{self.listen}", "EXPLORER_USE_XHEADERS": "1",
                            "EXPLORER_ROOM_SECRET": secret, "EXPLORER_REDIS_URL": self.redis.url, **(env or {})}
                log = open(tmp / f"app-{port}.log", "w+")
                self.logs.append(log)
                self.procs.append(subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=settings,
                                                   stdout=log, stderr=subprocess.STDOUT))
            for port, proc in zip(self.backends, self.procs, strict=True):
                wait_for_http(f"http://127.0.0.1:{port}/liveness", proc)
            site = site_config(self.listen, self.backends, sticky)
            self.access_log = tmp / "site-access.log"
            site, n_log = re.subn(r"access_log /var/log/nginx/\S+", f"access_log {self.access_log}", site)
            assert n_log == 1, "deploy/nginx.conf no longer has its access_log line"
            (tmp / "site.conf").write_text(site)
            (tmp / "nginx.conf").write_text(main_config(tmp, tmp / "site.conf"))
            nginx = nginx_binary()
            check = subprocess.run([nginx, "-t", "-p", str(tmp), "-c", str(tmp / "nginx.conf")],
                                   capture_output=True, text=True)
            assert check.returncode == 0, f"nginx rejects the configuration:\n{check.stderr}"
            self.nginx_log = open(tmp / "nginx.out", "w+")
            self.nginx = subprocess.Popen([nginx, "-p", str(tmp), "-c", str(tmp / "nginx.conf")],
                                          stdout=self.nginx_log, stderr=subprocess.STDOUT)
            self.procs.append(self.nginx)
            self.nginx.stdout = self.nginx_log
            wait_for_http(self.url + "liveness", self.nginx)
        except BaseException:
            self.close()
            raise

    def sessions(self) -> list[int]:
        """Websockets open on each app process, from its log (Bokeh logs each open and close)."""
        counts = []
        for log in self.logs:
            text = Path(log.name).read_text()
            counts.append(text.count("WebSocket connection opened") - text.count("WebSocket connection closed"))
        return counts

    def wait_for_sessions(self, ok, timeout: float = 10) -> list[int]:
        """Poll ``sessions()`` until ``ok(counts)``; return the last counts either way."""
        deadline = time.monotonic() + timeout
        while not ok(counts := self.sessions()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return counts

    def close(self) -> str:
        """Stop nginx, let the apps see their websockets close, then stop the apps; return their logs."""
        apps, others = self.procs[:len(self.logs)], self.procs[len(self.logs):]
        stop(*others)
        # a process stopped while it still holds a websocket logs an AssertionError from Bokeh's shutdown
        self.wait_for_sessions(lambda counts: not any(counts))
        stop(*apps)
        self.redis.stop()
        text = ""
        for log in self.logs:
            log.seek(0)
            text += log.read()
            log.close()
        return text
