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
