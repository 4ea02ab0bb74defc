"""One learner's bad input, and many learners at once, in a real browser: nothing leaks, nothing breaks.

Expected numbers come from :func:`reference`, a few lines of plain Python written from the formula
(Vaswani et al. 2017, eq. 1), not from the app's core. The shared ``server`` fixture fails the run if the
server logged a traceback.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest

from tests.ui.conftest import ROOT, free_port, stop, wait_for_http
from tests.ui.helpers import (
    READOUT,
    numbers,
    open_app,
    readout,
    show_tab,
    to_page,
    wait_for_drag_settled,
    wait_for_readout,
    wait_for_server_readout,
)
from tests.ui.test_teaching import XSS, type_into

KEYS = [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
VALUES = [2.0, 6.0, 4.0]
#: The query plane's extent (widgets/query_plot.py): a drag past the edge stops there.
PLANE = (-1.5, 2.5)
LOADED = 60_000


def reference(q, keys=KEYS, values=VALUES) -> tuple[list[float], float]:
    """Weights and output of scaled dot-product attention for one query, in plain Python."""
    scores = [(q[0] * k[0] + q[1] * k[1]) / math.sqrt(len(q)) for k in keys]
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    weights = [x / sum(e) for x in e]
    return weights, sum(a * v for a, v in zip(weights, values, strict=True))


def shown(page) -> tuple[tuple[float, float], list[float], float]:
    """q, the weights and the output as the readout writes them."""
    text = readout(page)
    q = tuple(float(c) for c in re.search(r"q = \((-?\d+\.\d+), (-?\d+\.\d+)\)", text).groups())
    return q, numbers(text, "Weights"), numbers(text, "Output")[0]


def assert_consistent(page, values=VALUES) -> tuple[float, float]:
    """The readout's weights and output are those of its own q (to the 4 decimals shown)."""
    q, w, out = shown(page)
    ref_w, ref_out = reference(q, values=values)
    assert w == pytest.approx(ref_w, abs=1.5e-3) and out == pytest.approx(ref_out, abs=1e-2), readout(page)
    return q


def new_page(browser, server, size=(1024, 768)):
    page = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    open_app(page, server)
    return page


#: Typed text that is not a coordinate, and why each is refused.
BAD_NUMBERS = ["abc", "nan", "inf", "-1e400", "1e9", "", "0x10", "1,5", "<b>1</b>", XSS]
BAD_NAMES = ["", "<b>NLP</b>", XSS, "I", "x" * 200, "a;b"]


