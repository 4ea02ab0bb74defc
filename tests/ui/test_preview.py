"""The in-browser preview: same numbers as the NumPy core, and the server's numbers win."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core import scaled_dot_product_attention
from link.rules import readout_script_words
from session.i18n import LANGUAGES
from session.state import AttentionState
from tests.ui.conftest import serve_script
from tests.ui.helpers import (
    PATIENCE,
    after_page_timers,
    open_app,
    readout,
    to_page,
    wait_for_drag_settled,
    wait_for_readout,
)
from widgets.steps import Readout

# The preview's functions exactly as the page received them: the code of the drag script's callback on the
# readout, up to where it binds its Bokeh models.
PAGE_FUNCTIONS = """(cases) => {
  const cb = Bokeh.documents[0].get_model_by_name('readout').js_property_callbacks['change:text']
    .find((c) => c.code.includes('onServerUpdate'));
  const lib = cb.code.slice(0, cb.code.indexOf('const a = {'));
  const {attentionStep, fmt, readoutText} = new Function(lib + '; return {attentionStep, fmt, readoutText};')();
  return cases.map((c) => {
    const r = attentionStep(c.q, c.keys, c.values, c.allowed, c.scale);
    return {r, text: c.inp ? readoutText(c.inp, c.q, r) : null};
  });
}"""


def random_cases(n_cases=240, seed=2017):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        n, d_k = int(rng.integers(2, 9)), int(rng.choice([1, 2, 2, 3, 4]))
        d_v = int(rng.choice([0, 1, 2, 3]))  # 0: scalar values
        K = rng.normal(size=(n, d_k)) * rng.choice([0.5, 2, 10])
        q = rng.normal(size=d_k) * rng.choice([0.5, 2, 10])
        V = rng.normal(size=n if d_v == 0 else (n, d_v)) * 5
        allowed = rng.random(n) < 0.7 if i % 3 else np.arange(n) <= rng.integers(0, n)  # random or causal
        allowed[rng.integers(0, n)] = True
        cases.append(dict(q=q, K=K, V=V, allowed=allowed, scale=bool(i % 4)))
    return cases


def test_in_browser_formula_agrees_with_the_core(page):
    cases = random_cases()
    payload = [dict(q=c["q"].tolist(), keys=c["K"].tolist(),
                    values=(c["V"][:, None] if c["V"].ndim == 1 else c["V"]).tolist(),
                    allowed=c["allowed"].tolist(), scale=c["scale"], inp=None) for c in cases]
    got = page.evaluate(PAGE_FUNCTIONS, payload)
    assert len(got) >= 200
    for c, g in zip(cases, got, strict=True):
        ref = scaled_dot_product_attention(c["q"][None, :], c["K"], c["V"], c["allowed"][None, :],
                                           scale=None if c["scale"] else 1.0)
        r = g["r"]
        np.testing.assert_allclose(r["dots"], ref.dots[0], rtol=1e-9, atol=1e-9)
        finite = np.isfinite(ref.scores[0])
        np.testing.assert_allclose(np.array(r["scores"], dtype=float)[finite], ref.scores[0][finite], rtol=1e-9,
                                   atol=1e-9)
        assert all(s is None or s == -np.inf for s, f in zip(r["scores"], finite, strict=True) if not f)  # masked: -inf
        np.testing.assert_allclose(r["weights"], ref.weights[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(r["output"], np.atleast_1d(ref.output[0]), rtol=1e-9, atol=1e-9)


def test_in_browser_readout_text_is_the_servers(page):
    """Same formatting both sides, in every language: for the state's own numbers the two texts are identical."""
    rng = np.random.default_rng(5)
    states, payload = [], []
    for i in range(40):
        s = AttentionState(lang=list(LANGUAGES)[i % len(LANGUAGES)])
        if i % 2:
            s.preset = "Module 2: vector values"
        s.select_row(int(rng.integers(0, 3)))
        s.causal = bool(i % 3 == 0)
        s.scale = bool(i % 5)
        if i % 4 == 1:  # the step-through, at each step
            s.guided, s.step = True, int(rng.integers(1, 4))
        s.move_query(*(np.round(rng.uniform(-1.5, 2.5, size=2), int(rng.integers(1, 6)))))
        V = np.asarray(s.values, dtype=float)
        i_sel = s.selected
        payload.append(dict(
            q=list(s.query), keys=np.asarray(s.keys).tolist(), values=(V[:, None] if V.ndim == 1 else V).tolist(),
            allowed=s.result.mask[i_sel].tolist(), scale=s.scale,
            inp=dict(tokens=list(s.tokens), selected=i_sel, scale=s.scale, scalar=V.ndim == 1,
                     revealed=[s.revealed(k) for k in (1, 2, 3)], placeholder="?",
                     words=json.loads(readout_script_words(s.lang))),
        ))
        states.append(s)
    got = page.evaluate(PAGE_FUNCTIONS, payload)
    for s, g in zip(states, got, strict=True):
        assert g["text"] == Readout.text(s)


