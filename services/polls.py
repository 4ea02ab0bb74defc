"""A room's class poll: one question of Section 6 asked of the followers, answered anonymously.

The presenter asks a question (any of ``course.questions``: the ones that count or the practice problems);
each page following the room may answer it once; the presenter sees how many answered and how (a count per
choice, or a histogram of the numbers given), closes the poll, then reveals the answer and its "Why".

Only a page that has shown the question answers it: its card reports, from the page's own script, that it
has drawn the question the server sent it (:meth:`Poll.drawn`), and names the browser it runs in, by an id the
browser keeps (``localStorage``). A page that never did is refused; so is a second answer from one browser, a
reloaded page's included. A script can still join as a page, send the same report without drawing anything,
and mint browser ids: which is why the presenter is told how many answers came from pages that joined after
the question was asked (a class is there before it; a script stuffing the poll joins after it).

Pure Python, standard library only, like the questions themselves. A :class:`Poll` lives in its room, in
the process's :class:`~services.rooms.RoomRegistry`, and changes only under the registry's lock. What leaves
it is immutable: a :class:`PollView` (which question, open, closed or revealed), which every page of the
room may see, and :class:`PollCounts`, which only the presenter's page receives. A poll keeps no answer
with the page or the browser that gave it: only which pages and browsers have answered (so each answers once)
and the totals.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from core.checks import is_whole
from course.questions import BY_ID, Question, parse_number

#: A poll's life: answered while open, then closed (no more answers), then its answer revealed.
OPEN, CLOSED, REVEALED = "open", "closed", "revealed"
STATES = (OPEN, CLOSED, REVEALED)
#: Largest number a follower may give (either sign): beyond it no answer of this section is meant.
MAX_NUMBER = 1e6


class PollRefused(Exception):
    """An answer or a presenter's request the poll does not take; ``str(error)`` is safe to show the learner."""


@dataclass(frozen=True)
class PollView:
    """What every page of the room may see of its poll: its number in the room, its question, its state."""

    id: int
    question_id: str
    state: str

    @property
    def question(self) -> Question:
        return BY_ID[self.question_id]


@dataclass(frozen=True)
class PollCounts:
    """What the presenter sees of poll ``poll_id``: ``answers`` given, ``pages`` following the room, and
    ``choices`` (answers per choice, in the question's order) or ``numbers`` (``(value, count)`` by value,
    each value the numbers given rounded to the question's decimal places: a histogram whose bins are one
    unit of the last place wide). ``right``: answers right by the Check tab's rules (for a number, its
    precision rule, which a bin alone cannot tell: 0.7306 falls in bin 0.731 and is not right). ``late``: answers
    from pages that joined the room after the question was asked."""

    poll_id: int
    answers: int
    pages: int
    right: int = 0
    choices: tuple[int, ...] = ()
    numbers: tuple[tuple[str, int], ...] = ()
    #: answers from pages that joined the room after the question was asked
    late: int = 0


def choice_answer(question: Question, given) -> int:
    """``given`` as a choice of ``question``: an int naming one of its choices, or PollRefused."""
    if not is_whole(given) or not 0 <= given < len(question.choices):
        raise PollRefused("Choose one of the answers first.")
    return given


def number_bin(question: Question, given) -> str:
    """The histogram bin of the number typed in ``given``: the number rounded to the question's decimal places.

    PollRefused for anything that is not a plain decimal number (words, ``nan``, ``1e400``: the number rule
    of the Check tab) or is beyond ±:data:`MAX_NUMBER`.

    >>> q = BY_ID["two-key-softmax"]
    >>> number_bin(q, ".7306"), number_bin(q, "0.73")
    ('0.731', '0.730')
    """
    try:
        x, _ = parse_number(given if isinstance(given, str) else None)
    except ValueError as exc:
        raise PollRefused(exc.args[0]) from None  # the learner's message, as the Check tab's (a marked text)
    if not (math.isfinite(float(x)) and abs(x) <= Decimal(MAX_NUMBER)):
        raise PollRefused(f"Give a number between −{MAX_NUMBER:,.0f} and {MAX_NUMBER:,.0f}.")
    try:
        return format(x.quantize(Decimal(1).scaleb(-question.decimals), ROUND_HALF_UP) + 0, "f")
    except InvalidOperation:  # cannot happen within MAX_NUMBER; refused rather than counted wrong
        raise PollRefused("That number has too many digits.") from None


