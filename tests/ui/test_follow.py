"""Follow the presenter in real browsers: one presenter, followers in other browser contexts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from urllib.parse import parse_qs, urlparse

import pytest

from testing.browser import APP_LOADED as APP_READY
from tests.ui.conftest import CLOSED_SOCKET, ROOT, SCREENSHOTS, free_port, server_log, stop, wait_for_http
from tests.ui.helpers import (
    READOUT,
    move_seen,
    open_app,
    readout,
    to_page,
    wait_for_drawn,
    wait_for_readout,
    wait_for_server_readout,
    weights,
)

#: Runs app.py with every logger at INFO, so the log shows what an INFO-level deployment would keep.
SERVE_AT_INFO = ("import logging, runpy; logging.basicConfig(level=logging.INFO); "
                 "runpy.run_path('app.py', run_name='__main__')")
#: The machine may be busy with other work: wait long for a page, but assert exactly what it shows.
WAIT = 30_000
SECRETS: list[str] = []  # every room code, join link and presenter token the tests saw


#: Seconds the room's view rests before followers' servers take it in full (the rooms' server's ROOM_SETTLE_AFTER).
SETTLE_AFTER = 3


@pytest.fixture(scope="module")
def room_server():
    port = free_port()
    # a closed page's session is discarded after 30 s (checked every 2 s), then its room lives 2 s more
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1", "ROOM_END_AFTER": "2",
           # followers' servers take a drag in full after 3 s of rest, so a slow step of a test is no rest
           "ROOM_SETTLE_AFTER": str(SETTLE_AFTER),
           "EXPLORER_SESSION_TOKEN_EXPIRATION_S": "30", "EXPLORER_UNUSED_SESSION_LIFETIME_MS": "30000",
           "EXPLORER_CHECK_UNUSED_SESSIONS_MS": "2000"}
    log = open(server_log("ui/server-rooms.log"), "w+")
    proc = subprocess.Popen([sys.executable, "-c", SERVE_AT_INFO], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/liveness", proc, timeout=180)
        yield f"http://127.0.0.1:{port}/"
    finally:
        # stopping Bokeh while a websocket is still open logs an AssertionError: let the pages go first
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            log.seek(0)
            text = log.read()
            if text.count("WebSocket connection opened") <= text.count("WebSocket connection closed"):
                break
            time.sleep(0.2)
        stop(proc)
        log.seek(0)
        text = log.read()
        log.close()
    # a browser closing its page while the server writes to it is not a server error (as for tests/ui/conftest.py's)
    assert "Traceback" not in re.sub(CLOSED_SOCKET, "", text), text
    # every page here is an honest one: the websocket guard refuses none (a refused page stops hearing the server)
    assert "Refused websocket" not in text, [line for line in text.splitlines() if "Refused websocket" in line]
    # the log is at INFO and did log the requests that carried room links...
    assert re.search(r"GET /\?room=…&token=…", text) and re.search(r"GET /ws\?room=…", text), text
    # ...but never a code, a link or a token
    leaks = [s for s in SECRETS if s in text]
    assert SECRETS and not leaks, f"the server log shows {leaks}"


def new_page(browser, url, viewport=(1280, 800)):
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    open_app(page, url)
    return page


def present(page) -> tuple[str, str]:
    """Press Present; returns the room code and the join link shown on the presenter's page."""
    with page.expect_navigation(url=re.compile(r"[?&]token=")):
        page.get_by_role("button", name="Present").click()
    page.wait_for_function(APP_READY, timeout=4 * WAIT)  # a whole page load
    page.locator(READOUT).wait_for(timeout=4 * WAIT)
    # the card is drawn once the page has reported its address (the join link is made of it): one more round trip
    page.locator(".room-code").wait_for(timeout=4 * WAIT)
    code = page.locator(".room-code").text_content().replace(" ", "")
    link = page.locator(".room-link").text_content()
    token = parse_qs(urlparse(page.url).query)["token"][0]
    SECRETS.extend([code, link, token])
    assert link.endswith(f"/?room={code}") and token not in link
    return code, link