@pytest.fixture
def forced_server():
    """A server whose outputs are 0.5 higher than the core's (tests/ui/forced_server.py)."""
    with serve_script("forced_server.py") as url:
        yield url


WATCH_TEXTS = """() => {
  const el = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('readout')).el;
  window.readoutTexts = [];
  new MutationObserver(() => {
    const line = el.shadowRoot.querySelector('.bk-clearfix').textContent.split('\\n').pop();
    if (window.readoutTexts.at(-1) !== line) window.readoutTexts.push(line);
  }).observe(el.shadowRoot, {subtree: true, childList: true, characterData: true});
}"""


def press_and_move(page, start, end, steps: int) -> None:
    """Press the query plot at ``start`` and move to ``end`` (plot coordinates) in equal steps, button held."""
    (x0, y0), (x1, y1) = to_page(page, "query-plot", *start), to_page(page, "query-plot", *end)
    page.mouse.move(x0, y0)
    page.mouse.down()
    for i in range(1, steps + 1):
        page.mouse.move(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps)


def test_server_numbers_replace_the_preview(browser, forced_server):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_app(page, forced_server)
    # the server's own first numbers: output 4.4067 + 0.5
    assert readout(page).endswith("Output Σ aᵢvᵢ = 4.9067 ≈ 4.91")
    page.evaluate(WATCH_TEXTS)
    press_and_move(page, (0.0, 1.0), (1.0, 1.0), 10)
    page.mouse.up()
    # within a round trip the server's number (4.0 + 0.5) replaces the preview's 4.0
    page.wait_for_function("() => (window.readoutTexts.at(-1) || '').includes('= 4.5000')", timeout=PATIENCE)
    texts = page.evaluate("() => window.readoutTexts")
    assert "Output Σ aᵢvᵢ = 4.0000 ≈ 4.00" in texts, texts  # the preview showed the core's number first
    assert texts.index("Output Σ aᵢvᵢ = 4.0000 ≈ 4.00") < len(texts) - 1
    # and it stays the server's: the page has ended its preview, and every timer it set meanwhile to run within
    # 1.5 s has run (a preview once came back a second after the release)
    wait_for_drag_settled(page)
    after_page_timers(page, 1500)
    assert readout(page).endswith("Output Σ aᵢvᵢ = 4.5000 ≈ 4.50")
    page.context.close()


# Capturing on window, so these run before any of the page's own listeners: the readout's text when
# each input first reaches the page (its pointerrawupdate) and when its frame-aligned pointermove does.
WATCH_DISPATCH = """() => {
  const readout = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('readout'));
  const text = () => readout.markup_el.textContent;
  window.dispatchLog = [];
  window.addEventListener('pointerrawupdate', (e) => {
    if (e.buttons) window.dispatchLog.push({stamp: e.timeStamp, raw: text(), move: null});
  }, {capture: true});
  window.addEventListener('pointermove', (e) => {
    const entry = window.dispatchLog.find((m) => m.stamp === e.timeStamp);
    if (entry) entry.move = text();
  }, {capture: true});
}"""