def test_every_input_path_refuses_bad_values_and_other_pages_are_untouched(browser, server):
    other = new_page(browser, server)
    other.mouse.click(*to_page(other, "query-plot", 2.0, -1.0))
    wait_for_readout(other, r"q = \(2\.000, -1\.000\)", timeout=LOADED)
    other_before = readout(other)

    page = new_page(browser, server)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    before = readout(page)
    assert before.startswith('Query of "love": q = (0.000, 1.000)')

    # number fields and token names (the Edit tab's table of q, keys, values and names)
    show_tab(page, "Edit")
    fields = {"field-q--0": "q[1]", "field-q--1": "q[2]", "field-k-0-0": "k_I[1]", "field-k-2-1": "k_NLP[2]",
              "field-v-1-0": "v_love"}
    for css, label in fields.items():
        for bad in BAD_NUMBERS:
            type_into(page, css, bad)
            page.locator(".field-message").filter(has_text=f"{label} refused").wait_for(timeout=LOADED)
            assert readout(page) == before, (label, bad)
    for bad in BAD_NAMES:
        type_into(page, "field-name-2-", bad)
        page.locator(".field-message").filter(has_text="name of token 3 refused").wait_for(timeout=LOADED)
        assert readout(page) == before, bad
    assert page.locator("img[src=x]").count() == 0 and page.locator("b", has_text="NLP").count() == 0
    assert dialogs == []

    # keys that are not shortcuts, with the page focused
    page.locator(".app-title h1").click()  # the title itself: the pane also holds the language menu
    for key in ["x", "9", "4", "Escape", "Delete", "Backspace", "Enter", "Tab"]:
        page.keyboard.press(key)
    # then a shortcut, from the title again (Tab moved the focus): its answer comes after anything those did
    page.locator(".app-title h1").click()
    page.keyboard.press("ArrowUp")
    wait_for_server_readout(page, r'^Query of "love": q = \(0\.000, 1\.100\)', timeout=LOADED)
    page.keyboard.press("ArrowDown")
    wait_for_server_readout(page, r'^Query of "love": q = \(0\.000, 1\.000\)', timeout=LOADED)
    assert readout(page) == before

    # a drag that leaves the plot and is released far outside it stops at the plane's edge
    show_tab(page, "Weights")
    page.mouse.move(*to_page(page, "query-plot", 0.0, 1.0))
    page.mouse.down()
    for x, y in [(300, 200), (700, 30), (1000, 5), (1020, 760)]:
        page.mouse.move(x, y, steps=4)
    page.mouse.up()
    wait_for_drag_settled(page, timeout=LOADED)  # the server has answered the release: its numbers are shown
    q = assert_consistent(page)
    assert all(PLANE[0] <= c <= PLANE[1] for c in q), q
    assert q != (0.0, 1.0), "the drag did not move q at all"

    # the other learner saw none of it, and still works
    assert readout(other) == other_before
    other.mouse.click(*to_page(other, "query-plot", 0.5, 0.5))
    wait_for_readout(other, r"q = \(0\.500, 0\.500\)", timeout=LOADED)
    assert page.errors == [] and other.errors == []
    page.context.close()
    other.context.close()


#: The address's q, as the page writes it (link/browser.js), and the first one's.
Q_IN_ADDRESS = "new URLSearchParams(location.search).get('q')"
FIRST_Q = "0.0,1.0"


@pytest.fixture(scope="module")
def class_of_ten(browser, server):
    """Ten learners' pages on one server (1024x768), shared by this module's tests of a class at once; each page's
    ``values`` are the v column it shows (:data:`VALUES` until a test edits it). A page's error fails the test that
    made it, or this fixture's teardown."""
    pages = []
    try:
        for _ in range(10):
            page = new_page(browser, server, size=(1024, 768))
            page.values = VALUES
            pages.append(page)
        yield pages
        assert not [p.errors for p in pages if p.errors]
    finally:
        for page in pages:
            page.context.close()


