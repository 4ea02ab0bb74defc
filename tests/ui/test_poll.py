"""The class poll in real browsers: a presenter asks, followers in other browser contexts answer, one joins late.

The server is test_follow.py's ``room_server`` (one for this module): its log is checked for tracebacks and for
any room code, link or token when the module ends.
"""

from __future__ import annotations

from course.questions import BY_ID
from tests.ui.conftest import SCREENSHOTS
from tests.ui.helpers import _DEEP as DEEP
from tests.ui.helpers import controls, settle, show_tab
from tests.ui.test_follow import (
    WAIT,
    close,
    follower,
    new_page,
    present,
    room_server,  # noqa: F401  (the fixture: one server for this module)
)
from widgets.poll import FollowerCard, question_options

LABELS = {qid: label for group in question_options().values() for label, qid in group.items()}


def pane(page, css_class: str):
    """The HTML pane with ``css_class``: its contents, which Panel renders in a div of the pane's shadow root."""
    return page.locator(f".{css_class}").locator("div").first


def ask(teacher, qid: str) -> None:
    card = teacher.locator(".poll-presenter")
    card.locator("select").select_option(label=LABELS[qid])
    # the server shows the question's whole prompt above the button: a click before it came would land where the
    # button was, on a loaded machine, and ask nothing
    pane(teacher, "poll-prompt-pane").filter(has_text=BY_ID[qid].prompt[:60]).wait_for(timeout=WAIT)
    card.get_by_role("button", name="Ask the room").click()
    pane(teacher, "poll-results").filter(has_text="following").wait_for(timeout=WAIT)


def answer(student, given) -> None:
    card = student.locator(".poll-follower")
    if isinstance(given, int):
        card.locator("input[type=radio]").nth(given).check()
        card.get_by_role("button", name="Send my answer").click()
    else:  # typed key by key, then Enter: the page's shortcuts (1, 2, 3 select a row) leave the box alone
        card.locator("input[type=text]").press_sequentially(given)
        card.locator("input[type=text]").press("Enter")
    status(student).filter(has_text="Your answer is in").wait_for(timeout=WAIT)


def status(student):
    return student.locator(".poll-follower .poll-status")


def counts(teacher) -> list[tuple[str, int, bool]]:
    """The presenter's bars as shown: (the choice or number, its count, whether it is marked as the answer)."""
    return [(label, int(n), tick) for label, n, tick in teacher.locator(".poll-results li").evaluate_all(
        "els => els.map(li => [li.querySelector('.poll-label').textContent, li.querySelector('.poll-n').textContent,"
        " li.querySelector('.poll-tick') != null])")]


def wait_counts(teacher, text: str) -> list[tuple[str, int, bool]]:
    """Wait until the presenter's counts say ``text`` (e.g. "3 answers"); returns its bars."""
    pane(teacher, "poll-results").filter(has_text=text).wait_for(timeout=WAIT)
    return counts(teacher)


def total(teacher) -> str:
    return teacher.locator(".poll-results .poll-total").text_content()


#: Shows the Send button again on a page that has answered, the way a hostile learner could in the console.
SHOW_SEND = DEEP + """() => { for (const el of deep(document)) if (el.classList && el.classList.contains('poll-send'))
    el.hidden = false }"""


#: Every text of the poll card with CSS class ``arg`` and its font size in px, through the card's shadow roots.
CARD_TEXT_SIZES = DEEP + """(card) => { const out = []
  for (const host of deep(document)) if (host.classList && host.classList.contains(card))
    for (const el of deep(host.shadowRoot)) {
      if (['STYLE', 'SCRIPT'].includes(el.tagName)) continue
      const text = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim()
      if (text && el.getBoundingClientRect().width > 1)
        out.push([text.slice(0, 30), parseFloat(getComputedStyle(el).fontSize)])
    }
  return out }"""


#: What inside the card with CSS class ``arg`` reaches past the card's right edge (it would be cut off).
SPILLING = DEEP + """(card) => { const out = []
  for (const host of deep(document)) if (host.classList && host.classList.contains(card)) {
    const right = host.getBoundingClientRect().right
    for (const el of deep(host.shadowRoot)) {
      const r = el.getBoundingClientRect()
      if (r.width > 1 && r.right > right + 1) out.push((el.textContent || el.tagName).trim().slice(0, 30))
    }
  }
  return out }"""


