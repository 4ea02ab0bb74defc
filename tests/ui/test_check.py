"""The Check tab in a real browser: every question answered through the page, the number rule, the credit rules,
the score, progress kept in the browser's localStorage, the two tasks done on the explorer, and the lab download.

Expected texts are the course's rules as the page words them (course/questions/grading.py); the numbers of the tasks are
read off the page's own readout at the moment the task was done.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from decimal import Decimal

import pytest

from course.questions import PRACTICE, PRECISION_RULE, QUESTIONS
from testing.browser import APP_LOADED as APP_READY
from tests.ui.conftest import ROOT, SCREENSHOTS, VIEWPORTS, free_port, stop, wait_for_http
from tests.ui.helpers import (
    _DEEP as DEEP,
)
from tests.ui.helpers import (
    READOUT,
    controls,
    move_seen,
    open_app,
    past_double_tap,
    settle,
    show_tab,
    text_sizes,
    to_page,
    wait_for_drawn,
    wait_for_readout,
    weights,
)

#: A loaded machine (load 4 on 2 cores) can take seconds for one round trip: wait long, assert exactly.
WAIT = 20_000


def pane(page, css_class: str):
    """The HTML pane with ``css_class``: its contents, which Panel renders in a div of the pane's shadow root."""
    return page.locator(f".{css_class}").locator("div").first


def open_check(page) -> None:
    show_tab(page, "Check")
    pane(page, "check-score").filter(has_text="with credit").wait_for(timeout=WAIT)


def card(page, qid):
    return page.locator(f".question-{qid}")


def feedback(page, qid):
    return pane(page, f"feedback-{qid}")


def check(page, qid, given, expect: str) -> str:
    """Answer question ``qid`` with ``given`` (a choice's index, or the text typed) and wait for ``expect``."""
    c = card(page, qid)
    if isinstance(given, int):
        c.locator("input[type=radio]").nth(given).check()
    else:
        c.locator("input[type=text]").fill(given)
    c.get_by_role("button", name="Check", exact=True).click()
    fb = feedback(page, qid)
    fb.filter(has_text=expect).wait_for(timeout=WAIT)
    return fb.text_content()


def score(page) -> str:
    return pane(page, "check-score").text_content().strip()


def wrong_number(q) -> str:
    """A wrong answer typed at the question's own precision (so it is judged, not refused as too short)."""
    return str(Decimal(q.answer) + 1)


def test_every_question_through_the_page_with_each_wrong_choice_explained(open_page):
    page = open_page()
    open_check(page)
    page.get_by_role("button", name="Open the practice problems").click()
    card(page, PRACTICE[-1].id).wait_for(timeout=WAIT)
    for q in QUESTIONS + PRACTICE:
        if q.kind == "choice":
            wrong = next(i for i in range(len(q.choices)) if i != q.answer)
            text = check(page, q.id, wrong, q.choices[wrong].feedback)  # that choice's own explanation, not another's
            assert all(c.feedback not in text for i, c in enumerate(q.choices) if i not in (wrong, q.answer))
            assert q.why not in text
            right = q.answer
        else:
            text = check(page, q.id, wrong_number(q), "try again" if not q.counts else "1 of 3 tries used")
            assert q.why not in text
            right = q.answer
        done = "Right on try 2 — credit." if q.counts else "Right on try 2. Practice problems do not count"
        text = check(page, q.id, right, done)
        assert f"Why: {q.why}" in text
        assert card(page, q.id).get_by_role("button", name="Check", exact=True).is_disabled()
    assert score(page) == f"Score: {len(QUESTIONS)} of {len(QUESTIONS)} with credit"  # practice does not count


def reload(page) -> None:
    page.reload()
    page.wait_for_function(APP_READY, timeout=WAIT)
    page.locator(READOUT).wait_for(timeout=WAIT)
    open_check(page)


