"""The class poll: the registry's counts and rules, and the presenter's and followers' cards without a server.

Every follower here is a key the registry knows from ``follow`` (a page's session, on a served page); what a
hostile page could make its server pass on is tried against the registry itself. A page answers after its
card has reported the question drawn (``answer`` below does both, as a page's script does).
"""

from __future__ import annotations

import re
from html import unescape

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import LayoutDOM

from course.questions import BY_ID, PRACTICE, QUESTIONS
from services.polls import CLOSED, OPEN, REVEALED, PollCounts, PollRefused, PollView, number_bin
from services.rooms import RoomError, RoomRegistry
from session.state import AttentionState
from widgets.poll import FollowerCard, PresenterPoll, counts_html, question_options
from widgets.room import RoomControls


@pytest.fixture
def registry():
    return RoomRegistry(end_after=120)


class Page:
    """A follower page's ends of a room: its view listener and its poll listener, recording what they hear. As its
    poll card loads, it names its browser (``browser``; False: a page that names none, as a script's)."""

    def __init__(self, registry, code, key, browser=None):
        self.key, self.polls = key, []
        registry.follow(code, key, lambda *offer: None)
        registry.watch_poll(code, key, lambda view, counts: self.polls.append((view, counts)))
        if browser is not False:
            registry.name_browser(code, key, browser or f"browser-of-{key}")


def answer(registry, code, key, poll_id, given, browser=None):
    """Page ``key`` draws poll ``poll_id``'s question (in a browser of its own), then answers it."""
    registry.poll_drawn(code, key, poll_id, browser or f"browser-of-{key}")
    registry.answer_poll(code, key, poll_id, given)


@pytest.fixture
def room(registry):
    room, token = registry.create()
    presenter = []
    registry.watch_poll(room.code, "presenter", lambda view, counts: presenter.append((view, counts)), token=token)
    pages = [Page(registry, room.code, f"page-{i}") for i in range(4)]
    return room.code, token, presenter, pages


def text(html: str) -> str:
    """The text a page shows for ``html``: its blocks and list items one after another, its inline tags gone."""
    blocks = re.sub(r"</(?:p|li|h3|ul|div)>|<span", lambda m: " " + m.group(0), html)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", blocks))).strip()


# --- the registry ---------------------------------------------------------------------------------------------------
def test_answers_are_counted_per_choice_once_per_page(registry, room):
    code, token, presenter, pages = room
    view = registry.ask(code, token, "recipe-order")
    assert view == PollView(1, "recipe-order", OPEN)
    for page, choice in zip(pages, (2, 2, 0, 3), strict=True):
        answer(registry, code, page.key, view.id, choice)
    counts = registry.poll_counts(code, token)
    assert counts == PollCounts(1, answers=4, pages=4, right=2, choices=(1, 0, 2, 1))
    with pytest.raises(PollRefused, match="already answered"):
        answer(registry, code, pages[0].key, view.id, 1)
    assert registry.poll_counts(code, token) == counts  # the second answer changed nothing
    # the presenter heard every answer; each follower only that the question was asked
    assert [c.answers for _, c in presenter] == [0, 1, 2, 3, 4]
    assert all(p.polls == [(view, None)] for p in pages)


def test_answers_are_anonymous_the_poll_keeps_only_which_pages_answered(registry, room):
    code, token, presenter, pages = room
    view = registry.ask(code, token, "recipe-order")
    for page, choice in zip(pages, (2, 0, 3, 2), strict=True):
        answer(registry, code, page.key, view.id, choice)
    keys = {p.key for p in pages}
    poll = registry.get(code).poll
    for name, kept in vars(poll).items():  # no record ties a page to what it answered
        if name not in ("_answered", "_drawn") and hasattr(kept, "keys"):
            assert not keys & set(kept.keys()), name
    assert poll._answered == keys
    # the pages that drew the question, each with its browser's id: never with an answer
    assert poll._drawn == {key: f"browser-of-{key}" for key in keys}
    assert poll._browsers == set(poll._drawn.values())
    assert not any(key in repr(counts) for _, counts in presenter for key in keys)  # nor do the presenter's counts