def follower(browser, link, viewport=(1280, 800)):
    page = new_page(browser, link, viewport)
    page.get_by_text("Following room").wait_for(timeout=WAIT)
    return page


def drag(page, points):
    """Press at the first point, move through the others with the button held (each once the page has drawn the
    last), release."""
    page.mouse.move(*to_page(page, "query-plot", *points[0]))
    page.mouse.down()
    for p in points[1:]:
        move_seen(page, *to_page(page, "query-plot", *p), steps=4)
    page.mouse.up()


#: Records, from now on, each first line the page's readout shows (window.readoutLines): what it showed in between.
WATCH_LINES = """() => {
  const el = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('readout')).el
  window.readoutLines = []
  new MutationObserver(() => {
    const line = el.shadowRoot.querySelector('.bk-clearfix').textContent.split('\\n')[0]
    if (window.readoutLines.at(-1) !== line) window.readoutLines.push(line)
  }).observe(el.shadowRoot, {subtree: true, childList: true, characterData: true})
}"""


def shown_since_watched(page) -> list[str]:
    return page.evaluate("() => window.readoutLines")


def first_line(page) -> str:
    return readout(page).splitlines()[0]


def close(*pages):
    for p in pages:
        errors = p.errors
        p.context.close()
        assert not errors, errors


def test_a_follower_follows_detaches_and_rejoins(browser, room_server):
    teacher = new_page(browser, room_server)
    teacher.mouse.click(*to_page(teacher, "query-plot", 2.0, -1.0))  # the view before presenting is kept
    wait_for_readout(teacher, r"q = \(2\.000, -1\.000\)", WAIT)
    code, link = present(teacher)
    assert re.fullmatch(r"[2-9A-HJKMNP-Z]{6}", code)
    assert "q = (2.000, -1.000)" in first_line(teacher)
    student = follower(browser, link)
    assert first_line(student) == first_line(teacher)
    assert not teacher.locator(".room-qr svg").is_visible()
    teacher.get_by_role("button", name="QR code").click()  # shown on demand, drawn by the server
    teacher.locator(".room-qr svg").wait_for(timeout=WAIT)
    assert student.locator(".room-code").text_content() == f"{code[:3]} {code[3:]}"

    drag(teacher, [(2.0, -1.0), (1.5, 0.0), (1.0, 1.0)])
    text = wait_for_readout(student, r"q = \(1\.000, 1\.000\)", WAIT)
    assert weights(student) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)
    assert "Output Σ aᵢvᵢ = 4.0000" in text

    student.get_by_role("button", name="Explore on my own").click()
    student.get_by_role("button", name="Follow again").wait_for(timeout=WAIT)
    teacher.keyboard.press("1")  # the teacher inspects "I"
    wait_for_readout(teacher, r'Query of "I": q = \(1\.000, 0\.000\)', WAIT)
    # detached: stays put. A key of the student's own once the teacher's view is out: the student's server takes
    # it after anything the room sent it before, and its answer is the student's own query of "love", nudged
    student.keyboard.press("ArrowUp")
    wait_for_server_readout(student, r'^Query of "love": q = \(1\.000, 1\.100\)', WAIT)

    student.get_by_role("button", name="Follow again").click()
    wait_for_readout(student, r'Query of "I": q = \(1\.000, 0\.000\)', WAIT)  # snaps to the teacher's view
    assert weights(student) == pytest.approx(weights(teacher), abs=1e-9)

    # projector mode is each screen's own: the teacher's projector does not enlarge the student's laptop
    teacher.get_by_label("Projector").check()
    teacher.wait_for_function("() => document.documentElement.dataset.mode === 'projector'", timeout=WAIT)
    teacher.mouse.click(*to_page(teacher, "query-plot", 0.5, 2.0))
    wait_for_readout(student, r"q = \(0\.500, 2\.000\)", WAIT)
    assert student.evaluate("document.documentElement.dataset.mode") == "normal"
    close(teacher, student)