def test_the_number_rule_the_credit_rules_the_score_and_progress_kept_in_the_browser(open_page):
    page = open_page()
    open_check(page)
    # the number rule, stated on the page and applied: 0.73 is not precise enough (and no try), .731 is right
    page.get_by_text(PRECISION_RULE).wait_for(timeout=WAIT)
    text = check(page, "two-key-softmax", "0.73", "it does not count as a try")
    assert "Not precise enough: this question asks for 3 decimal places, and 0.73 has 2." in text
    assert "tries used" not in text
    check(page, "two-key-softmax", ".731", "Right on try 1 — credit.")
    # the score is the learner's own record, and the tab says so
    assert "it is not a grade" in page.locator(".check-own").text_content()
    # three wrong tries show the answer, and a right answer after that earns nothing
    for i in (0, 2):
        check(page, "why-scale", i, "tries used")
    text = check(page, "why-scale", 3, "Answer shown after three tries — this one no longer earns credit.")
    assert "Answer: As d_k grows" in text and "Why:" in text
    check(page, "why-scale", 1, "Right — the answer had already been shown, so no credit this time.")
    # Show answer: no credit either
    card(page, "dot-product").get_by_role("button", name="Show answer").click()
    text = feedback(page, "dot-product")
    text.filter(has_text="You chose to see the answer — this one earns no credit.").wait_for(timeout=WAIT)
    assert "Answer: 6" in text.text_content()
    assert score(page) == "Score: 1 of 14 with credit"

    reload(page)  # all of it comes back from the browser's localStorage
    feedback(page, "why-scale").filter(has_text="no credit this time").wait_for(timeout=WAIT)
    assert "Right on try 1 — credit." in feedback(page, "two-key-softmax").text_content()
    assert "You chose to see the answer" in feedback(page, "dot-product").text_content()
    assert score(page) == "Score: 1 of 14 with credit"
    assert "attention-explorer.progress.v1" in page.evaluate("Object.keys(localStorage)")

    page.get_by_role("button", name="Start again").click()
    page.get_by_role("button", name="Yes, clear my progress").click()
    pane(page, "check-score").filter(has_text="0 of 14 with credit").wait_for(timeout=WAIT)
    assert card(page, "two-key-softmax").locator("input[type=text]").input_value() == ""
    assert not card(page, "why-scale").locator("input[type=radio]:checked").count()
    reload(page)  # cleared in the browser too
    assert score(page) == "Score: 0 of 14 with credit"
    assert feedback(page, "why-scale").text_content().strip() == ""
    assert page.evaluate("localStorage.getItem('attention-explorer.progress.v1')") is None
    check(page, "two-key-softmax", "0.731", "Right on try 1 — credit.")
    assert score(page) == "Score: 1 of 14 with credit"


def test_long_answers_and_a_reload_give_no_credit_once_the_answer_was_shown(open_page):
    """Question 9 answered with 24 characters (as much as the box takes) three times: three wrong tries, never "not a
    number", the answer shown; after a reload that record is read back, so 0.731 earns no credit."""
    page = open_page()
    open_check(page)
    for digit, expect in (("1", "1 of 3 tries used"), ("2", "2 of 3 tries used"),
                          ("3", "Answer shown after three tries")):
        answer = "." + digit + "0" * 22
        assert len(answer) == 24
        text = check(page, "two-key-softmax", answer, expect)
        assert "not a number" not in text
    reload(page)
    feedback(page, "two-key-softmax").filter(has_text="Answer shown after three tries").wait_for(timeout=WAIT)
    assert pane(page, "check-notice").text_content() == ""  # everything was read back
    check(page, "two-key-softmax", "0.731", "Right — the answer had already been shown, so no credit this time.")
    assert score(page) == "Score: 0 of 14 with credit"


def test_an_edited_store_is_said_on_the_tab_and_earns_no_credit(open_page):
    page = open_page()
    open_check(page)
    check(page, "dot-product", "6", "Right on try 1 — credit.")
    page.evaluate("localStorage.setItem('attention-explorer.progress.v1', '{\"edited\": true')")
    reload(page)
    notice = pane(page, "check-notice")
    notice.filter(has_text="could not be read").wait_for(timeout=WAIT)
    assert "No question earns credit now" in notice.text_content()
    assert score(page) == "Score: 0 of 14 with credit"
    check(page, "dot-product", "6", "Right — but this question's saved record could not be read, so no credit")
    reload(page)  # what the page stored back is read, and the question stays without credit
    feedback(page, "dot-product").filter(has_text="could not be read").wait_for(timeout=WAIT)
    assert pane(page, "check-notice").text_content() == "" and score(page) == "Score: 0 of 14 with credit"