def test_a_late_joiner_sees_the_open_poll_and_may_answer(registry, room):
    code, token, _, pages = room
    view = registry.ask(code, token, "two-key-softmax")
    answer(registry, code, pages[0].key, view.id, "0.731")
    late = Page(registry, code, "late")
    assert registry.poll(code) == view and late.polls == []  # what the late page's card is built from
    answer(registry, code, late.key, view.id, ".731")
    assert registry.poll_counts(code, token).answers == 2


def test_close_then_reveal_reaches_every_page(registry, room):
    code, token, presenter, pages = room
    view = registry.ask(code, token, "key-role")
    answer(registry, code, pages[0].key, view.id, 1)
    assert registry.close_poll(code, token) == PollView(1, "key-role", CLOSED)
    with pytest.raises(PollRefused, match="closed"):
        answer(registry, code, pages[1].key, view.id, 1)
    assert registry.reveal_poll(code, token) == PollView(1, "key-role", REVEALED)
    for page in pages:
        assert [v.state for v, _ in page.polls] == [OPEN, CLOSED, REVEALED]
        assert all(c is None for _, c in page.polls)  # counts never reach a follower
    assert presenter[-1] == (PollView(1, "key-role", REVEALED), PollCounts(1, 1, 4, 1, (0, 1, 0, 0)))


def test_a_new_question_replaces_the_poll_and_its_answers(registry, room):
    code, token, _, pages = room
    first = registry.ask(code, token, "key-role")
    answer(registry, code, pages[0].key, first.id, 0)
    second = registry.ask(code, token, "practice-dot")
    assert second == PollView(2, "practice-dot", OPEN)
    with pytest.raises(PollRefused, match="another question"):
        answer(registry, code, pages[1].key, first.id, 0)  # an answer to the poll before
    answer(registry, code, pages[0].key, second.id, "4")  # each page answers each poll once
    assert registry.poll_counts(code, token) == PollCounts(2, 1, 4, 1, (), (("4", 1),))


@pytest.mark.parametrize("question, given, why", [
    ("key-role", 4, "Choose one"), ("key-role", -1, "Choose one"), ("key-role", True, "Choose one"),
    ("key-role", "1", "Choose one"), ("key-role", None, "Choose one"), ("key-role", 1.0, "Choose one"),
    ("two-key-softmax", "nan", "not a number"), ("two-key-softmax", "inf", "not a number"),
    ("two-key-softmax", "1e400", "not a number"), ("two-key-softmax", "", "Type a number"),
    ("two-key-softmax", "9" * 24, "between"), ("two-key-softmax", "0.5" * 1000, "not a number"),
    ("two-key-softmax", float("nan"), "Type a number"), ("two-key-softmax", 0.731, "Type a number"),
    ("two-key-softmax", "<b>1</b>", "not a number"),
])
def test_a_hostile_answer_is_refused_and_counts_nothing(registry, room, question, given, why):
    code, token, presenter, pages = room
    view = registry.ask(code, token, question)
    heard = len(presenter)
    with pytest.raises(PollRefused, match=why):
        answer(registry, code, pages[0].key, view.id, given)
    assert registry.poll_counts(code, token).answers == 0 and len(presenter) == heard
    answer(registry, code, pages[0].key, view.id, 1 if question == "key-role" else "0.731")  # not a try used up
    assert registry.poll_counts(code, token).answers == 1