def test_preview_follows_the_pointer_before_its_frame_aligned_move(page):
    """Chromium dispatches pointermove (and so Bokeh's Pan) once per frame; the preview already follows
    pointerrawupdate, so by the time the pointermove of a move is dispatched, its numbers are shown."""
    assert page.evaluate("() => isSecureContext && 'onpointerrawupdate' in window")  # loopback is secure
    page.evaluate(WATCH_DISPATCH)
    x0, y0 = to_page(page, "query-plot", 0.0, 1.0)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + 12, y0)  # the drag starts: from here the preview runs
    page.wait_for_function("() => [...window.attentionExplorerDrag.values()].some(st => st.dragging)")
    page.evaluate("() => { window.dispatchLog = []; }")
    targets = [(0.1 * i, 1.0 - 0.05 * i) for i in range(1, 21)]
    for i, (x, y) in enumerate(targets, 1):
        page.mouse.move(*to_page(page, "query-plot", x, y))
        # the move's pointermove (dispatched on the next frame) has come: one move at a time, at the page's pace
        page.wait_for_function("(n) => window.dispatchLog.filter(m => m.move !== null).length >= n", arg=i,
                               timeout=PATIENCE)
    page.mouse.up()
    log = page.evaluate("() => window.dispatchLog")
    assert len(log) >= 20, log
    moved = [m for m in log if m["move"] is not None]
    # each move's new query is on screen when its pointermove arrives, never only after
    assert len(moved) >= 20, log
    for x, y in targets[-3:]:
        assert any(f"q = ({x:.3f}, {y:.3f})" in m["move"] for m in moved), (x, y, moved[-3:])
    changed_first = [m for m in moved if m["move"] != m["raw"]]
    assert len(changed_first) >= 0.9 * len(moved), log
    wait_for_readout(page, r"q = \(2\.000, 0\.000\)", timeout=PATIENCE)  # and the server agrees


SERVER_TEXT = "() => Bokeh.documents[0].get_model_by_name('readout').text.split('\\n')[0]"


def test_a_row_chosen_just_after_a_drag_is_shown(page):
    """Once the server has drawn a drag's last position the preview is over: a row chosen with a key
    a moment after the release shows that row. (The preview used to wait a second after every
    release, and drew the drag's last position over the row's numbers until the next update.)"""
    press_and_move(page, (0.0, 1.0), (1.0, 1.0), 8)
    # the button is still held when the server draws the last position
    page.wait_for_function(SERVER_TEXT + " === 'Query of \"love\": q = (1.000, 1.000)'", timeout=PATIENCE)
    page.mouse.up()
    page.keyboard.press("1")
    wait_for_readout(page, r'Query of "I": q = \(1\.000, 0\.000\)', timeout=PATIENCE)
    # and it stays: no preview comes back, once the drag is over and every timer the page set meanwhile to run
    # within 1.2 s has run
    wait_for_drag_settled(page)
    after_page_timers(page, 1200)
    assert readout(page).splitlines()[0] == 'Query of "I": q = (1.000, 0.000)'
    assert page.evaluate("() => { const d = Bokeh.documents[0].get_model_by_name('query-plot').renderers"
                         ".map((r) => r.data_source.data).find((d) => d.label && String(d.label[0]).startsWith('q '));"
                         " return [d.x[0], d.y[0]]; }") == [1.0, 0.0]


READOUT_ELEMENT = "() => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('readout')).markup_el"


def test_a_server_update_replaces_the_readout_text_in_place(page):
    """Bokeh re-renders a Div, and then re-lays-out the whole page, on every change of its text (≈ 14 ms
    of the page's time per update while a drag streams updates); the readout's element is kept and
    only its text replaced."""
    page.keyboard.press("3")
    wait_for_readout(page, r'Query of "NLP": q = \(1\.000, 1\.000\)')
    page.evaluate(f"() => {{ window.readoutElement = ({READOUT_ELEMENT})(); }}")
    page.keyboard.press("1")
    wait_for_readout(page, r'Query of "I": q = \(1\.000, 0\.000\)')
    assert page.evaluate(f"() => ({READOUT_ELEMENT})() === window.readoutElement && window.readoutElement.isConnected")
    assert page.evaluate("() => window.readoutElement.textContent") == page.evaluate(
        "() => Bokeh.documents[0].get_model_by_name('readout').text")


ANNOUNCER_ELEMENT = "() => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('announcer')).markup_el"


