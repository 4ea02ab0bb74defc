"""deploy/compose.yaml against deploy/nginx.conf and the server's settings, checked without a container engine: the
lecture hall it describes is the one the nginx tests run (tests/ui/test_nginx.py) and the settings each process
would start with are ones the server takes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from server.serve import serve_argv

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def resolved(value: str) -> str:
    """A value as compose writes it, its ``${VAR:?message}`` given a sample value."""
    samples = {"EXPLORER_HOST": "explorer.school.example", "EXPLORER_ROOM_SECRET": "s" * 43}
    return re.sub(r"\$\{(\w+):\?[^}]*\}", lambda m: samples[m[1]], value)


def test_the_compose_files_app_processes_are_nginx_confs_upstream_and_share_one_redis_and_secret():
    services = compose()["services"]
    apps = {name: s for name, s in services.items() if name.startswith("app-")}
    upstream = re.findall(r"^\s*server 127\.0\.0\.1:(\d+);", (DEPLOY / "nginx.conf").read_text(), re.M)
    assert sorted(s["environment"]["PORT"] for s in apps.values()) == sorted(upstream) and len(upstream) == 3
    assert "./nginx.conf:/etc/nginx/conf.d/default.conf:ro" in services["nginx"]["volumes"]
    for app in apps.values():
        env = {k: resolved(str(v)) for k, v in app["environment"].items()}
        assert app["network_mode"] == "service:nginx"  # 127.0.0.1:PORT, as nginx.conf names them
        assert env["ADDRESS"] == "127.0.0.1" and env["EXPLORER_USE_XHEADERS"] == "1"
        assert re.fullmatch(r"redis://(\w+):6379/0", env["EXPLORER_REDIS_URL"])[1] in services
        assert app["environment"]["EXPLORER_ROOM_SECRET"].startswith("${EXPLORER_ROOM_SECRET:?")
        argv = serve_argv(env)  # the settings this process starts with are ones the server takes
        assert argv[argv.index("--port") + 1] == env["PORT"] and "--use-xheaders" in argv
    assert "--appendonly" in services["redis"]["command"]