def test_only_followers_answer_and_only_the_presenter_polls(registry, room):
    code, token, _, pages = room
    with pytest.raises(PollRefused, match="no poll"):
        answer(registry, code, pages[0].key, 1, 0)
    view = registry.ask(code, token, "key-role")
    for key in ("presenter", "stranger", None):  # the presenter's own page, a page of no room
        with pytest.raises(PollRefused, match="following"):
            answer(registry, code, key, view.id, 1)
    with pytest.raises(PollRefused, match="ended"):
        answer(registry, "ZZZZZZ", pages[0].key, view.id, 1)
    for bad in (None, "forged", registry.secret.token("ZZZZZZ")):
        for act in (lambda t: registry.ask(code, t, "key-role"), lambda t: registry.close_poll(code, t),
                    lambda t: registry.reveal_poll(code, t), lambda t: registry.poll_counts(code, t)):
            with pytest.raises(RoomError):
                act(bad)
        if bad is not None:  # without a token a page watches as a follower does: no counts
            with pytest.raises(RoomError):
                registry.watch_poll(code, "spy", lambda *a: None, token=bad)
    with pytest.raises(PollRefused, match="no such question"):
        registry.ask(code, token, "<script>")
    assert registry.poll(code) == view and registry.poll_counts(code, token).answers == 0


def test_the_rooms_end_ends_its_poll_on_every_page(registry, room):
    code, token, presenter, pages = room
    registry.ask(code, token, "key-role")
    registry.end(code, token)
    assert presenter[-1] == (None, None) and all(p.polls[-1] == (None, None) for p in pages)
    assert registry.poll(code) is None


def test_numbers_fall_into_bins_of_the_asked_precision_and_rights_follow_the_number_rule(registry, room):
    code, token, _, pages = room
    more = [Page(registry, code, f"more-{i}") for i in range(3)]
    view = registry.ask(code, token, "two-key-softmax")  # 0.731, 3 places; exactly 0.7310585...
    for page, given in zip(pages + more, ("0.731", ".731", "0.7306", "0.73", "0,731", "-0.2", "0.7311"), strict=True):
        answer(registry, code, page.key, view.id, given)
    counts = registry.poll_counts(code, token)
    assert counts.numbers == (("-0.200", 1), ("0.730", 1), ("0.731", 5))
    assert counts.right == 4  # 0.731, .731, 0,731, 0.7311; not 0.7306, though it falls in bin 0.731
    assert number_bin(BY_ID["dot-product"], "6.4") == "6"


# --- the presenter's counts -----------------------------------------------------------------------------------------
def test_the_counts_show_each_choice_and_mark_the_answer_only_once_revealed():
    q = BY_ID["recipe-order"]
    counts = PollCounts(1, 5, 6, 3, (1, 0, 3, 1))
    shown = counts_html(q, counts, revealed=False)
    assert text(shown).startswith("5 answers · 6 pages following")
    for i, n in enumerate(counts.choices):
        assert f"{'ABCD'[i]}. {q.choices[i].text} {n}" in text(shown)
    assert "✓" not in shown and 'class="right"' not in shown
    assert "width:100.0%" in shown and "width:33.3%" in shown  # bars scaled to the largest count
    revealed = counts_html(q, counts, revealed=True)
    assert re.search(r'<li class="right">.*?C\. Score the query', revealed) and revealed.count("✓") == 1


def test_the_histogram_shows_the_most_given_numbers():
    q = BY_ID["two-key-softmax"]
    numbers = tuple((f"0.{i:03d}", 1 + (i == 731)) for i in range(725, 735))
    shown = text(counts_html(q, PollCounts(1, 11, 11, 2, (), numbers), revealed=True))
    assert "0.731 2 ✓" in shown and "2 more at other values" in shown and "Right by the number rule: 2" in shown


def test_the_presenter_picks_among_every_question():
    ids = [qid for group in question_options().values() for qid in group.values()]
    assert ids == [q.id for q in QUESTIONS + PRACTICE]


# --- the cards on the pages, without a server ----------------------------------------------------------------------
@pytest.fixture
def classroom(registry):
    teacher = RoomControls(state=AttentionState(), registry=registry)
    teacher._on_present(None)
    students = [RoomControls(state=AttentionState(), registry=registry) for _ in range(3)]
    for s in students:
        s._enter(teacher.code, None)
    return teacher, students


