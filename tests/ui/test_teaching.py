"""The teaching panels in a real browser: presets, editing, the mask, and token names as text."""

from __future__ import annotations

import io
import time

import pytest
from PIL import Image

from tests.ui.conftest import SCREENSHOTS
from tests.ui.helpers import PATIENCE, open_app, readout, show_tab, to_page, wait_for_drawn, wait_for_readout, weights

XSS = "<img src=x onerror=alert(1)>"


def matrix_source(page, renderer: str):
    return page.evaluate("""(name) => {
        const fig = Bokeh.documents[0].get_model_by_name('attention-matrix');
        return fig.renderers.find((r) => r.name === name).data_source.data; }""", renderer)


def type_into(page, css_class: str, text: str) -> None:
    box = page.locator(f".{css_class} input")
    box.fill(text)
    box.press("Enter")


def test_module_2_preset_shows_the_vector_output(page):
    show_tab(page, "Edit")
    # the Edit tab's preset menu (the header's language menu is a select too)
    page.locator("select", has=page.locator("option", has_text="Module 2: vector values")).select_option(
        "Module 2: vector values")
    # a preset switch rebuilds the editor and the value views: allow a loaded machine time
    wait_for_readout(page, r"Output Σ aᵢvᵢ = \(3\.9833, 6\.0167\)", timeout=20000)
    show_tab(page, "Matrix", "attention-matrix")
    page.wait_for_function("""() => Bokeh.documents[0].get_model_by_name('attention-matrix').renderers
        .find((r) => r.name === 'row-outputs').data_source.data.label[0] === '(6.0167, 3.9833)'""")
    page.mouse.click(*to_page(page, "attention-matrix", 0, 0))
    text = wait_for_readout(page, 'Query of "I"')
    assert weights(page) == pytest.approx([0.4011, 0.1978, 0.4011], abs=1e-4)
    assert "Output Σ aᵢvᵢ = (6.0167, 3.9833)" in text
    show_tab(page, "Weights", "value-plane")
    label = page.evaluate("""() => Bokeh.documents[0].get_model_by_name('value-plane').renderers
        .find((r) => r.data_source.data.label && String(r.data_source.data.label[0]).startsWith('output'))
        .data_source.data.label[0]""")
    assert label == "output (6.0167, 3.9833)"


def test_bad_coordinate_shows_a_message_and_keeps_the_numbers(page):
    show_tab(page, "Edit")
    before = readout(page)
    type_into(page, "field-k-1-0", "abc")
    message = page.locator(".field-message").filter(has_text="k_love[1] refused")
    message.wait_for()
    assert "'abc' is not a number" in message.text_content()
    # the message is the server's answer to the typed text, in the same message as anything else it changed
    assert readout(page) == before
    type_into(page, "field-k-1-0", "1e9")
    page.locator(".field-message").filter(has_text="outside ±1e+06").wait_for()
    # and the second answer comes after everything the first typing did
    assert readout(page) == before
    assert weights(page) == pytest.approx([0.1978, 0.4011, 0.4011], abs=1e-4)


def test_a_token_named_like_html_is_text_and_runs_nothing(page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    show_tab(page, "Edit")
    type_into(page, "field-name-0-", XSS)
    message = page.locator(".field-message").filter(has_text="name of token 1 refused")
    message.wait_for()
    assert XSS in message.text_content()  # shown literally, as typed
    wait_for_drawn(page)  # the page has drawn what the server sent with the message
    assert page.locator("img[src=x]").count() == 0  # css locators pierce the shadow roots
    assert dialogs == []
    assert 'Query of "love"' in readout(page) and "I 0.1978" in readout(page)


def test_causal_mask_greys_the_upper_triangle(page):
    show_tab(page, "Edit")
    page.locator(".switch-causal input").check()
    wait_for_readout(page, "NLP masked", timeout=20000)
    show_tab(page, "Matrix", "attention-matrix")
    assert weights(page) == pytest.approx([0.3302, 0.6698, 0.0], abs=1e-4)
    data = matrix_source(page, "masked-cells")
    assert sorted(zip(data["x"], data["y"], strict=True)) == [(1, 0), (2, 0), (2, 1)]
    cells = {(2, 0): "masked", (1, 0): "masked", (2, 1): "masked", (0, 1): "weight", (0, 0): "weight"}
    # a patch off each cell's centre (where its label is); positions first: to_page scrolls
    spots = {c: to_page(page, "attention-matrix", c[0] - 0.3, c[1] - 0.3) for c in cells}
    wait_for_drawn(page)
    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    for cell, kind in cells.items():
        px, py = spots[cell]
        patch = shot.crop((int(px) - 4, int(py) - 4, int(px) + 4, int(py) + 4))
        r, g, b = (sum(c) / len(c) for c in zip(*patch.get_flattened_data(), strict=True))
        # light grey with darker hatching: neither white (nothing drawn) nor a Cividis colour
        grey = max(r, g, b) - min(r, g, b) < 12 and 160 < min(r, g, b) and max(r, g, b) < 245
        assert grey == (kind == "masked"), f"cell {cell}: mean colour {(r, g, b)}"
    page.mouse.click(*to_page(page, "attention-matrix", 0, 0))
    text = wait_for_readout(page, 'Query of "I"')
    assert "Output Σ aᵢvᵢ = 2.0000" in text


def test_formula_renders_locally_with_live_numbers(browser, server):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    open_app(page, server)
    show_tab(page, "Recipe")
    page.locator(".formula .katex").first.wait_for()
    assert page.locator(".formula .katex").count() >= 3
    maths = " ".join(page.locator(".formula .katex").all_text_contents())
    assert "= 4.4067" in maths and "0.1978" in maths
    local = (server, "ws://127.0.0.1", f"blob:{server.rstrip('/')}")  # blob: URLs are made in the page
    assert all(u.startswith(local) for u in requests), [u for u in requests if not u.startswith(local)]
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "teaching-1920.png", full_page=True)
    context.close()


def test_the_dk_panel_fits_a_1024_screen_and_scrolls_within_its_tab(browser, server):
    """Three histograms are wider than the tab on a 1024 px screen: they wrap, and the tab scrolls (the page
    itself never does), so every part of the panel can be reached."""
    page = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    open_app(page, server)
    show_tab(page, "√d_k", "dk-softmax")
    boxes = page.evaluate("""() => ['dk-dots', 'dk-scaled', 'dk-softmax'].map((name) => {
        const r = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name(name)).el.getBoundingClientRect();
        return {name, left: r.left, right: r.right}; })""")
    for box in boxes:
        assert 0 <= box["left"] and box["right"] <= 1024, boxes
    table = page.locator("table.dk-summary")
    assert table.bounding_box()["y"] + table.bounding_box()["height"] > 768  # below the fold at first
    page.mouse.move(700, 600)
    for _ in range(10):
        page.mouse.wheel(0, 300)
    # reached by scrolling the tab: the wheel's scrolling runs in the page's own time, looked at frame by frame
    deadline = time.monotonic() + PATIENCE / 1000
    while (box := table.bounding_box())["y"] + box["height"] > 768:
        assert time.monotonic() < deadline, box
        page.evaluate("() => new Promise(r => requestAnimationFrame(r))")
    assert page.evaluate("() => [scrollX, scrollY, document.scrollingElement.scrollHeight]") == [0, 0, 768]
    page.context.close()