def test_the_announcer_replaces_its_text_in_place(page):
    """The screen-reader announcer speaks during a drag too (at most every 2 s), so it is not re-rendered,
    which would re-lay-out the page, either."""
    page.keyboard.press("3")
    page.wait_for_function(f"() => ({ANNOUNCER_ELEMENT})().textContent.startsWith('Query of \"NLP\".')")
    page.evaluate(f"() => {{ window.announcerElement = ({ANNOUNCER_ELEMENT})(); }}")
    page.keyboard.press("1")
    page.wait_for_function("() => window.announcerElement.textContent.startsWith('Query of \"I\".')")
    assert page.evaluate(f"() => ({ANNOUNCER_ELEMENT})() === window.announcerElement "
                         "&& window.announcerElement.isConnected")
    assert page.evaluate("() => window.announcerElement.textContent") == page.evaluate(
        "() => Bokeh.documents[0].get_model_by_name('announcer').text")


# Every change the server makes to a data source that a plot draws, or to the SVG charts' text (the
# preview's own drawing changes arrays and elements in place and is not a document event).
WATCH_PLOT_DATA = """() => {
  const doc = Bokeh.documents[0];
  const plotted = new Set([...doc.all_models].filter((m) => m.data_source != null).map((m) => m.data_source.id));
  for (const name of ['weight-bars', 'output-line']) plotted.add(doc.get_model_by_name(name).id);
  window.plotDataChanges = [];
  doc.on_change((ev) => {
    if (ev.model != null && (ev.attr === 'data' || ev.attr === 'text') && plotted.has(ev.model.id))
      window.plotDataChanges.push(ev.model.id);
  }, true);
}"""
from tests.ui.test_follow import BARS  # noqa: E402  (the weights the page's bars show)


def test_during_a_drag_the_server_sends_the_text_and_the_plots_data_at_the_release(page):
    """The page draws its own drag; the server's numbers for each position come as the readout's text
    and the plots' data, which would only repaint the same picture, come once the hand lets go."""
    page.evaluate(WATCH_PLOT_DATA)
    press_and_move(page, (0.0, 1.0), (1.0, 1.0), 8)
    # the button is still held when the server's text for the last position arrives
    page.wait_for_function(SERVER_TEXT + " === 'Query of \"love\": q = (1.000, 1.000)'", timeout=PATIENCE)
    # the server sends each update's every change in one message (link/updates.py): had this one carried the
    # plots' data, it would be in by now
    assert page.evaluate("() => window.plotDataChanges") == []
    assert page.evaluate(BARS) == pytest.approx([0.2483, 0.2483, 0.5035], abs=5e-5)  # the preview's drawing
    page.mouse.up()
    page.wait_for_function("() => window.plotDataChanges.length > 0", timeout=PATIENCE)
    # the course's numbers for q = (1, 1), now the server's
    assert page.evaluate(BARS) == pytest.approx([0.2483, 0.2483, 0.5035], abs=5e-5)
    assert readout(page).endswith("Output Σ aᵢvᵢ = 4.0000 ≈ 4.00")


def test_the_step_through_hides_and_shows_the_same_numbers_during_a_drag(open_page):
    """The preview reveals exactly the steps the step-through has reached, after Back as after Next."""
    page = open_page("?step=3")
    for _ in range(2):
        page.get_by_role("button", name="◀ Back").click()
    page.get_by_text("Step 1 of 3 · score").wait_for()
    press_and_move(page, (0.0, 1.0), (1.0, 1.0), 8)  # the button stays held
    text = wait_for_readout(page, r"q = \(1\.000, 1\.000\)", timeout=PATIENCE)
    assert "Scores s = q·k / √2: I 0.7071, love 0.7071, NLP 1.4142" in text  # step 1 is revealed ...
    assert "Weights a = softmax(s): I ?, love ?, NLP ?" in text and text.endswith("Output Σ aᵢvᵢ = ?")  # ... no more
    page.mouse.up()
    for _ in range(2):
        page.get_by_role("button", name="Next ▶").click()
    page.get_by_text("Step 3 of 3 · combine").wait_for()
    press_and_move(page, (1.0, 1.0), (0.0, 1.0), 8)
    text = wait_for_readout(page, r"q = \(0\.000, 1\.000\)", timeout=PATIENCE)
    assert "Weights a = softmax(s): I 0.1978, love 0.4011, NLP 0.4011" in text
    assert text.endswith("Output Σ aᵢvᵢ = 4.4067 ≈ 4.41")
    page.mouse.up()