def card_text(poll) -> str:
    """What a card says: the presenter's panes, or a follower card's title, prompt and status lines."""
    if isinstance(poll, PresenterPoll):
        return text(" ".join(p.object for p in poll.__panel__().select(pn.pane.HTML)))
    shown = poll.card.poll
    return " ".join([shown["title"], shown["prompt"], *("".join(line[1:]) for line in shown["status"])])


def draw(poll, browser=None):
    """The follower's card reports the question drawn, as its page's script does once it has painted it."""
    shown = poll.card.poll
    browser = browser or f"{id(poll):024d}"[-24:]  # a browser of its own, named as the script names one
    poll.card._handle_msg({"drawn": shown["id"], "nonce": shown["nonce"], "browser": browser, "mine": None})


def send(poll, answer, poll_id=None):
    """The follower's card sends its answer, as its page's script does (after reporting the question drawn)."""
    if poll.card.poll["nonce"]:
        draw(poll)
    poll.card._handle_msg({"poll": poll.card.poll["id"] if poll_id is None else poll_id, "answer": answer})


def test_a_followers_card_sets_text_as_text_and_sends_only_its_answer():
    esm = FollowerCard._esm
    assert "innerHTML" not in esm and "insertAdjacentHTML" not in esm and "textContent" in esm
    # the browser it runs in, its report of the question drawn, and its answer
    assert esm.count("send_msg(") == 3 and "fetch" not in esm and "WebSocket" not in esm


def test_a_followers_card_is_one_model_of_its_page(classroom):
    # Panel's widgets for the same card were 28 models, 85 ms of the server's time per page when the room asked
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1
    doc = Document()
    doc.add_root(students[0]._poll.card.get_root(doc))
    assert [type(m).__name__ for m in doc.models if isinstance(m, LayoutDOM)] == ["ReactiveESM"]
    assert len(doc.models) <= 5  # with its data and its stylesheets


def test_a_poll_from_the_presenters_card_to_the_followers_cards_and_back(classroom):
    teacher, students = classroom
    assert all(s._poll is not None and not s._poll.built for s in students)  # nothing built before a question
    teacher._poll_toggle.value = True
    card = teacher._poll
    assert isinstance(card, PresenterPoll) and card.__panel__() in teacher.bar
    card._pick.value = "why-scale"
    card._ask.clicks += 1
    q = BY_ID["why-scale"]
    polls = [s._poll for s in students]
    assert all(p.built and p.card in s._layout for p, s in zip(polls, students, strict=True))
    for p in polls:
        shown = p.card.poll
        assert (shown["title"], shown["prompt"], shown["kind"]) == ("Class poll · Question 5", q.prompt, "choice")
        assert shown["choices"] == [f"{x}. {c.text}" for x, c in zip("ABCD", q.choices, strict=True)]
        assert shown["can_answer"]
        assert p.card.visible
    send(polls[0], 1)
    send(polls[1], 3)
    assert "Your answer is in: B. As d_k grows" in card_text(polls[0]) and not polls[0].card.poll["can_answer"]
    assert polls[2].card.poll["can_answer"]  # answered: the card shrinks to its status; the others still ask
    assert "2 answers · 3 pages following" in card_text(card)
    # nothing a follower sends reaches the other followers' cards
    assert "answers" not in card_text(polls[2])
    # a page that sends again (its Send button shown again by hand) is refused, and nothing is counted
    send(polls[0], 2)
    assert "already answered" in card_text(polls[0]) and "2 answers" in card_text(card)
    card._close.clicks += 1
    assert "The presenter has closed the poll before you answered" in card_text(polls[2])
    send(polls[2], 1)
    assert "closed" in card_text(polls[2]) and "2 answers" in card_text(card)
    card._reveal.clicks += 1
    for p, mine in zip(polls, ("Your answer, B, is right.", "Your answer, D, is not the answer.",
                               "You did not answer this one."), strict=True):
        assert f"Answer: {q.answer_text}" in card_text(p) and f"Why: {q.why}" in card_text(p)
        assert mine in card_text(p)
    assert "answer shown" in card_text(card)