def test_a_poll_asked_answered_once_each_closed_and_revealed(browser, room_server):  # noqa: F811
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    students = [follower(browser, link) for _ in range(2)]
    assert teacher.locator(".poll-presenter").count() == 0  # built when the presenter first opens it
    teacher.get_by_role("button", name="Class poll").click()
    q = BY_ID["why-scale"]
    ask(teacher, q.id)
    assert wait_counts(teacher, "0 answers") == [(f"{x}. {c.text}", 0, False)
                                                 for x, c in zip("ABCD", q.choices, strict=True)]
    assert total(teacher) == "0 answers · 2 pages following"
    for s in students:
        s.get_by_text(q.prompt).wait_for(timeout=WAIT)
    answer(students[0], 1)  # B, the answer
    answer(students[1], 3)  # D
    late = follower(browser, link)  # joins while the poll is open: sees it at once
    late.get_by_text(q.prompt).wait_for(timeout=WAIT)
    answer(late, 1)
    shown = wait_counts(teacher, "3 answers")
    assert total(teacher) == "3 answers · 3 pages following"
    assert shown == [(f"{x}. {c.text}", n, False) for x, c, n in zip("ABCD", q.choices, (0, 2, 0, 1), strict=True)]

    # a page that sends again (its Send button shown again by hand) is refused by the room: nothing counted
    students[0].evaluate(SHOW_SEND)
    students[0].locator(".poll-follower").get_by_role("button", name="Send my answer").click()
    status(students[0]).filter(has_text="You have already answered this poll").wait_for(timeout=WAIT)
    # a page that joins after it: the card counts it after anything the refused send did
    joined = follower(browser, link)
    pane(teacher, "poll-results").filter(has_text="4 pages following").wait_for(timeout=WAIT)
    assert total(teacher) == "3 answers · 4 pages following" and counts(teacher) == shown
    close(joined)
    # no follower page shows anyone's answers but its own
    for s in [*students, late]:
        assert s.locator(".poll-results").count() == 0 and "answers ·" not in status(s).text_content()

    teacher.get_by_role("button", name="Close the poll").click()
    for s in [*students, late]:
        status(s).filter(has_text="The presenter has closed the poll").wait_for(timeout=WAIT)
    teacher.get_by_role("button", name="Reveal the answer").click()
    for s, mine in zip([*students, late], ("Your answer, B, is right.", "Your answer, D, is not the answer.",
                                            "Your answer, B, is right."), strict=True):
        status(s).filter(has_text="Why:").wait_for(timeout=WAIT)
        text = status(s).text_content()
        assert f"Answer: {q.answer_text}" in text and f"Why: {q.why}" in text and mine in text
    assert wait_counts(teacher, "Why:")[1] == (f"B. {q.choices[1].text}", 2, True)
    assert [tick for *_, tick in counts(teacher)] == [False, True, False, False]
    assert f"Why: {q.why}" in pane(teacher, "poll-results").text_content()

    # a number question: a histogram of the numbers given, rounded to its 3 places
    teacher.get_by_role("button", name="Ask another question").click()
    ask(teacher, "two-key-softmax")
    for s, given in zip([*students, late], ("0.731", ".731", "0.73"), strict=True):
        s.get_by_text(BY_ID["two-key-softmax"].prompt).wait_for(timeout=WAIT)
        answer(s, given)
    assert wait_counts(teacher, "3 answers") == [("0.730", 1, False), ("0.731", 2, False)]
    for s in [*students, late]:  # the digits went into the box, not to the explorer: still following
        assert s.get_by_text("Following room").is_visible()
    teacher.get_by_role("button", name="Close the poll").click()
    teacher.get_by_role("button", name="Reveal the answer").click()
    assert wait_counts(teacher, "Right by the number rule: 2") == [("0.730", 1, False), ("0.731", 2, True)]
    status(late).filter(has_text="Your answer, 0.73, is not the answer.").wait_for(timeout=WAIT)
    close(teacher, *students, late)


def test_the_poll_on_the_projector_and_a_followers_tasks_wait(browser, room_server):  # noqa: F811
    """Large on the projector (the presenter's and a follower's), within the screen and below the header's controls;
    a follower's Check tab says its tasks wait while it follows, and count again once it explores on its own."""
    for size, mode in (((1024, 768), "normal"), ((1920, 1080), "projector")):  # the follower's own mode
        teacher = new_page(browser, room_server, size)
        code, link = present(teacher)
        teacher.get_by_label("Projector").check()
        settle(teacher, "projector")
        student = follower(browser, link + f"&mode={mode}", size)  # each screen chooses its own mode
        teacher.get_by_role("button", name="Class poll").click()
        ask(teacher, "recipe-order")
        answer(student, 2)
        assert wait_counts(teacher, "1 answer ·")[2][1] == 1
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        teacher.screenshot(path=SCREENSHOTS / f"poll-presenter-projector-{size[0]}x{size[1]}.png")
        student.screenshot(path=SCREENSHOTS / f"poll-follower-{mode}-{size[0]}x{size[1]}.png")
        for page, card in ((teacher, ".poll-presenter"), (student, ".poll-follower")):
            sizes = page.evaluate(CARD_TEXT_SIZES, card[1:])
            assert len(sizes) >= 5, sizes
            if page is teacher or mode == "projector":
                assert all(px >= 20 for _, px in sizes), sizes
            box = page.locator(card).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= size[0] and box["y"] + box["height"] <= size[1]
            assert page.evaluate(SPILLING, card[1:]) == [], "a text runs past the card's right edge"
            header = [c for c in controls(page) if c["bottom"] < 200 and c["name"] in (
                "Stop presenting", "QR code", "Class poll", "Explore on my own", "Present")]
            assert header and all(c["bottom"] <= box["y"] for c in header), (header, box)
        close(teacher, student)
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    show_tab(student, "Check")
    tasks = pane(student, "task-nlp")
    tasks.filter(has_text="your page is following a presenter").wait_for(timeout=WAIT)
    student.get_by_role("button", name="Explore on my own").click()
    student.get_by_role("button", name="Follow again").wait_for(timeout=WAIT)
    student.wait_for_function(DEEP + """() => [...deep(document)].some(el => el.classList
        && el.classList.contains('task-nlp') && el.textContent.includes('Task 1')
        && !el.textContent.includes('Not counting right now'))""", timeout=WAIT)
    close(teacher, student)