def test_the_cards_work_with_the_keyboard(open_page):
    page = open_page()
    open_check(page)
    first = card(page, "row-sum").locator("input[type=radio]").first
    first.focus()
    page.keyboard.press("ArrowDown")  # the choice moves within its group: choice 2, the right one
    assert card(page, "row-sum").locator("input[type=radio]").nth(1).is_checked()
    page.keyboard.press("Tab")  # to Check
    page.keyboard.press("Enter")
    feedback(page, "row-sum").filter(has_text="Right on try 1 — credit.").wait_for(timeout=WAIT)
    box = card(page, "dot-product").locator("input[type=text]")
    box.focus()
    page.keyboard.type("6")
    page.keyboard.press("Enter")  # Enter in the number box checks it
    feedback(page, "dot-product").filter(has_text="Right on try 1 — credit.").wait_for(timeout=WAIT)
    assert box.is_disabled() and card(page, "dot-product").get_by_role("button", name="Check", exact=True).is_disabled()


def test_the_french_page_reads_a_decimal_comma_and_names_it(open_page):
    page = open_page("?lang=fr")
    show_tab(page, "Vérifier")
    pane(page, "check-score").filter(has_text="avec point").wait_for(timeout=WAIT)
    c = card(page, "two-key-softmax")
    c.locator("input[type=text]").fill("0.731")
    c.get_by_role("button", name="Vérifier", exact=True).click()
    feedback(page, "two-key-softmax").filter(has_text="comme dans 0,731").wait_for(timeout=WAIT)
    assert c.locator("input[type=text]").input_value() == "0.731"  # kept, to be mended
    c.locator("input[type=text]").fill("０，７３１")  # full width, as an input method may type it
    c.get_by_role("button", name="Vérifier", exact=True).click()
    feedback(page, "two-key-softmax").filter(has_text="point gagné").wait_for(timeout=WAIT)


def test_task_1_does_not_tick_on_a_click_two_pixels_right_of_q(open_page):
    """The Section 6 start, q = q_love, where love and NLP tie at 0.4011: a click 2 px to the right puts NLP ahead by
    about a thousandth, shown as a near tie; the task waits for a lead the page shows clearly."""
    page = open_page()
    x, y = to_page(page, "query-plot", 0.0, 1.0)
    page.mouse.click(x + 2, y)
    wait_for_readout(page, r"q = \((?!0\.000,)", WAIT)  # the page took the click: q moved off (0, 1)
    shown = weights(page)
    assert shown[2] > shown[1]  # NLP ahead, as the page shows it
    open_check(page)
    pane(page, "task-nlp").filter(has_text="Task 1 — not done yet").wait_for(timeout=WAIT)


def test_progress_survives_a_server_restart(browser):
    """A restart forgets every session: the progress comes back from the browser, on a new session's page."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "PORT": str(port)}  # the same address after the restart: the browser's storage is per origin

    def start():
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.STDOUT)
        wait_for_http(url, proc)
        return proc

    proc = start()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        open_app(page, url)
        open_check(page)
        check(page, "dot-product", "6", "Right on try 1 — credit.")
        check(page, "key-role", 0, "1 of 3 tries used")
        pane(page, "check-score").filter(has_text="Score: 1 of 14 with credit").wait_for(timeout=WAIT)
        stop(proc)
        proc = start()
        reload(page)
        feedback(page, "dot-product").filter(has_text="Right on try 1 — credit.").wait_for(timeout=WAIT)
        assert "1 of 3 tries used" in feedback(page, "key-role").text_content()
        assert score(page) == "Score: 1 of 14 with credit"
    finally:
        context.close()
        stop(proc)


def recipe(q, keys=((1, 0), (0, 1), (1, 1)), values=(2, 6, 4)):
    """The course's three steps for one query, by hand: scores / √2, softmax, the weighted sum of the values."""
    scores = [(q[0] * k[0] + q[1] * k[1]) / math.sqrt(2) for k in keys]
    e = [math.exp(s - max(scores)) for s in scores]
    w = [x / sum(e) for x in e]
    return w, sum(a * v for a, v in zip(w, values, strict=True))