def test_ten_learners_keep_their_own_state(browser, server, class_of_ten):
    """Ten pages on one server, each with its own q; every other one also edits v_I (a class of thirty to sixty
    pages is the server tests' and the classroom bench's, over Bokeh's protocol).

    Each page's q is where its click landed, read from its address: on a machine loaded by other tests a page
    can still be settling (a few pixels) as it is clicked, and what is tested is that each page keeps its own.
    """
    pages, qs = class_of_ten, []
    for i, page in enumerate(pages):
        aim = (-1.0 + 0.5 * (i % 5), -1.0 + 0.5 * (i // 5))  # never the first q, (0, 1)
        page.mouse.click(*to_page(page, "query-plot", *aim))
        # the address holds the q the server took, in full
        page.wait_for_function(f"() => ![null, {FIRST_Q!r}].includes({Q_IN_ADDRESS})", timeout=LOADED)
        q = tuple(float(c) for c in page.evaluate(f"() => {Q_IN_ADDRESS}").split(","))
        assert q == pytest.approx(aim, abs=0.1), (i, q)
        qs.append(q)
        if i % 2:
            show_tab(page, "Edit")
            type_into(page, "field-v-0-0", str(10 + i))
            page.values = [10.0 + i, 6.0, 4.0]
            show_tab(page, "Weights")
    assert len(set(qs)) == 10
    for i, (page, q) in enumerate(zip(pages, qs, strict=True)):
        expected = reference(q, values=page.values)[1]
        text = wait_for_readout(page, rf"Output Σ aᵢvᵢ = {expected:.4f}".replace(".", r"\."), timeout=LOADED)
        shown = ", ".join(f"{c:.3f}".replace("-0.000", "0.000") for c in q)  # the page writes no "-0.000"
        assert text.startswith(f'Query of "love": q = ({shown})'), (i, text)
        assert page.errors == [], (i, page.errors)
    fresh = new_page(browser, server)
    assert readout(fresh).startswith('Query of "love": q = (0.000, 1.000)')
    assert numbers(readout(fresh), "Output")[0] == pytest.approx(reference((0.0, 1.0))[1], abs=1e-4)
    fresh.context.close()


def test_ten_learners_drag_at_once_and_each_ends_on_its_own_numbers(class_of_ten):
    """The class's pages drag together, each from where its q is; each page follows its own hand, then shows the
    server's numbers for where it let go (reference: :func:`reference`, with the page's own v)."""
    pages = class_of_ten
    ends = [(round(-1.2 + 0.35 * i, 2), round(2.2 - 0.3 * i, 2)) for i in range(len(pages))]
    starts = [to_page(p, "query-plot", *shown(p)[0]) for p in pages]
    targets = [to_page(p, "query-plot", *end) for p, end in zip(pages, ends, strict=True)]
    steps = 20
    for page, (x0, y0), (x1, y1) in zip(pages, starts, targets, strict=True):
        page.mouse.move(x0, y0)
        page.mouse.down()
        # the first move at once: a button held still for a quarter of a second is a press, not a drag
        page.mouse.move(x0 + (x1 - x0) / steps, y0 + (y1 - y0) / steps)
    seen = [set() for _ in pages]
    for k in range(2, steps + 1):  # the hands move together, one step each in turn
        for i, page in enumerate(pages):
            (x0, y0), (x1, y1) = starts[i], targets[i]
            page.mouse.move(x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps)
            if k % 4 == 0:
                seen[i].add(readout(page).splitlines()[0])
    for page in pages:
        page.mouse.up()
    for i, (page, (x, y)) in enumerate(zip(pages, ends, strict=True)):
        # live during the drag: the readout followed the hand, not only its start and end
        assert len(seen[i]) >= 4, (i, seen[i])
        wait_for_readout(page, rf'Query of "love": q = \({x:.3f}, {y:.3f}\)', LOADED)
        page.wait_for_function(  # the server's own numbers for the release point
            f"() => Bokeh.documents[0].get_model_by_name('readout').text.startsWith("
            f"'Query of \"love\": q = ({x:.3f}, {y:.3f})')", timeout=LOADED)
        assert_consistent(page, values=page.values)
        assert page.locator(READOUT).count() == 1
        assert page.errors == [], (i, page.errors)


def _restartable_server():
    """A server of its own on a free port, for a test that stops and restarts it: (its URL, start())."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "PORT": str(port)}

    def start():
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        wait_for_http(url, proc)
        return proc

    return url, start


def test_a_restarted_server_is_announced_and_the_address_restores_the_view(browser):
    """The page says it lost the server; after a restart, reloading its address gives the same view."""
    url, start = _restartable_server()
    proc = start()
    page = new_page(browser, url)
    try:
        page.keyboard.press("3")  # the query of NLP
        wait_for_readout(page, 'Query of "NLP"', timeout=LOADED)
        page.mouse.click(*to_page(page, "query-plot", 0.5, -0.25))
        wait_for_readout(page, r"q = \(0\.500, -0\.250\)", timeout=LOADED)
        page.wait_for_function("() => location.search.includes('row=NLP') && location.search.includes('q=0.5')")
        banner = page.get_by_test_id("connection-lost")
        assert banner.count() == 0

        stop(proc)
        banner.wait_for(timeout=LOADED)
        assert "Lost the connection to the server" in banner.text_content()
        assert banner.get_attribute("role") == "alert"

        proc = start()
        banner.get_by_role("button", name="Reload").click()
        wait_for_readout(page, r'Query of "NLP": q = \(0\.500, -0\.250\)', timeout=LOADED)
        assert page.get_by_test_id("connection-lost").count() == 0
        assert_consistent(page)
        assert page.errors == []
    finally:
        page.context.close()
        stop(proc)


#: Where the query plot draws q (data units): the page's own preview during a drag, the server's numbers otherwise.
DRAWN_Q = """() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
  const plot = Bokeh.documents[0].get_model_by_name('query-plot')
  const d = plot.renderers.find((r) => r.data_source.data.marker?.length).data_source.data
  done([d.x[0], d.y[0]])
})))"""
#: The address bar's q holds exactly this text.
ADDRESS_Q = "(q) => new URLSearchParams(location.search).get('q') === q"


def test_a_connection_cut_mid_drag_leaves_the_last_drawn_q_in_the_address(browser):
    """The server takes a drag's positions paced and writes the address at the release: a connection cut before
    the release must still leave the address where the page last drew q, so that Reload shows it."""
    url, start = _restartable_server()
    proc = start()
    page = new_page(browser, url)
    try:
        page.mouse.move(*to_page(page, "query-plot", 0.0, 1.0))  # q of "love"
        page.mouse.down()
        page.mouse.move(*to_page(page, "query-plot", 0.61, 0.37), steps=8)
        x, y = page.evaluate(DRAWN_Q)
        assert (round(x, 1), round(y, 1)) == (0.6, 0.4), (x, y)  # the page drew the hand's position
        stop(proc)  # with the button still held
        page.get_by_test_id("connection-lost").wait_for(timeout=LOADED)
        # written as the server writes it (Python's repr: the shortest text that reads back to the same float)
        page.wait_for_function(ADDRESS_Q, arg=f"{x!r},{y!r}", timeout=LOADED)

        # the page goes on drawing the hand with no server; where it lets go is the address too
        page.mouse.move(*to_page(page, "query-plot", 1.27, -0.43), steps=8)
        page.mouse.up()
        x, y = page.evaluate(DRAWN_Q)
        assert (round(x, 1), round(y, 1)) == (1.3, -0.4), (x, y)
        page.wait_for_function(ADDRESS_Q, arg=f"{x!r},{y!r}", timeout=LOADED)
        assert readout(page).startswith(f'Query of "love": q = ({x:.3f}, {y:.3f})')  # not the server's old one

        proc = start()
        page.get_by_test_id("connection-lost").get_by_role("button", name="Reload").click()
        wait_for_readout(page, re.escape(f'Query of "love": q = ({x:.3f}, {y:.3f})'), timeout=LOADED)
        assert page.evaluate(DRAWN_Q) == [x, y]  # the very same position, not a rounded one
        assert_consistent(page)
        assert page.errors == []
    finally:
        page.context.close()
        stop(proc)


def test_whatever_is_typed_into_the_address_gives_a_working_explorer_and_a_notice(browser, server):
    """Arguments a person made up: 4,301 digits (Panel's own query parser raised on them and broke the
    session), a q outside the plane, names in another case."""
    page = new_page(browser, server + "?q=" + "1" * 4301 + ",0&row=" + "9" * 5000 + "&step=" + "2" * 4400)
    page.locator(".notice").get_by_text("Some of the page address was ignored").wait_for(timeout=LOADED)
    assert 'Query of "love": q = (0.000, 1.000)' in readout(page)
    page.mouse.click(*to_page(page, "query-plot", 1.0, 1.0))  # the session takes what the page sends
    wait_for_readout(page, r"q = \(1\.000, 1\.000\)", LOADED)
    assert_consistent(page)
    far = new_page(browser, server + "?q=5,1&row=NLP")  # a q the editor accepts, outside the plotted plane
    wait_for_readout(far, r'Query of "NLP": q = \(5\.000, 1\.000\)', LOADED)
    assert far.locator(".notice").count() == 0 or not far.locator(".notice").is_visible()
    assert far.evaluate("() => Bokeh.documents[0].get_model_by_name('query-plot').renderers"
                        ".map(r => r.data_source.data.marker).find(m => m) [0]") == "triangle"
    for p in (page, far):
        assert not p.errors, p.errors
        p.context.close()
