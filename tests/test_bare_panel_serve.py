"""A bare ``panel serve app.py``, as app.py advertises it, has every patch to Bokeh and Panel (server/patches/).

Until app.py installed them itself, only ``python app.py`` and ``python -m server`` did: under ``panel serve
app.py`` a message of a thousand clicks was applied in one turn of the loop, and a page's events that arrived
together lost their changes. The page's HTML is asked for first, as a browser does: app.py runs for it, before
the page's websocket connects.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from testing.protocol_client import Learner, clicked
from testing.server import ROOT, free_port, stop, wait_for_http
from tests.test_hostile_traffic import _button, _closed, _switch_and_click


@pytest.fixture(scope="module")
def bare_server():
    """``panel serve app.py`` on a free loopback port, with no setting of the app's own: yields (port, log path)."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("BOKEH_ALLOW_WS_ORIGIN", None)
    log_path = ROOT / "tests" / "server-bare.log"
    with open(log_path, "w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", "app.py", "--port", str(port),
                                 "--address", "127.0.0.1"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/app", proc, timeout=180)
            yield port, log_path
        finally:
            stop(proc)


def _run(coro, timeout: float = 120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_the_websocket_guard_closes_a_message_of_more_events_than_a_page_sends(bare_server):
    port, log_path = bare_server

    async def flood():
        page = Learner(f"ws://127.0.0.1:{port}/app/ws")
        await page.connect(keep_doc=True)
        page.listening = asyncio.ensure_future(page.listen())
        await page.send(*[clicked(_button(page, "Reset example"))] * 20)
        closed = await _closed(page, timeout=30)
        page.close()
        return closed

    assert _run(flood()), "a message of 20 clicks did not close its socket under panel serve app.py"
    assert "a message of 20 events" in log_path.read_text()


def test_a_switch_and_buttons_pressed_at_once_are_all_taken(bare_server):
    """hold_page_events in force: each Next and Back reaches the step-through's readout, and Bokeh refuses nothing."""
    port, log_path = bare_server
    lines, shown = _run(_switch_and_click(port))  # tests/test_hostile_traffic.py's page: the app is at /app here too
    assert lines and all(line == 'Query of "love": q = (0.000, 1.000)' for line in lines), lines
    assert shown == ("1.000", "1.000")
    assert "_pending_writes" not in log_path.read_text()

