"""Browser-test fixtures: a real server in a subprocess and the system Chromium.

Playwright never downloads a browser here: it drives the Chromium found at
``$CHROMIUM`` or on the PATH (Debian's ``chromium-headless-shell``, else ``chromium``: testing/browser.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from services.sessions import SCREENED
from testing.browser import CHROMIUM_ARGS, chromium
from testing.server import free_port, stop, wait_for_http  # noqa: F401  (the tests' server helpers too)

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "tests" / "ui" / "screenshots"
#: ``SCREENSHOTS=1``: the layout walks save every tab on every screen in :data:`SCREENSHOTS`, for a person to look
#: at; otherwise only those of a tab that fails (each costs the page and the browser about 0.1 s of CPU, and the walks
#: show some 500 tabs).
EVERY_SCREENSHOT = os.environ.get("SCREENSHOTS", "") not in ("", "0")
#: A test whose work is pictures for a person to look at (what it checks besides, others check too): run with
#: ``SCREENSHOTS=1``.
pictures = pytest.mark.skipif(not EVERY_SCREENSHOT, reason="pictures for a person to look at: SCREENSHOTS=1")
#: The only fonts the tests' Chromium sees, the same on every machine (see the file).
FONTS = ROOT / "tests" / "ui" / "fonts.conf"
#: Each font file :data:`FONTS` needs, by the Debian package that has it (tests/ui/fonts.txt, which scripts/test reads).
FONT_FILES = dict(line.split() for line in (ROOT / "tests" / "ui" / "fonts.txt").read_text().splitlines()
                  if line.strip() and not line.startswith("#"))
#: Tornado's log of a websocket write to a page that had already closed.
CLOSED_SOCKET = re.compile(r"Task exception was never retrieved\n"
                            r"future: <Task finished[^\n]*WebSocketClosedError\(\)>\n"
                            r"(?:.*\n)*?tornado\.websocket\.WebSocketClosedError\n")


def server_log(name: str) -> Path:
    """``tests/<name>`` for a server's log, one per pytest-xdist worker (``ui/server.gw1.log``): workers run side
    by side, each with servers of its own."""
    path = ROOT / "tests" / name
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return path.with_name(f"{path.stem}.{worker}{path.suffix}") if worker else path


@contextmanager
def serve_script(name: str):
    """``tests/ui/<name>`` (a variant of the app) served on a free loopback port; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "ui" / name)],
                            env={**os.environ, "PORT": str(port)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", proc)
        yield f"http://127.0.0.1:{port}/"
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def server():
    """``python app.py`` on a free loopback port; yields its base URL and its log."""
    port = free_port()
    # the pseudo-language ?lang=xx for tests/ui/test_languages.py; nothing changes for a page without it
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1", "EXPLORER_PSEUDO_LOCALE": "1"}
    # a server without EXPLORER_ROOM_SECRET, as tests/ui/test_room_secret.py counts on, whatever the shell exports
    env.pop("EXPLORER_ROOM_SECRET", None)
    log = open(server_log("ui/server.log"), "w+")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.log = log
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", proc)
        yield f"http://127.0.0.1:{port}/"
    finally:
        # Bokeh logs an AssertionError when it is stopped while a websocket is still closing: let the
        # last pages' websockets close first (the server logs each open and close)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            log.seek(0)
            text = log.read()
            if text.count("WebSocket connection opened") <= text.count("WebSocket connection closed"):
                break
            time.sleep(0.1)
        stop(proc)
        log.seek(0)
        text = log.read()
        log.close()
        # A browser closing its page while the server writes to it is not a server error.
        text = re.sub(CLOSED_SOCKET, "", text)
        assert "Traceback" not in text, f"the server logged a traceback:\n{text}"
        # every page these tests drive writes only what a page may (server/guard.py's screen_page_patch)
        screened = [line for line in text.splitlines() if SCREENED in line]
        assert not screened, "the server screened out what a page of ours sent:\n" + "\n".join(screened)


@pytest.fixture(scope="session")
def browser():
    path = chromium()
    if not path:
        pytest.fail("no Chromium found: install Debian's `chromium-headless-shell` or set $CHROMIUM")
    missing = [package for package, file in FONT_FILES.items() if not Path(file).exists()]
    if missing:
        pytest.fail(f"the browser tests measure text in fixed fonts: install Debian's {' '.join(missing)}")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS,
                              env={**os.environ, "FONTCONFIG_FILE": str(FONTS)})
        yield b
        b.close()


def said_missing(message, errors: list) -> None:
    """A console warning of link/browser.js that BokehJS lacks a name the page patches (it was written for the BokehJS
    the pinned Bokeh serves): an error of the page, for the tests."""
    if message.type == "warning" and "BokehJS has no" in message.text:
        errors.append(message.text)


@pytest.fixture
def page(browser, server):
    # the page's language follows the browser's: tests read English unless they ask for another
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: said_missing(m, errors))
    from tests.ui.helpers import open_app

    open_app(pg, server)
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


#: The two screens the layout must fit without scrolling: a classroom projector and a full-HD monitor.
VIEWPORTS = {"1024x768": {"width": 1024, "height": 768}, "1920x1080": {"width": 1920, "height": 1080}}


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request):
    """Each of :data:`VIEWPORTS` in turn (tests using it run once per size)."""
    return VIEWPORTS[request.param]


@pytest.fixture
def open_page(browser, server):
    """``open_page(address="", viewport=None, **context_options)``: the app in a fresh browser context.

    ``address`` is appended to the server URL (e.g. ``"?mode=projector"``). JavaScript errors fail the test.
    """
    from tests.ui.helpers import open_app

    contexts, errors = [], []

    def _open(address: str = "", viewport: dict | None = None, **options):
        context = browser.new_context(viewport=viewport or {"width": 1280, "height": 800},
                                      **{"locale": "en-US", **options})
        contexts.append(context)
        pg = context.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: said_missing(m, errors))
        open_app(pg, server + address)
        return pg

    yield _open
    for c in contexts:
        c.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
