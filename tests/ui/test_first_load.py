"""A first visit loads what the page runs: no WebGL bundle, no KaTeX script until a formula with numbers is shown,
and its scripts in Brotli once the server has compressed them (server/page_scripts.py, widgets/stepper.py,
server/static_gzip.py)."""

from __future__ import annotations

import time

from tests.ui.helpers import KATEX_FONTS, PATIENCE, failed_requests, open_app, show_tab

KATEX_SCRIPT = "katex.min.js"


def _recording(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    return context, page, requests


def test_the_first_view_draws_the_recipe_without_katex_s_script_which_comes_with_the_first_step(browser, server):
    context, page, requests = _recording(browser)
    failed = failed_requests(page)
    try:
        open_app(page, server)
        recipe = page.locator(".formula .katex").first
        recipe.wait_for(timeout=PATIENCE)  # the recipe, drawn in KaTeX's HTML
        assert "softmax" in recipe.text_content()
        fonts = page.evaluate(KATEX_FONTS)
        before = list(requests)
        page.get_by_text("Step through").click()  # step 1, with the learner's numbers: a LaTeX pane
        page.locator(".formula .katex", has_text="0.7071").wait_for(timeout=PATIENCE)
    finally:
        context.close()
    assert not [u for u in before if KATEX_SCRIPT in u or "bokeh-gl" in u], before
    assert any(KATEX_SCRIPT in u for u in requests), "the step's formula loaded no KaTeX"
    assert fonts["family"].startswith("KaTeX_Main"), fonts  # the recipe in KaTeX's fonts, not a system serif
    assert "KaTeX_Math italic loaded" in fonts["faces"], fonts
    assert not failed, failed


def test_a_tab_of_formulas_loads_katex_when_it_is_shown(browser, server):
    context, page, requests = _recording(browser)
    try:
        open_app(page, server)
        show_tab(page, "Matrix", "attention-matrix")
        before = list(requests)
        show_tab(page, "Recipe")
        page.locator(".formula .katex", has_text="0.1978").first.wait_for(timeout=PATIENCE)
    finally:
        context.close()
    assert not [u for u in before if KATEX_SCRIPT in u], before
    assert any(KATEX_SCRIPT in u for u in requests)


def test_the_page_s_scripts_come_in_brotli_once_the_server_has_made_it(browser, server):
    # the first visit of a process gets gzip while the server compresses each script in Brotli on a worker thread;
    # the test opens the page until every script comes in Brotli (the server's own signal: its answer)
    deadline = time.monotonic() + 120
    while True:
        context, page, _ = _recording(browser)
        encodings: dict[str, str] = {}

        def seen(response, encodings=encodings):
            if response.url.split("?")[0].endswith(".js") and "/static/" in response.url:
                encodings[response.url.split("?")[0].rsplit("/", 1)[-1]] = response.headers.get("content-encoding")
        page.on("response", seen)
        try:
            open_app(page, server)
        finally:
            context.close()
        assert {"bokeh.min.js", "panel.min.js"} <= set(encodings), encodings
        assert set(encodings.values()) <= {"br", "gzip"}, encodings
        if set(encodings.values()) == {"br"} or time.monotonic() > deadline:
            break
    assert set(encodings.values()) == {"br"}, encodings