#: Records every text the page's server sends for its readout (the Bokeh model's text, not what is shown), and, each
#: frame, the query the readout shows if the server has sent no text for it yet: a view the live channel brought.
RECORD_SERVER_TEXTS = """() => {
  const m = Bokeh.documents[0].get_model_by_name('readout');
  window.serverTexts = [];
  window.previewed = new Set();
  m.properties.text.change.connect(() => window.serverTexts.push(m.text));
  const look = () => {
    const shown = Bokeh.index.find_one(m)?.markup_el?.textContent ?? '';
    const q = shown.match(/q = \\([^)]*\\)/)?.[0];
    if (q != null && !window.serverTexts.some(t => t.includes(q))) window.previewed.add(q);
    requestAnimationFrame(look);
  };
  look();
}"""


def test_a_follower_previews_a_drag_from_the_live_channel_then_takes_its_servers_numbers(browser, room_server):
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    student.evaluate(RECORD_SERVER_TEXTS)
    path = [(0.0, 1.0), (0.5, 1.5), (1.0, 1.0), (1.5, 0.5), (2.0, -1.0)]
    teacher.mouse.move(*to_page(teacher, "query-plot", *path[0]))
    teacher.mouse.down()
    for x, y in path[1:]:  # the button stays down: each position is one view of the room
        teacher.mouse.move(*to_page(teacher, "query-plot", x, y), steps=3)
        wait_for_readout(student, rf"q = \({x:.3f}, {y:.3f}\)", WAIT)
        if (x, y) == (1.0, 1.0):  # the student's page computed the numbers, to the course's values
            assert weights(student) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)
            assert "Output Σ aᵢvᵢ = 4.0000" in readout(student)
    teacher.mouse.up()
    # once the teacher's hand rests, the student's server sends its own numbers for the last view ...
    student.wait_for_function("() => window.serverTexts.some(t => t.includes('q = (2.000, -1.000)'))",
                              timeout=WAIT)
    assert readout(student) == student.evaluate("window.serverTexts.at(-1)")
    # ... and each position of the drag was on the page before its server sent anything for it: the live channel
    # brought it (a busy machine's slow step can rest the hand long enough for the server to send its numbers after)
    previewed = set(student.evaluate("[...window.previewed]"))
    assert {f"q = ({x:.3f}, {y:.3f})" for x, y in path[1:]} <= previewed, previewed
    close(teacher, student)


#: The weights the bars show, as drawn in the page (the SVG's bars, widgets/weights.py)
BARS = ("() => Array.from(Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('weight-bars')).markup_el"
        ".querySelectorAll('rect.bar'), (bar) => +bar.dataset.weight)")


def test_a_followed_drag_that_ends_where_it_began_leaves_no_preview_behind(browser, room_server):
    """The student's server never took the drag; Reset brings the room back to the view that server
    already has, so it sends no new data, and the page must put back what its preview drew over."""
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    before = student.evaluate(BARS)
    teacher.mouse.move(*to_page(teacher, "query-plot", 0.0, 1.0))
    teacher.mouse.down()
    teacher.mouse.move(*to_page(teacher, "query-plot", 2.0, -1.0), steps=5)
    teacher.mouse.up()
    wait_for_readout(student, r"q = \(2\.000, -1\.000\)", WAIT)
    student.wait_for_function(f"() => ({BARS})().join() !== {before!r}.join()", timeout=WAIT)  # drawn on frame
    teacher.get_by_role("button", name="Reset example").click()
    wait_for_readout(teacher, r'Query of "love": q = \(0\.000, 1\.000\)', WAIT)
    wait_for_readout(student, r'Query of "love": q = \(0\.000, 1\.000\)', WAIT)
    assert weights(student) == weights(teacher)
    student.wait_for_function(f"() => ({BARS})().join() === {before!r}.join()", timeout=WAIT)
    assert student.evaluate(BARS) == pytest.approx(teacher.evaluate(BARS), abs=1e-12)
    close(teacher, student)


