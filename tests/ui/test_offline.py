"""A school network may have no internet: the page must ask nothing of any host but the one serving it, and
everything it asks of its own server must be there (KaTeX's fonts, which Panel's bundle lacks, among them).

Every request of a full session is recorded (page load, a drag of the query, a click on every matrix
row, Reset, then every button, switch, list and text field the page has); requests to other hosts
are refused, as on an offline network, and listed in the failure.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from server import serve
from testing.browser import APP_LOADED
from tests.ui.helpers import (
    KATEX_FONTS,
    QUERY_PLOT_READY,
    failed_requests,
    move_seen,
    open_app,
    past_double_tap,
    readout,
    show_tab,
    to_page,
    wait_for_drag_settled,
    wait_for_drawn,
    wait_for_readout,
    weights,
)

# a busy shared machine can take seconds per round trip
LOADED = 60_000
LOCAL_SCHEMES = {"data", "blob", "about"}


def is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    host = parts.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.mark.parametrize("url, local", [
    ("http://127.0.0.1:5006/static/js/bokeh.min.js", True), ("ws://localhost:5006/ws", True),
    ("http://[::1]:8080/", True), ("data:font/woff2;base64,AA", True),
    ("https://fonts.googleapis.com/css?family=Roboto", False), ("https://cdn.jsdelivr.net/npm/x", False),
    ("http://10.0.0.5:5006/", False), ("http://localhost.example.com/", False),
])
def test_is_loopback(url, local):
    assert is_loopback(url) is local


def _use_every_control(page) -> int:
    """Open every tab; click every button, switch and checkbox; pick every option of every list; type into text fields.

    Using one control can re-render others (a preset rebuilds the editor), so each is looked up again
    by position just before use, and one that has gone meanwhile is passed over.
    """
    def drawn() -> None:  # what the control changed is drawn; a control that opened another page: that page
        try:
            page.wait_for_function(APP_LOADED, timeout=LOADED)
            wait_for_drawn(page)
        except PlaywrightError:  # the page navigated meanwhile (Present opens the presenter's link)
            page.wait_for_function(APP_LOADED, timeout=LOADED)
            wait_for_drawn(page)

    def each(selector: str, use) -> int:
        done = 0
        for i in range(page.locator(selector).count()):
            element = page.locator(selector).nth(i)
            try:
                use(element)
            except PlaywrightTimeout:
                continue
            drawn()
            done += 1
        return done

    def pick_each(select):
        for value in select.evaluate("s => Array.from(s.options, o => o.value)", timeout=3000):
            select.select_option(value, timeout=3000)

    def type_one(field):
        field.fill("1", timeout=3000)
        field.press("Enter", timeout=3000)

    return (each(".bk-tab", lambda t: t.click(timeout=3000))
            + each("button:visible", lambda b: b.click(timeout=3000))
            + each("input[type=checkbox]:visible, input[type=radio]:visible", lambda b: b.click(timeout=3000))
            + each("select:visible", pick_each)
            + each("input[type=text]:visible, input:not([type]):visible, textarea:visible", type_one))


def test_the_formulas_are_drawn_in_katex_s_fonts_and_no_request_fails(browser, server):
    """Panel's KaTeX has no fonts/ folder: each page asked for its fonts in vain (nine 404s) and drew its formulas
    in a system serif. The server serves them where KaTeX's stylesheet looks (server/katex_fonts.py)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        failed = failed_requests(page)
        open_app(page, server)
        show_tab(page, "Recipe")  # the tab of formulas with the learner's numbers
        page.locator(".katex-html").first.wait_for(timeout=LOADED)
        fonts = page.evaluate(KATEX_FONTS)
    finally:
        context.close()
    assert not failed, "requests that failed:\n" + "\n".join(failed)
    assert "KaTeX_Main normal loaded" in fonts["faces"] and "KaTeX_Math italic loaded" in fonts["faces"], fonts
    assert all(face.endswith(" loaded") for face in fonts["faces"]), fonts
    assert fonts["family"].startswith("KaTeX_Main"), fonts


def test_a_full_session_requests_nothing_from_other_hosts(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    requested: list[str] = []
    foreign: list[str] = []

    def guard(route):
        url = route.request.url
        requested.append(url)
        if is_loopback(url):
            route.continue_()
        else:
            foreign.append(f"{route.request.resource_type} {url}")
            route.abort("internetdisconnected")

    context.route("**/*", guard)
    page = context.new_page()
    sockets, sent = [], []

    def on_socket(ws):
        sockets.append(ws.url)
        ws.on("framesent", lambda payload: sent.append(len(payload)))

    page.on("websocket", on_socket)
    errors = []
    page.on("pageerror", lambda e: errors.append(f"{e} (at {page.url})\n{e.stack}"))
    failed = failed_requests(page)  # said with a page error: a script that did not load leaves its names undefined
    try:
        open_app(page, server)

        # drag the query from q_love to k_NLP, button held, and release
        # each move aims at the point as the plot draws it now: the first relayout may shift the frame a pixel
        page.mouse.move(*to_page(page, "query-plot", 0.0, 1.0))
        page.mouse.down()
        for i in range(1, 11):
            move_seen(page, *to_page(page, "query-plot", i / 10, 1.0))
        wait_for_readout(page, r"q = \(1\.000, 1\.000\)", timeout=LOADED)
        page.mouse.up()
        assert weights(page) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)

        # the readout shows "love" after the drag: each click below changes it, so each wait means something
        show_tab(page, "Matrix", "attention-matrix")
        for row, token in [(2, "NLP"), (0, "I"), (1, "love")]:
            past_double_tap(page)
            page.mouse.click(*to_page(page, "attention-matrix", 0, row))
            wait_for_readout(page, f'Query of "{token}"', timeout=LOADED)

        page.get_by_role("button", name="Reset example").click()
        wait_for_readout(page, r'Query of "love": q = \(0\.000, 1\.000\)', timeout=LOADED)

        used = _use_every_control(page)
        assert used >= 1, "found no control on the page: the selectors no longer match the page's widgets"
        assert readout(page), "the readout disappeared after using the controls"
        # let the server finish its replies (closing the page mid-message makes Tornado log a traceback): they are
        # all in once it has answered one more thing the page sends, a tap on the query plot, taken in order
        page.wait_for_function(APP_LOADED, timeout=LOADED)
        page.wait_for_function(QUERY_PLOT_READY, timeout=LOADED)
        page.mouse.click(*to_page(page, "query-plot", 0.5, 0.5))
        wait_for_drag_settled(page, timeout=LOADED)
    finally:
        context.close()

    assert not foreign, "the page asked hosts other than its server:\n" + "\n".join(foreign)
    assert sockets and all(is_loopback(u) for u in sockets), sockets
    assert len(requested) >= 5, f"only {len(requested)} requests recorded: the recorder is not seeing the page"
    assert not errors, f"JavaScript errors on the page: {errors}; requests that failed: {failed}"
    limit = int(next(s.default for s in serve.SETTINGS if s.env == "EXPLORER_WS_MAX_MESSAGE_BYTES"))
    assert sent and max(sent) < limit / 10, f"the page sent a {max(sent)}-byte message; the server's limit is {limit}"