def test_the_tasks_tick_on_a_real_drag_and_real_clicks_on_each_matrix_row(open_page):
    page = open_page()
    # drag q from q_love = (0, 1) towards k_NLP = (1, 1), the button held all the way
    page.mouse.move(*to_page(page, "query-plot", 0.0, 1.0))
    page.mouse.down()
    for x in (0.25, 0.5, 0.75, 1.0):
        move_seen(page, *to_page(page, "query-plot", x, 1.0), steps=4)
    page.mouse.up()
    wait_for_readout(page, r"q = \((?:0\.99|1\.00)\d, (?:0\.99|1\.00)\d\)", WAIT)
    show_tab(page, "Matrix", "attention-matrix")
    rows = {}
    for row, token in enumerate(("I", "love", "NLP")):
        page.mouse.click(*to_page(page, "attention-matrix", 1, row))
        wait_for_readout(page, f'Query of "{token}"', WAIT)
        rows[token] = weights(page)
        past_double_tap(page)
    open_check(page)
    nlp = pane(page, "task-nlp")
    nlp.filter(has_text="Task 1 — done").wait_for(timeout=WAIT)
    # The first position of the drag that met the task (whichever reached the server first), with the numbers
    # the page showed there: NLP's weight the largest, the output nearer 4 than the 4.4067 q started from.
    m = re.search(r"query of “love”: q = \(([-\d.]+), ([-\d.]+)\); weights I ([\d.]+), love ([\d.]+), NLP ([\d.]+); "
                  r"output ([\d.]+), from 4\.4067 where q started", nlp.text_content())
    assert m, nlp.text_content()
    q, seen, out = (float(m[1]), float(m[2])), [float(m[i]) for i in (3, 4, 5)], float(m[6])
    assert 0.15 < q[0] <= 1.01 and q[1] == pytest.approx(1.0, abs=0.01)  # a point of the drag, not its start
    w, o = recipe(q)
    assert seen == pytest.approx(w, abs=6e-5) and out == pytest.approx(o, abs=6e-5)
    assert seen[2] - max(seen[:2]) >= 0.05 and abs(out - 4) <= 0.4067 - 0.05  # the task's margins, as shown
    tasks = pane(page, "task-rows")
    tasks.filter(has_text="Task 2 — done").wait_for(timeout=WAIT)
    text = tasks.text_content()
    for token, shown in rows.items():  # each row as the readout showed it when it was clicked
        assert f"{token}: " + " + ".join(f"{x:.4f}" for x in shown) + " = 1.0000" in text
    assert rows["love"] == pytest.approx([0.1978, 0.4011, 0.4011], abs=1e-4)


def test_the_page_offers_the_lab_notebook_as_the_project_has_it(open_page):
    page = open_page()
    open_check(page)
    assert "needs only NumPy" in pane(page, "check-lab").text_content()
    with page.expect_download(timeout=WAIT) as download:
        page.get_by_role("button", name=re.compile("Download the lab notebook")).click()
    assert download.value.suggested_filename == "attention_lab.ipynb"
    assert open(download.value.path(), "rb").read() == (ROOT / "lab" / "attention_lab.ipynb").read_bytes()


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_the_check_tab_in_projector_mode_is_large_and_fits(open_page, size):
    viewport = VIEWPORTS[size]
    page = open_page("?mode=projector", viewport=viewport)
    settle(page, "projector")
    open_check(page)
    page.get_by_role("button", name="Open the practice problems").click()
    card(page, PRACTICE[0].id).wait_for(timeout=WAIT)
    wait_for_drawn(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"check-projector-{size}.png")
    # as on the other tabs (test_classroom_page.py): KaTeX's index letters are the only smaller text
    small = [t for t in text_sizes(page) if t["size"] < 20 and not (t["script"] and not re.search(r"\d", t["text"]))]
    assert not small, f"text under 20 px: {small}"
    cut = [b["name"] for b in controls(page) if b["right"] > viewport["width"] + 1 or b["left"] < -1]
    assert not cut, f"cut off at the side: {cut}"
    overflowing = page.evaluate(DEEP + """() => [...deep(document)].filter(el => el.tagName === 'BUTTON'
        && el.getBoundingClientRect().width > 2 && el.scrollWidth > el.clientWidth + 1).map(el => el.textContent)""")
    assert not overflowing, f"button text cut off: {overflowing}"
    scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    assert scroll[0] <= viewport["width"] and scroll[1] <= viewport["height"]  # the tab scrolls, never the page
