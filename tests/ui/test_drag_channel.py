"""The page sends its drag one position at a time: a slow server gets fewer positions, never stale ones first.

Against a server that takes 0.25 s for every drag position (tests/ui/slow_server.py), as a crowded one does.
"""

from __future__ import annotations

import pytest

from tests.ui.conftest import serve_script
from tests.ui.helpers import open_app, to_page, wait_for_readout

LOADED = 60_000
COUNTS = "() => { const s = [...window.attentionExplorerDrag.values()][0]; return {moves: s.moves, sent: s.sent}; }"
# every text the server sends the readout, in order
WATCH_SERVER_TEXTS = """() => {
  const m = Bokeh.documents[0].get_model_by_name('readout');
  window.serverTexts = [];
  m.connect(m.properties.text.change, () => window.serverTexts.push(m.text.split('\\n')[0]));
}"""


@pytest.fixture(scope="module")
def slow_server():
    with serve_script("slow_server.py") as url:
        yield url


def drag(page, start, end, moves: int) -> None:
    (x0, y0), (x1, y1) = to_page(page, "query-plot", *start), to_page(page, "query-plot", *end)
    page.mouse.move(x0, y0)
    page.mouse.down()
    for i in range(1, moves + 1):
        page.mouse.move(x0 + (x1 - x0) * i / moves, y0 + (y1 - y0) * i / moves)
    page.mouse.up()


def test_a_slow_server_gets_far_fewer_positions_than_moves_and_always_the_last(browser, slow_server):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_app(page, slow_server)
    drag(page, (0.0, 1.0), (1.0, 1.0), 60)
    wait_for_readout(page, r'Query of "love": q = \(1\.000, 1\.000\)', LOADED)  # the last position arrived
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('readout').text"
                           ".startsWith('Query of \"love\": q = (1.000, 1.000)')", timeout=LOADED)  # the server's
    counts = page.evaluate(COUNTS)
    assert counts["moves"] >= 55, counts  # the press and the pointer events Bokeh reports for 60 mouse moves
    # one position per answer: a handful of the 60, and the release
    assert counts["sent"] <= counts["moves"] // 4, counts
    page.context.close()


def test_a_row_key_right_after_a_drag_waits_for_no_drag_position(browser, slow_server):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_app(page, slow_server)
    page.evaluate(WATCH_SERVER_TEXTS)
    drag(page, (0.0, 1.0), (1.0, 1.0), 60)
    page.keyboard.press("1")  # "I", at once
    sent_at_the_key = page.evaluate(COUNTS)["sent"]
    wait_for_readout(page, r'Query of "I": q = \(1\.000, 0\.000\)', LOADED)
    # and it stays: a second key, whose answer comes after anything the page sent before it
    page.keyboard.press("3")
    page.wait_for_function("() => window.serverTexts.at(-1) === 'Query of \"NLP\": q = (1.000, 1.000)'",
                           timeout=LOADED)
    texts = page.evaluate("() => window.serverTexts")
    assert page.evaluate(COUNTS)["sent"] == sent_at_the_key  # nothing of the drag was left to send after the key
    # the server took the drag's last position, then the keys: no position of the drag came after the first key
    after_key = texts[texts.index('Query of "I": q = (1.000, 0.000)'):]
    assert 'Query of "love": q = (1.000, 1.000)' in texts[:-len(after_key)], texts
    assert all(t.startswith('Query of "I"') for t in after_key[:-1]) and after_key[-1].startswith('Query of "NLP"'), \
        texts
    page.context.close()


def test_eight_pages_drag_at_once_and_each_ends_on_its_own_numbers(browser, server):
    """Eight learners on one server drag together; each page follows its own hand, then shows the server's
    numbers for where it let go (reference: the formula in plain Python, tests/ui/test_reliability.py)."""
    from tests.ui.helpers import READOUT, readout
    from tests.ui.test_reliability import assert_consistent

    pages = []
    for _ in range(8):
        page = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
        open_app(page, server)
        pages.append(page)
    ends = [(round(-1.0 + 0.45 * i, 2), round(2.0 - 0.35 * i, 2)) for i in range(8)]
    starts = [to_page(p, "query-plot", 0.0, 1.0) for p in pages]  # every page's q is on k_love
    targets = [to_page(p, "query-plot", *end) for p, end in zip(pages, ends, strict=True)]
    steps = 30
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
            if k % 5 == 0:
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
        assert_consistent(page)
        assert page.locator(READOUT).count() == 1
    for page in pages:
        page.context.close()
