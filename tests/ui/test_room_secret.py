"""Presenter links are signed by the server's secret: they survive a restart only with it.

Real servers (``python app.py``) and real pages: a teacher presses Present on a server started with the secret; the
presenter link it gets is opened on a server without it (the tests' shared one, which draws its own at start), then
on the first server after a restart.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from urllib.parse import urlparse

from tests.ui.conftest import ROOT, free_port, stop, wait_for_http
from tests.ui.helpers import readout, to_page, wait_for_readout
from tests.ui.test_follow import WAIT, close, follower, is_presenting, new_page, present

SECRET = "the school's own secret: thirty-two characters or more"


@contextmanager
def app_server(port: int, secret: str):
    """``python app.py`` on ``port`` with ``EXPLORER_ROOM_SECRET`` set to ``secret``; yields its base URL."""
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1", "EXPLORER_ROOM_SECRET": secret}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/liveness", proc, timeout=180)
        yield f"http://127.0.0.1:{port}/"
    finally:
        stop(proc)


def presenter_link(page) -> str:
    """The presenter's own address without its server: ``?room=CODE&token=…`` and the view."""
    return "?" + urlparse(page.url).query


def test_a_presenter_link_survives_a_restart_with_the_secret_and_works_on_no_process_without(browser, server):
    port = free_port()
    with app_server(port, SECRET) as url:
        teacher = new_page(browser, url)
        code, join = present(teacher)
        assert teacher.get_by_text("lasts until the server restarts").count() == 0  # the secret is configured
        link = presenter_link(teacher)
        # a process without the secret refuses the link, and the page says why links stop working
        refused = new_page(browser, server + link)
        refused.get_by_text(f"This presenter link is not valid for room {code} on this server").wait_for(timeout=WAIT)
        refused.get_by_text("Presenter links stop working when the server restarts").wait_for(timeout=WAIT)
        assert not is_presenting(refused)
        assert 'Query of "love": q = (0.000, 1.000)' in readout(refused)
        # and its own presenter is told the link lasts only until then
        unsigned = new_page(browser, server)
        present(unsigned)
        unsigned.get_by_text("Your presenter link lasts until the server restarts").wait_for(timeout=WAIT)
        close(teacher, refused, unsigned)
    with app_server(port, SECRET) as url:  # the same server, started again: a process that never saw the room
        teacher = new_page(browser, url + link)
        assert is_presenting(teacher)
        assert teacher.locator(".room-code").text_content().replace(" ", "") == code
        student = follower(browser, join)
        teacher.mouse.click(*to_page(teacher, "query-plot", 1.0, 1.0))
        wait_for_readout(student, r"q = \(1\.000, 1\.000\)", WAIT)
        close(student, teacher)