@pytest.mark.parametrize("msg", ["1", None, [1], {"poll": True, "answer": 1}, {"poll": "1", "answer": 1},
                                 {"answer": 1}, {"poll": 1}, {"poll": 1, "answer": "<b>x</b>"},
                                 {"poll": 1, "answer": 1.0}, {"poll": 1, "answer": [1]}, {"poll": 2, "answer": 1}])
def test_whatever_a_followers_card_sends_only_a_valid_answer_is_counted(classroom, msg):
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1  # question 1, key-role: poll 1
    poll = students[0]._poll
    draw(poll)
    poll.card._handle_msg(msg)
    assert "0 answers" in card_text(teacher._poll) and poll.card.poll["can_answer"]
    send(poll, 1)
    assert "1 answer ·" in card_text(teacher._poll) and not poll.card.poll["can_answer"]


def test_a_follower_joining_an_open_poll_gets_its_card_and_a_reloaded_presenter_its_counts(registry, classroom):
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._pick.value = "two-key-softmax"
    teacher._poll._ask.clicks += 1
    late = RoomControls(state=AttentionState(), registry=registry)
    late._enter(teacher.code, None)
    assert late._poll.built and late._poll.card.poll["kind"] == "number" and late._poll.card.poll["can_answer"]
    send(late._poll, "0.731")
    again = PresenterPoll(registry, teacher.code, teacher._token, "reloaded")
    assert "1 answer · 4 pages following" in card_text(again) and "open" in card_text(again)


def test_a_follower_exploring_on_its_own_still_gets_the_poll_and_answers(classroom):
    teacher, students = classroom
    explorer = students[0]
    explorer._on_toggle(None)  # "Explore on my own"
    assert not explorer.following and explorer.role == "follower"
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1
    poll = explorer._poll
    assert poll.card in explorer._layout and poll.card.visible and poll.card.poll["can_answer"]
    send(poll, 1)
    assert "1 answer · 3 pages following" in card_text(teacher._poll)


def test_the_next_question_replaces_the_followers_card(classroom):
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1
    poll = students[0]._poll
    send(poll, 1)
    teacher._poll._close.clicks += 1
    teacher._poll._next.clicks += 1
    teacher._poll._pick.value = "practice-queries"
    teacher._poll._ask.clicks += 1
    assert poll.card.poll["id"] == 2 and poll.card.poll["can_answer"] and "Practice problem 5" in card_text(poll)
    assert poll.card.poll["choices"][1].startswith("B. Yes: the query alone")


def test_stopping_the_room_takes_the_poll_off_every_page(classroom):
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1
    teacher._on_stop(None)
    assert teacher._poll is None and not teacher._poll_toggle.value
    assert all(s._poll is None and s.role == "follower" and not s.following for s in students)


# --- who may answer: a page that has shown the question, once per browser -----------------------------------------
def test_only_a_page_that_has_shown_the_question_answers_it(registry, room):
    """A script opened pages that answered without ever drawing the question: 100 answers in 19 s."""
    code, token, presenter, pages = room
    view = registry.ask(code, token, "key-role")
    with pytest.raises(PollRefused, match="Only a page that shows the question answers it"):
        registry.answer_poll(code, pages[0].key, view.id, 1)
    assert registry.poll_counts(code, token).answers == 0
    assert registry.poll_drawn(code, pages[0].key, view.id, "browser-a") is False
    registry.answer_poll(code, pages[0].key, view.id, 1)
    assert registry.poll_counts(code, token).answers == 1
    with pytest.raises(PollRefused, match="another question"):  # a report of another poll's question
        registry.poll_drawn(code, pages[1].key, view.id + 1, "browser-b")