def test_five_pages_follow_and_no_follower_drives_the_room(browser, room_server):
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    students = [follower(browser, link) for _ in range(4)]
    # pressing on a key would drag that key: start the drag on empty ground
    drag(teacher, [(0.5, 1.5), (0.5, 0.5), (1.5, 0.5), (1.5, 1.5)])
    for p in [teacher, *students]:
        wait_for_readout(p, r"q = \(1\.500, 1\.500\)", WAIT)

    # a student drags on their own page: it leaves the room's stream; nobody else moves
    rebel = students[0]
    for p in [teacher, *students[1:]]:
        p.evaluate(WATCH_LINES)
    drag(rebel, [(1.5, 1.5), (-1.0, -1.0)])
    wait_for_readout(rebel, r"q = \(-1\.000, -1\.000\)", WAIT)
    rebel.get_by_role("button", name="Follow again").wait_for(timeout=WAIT)
    # a page holding the join link plus a made-up token is not the presenter either
    forger = new_page(browser, link + "&token=" + "A" * 32)
    forger.get_by_text("This presenter link is not valid for room").wait_for(timeout=WAIT)
    forger.get_by_text("Following room").wait_for(timeout=WAIT)
    drag(forger, [(1.5, 1.5), (2.0, -1.0)])
    wait_for_readout(forger, r"q = \(2\.000, -1\.000\)", WAIT)
    # its server has taken the drag: the page has left the room (the readout above is the page's own drawing)
    forger.get_by_role("button", name="Follow again").wait_for(timeout=WAIT)
    for p in (rebel, forger):
        p.evaluate(WATCH_LINES)

    # the teacher's next move still reaches every follower that follows, and only those: it comes after anything
    # the rebel's or the forger's drag would have sent the room, so the pages that follow never showed either
    teacher.mouse.click(*to_page(teacher, "query-plot", 0.0, 2.0))
    for s in students[1:]:
        wait_for_readout(s, r"q = \(0\.000, 2\.000\)", WAIT)
    for p in [teacher, *students[1:]]:
        assert not [line for line in shown_since_watched(p) if "q = (1.500, 1.500)" not in line
                    and "q = (0.000, 2.000)" not in line], shown_since_watched(p)
    # and a key of their own, once the teacher's move is out, is answered from where each let go
    for p, q in ((rebel, r"-1\.000, -0\.900"), (forger, r"2\.000, -0\.900")):
        p.keyboard.press("ArrowUp")
        wait_for_server_readout(p, rf"q = \({q}\)", WAIT)
        assert not [line for line in shown_since_watched(p) if "q = (0.000, 2.000)" in line], shown_since_watched(p)
    close(teacher, forger, *students)


def is_presenting(page) -> bool:
    page.locator(".room-card:visible, .room-notice:visible").first.wait_for(timeout=WAIT)
    return page.get_by_role("button", name="Stop presenting").count() == 1


def test_a_made_up_token_takes_over_nothing(browser, room_server):
    teacher = new_page(browser, room_server)
    code, join = present(teacher)
    student = follower(browser, join)
    teacher.keyboard.press("3")
    wait_for_readout(student, 'Query of "NLP"', WAIT)
    # a hostile student tries the class's code with a token of their own, and a code they chose themselves
    intruder = new_page(browser, room_server + f"?room={code}&token=anything")
    intruder.get_by_text(f"This presenter link is not valid for room {code}").wait_for(timeout=WAIT)
    assert not is_presenting(intruder)
    own = new_page(browser, room_server + "?room=ABCDEF&token=mine")
    own.get_by_text("This presenter link is not valid for room ABCDEF").wait_for(timeout=WAIT)
    assert not is_presenting(own)
    # the intruder's moves reach nobody: the room is still the teacher's, who can still drive it
    intruder.mouse.click(*to_page(intruder, "query-plot", 2.0, -1.0))
    wait_for_readout(intruder, r"q = \(2\.000, -1\.000\)", WAIT)
    teacher.mouse.click(*to_page(teacher, "query-plot", 0.5, 0.5))
    wait_for_readout(student, r'Query of "NLP": q = \(0\.500, 0\.500\)', WAIT)
    assert 'Query of "NLP": q = (0.500, 0.500)' in readout(teacher)
    teacher.reload()
    assert is_presenting(teacher)
    close(teacher, student, intruder, own)


