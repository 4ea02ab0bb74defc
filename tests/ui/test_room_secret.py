"""Presenter links are signed by the server's secret: they survive a restart and reach another process only with it.

Real servers (``python app.py``) and real pages: a teacher presses Present on one server, and the presenter
link it gets is opened on a second process, or on the same one after a restart.
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
def app_server(port: int | None = None, secret: str | None = None):
    """``python app.py`` on ``port`` (a free one by default); yields its base URL."""
    port = port or free_port()
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1"}
    env.pop("EXPLORER_ROOM_SECRET", None)
    if secret is not None:
        env["EXPLORER_ROOM_SECRET"] = secret
    # both addresses a link can name: this server's, and the other one's (the pages' websockets open from either)
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


def test_a_presenter_link_works_on_every_process_with_the_secret_and_on_none_without(browser):
    with app_server(secret=SECRET) as a, app_server(secret=SECRET) as b, app_server() as c:
        teacher = new_page(browser, a)
        code, _ = present(teacher)
        assert teacher.get_by_text("lasts until the server restarts").count() == 0  # the secret is configured
        link = presenter_link(teacher)
        elsewhere = new_page(browser, b + link)  # another process, started with the same EXPLORER_ROOM_SECRET
        assert is_presenting(elsewhere)
        assert elsewhere.locator(".room-code").text_content().replace(" ", "") == code
        # a process with another secret (here: none) refuses it, and the page says so
        refused = new_page(browser, c + link)
        refused.get_by_text(f"This presenter link is not valid for room {code} on this server").wait_for(timeout=WAIT)
        assert not is_presenting(refused)
        assert 'Query of "love": q = (0.000, 1.000)' in readout(refused)
        close(teacher, elsewhere, refused)


def test_a_restart_keeps_presenter_links_with_the_secret_and_ends_them_without(browser):
    for secret in (SECRET, None):
        port = free_port()
        with app_server(port, secret) as url:
            teacher = new_page(browser, url)
            code, join = present(teacher)
            assert (teacher.get_by_text("lasts until the server restarts").count() == 0) == (secret is not None)
            link = presenter_link(teacher)
            close(teacher)
        with app_server(port, secret) as url:  # the same server, started again
            teacher = new_page(browser, url + link)
            if secret is not None:
                assert is_presenting(teacher)
                student = follower(browser, join)
                teacher.mouse.click(*to_page(teacher, "query-plot", 1.0, 1.0))
                wait_for_readout(student, r"q = \(1\.000, 1\.000\)", WAIT)
                close(student)
            else:
                teacher.get_by_text("Presenter links stop working when the server restarts").wait_for(timeout=WAIT)
                assert not is_presenting(teacher)
            close(teacher)