def test_a_browser_answers_once_also_from_a_reloaded_page(registry, room):
    code, token, _, pages = room
    view = registry.ask(code, token, "key-role")
    answer(registry, code, pages[0].key, view.id, 1)
    # a new session, the same browser
    reloaded = Page(registry, code, "page-0-reloaded", browser=f"browser-of-{pages[0].key}")
    assert registry.poll_drawn(code, reloaded.key, view.id, f"browser-of-{pages[0].key}") is True
    with pytest.raises(PollRefused, match="This browser has already answered this poll"):
        registry.answer_poll(code, reloaded.key, view.id, 2)
    # a page keeps the browser it named first: naming another one afterwards does not help it
    assert registry.poll_drawn(code, reloaded.key, view.id, "browser-z") is True
    with pytest.raises(PollRefused, match="This browser has already answered this poll"):
        registry.answer_poll(code, reloaded.key, view.id, 2)
    answer(registry, code, pages[1].key, view.id, 2)  # another browser answers as usual
    assert registry.poll_counts(code, token).choices == (0, 1, 1, 0)


def test_the_presenter_is_told_how_many_answers_came_from_pages_that_joined_after_the_question():
    """Pages there before the question that named no browser as they joined, each minting one to answer (a script's
    pages), were counted with no note; they count among the new ones now, with pages that joined after it."""
    clock = type("Clock", (), {"now": 1000.0, "__call__": lambda self: self.now})()
    registry = RoomRegistry(end_after=120, clock=clock)
    room, token = registry.create()
    code = room.code
    present = Page(registry, code, "there-before")
    scripted = [Page(registry, code, f"scripted-{i}", browser=False) for i in range(2)]
    clock.now += 1
    view = registry.ask(code, token, "key-role")
    clock.now += 1
    late = [Page(registry, code, f"joined-after-{i}") for i in range(3)]
    for i, page in enumerate((present, *scripted, *late)):
        answer(registry, code, page.key, view.id, 1, browser=f"fresh-browser-{i}")
    counts = registry.poll_counts(code, token)
    assert (counts.answers, counts.late, counts.pages) == (6, 5, 6)
    shown = text(counts_html(BY_ID["key-role"], counts, revealed=False))
    assert shown.startswith("6 answers · 6 pages following "
                            "5 of them from pages that joined, or named their browser, after the question was asked")
    one = text(counts_html(BY_ID["key-role"], PollCounts(1, 2, 2, 0, (0, 2, 0, 0), late=1), revealed=False))
    assert "1 of them from a page that joined, or named its browser, after the question was asked" in one
    assert "after the question" not in text(counts_html(BY_ID["key-role"], PollCounts(1, 2, 2, 0, (0, 2, 0, 0)),
                                                        False))
    # the page there before answered in the browser it named as it joined, not the one it named afterwards
    assert registry.get(code).poll._drawn["there-before"] == "browser-of-there-before"


def test_the_presenter_hears_of_pages_joining_and_leaving_an_open_poll(registry, room):
    code, token, presenter, pages = room
    registry.ask(code, token, "key-role")
    Page(registry, code, "newcomer")
    registry.unfollow(code, pages[0].key)
    assert [c.pages for _, c in presenter[-2:]] == [5, 4]


def test_a_followers_card_answers_after_reporting_the_question_drawn_with_the_nonce_it_was_sent(classroom):
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1
    poll = students[0]._poll
    shown = poll.card.poll
    assert shown["can_answer"] and len(shown["nonce"]) >= 16
    assert students[1]._poll.card.poll["nonce"] != shown["nonce"]  # each page its own
    poll.card._handle_msg({"poll": shown["id"], "answer": 1})  # no report of the question drawn
    assert "Only a page that shows the question answers it" in card_text(poll) and "0 answers" in card_text(
        teacher._poll)
    for wrong in ({"nonce": "made-up"}, {"nonce": students[1]._poll.card.poll["nonce"]}, {"drawn": shown["id"] + 1},
                  {"browser": "short"}, {"browser": "<script>alert(1)</script>xx"}, {"browser": 7}, {"nonce": None}):
        poll.card._handle_msg({"drawn": shown["id"], "nonce": shown["nonce"], "browser": "b" * 24, **wrong})
        poll.card._handle_msg({"poll": shown["id"], "answer": 1})
        assert "0 answers" in card_text(teacher._poll), wrong
    send(poll, 1)
    assert "1 answer ·" in card_text(teacher._poll) and poll.card.poll["mine"] == 1 and not poll.card.poll["nonce"]
    assert poll.card.poll["key"] == f"{teacher.code}/1"  # what the browser keeps its answer under