def test_a_page_reloaded_during_a_poll_keeps_its_answer_and_cannot_answer_again(browser, room_server):  # noqa: F811
    """A reloaded page used to be a new page that could answer again. The room now knows the browser (by the id
    it keeps in localStorage), and the browser remembers its answer."""
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student = follower(browser, link)
    teacher.get_by_role("button", name="Class poll").click()
    ask(teacher, "key-role")
    student.get_by_text(BY_ID["key-role"].prompt).wait_for(timeout=WAIT)
    answer(student, 1)
    wait_counts(teacher, "1 answer ·")

    student.reload()
    student.get_by_text("Following room").wait_for(timeout=WAIT)
    status(student).filter(has_text="Your answer is in: B.").wait_for(timeout=WAIT)
    card = student.locator(".poll-follower")
    assert not card.get_by_role("button", name="Send my answer").is_visible()
    # a learner who shows the Send button again by hand is refused by the room: nothing is counted
    student.evaluate(SHOW_SEND)
    card.get_by_role("button", name="Send my answer").click()
    status(student).filter(has_text="This browser has already answered this poll.").wait_for(timeout=WAIT)
    # nor does forgetting the answer in the browser help: the room knows the browser
    student.evaluate(f"localStorage.removeItem({FollowerCard.ANSWER_KEY!r})")
    student.reload()
    student.get_by_text("Following room").wait_for(timeout=WAIT)
    status(student).filter(has_text="This browser has already answered this poll.").wait_for(timeout=WAIT)
    assert not card.get_by_role("button", name="Send my answer").is_visible()
    # another browser (a new context) answers as usual: counted after anything the refused sends did, one answer
    # each for B and C, so neither the refused send nor the reloaded page counted
    other = follower(browser, link)
    other.get_by_text(BY_ID["key-role"].prompt).wait_for(timeout=WAIT)
    answer(other, 2)
    assert wait_counts(teacher, "2 answers")[1:3] == [(f"B. {BY_ID['key-role'].choices[1].text}", 1, False),
                                                       (f"C. {BY_ID['key-role'].choices[2].text}", 1, False)]
    close(teacher, student, other)


def test_reveal_the_answer_is_offered_while_the_poll_is_open(browser, room_server):  # noqa: F811
    """README: "Reveal the answer shows it on every page". A teacher whose class has answered presses it at once: it
    is on the card as soon as the question is asked (it once came only after Close the poll), and revealing closes
    the poll too, so no answer comes after the answer."""
    teacher = new_page(browser, room_server)
    code, link = present(teacher)
    student, late = follower(browser, link), follower(browser, link)
    teacher.get_by_role("button", name="Class poll").click()
    q = BY_ID["why-scale"]
    ask(teacher, q.id)
    card = teacher.locator(".poll-presenter")
    for name in ("Close the poll", "Reveal the answer"):
        assert card.get_by_role("button", name=name).is_visible(), f"{name} is not on the card of an open poll"
    student.get_by_text(q.prompt).wait_for(timeout=WAIT)
    answer(student, 1)  # B, the answer
    wait_counts(teacher, "1 answer ·")
    card.get_by_role("button", name="Reveal the answer").click()
    status(student).filter(has_text="Why:").wait_for(timeout=WAIT)
    assert "Your answer, B, is right." in status(student).text_content()
    assert wait_counts(teacher, "Why:")[1] == (f"B. {q.choices[1].text}", 1, True)
    # the poll is closed with it: a page that had not answered is told, and offered no choice
    status(late).filter(has_text="Why:").wait_for(timeout=WAIT)
    assert late.locator(".poll-follower input[type=radio]").count() == 0 or not \
        late.locator(".poll-follower input[type=radio]").first.is_visible()
    assert not card.get_by_role("button", name="Close the poll").is_visible()
    assert not card.get_by_role("button", name="Reveal the answer").is_visible()
    close(teacher, student, late)