def test_a_presenter_who_reloads_resumes_the_room(browser, room_server):
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    teacher.keyboard.press("3")  # the teacher inspects "NLP"
    wait_for_readout(student, 'Query of "NLP"', WAIT)
    teacher.reload()
    teacher.wait_for_function(APP_READY)
    wait_for_readout(teacher, 'Query of "NLP"', WAIT)  # the room's view, not the default one
    assert teacher.locator(".room-code").text_content().replace(" ", "") == code
    teacher.mouse.click(*to_page(teacher, "query-plot", 2.0, 2.0))
    wait_for_readout(student, r'Query of "NLP": q = \(2\.000, 2\.000\)', WAIT)
    close(teacher, student)


def test_wrong_and_ended_rooms_show_a_notice_and_the_normal_app(browser, room_server):
    lost = new_page(browser, room_server + "?room=ZZZZZZ")
    lost.get_by_text("There is no room ZZZZZZ on this server").wait_for(timeout=WAIT)
    assert 'Query of "love": q = (0.000, 1.000)' in readout(lost)
    lost.get_by_role("button", name="Present").wait_for(timeout=WAIT)
    garbled = new_page(browser, room_server + "?room=%3Cb%3Ehi")
    garbled.get_by_text("The link's room code is not valid").wait_for(timeout=WAIT)
    assert garbled.locator("b", has_text="hi").count() == 0

    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    teacher.mouse.click(*to_page(teacher, "query-plot", 1.0, 0.5))
    wait_for_readout(student, r"q = \(1\.000, 0\.500\)", WAIT)
    teacher.get_by_role("button", name="Stop presenting").click()
    student.get_by_text(f"Room {code} has ended. You keep the last view.").wait_for(timeout=WAIT)
    assert "q = (1.000, 0.500)" in first_line(student)
    late = new_page(browser, link)
    late.get_by_text(f"There is no room {code} on this server").wait_for(timeout=WAIT)
    assert 'Query of "love": q = (0.000, 1.000)' in readout(late)
    close(lost, garbled, teacher, student, late)


def test_a_room_ends_after_its_presenter_leaves(browser, room_server):
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    teacher.mouse.click(*to_page(teacher, "query-plot", 0.5, 2.0))
    wait_for_readout(student, r"q = \(0\.500, 2\.000\)", WAIT)
    close(teacher)
    # the server notices a closed page when it discards its session (see room_server), then the
    # room lives ROOM_END_AFTER = 2 s more
    student.get_by_text(f"Room {code} has ended. You keep the last view.").wait_for(timeout=120_000)
    assert "q = (0.500, 2.000)" in first_line(student)
    close(student)


# the projector's: a wider screen has more room for the room code
@pytest.mark.parametrize("size", [(1024, 768)])
def test_screenshots_of_presenter_and_follower(browser, room_server, size):
    teacher = new_page(browser, room_server, size)
    code, link = present(teacher)
    student = follower(browser, link, size)
    teacher.get_by_role("button", name="QR code").click()
    teacher.locator(".room-qr svg").wait_for(timeout=WAIT)
    teacher.mouse.click(*to_page(teacher, "query-plot", 1.0, 1.0))
    wait_for_readout(student, r"q = \(1\.000, 1\.000\)", WAIT)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, p in (("presenter", teacher), ("follower", student)):
        p.evaluate("window.scrollTo(0, 0)")
        p.screenshot(path=SCREENSHOTS / f"{name}-{size[0]}x{size[1]}.png")
        code_box = p.locator(".room-code").bounding_box()
        assert code_box and code_box["x"] + code_box["width"] <= size[0], "the room code is off screen"
    close(teacher, student)