class Poll:
    """One question asked of a room, and its answers so far. Only the registry changes it, under its lock."""

    def __init__(self, poll_id: int, question_id: str):
        if question_id not in BY_ID:
            raise PollRefused("There is no such question.")
        self.id, self.question = poll_id, BY_ID[question_id]
        self.state = OPEN
        self._answered: set = set()  # which pages answered: keys only, never with their answer
        self._browsers: set[str] = set()  # which browsers answered, by the id each keeps: never with the answer
        self._drawn: dict = {}  # page key -> its browser's id, for each page that has shown the question
        self._choices = [0] * len(self.question.choices)
        self._numbers: Counter[str] = Counter()
        self._right = 0
        self._late = 0
        self._total: int | None = None  # answers counted elsewhere (take_counts); None: this poll counts them

    @property
    def view(self) -> PollView:
        return PollView(self.id, self.question.id, self.state)

    def counts(self, pages: int) -> PollCounts:
        numbers = tuple(sorted(self._numbers.items(), key=lambda kv: Decimal(kv[0])))
        answers = len(self._answered) if self._total is None else self._total
        return PollCounts(self.id, answers, pages, self._right, tuple(self._choices), numbers, self._late)

    def drawn(self, key, poll_id: int, browser: str) -> bool:
        """Page ``key``, in the browser ``browser``, has shown poll ``poll_id``'s question; True if that browser
        has answered this poll already (from another page of it, or before a reload). PollRefused for another
        poll; a page keeps the browser it named first."""
        if poll_id != self.id:
            raise PollRefused("That poll is over: the presenter has asked another question.")
        browser = self._drawn.setdefault(key, browser)
        return browser in self._browsers

    def judge(self, key, poll_id: int, given) -> str:
        """The count ``given`` from page ``key`` goes to, if poll ``poll_id`` takes it: ``"c:<i>"`` for choice i,
        ``"n:<bin>"`` for a number's bin (:func:`number_bin`). PollRefused (its message is for the learner) unless this
        poll is open, the page has shown its question (:meth:`drawn`), neither the page nor its browser has answered
        it yet, and ``given`` is one of its answers."""
        if poll_id != self.id:
            raise PollRefused("That poll is over: the presenter has asked another question.")
        if self.state != OPEN:
            raise PollRefused("The presenter has closed this poll.")
        if key in self._answered:
            raise PollRefused("You have already answered this poll: each page answers once.")
        if key not in self._drawn:
            raise PollRefused("Only a page that shows the question answers it: reload the page.")
        if self._drawn[key] in self._browsers:
            raise PollRefused("This browser has already answered this poll.")
        if self.question.kind == "choice":
            return f"c:{choice_answer(self.question, given)}"
        return f"n:{number_bin(self.question, given)}"

    def mark(self, key) -> str:
        """Page ``key`` and its browser have answered (counted elsewhere: the Redis script); returns the browser."""
        browser = self._drawn[key]
        self._answered.add(key)
        self._browsers.add(browser)
        return browser

    def count(self, key, where: str, right: bool, late: bool) -> None:
        """Count an answer :meth:`judge` took into ``where``; ``right`` by the Check tab's rules, ``late`` from a page
        that joined (or named its browser) after the question was asked."""
        kind, _, value = where.partition(":")
        if kind == "c":
            self._choices[int(value)] += 1
        else:
            self._numbers[value] += 1
        self._right += bool(right)
        self._late += bool(late)
        self.mark(key)

    def answer(self, key, poll_id: int, given, late: bool = False) -> None:
        """Count ``given`` from the page ``key`` for poll ``poll_id`` (:meth:`judge`, then :meth:`count`);
        PollRefused, and nothing counted, for an answer the poll does not take."""
        where = self.judge(key, poll_id, given)
        self.count(key, where, bool(self.question.grade(given).ok), late)

    def take_counts(self, answers: dict[str, int], browsers=()) -> None:
        """The poll's totals as counted elsewhere (Redis): ``answers`` maps ``"c:<i>"``, ``"n:<bin>"``, ``"right"``
        and ``"late"`` to counts; ``browsers``: the browsers that have answered it, so far as this process heard."""
        self._choices = [int(answers.get(f"c:{i}", 0)) for i in range(len(self.question.choices))]
        self._numbers = Counter({k[2:]: int(n) for k, n in answers.items() if k.startswith("n:") and int(n)})
        self._right, self._late = int(answers.get("right", 0)), int(answers.get("late", 0))
        self._total = int(answers.get("answers", 0))
        self._browsers.update(browsers)

    def close(self) -> None:
        if self.state == OPEN:
            self.state = CLOSED

    def reveal(self) -> None:
        """Reveal the answer; an open poll is closed first (no answer comes after the answer)."""
        self.state = REVEALED
