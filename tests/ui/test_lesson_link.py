"""A teacher's lesson link in a real browser: only its tabs, in every language, through Present, and copied."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.ui.helpers import PATIENCE, READOUT, open_app, wait_for_readout

LESSON = "weights,matrix,steps,check"
#: The four tabs' titles, from the catalogs (locale/ar/LC_MESSAGES/messages.po for Arabic).
TITLES = {"en": ["Weights", "Matrix", "All steps", "Check"], "ar": ["الأوزان", "المصفوفة", "كل الخطوات", "تحقّق"]}


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_lesson_link_shows_exactly_its_tabs_in_the_page_s_order(open_page, lang):
    # the link names them in another order and another case: the page keeps its own order
    page = open_page(f"?tabs=Check,steps,MATRIX,weights&lang={lang}")
    expect(page.locator(".bk-tab")).to_have_text(TITLES[lang], timeout=PATIENCE)
    expect(page.locator("p.notice")).to_have_count(0)


def test_keys_and_the_step_through_work_with_fewer_tabs(open_page):
    page = open_page(f"?tabs={LESSON}")
    expect(page.locator(".bk-tab")).to_have_count(4, timeout=PATIENCE)
    page.locator(".bk-tab", has_text="All steps").click()
    page.locator(READOUT).click()  # the page focused, as a learner clicks an empty spot
    page.keyboard.press("3")
    wait_for_readout(page, "NLP")
    page.keyboard.press("Space")  # the first press starts the step-through
    expect(page.locator(".bk-tab.bk-active")).to_have_text("All steps")
    page.wait_for_function("() => /[?&]step=1\\b/.test(location.search) && /[?&]row=NLP\\b/.test(location.search)",
                           timeout=PATIENCE)
    assert parse_qs(urlparse(page.url).query)["tabs"] == [LESSON]


def test_an_unknown_tab_name_gets_the_notice_and_the_rest_applies(open_page):
    page = open_page("?tabs=weights,zoom&row=NLP")
    expect(page.locator(".bk-tab")).to_have_text(["Weights"], timeout=PATIENCE)
    expect(page.locator("p.notice")).to_contain_text("unknown tab names left out: 'zoom'", timeout=PATIENCE)
    wait_for_readout(page, "NLP")


def _present(page) -> str:
    with page.expect_navigation(url=re.compile(r"[?&]token=")):
        page.get_by_role("button", name="Present").click()
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=4 * PATIENCE)
    page.locator(".room-code").wait_for(timeout=4 * PATIENCE)
    return page.locator(".room-link").text_content()


def _context(browser, **options):
    return browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US", **options)


def test_a_follower_gets_the_presenter_s_lesson(browser, server):
    teacher = _context(browser).new_page()
    open_app(teacher, server + f"?tabs={LESSON}&header=simple")
    expect(teacher.get_by_role("checkbox", name="Projector")).to_have_count(0)  # the simple header
    link = _present(teacher)
    expect(teacher.locator(".bk-tab")).to_have_text(TITLES["en"], timeout=PATIENCE)  # kept through Present
    # a learner's page opened with other tabs takes the presenter's set
    learner = _context(browser).new_page()
    open_app(learner, link + "&tabs=edit,keys")
    learner.get_by_text("Following room").wait_for(timeout=PATIENCE)
    expect(learner.locator(".bk-tab")).to_have_text(TITLES["en"], timeout=PATIENCE)
    expect(learner.get_by_role("checkbox", name="Projector")).to_have_count(0)
    learner.context.close()
    teacher.context.close()


def _copied_link(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page).query).items()}


def test_copy_this_lesson_s_link_puts_the_lesson_on_the_clipboard(browser, server):
    context = _context(browser, permissions=["clipboard-read", "clipboard-write"])
    teacher = context.new_page()
    open_app(teacher, server + f"?tabs={LESSON}&header=simple&row=NLP&mode=projector")
    _present(teacher)
    teacher.get_by_role("button", name="Copy this lesson's link").click()
    teacher.get_by_role("button", name="Link copied").wait_for(timeout=PATIENCE)
    copied = teacher.evaluate("() => navigator.clipboard.readText()")
    assert copied.startswith(server + "?")
    args = _copied_link(copied)
    assert "room" not in args and "token" not in args
    assert (args["tabs"], args["header"], args["row"], args["mode"]) == (LESSON, "simple", "NLP", "projector")
    context.close()


def test_without_the_clipboard_the_lesson_s_link_is_shown_selected(browser, server):
    context = _context(browser)
    # a browser without the clipboard API (a page served over plain http on a school's network has none)
    context.add_init_script("Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined})")
    teacher = context.new_page()
    open_app(teacher, server + f"?tabs={LESSON}")
    _present(teacher)
    teacher.get_by_role("button", name="Copy this lesson's link").click()
    box = teacher.get_by_role("textbox", name="This lesson's link")
    expect(box).to_be_visible(timeout=PATIENCE)
    assert _copied_link(box.input_value())["tabs"] == LESSON and "token" not in box.input_value()
    assert box.evaluate("b => b.selectionStart === 0 && b.selectionEnd === b.value.length")
    context.close()
