"""How an answer is graded and credited: a question's kinds (a choice, or a number at a stated precision),
the number rule, and the credit lines the page says, word for word the course's rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation

from course.numbers import read_number
from course.text import N_

#: Wrong tries after which the answer is shown and the question can no longer earn credit.
MAX_TRIES = 3
KINDS = ("choice", "number")

# --- the credit lines (the course's own rules, word for word as the page says them) ------------------------------
RIGHT_CREDIT = N_("Right on try {n} — credit.")  # templates: credit_line fills their {placeholders}
RIGHT_AFTER_SHOWN = N_("Right — the answer had already been shown, so no credit this time.")
RIGHT_AFTER_UNREADABLE = N_("Right — but this question's saved record could not be read, so no credit this time.")
UNREADABLE = N_("This question's saved record could not be read, so it no longer earns credit. You can still answer "
                "it, or show its answer.")
SHOWN_AFTER_TRIES = N_("Answer shown after three tries — this one no longer earns credit.")
SHOWN_ASKED = N_("You chose to see the answer — this one earns no credit.")
WRONG = N_("Not yet — {used} of {most} tries used. A right answer on try {next} still earns credit.")
# practice problems: the same flow, nothing to earn
PRACTICE_RIGHT = N_("Right on try {n}. Practice problems do not count toward your progress.")
PRACTICE_SHOWN = N_("Answer shown. Practice problems do not count toward your progress.")
PRACTICE_WRONG = N_("Not yet — try again, or show the answer.")
REPEATED = N_("You have already tried that answer: try another one.")
CHOOSE_FIRST = N_("Choose one of the answers first.")

#: The number rule, as one sentence on the page. Its example (√2 = 1.41421…) is no question's answer.
PRECISION_RULE = N_("Number answers need at least the decimal places a question asks for, rounded as usual "
                    "(asked for 3 places, √2 is 1.414 or 1.4142, while 1.41 is not judged and costs no try), any "
                    "further decimals must be right too (rounded or cut off), and an exact answer may be typed as "
                    "it is, such as 12 or 12.0.")

#: Longest text a number box takes; a number of this section never needs more.
MAX_NUMBER_CHARS = 24
#: Longest answer a stored record holds: the canonical form of what the box took (``.5`` is stored as ``0.5``).
MAX_KEY_CHARS = MAX_NUMBER_CHARS + 4


@dataclass(frozen=True)
class Choice:
    """One choice of a multiple-choice question; ``feedback`` explains why it is wrong (empty for the right one)."""

    text: str
    feedback: str = ""


@dataclass(frozen=True)
class Grade:
    """What one answer is worth: ``ok`` True (right), False (wrong) or None (not judged, and not a try: no
    choice made, text that is not a number, a number with fewer decimal places than asked).

    ``key`` is the answer in a canonical form (a choice's index, the typed number with a point and no spaces), so
    that the same answer given twice can be recognised; empty when nothing could be read. ``feedback`` says what
    is wrong with it, or why it was not judged.
    """

    ok: bool | None
    key: str = ""
    feedback: str = ""


@dataclass(frozen=True)
class Question:
    """One question: ``kind`` "choice" (``answer`` is the right choice's index) or "number" (``answer`` is the
    text of the answer at the printed precision, ``decimals`` that precision and ``exact`` the value it rounds).

    ``number`` is its position in its group (1-based); ``counts`` is False for the practice problems.
    """

    id: str
    number: int
    kind: str
    prompt: str
    answer: int | str
    why: str
    choices: tuple[Choice, ...] = ()
    decimals: int | None = None
    exact: str | None = None
    hint: str = ""
    counts: bool = True

    def __post_init__(self):
        # the data below is checked once, at import: a typo there must not reach a learner
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r}")
        if self.kind == "choice":
            if not (isinstance(self.answer, int) and 0 <= self.answer < len(self.choices)):
                raise ValueError(f"{self.id}: answer {self.answer!r} is not one of its choices")
            for i, c in enumerate(self.choices):
                if (i == self.answer) == bool(c.feedback):
                    raise ValueError(f"{self.id}: every wrong choice, and only those, needs its explanation")
        else:
            if self.decimals is None or self.exact is None or self.choices:
                raise ValueError(f"{self.id}: a number question needs decimals and exact, and no choices")
            if not check_number(self.answer, self.answer, self.decimals, self.exact).ok:
                raise ValueError(f"{self.id}: {self.answer} is not {self.exact} at {self.decimals} decimals")

    @property
    def answer_text(self) -> str:
        """The right answer as the page shows it."""
        return self.choices[self.answer].text if self.kind == "choice" else str(self.answer)

    def grade(self, given, decimal: str | None = None) -> Grade:
        """Grade ``given``: a choice's index (int or its digits as text) or the text typed in the number box,
        with the page's ``decimal`` mark (see :func:`parse_number`)."""
        if self.kind == "number":
            return check_number(given, self.answer, self.decimals, self.exact, decimal)
        return self._grade_choice(given)

    def grade_key(self, key: str) -> Grade:
        """Grade a :class:`Grade`'s ``key`` again, as a stored record holds it: the canonical form of whatever the
        box took (a point as its decimal mark, a leading zero added: one character more than the box holds)."""
        if self.kind == "number":
            return check_number(key, self.answer, self.decimals, self.exact, ".", MAX_KEY_CHARS)
        return self._grade_choice(key)

    def _grade_choice(self, given) -> Grade:
        if isinstance(given, str) and given.strip().isdigit():
            given = int(given)
        if isinstance(given, bool) or not isinstance(given, int) or not 0 <= given < len(self.choices):
            return Grade(None, "", CHOOSE_FIRST)
        return Grade(given == self.answer, str(given), self.choices[given].feedback)


def parse_number(text, decimal: str | None = None, max_chars: int = MAX_NUMBER_CHARS) -> tuple[Decimal, int]:
    """The number typed in ``text`` and how many decimal places it was typed with.

    Read by the page's one number rule (:func:`course.numbers.read_number`), without an exponent: an optional
    sign, digits (any script's, full width too), one decimal mark — ``.731``, ``-2``, ``6,0`` in French.
    ``decimal``: the page's decimal mark; the other one is refused with how to write the number, never misread
    (a French reader may mean 0.500 by ``0.5``); None takes either. Raises ValueError with a sentence for the
    learner (a :class:`~course.text.Text`) otherwise: empty text, words, ``1e3``, ``nan``, over ``max_chars``.

    >>> parse_number(" .731 ", "."), parse_number("6,0", ","), parse_number("０．７３１", ".")
    ((Decimal('0.731'), 3), (Decimal('6.0'), 1), (Decimal('0.731'), 3))
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not text.strip():
        raise ValueError(N_("Type a number first."))
    try:
        t = read_number(text, decimal, exponent=False, max_chars=max_chars)
    except ValueError as exc:
        raise ValueError(N_("{why}.", why=exc.args[0])) from None
    places = len(t.partition(".")[2])
    return Decimal(t if t[-1] != "." else t[:-1]) + 0, places  # + 0 turns -0 into 0


def check_number(text, answer, decimals: int, exact=None, decimal: str | None = None,
                 max_chars: int = MAX_NUMBER_CHARS) -> Grade:
    """Grade the text typed for a number question whose answer is ``answer`` at ``decimals`` places.

    The rule (:data:`PRECISION_RULE`): right when the typed number is the exact value (``exact``; an integer
    ``answer`` is exact when ``exact`` is not given), or when it has at least ``decimals`` places, rounds to
    ``answer`` at that precision, and any further places agree with ``exact`` rounded or cut off there (with
    no ``exact``, further places need only round to ``answer``). Not a try (``ok`` None): text that is not a
    number (``key`` empty), and a number with fewer places than asked (``key`` its canonical form), which is
    judged neither right nor wrong, so that the message says nothing about the answer.

    >>> [check_number(t, "0.731", 3).ok for t in ("0.731", ".731", "0.73", "0.7311", "x")]
    [True, True, None, True, None]
    >>> [check_number(t, 6, 0).ok for t in ("6", "6.0", "6.4")]
    [True, True, False]
    """
    try:
        x, places = parse_number(text, decimal, max_chars)
    except ValueError as exc:
        return Grade(None, "", exc.args[0])
    key = format(x, "f")  # the answer's canonical form, with a point in every language
    typed = key.replace(".", decimal) if decimal and decimal != "." else key
    target = Decimal(str(answer))
    value = Decimal(str(exact)) if exact is not None else target if decimals == 0 else None
    if value is not None and x == value:
        return Grade(True, key)
    if places < decimals:
        # said of every answer with too few places, right or wrong, so it tells nothing about the answer
        return Grade(None, key, N_("Not precise enough: this question asks for {decimals} decimal places, and "
                                   "{number} has {places}. It is judged neither right nor wrong, and it does not "
                                   "count as a try.", decimals=decimals, number=typed, places=places))
    # Likewise for every wrong answer with more places than asked (a whole-number question says nothing).
    wrong = Grade(False, key, N_("With more than {decimals} decimal places, every one of them must be right.",
                                 decimals=decimals) if places > decimals > 0 else "")
    try:
        rounded = x.quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP)
    except InvalidOperation:  # far too many digits for the precision: not this answer
        return wrong
    if rounded != target:
        return wrong
    if places > decimals and value is not None:
        unit = Decimal(1).scaleb(-places)
        if x not in (value.quantize(unit, ROUND_HALF_UP), value.quantize(unit, ROUND_DOWN)):
            return wrong
    return Grade(True, key)