#: The lines the join link's "?room=CODE" is drawn on (the tops of its boxes), and the query plot's width.
JOIN_LINK_LINES = """() => {
  function* deep(root) {
    for (const el of root.querySelectorAll('*')) { yield el; if (el.shadowRoot) yield* deep(el.shadowRoot) }
  }
  const link = [...deep(document)].find(el => el.classList.contains('room-link'))
  const walker = document.createTreeWalker(link, NodeFilter.SHOW_TEXT), nodes = []
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n)
  const whole = nodes.map(n => n.textContent).join(''), start = whole.indexOf('?room=')
  const at = (offset) => { for (const n of nodes) { if (offset <= n.textContent.length) return [n, offset];
                                                    offset -= n.textContent.length } }
  const range = document.createRange()
  range.setStart(...at(start))
  range.setEnd(...at(whole.length))
  return [...new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)))]
}"""


def test_the_join_code_stays_whole_and_the_qr_code_leaves_the_plot_its_size(browser, room_server):
    """The join link never breaks inside ``?room=CODE`` (it was drawn ``…?room=H5`` / ``XA2J``), and showing the
    QR code leaves the query plot its size on a 1280x800 projector (it shrank to about 240 px)."""
    teacher = new_page(browser, room_server, (1280, 800))
    present(teacher)
    assert len(teacher.evaluate(JOIN_LINK_LINES)) == 1, "the join link's code is broken across lines"
    before = teacher.locator(".ae-query-plot").first.bounding_box()["width"]
    teacher.get_by_role("button", name="QR code").click()
    teacher.locator(".room-qr svg").wait_for(timeout=WAIT)
    wait_for_drawn(teacher)  # Bokeh lays the page out again on the next frame
    after = teacher.locator(".ae-query-plot").first.bounding_box()["width"]
    assert after >= 0.9 * before, f"the QR code shrank the query plot from {before:.0f} px to {after:.0f} px"
    qr = teacher.locator(".room-qr svg").bounding_box()
    assert qr["y"] + qr["height"] <= 800 and qr["x"] + qr["width"] <= 1280, "the QR code is off screen"
    teacher.screenshot(path=SCREENSHOTS / "presenter-qr-1280x800.png")
    close(teacher)


#: The lines the whole join link is drawn on (the tops of its text's boxes), its text and the room's note on it.
WHOLE_LINK = """() => {
  function* deep(root) {
    for (const el of root.querySelectorAll('*')) { yield el; if (el.shadowRoot) yield* deep(el.shadowRoot) }
  }
  const all = [...deep(document)]
  const link = all.find(el => el.classList.contains('room-link'))
  const range = document.createRange()
  range.selectNodeContents(link)
  const reach = all.find(el => el.classList.contains('room-reach'))
  return {tops: [...new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)))],
          text: link.textContent, reach: reach ? reach.textContent.replace(/\\s+/g, ' ') : null}
}"""


def test_the_join_link_is_one_line_and_a_localhost_page_says_how_to_serve_the_class(browser, room_server):
    """The whole join link is on one line on an 800x600 projector and a phone (it was "http://localhost:540" /
    "1/?room=…"), and a page opened as 127.0.0.1 says the class cannot reach that address and names the settings
    that serve the class (this test server listens on 127.0.0.1 only: ADDRESS's default)."""
    teacher = new_page(browser, room_server + "?mode=projector", (800, 600))
    code, link = present(teacher)
    port = link.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    shown = teacher.evaluate(WHOLE_LINK)
    assert len(shown["tops"]) == 1, f"the join link is broken across lines: {shown}"
    assert shown["reach"] is not None, "nothing says that the class cannot open a 127.0.0.1 link"
    assert f"Your class cannot reach 127.0.0.1:{port}" in shown["reach"]
    teacher.locator(".room-how").click()  # how to serve the class
    teacher.get_by_text("This server listens on this computer only").wait_for(timeout=WAIT)
    assert "ADDRESS=0.0.0.0 BOKEH_ALLOW_WS_ORIGIN=" in teacher.evaluate(WHOLE_LINK)["reach"]
    teacher.set_viewport_size({"width": 390, "height": 844})
    teacher.wait_for_function("() => window.innerWidth === 390")
    teacher.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert len(teacher.evaluate(WHOLE_LINK)["tops"]) == 1, "the join link is broken across lines on a phone"
    close(teacher)