def test_a_reloaded_followers_card_shows_what_its_browser_answered_and_takes_no_second_answer(registry, classroom):
    teacher, students = classroom
    teacher._poll_toggle.value = True
    teacher._poll._ask.clicks += 1
    draw(students[0]._poll, browser="the-same-browser-24-char")
    send(students[0]._poll, 1)
    # the page is reloaded: a new page of the same browser, which remembers its answer
    again = RoomControls(state=AttentionState(), registry=registry)
    again._enter(teacher.code, None)
    poll = again._poll
    assert poll.card.poll["can_answer"]  # until its card reports the question drawn in that browser
    draw(poll, browser="the-same-browser-24-char")
    poll.card._handle_msg({"drawn": 1, "nonce": poll.card.poll["nonce"], "browser": "the-same-browser-24-char",
                           "mine": 1})
    assert not poll.card.poll["can_answer"]
    # its report came without the answer (draw): the card says the browser has answered
    assert "This browser has already answered this poll." in card_text(poll)
    poll.card._handle_msg({"poll": 1, "answer": 2})  # sent anyway
    assert "1 answer ·" in card_text(teacher._poll)
    # a page whose browser remembers its answer shows it, and is told whether it was right
    third = RoomControls(state=AttentionState(), registry=registry)
    third._enter(teacher.code, None)
    shown = third._poll.card.poll
    third._poll.card._handle_msg({"drawn": 1, "nonce": shown["nonce"], "browser": "the-same-browser-24-char",
                                  "mine": 1})
    assert "Your answer is in: B." in card_text(third._poll) and not third._poll.card.poll["can_answer"]
    forged = RoomControls(state=AttentionState(), registry=registry)  # a remembered "answer" that is none
    forged._enter(teacher.code, None)
    forged._poll.card._handle_msg({"drawn": 1, "nonce": forged._poll.card.poll["nonce"],
                                   "browser": "the-same-browser-24-char", "mine": "<b>9</b>"})
    assert "This browser has already answered this poll." in card_text(forged._poll)
    teacher._poll._close.clicks += 1
    teacher._poll._reveal.clicks += 1
    assert "Your answer, B, is right." in card_text(third._poll)
    assert "This browser has already answered this poll." in card_text(forged._poll)
    assert "1 answer ·" in card_text(teacher._poll)


def test_the_presenters_counts_are_a_few_updates_a_second_however_fast_answers_come():
    """The presenter's card took every answer as it came; now a stream of them is one update per COUNTS_GAP_S."""
    from widgets.poll import COUNTS_GAP_S, _OnPage

    ran, timeouts, ticks = [], [], []
    page = _OnPage(lambda view, counts: ran.append((view, counts)), gap=COUNTS_GAP_S)
    page._doc = type("Doc", (), {"session_context": object(),
                                 "add_timeout_callback": lambda self, cb, ms: timeouts.append((cb, ms)),
                                 "add_next_tick_callback": lambda self, cb: ticks.append(cb)})()
    served = page._doc

    def run(callback):  # as the page's session runs it (a held document is Bokeh's, not this stand-in's)
        page._doc = None
        callback()
        page._doc = served

    view = PollView(1, "key-role", OPEN)
    page(view, "0 answers")
    run(ticks.pop())  # the first at once
    for n in range(1, 50):
        page(view, f"{n} answers")
    assert not ticks and len(timeouts) == 1 and 200 <= timeouts[0][1] <= 250  # one update, a gap later ...
    run(timeouts.pop()[0])
    assert ran == [(view, "0 answers"), (view, "49 answers")]  # ... with the newest counts
    page(PollView(1, "key-role", CLOSED), "49 answers")  # a new view (the presenter closed it): at once
    assert len(ticks) == 1 and not timeouts
