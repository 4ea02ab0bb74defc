"""Section 6's "Check your understanding", its practice problems and the two widget tasks, as data; how answers
are graded and credited; and one learner's progress record.

Pure Python, standard library only (no Panel, param or NumPy), so every rule here can be tested alone. The
Check tab (``widgets/check.py``) shows the questions; ``session/progress.py`` keeps a :class:`Progress` per
session; the learner's browser stores it as JSON (:meth:`Progress.to_json`), so it survives a reload and a server
restart.

The texts are this app's own wording of the course's questions: the same questions in the same order, with
the same numbers and the same right answers. For each multiple-choice question the course gives the
explanation of every wrong choice; each wrong choice here is written to match its explanation. Choices are
never shuffled (every learner sees the same order), and the right one is not always first.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation
from types import MappingProxyType

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


# --- the questions ---------------------------------------------------------------------------------------------
# Section 6, "Check your understanding": the fourteen questions that count, in the course's order.
QUESTIONS: tuple[Question, ...] = (
    Question(
        "key-role", 1, "choice", N_("In the query / key / value picture, what is a key for?"),
        answer=1,
        choices=(
            Choice(N_("It is what its token hands over once the token is judged relevant."),
                   N_("That is a value's job: values are what gets retrieved, while keys are only compared.")),
            Choice(N_("It is compared with a query to score how relevant its token is, and is never handed over "
                   "itself.")),
            Choice(N_("It is what the current token is asking for."),
                   N_("That is the query: the request being made, not what a token offers to be matched against.")),
            Choice(N_("It keeps a running count of how often its token has been attended to."),
                   N_("Attention keeps no such count: a key exists only to be compared with a query.")),
        ),
        why=N_("A key is matched against a query to give a relevance score. It is never the result itself: "
            "what gets handed over is the value."),
    ),
    Question(
        "two-queries", 2, "choice",
        N_("Queries q_A and q_B are different, but both look at the very same keys and values. Can their attention "
        "outputs differ?"),
        answer=3,
        choices=(
            Choice(N_("No: the query has no effect on the output, only the keys and values do."),
                   N_("The query is what sets every key's relevance score, so it acts directly on the output.")),
            Choice(N_("No: attention gives the same output whatever its inputs are."),
                   N_("Attention responds to all three of its inputs, the query included: its output is not fixed.")),
            Choice(N_("Only if the keys or the values change as well."),
                   N_("Nothing else needs to change: with the keys and values left as they are, a new query alone "
                   "changes which of them are emphasised.")),
            Choice(N_("Yes: each key's relevance is judged from the query, so another query can weight the values "
                   "differently.")),
        ),
        why=N_("Relevance is judged from the query. In this section the queries of “I” and “love” used the same "
            "keys and values and still gave different outputs: 3.59 and 4.41."),
        hint=N_("Look back at the two worked examples, for “I” and for “love”: same keys, same values. What were "
             "their outputs?"),
    ),
    Question(
        "self-sources", 3, "choice", N_("In self-attention, what are a token's query, key and value computed from?"),
        answer=0,
        choices=(
            Choice(N_("All three are learned projections of the tokens of the same input sequence, and every position "
                   "attends back over that sequence, itself included.")),
            Choice(N_("The queries come from one sequence (a decoder), the keys and values from another (an encoder)."),
                   N_("That is cross-attention, where a decoder attends to a separate encoder's output, not "
                   "self-attention.")),
            Choice(N_("The queries come from the tokens, but the keys and values are constants shared by every token."),
                   N_("Keys and values are learned projections of each token too, not fixed constants shared by all.")),
            Choice(N_("The values come from the tokens, but the queries and keys are hyperparameters set by hand."),
                   N_("Nobody sets queries or keys by hand: both are learned projections of each token's embedding.")),
        ),
        why=N_("In self-attention the queries, keys and values are all derived from the same sequence, and each "
            "position attends over that whole sequence, including itself."),
        hint=N_("The word “self” tells you where all three vectors come from."),
    ),
    Question(
        "recipe-order", 4, "choice", N_("In which order does the attention recipe take its three steps?"),
        answer=2,
        choices=(
            Choice(N_("Normalise the values, combine the queries, then score the keys."),
                   N_("The order is scrambled, and which vector plays which part is mixed up as well.")),
            Choice(N_("Combine the keys with the values, score the result against the query, then normalise."),
                   N_("Nothing is combined before scoring: the query is scored against the keys first.")),
            Choice(N_("Score the query against every key, normalise the scores with softmax, then combine the values "
                   "using those weights.")),
            Choice(N_("Score the values against one another, normalise the queries, then combine the keys."),
                   N_("Values are not scored against each other and queries are not normalised: every part here is "
                   "given to the wrong vector.")),
        ),
        why=N_("Score (the query against each key), normalise (softmax turns the scores into weights), combine "
            "(add up the values, each multiplied by its weight)."),
    ),
    Question(
        "why-scale", 5, "choice",
        N_("Scaled dot-product attention divides every score by √d_k. Why not use the raw dot products as they are?"),
        answer=1,
        choices=(
            Choice(N_("Dividing turns the scores into a probability distribution, so no softmax is needed."),
                   N_("Softmax still has to follow: scaling on its own does not make the scores a probability "
                   "distribution.")),
            Choice(N_("As d_k grows, so does the variance of the raw dot product; dividing by √d_k holds the scores' "
                   "spread roughly constant, which keeps softmax from saturating where its gradients almost vanish.")),
            Choice(N_("It makes every attention weight equal."),
                   N_("Scaling narrows the spread of the scores without flattening them: differences in relevance "
                   "still come through after softmax.")),
            Choice(N_("It turns negative dot products into positive ones."),
                   N_("The sign of the entries has nothing to do with it: the factor is about the spread of the dot "
                   "product growing with d_k, whatever the signs.")),
        ),
        why=N_("With independent unit-variance entries, q·k has variance d_k. Dividing by √d_k brings the spread "
            "back to about 1 whatever d_k is, which keeps softmax out of its saturated region, where gradients "
            "are close to zero."),
        hint=N_("The formula card recalled in this section says what dividing by √d_k restores about the scores' "
             "variance."),
    ),
    Question(
        "softmax-guarantee", 6, "choice",
        N_("What does softmax guarantee about the attention weights a₁, …, aₙ it returns?"),
        answer=2,
        choices=(
            Choice(N_("They are all equal."),
                   N_("They are equal only when the scores are equal; in general they differ with relevance.")),
            Choice(N_("Exactly one of them is 1 and all the others are 0."),
                   N_("That one-hot result is only an extreme limit: ordinary softmax gives every candidate some "
                   "weight, in different amounts.")),
            Choice(N_("Each lies between 0 and 1, and together they add up to exactly 1: a probability distribution.")),
            Choice(N_("Some can be negative, when their scores are negative."),
                   N_("They are never negative: each is e^(s_i), which is positive, divided by a positive sum.")),
        ),
        why=N_("Softmax always returns a probability distribution: every weight lies between 0 and 1 (strictly, in "
            "practice) and the weights add up to exactly 1."),
    ),
    Question(
        "weighted-output", 7, "number",
        N_("Two keys carry the weights a₁ = 0.731 and a₂ = 0.269 (question 9 works out where 0.731 comes from), "
        "and their values are v₁ = 10 and v₂ = 2. What output does attention give? Round it to 2 decimal places."),
        answer="7.85", decimals=2, exact="7.848",  # 0.731 × 10 + 0.269 × 2, exactly
        why=N_("output = 0.731 × 10 + 0.269 × 2 = 7.31 + 0.538 = 7.848 ≈ 7.85."),
        hint=N_("Multiply each weight by its value, then add: a₁v₁ + a₂v₂."),
    ),
    Question(
        "row-sum", 8, "choice",
        N_("Take this section's 3 × 3 self-attention matrix. What do the three weights in any one of its rows add up "
        "to?"),
        answer=1,
        choices=(
            Choice(N_("3, the number of columns."),
                   N_("Each row is one query's softmax over all the keys, and a softmax totals 1 however many columns "
                   "there are.")),
            Choice(N_("1, in every row.")),
            Choice(N_("A different total in each row, depending on its query."),
                   N_("Adding up to 1 is guaranteed by softmax, so it holds for every row alike: the total does not "
                   "vary.")),
            Choice(N_("0."),
                   N_("Softmax weights are never negative and add up to 1; they could only total 0 if every weight "
                   "were 0, which softmax never gives.")),
        ),
        why=N_("Every row holds one query's softmax distribution over the keys, so softmax's guarantee makes each row "
            "add up to exactly 1."),
    ),
    Question(
        "two-key-softmax", 9, "number",
        N_("Two keys have the scaled scores s₁ = 1.0 and s₂ = 0.0. What is a₁, the softmax weight of key 1? "
        "Round to 3 decimal places."),
        answer="0.731", decimals=3, exact=repr(1 / (1 + math.exp(-1.0))),
        why=N_("Subtract the larger score (1.0): (0, −1.0). Exponentiate: (1, 0.3679). Add: 1.3679. "
            "a₁ = 1 / 1.3679 ≈ 0.731."),
        hint=N_("To keep the numbers small, subtract the larger score from both before exponentiating: (0, −1.0)."),
    ),
    Question(
        "dot-product", 10, "number",
        N_("q = (2, 0) and k = (3, 1); note that q's second entry is zero. What is the raw dot product q·k?"),
        answer="6", decimals=0, exact="6",
        why=N_("q·k = 2 × 3 + 0 × 1 = 6."),
        hint=N_("Multiply the entries that line up, then add: 2 × 3 + 0 × 1."),
    ),
    Question(
        "output-between", 11, "choice",
        N_("The worked example found the output of query “love” to be about 4.41, from the values 2, 6 and 4 "
        "(I, love and NLP). What is true of that output?"),
        answer=3,
        choices=(
            Choice(N_("It is the plain average of 2, 6 and 4."),
                   N_("Averaging 2, 6 and 4 without weights gives 4.0, not 4.41; and here the weights were not equal: "
                   "love and NLP each outweighed I.")),
            Choice(N_("It has to equal one of the three values."),
                   N_("A weighted sum blends the values; it does not have to land on any one of them.")),
            Choice(N_("It could just as well have come out above 6, the largest value."),
                   N_("A weighted average never goes past its largest input (6 here); 4.41 is well below it.")),
            Choice(N_("It lies between the smallest and the largest value, pulled towards 6 and 4, which carry most of "
                   "the weight, and away from 2.")),
        ),
        why=N_("A weighted sum of values, with weights that add up to 1, always lies between the smallest and the "
            "largest value. 4.41 lies between 2 and 6, pulled up by 6 and 4, which carry most of the weight, and "
            "held down only a little by 2, which carries the least."),
        hint=N_("Attention gives a weighted average. How does 4.41 compare with the unweighted average of 2, 6 and 4, "
             "which is 4.0?"),
    ),
    Question(
        "scaled-score", 12, "number",
        N_("q = (2, 0), k = (3, 1) and d_k = 2. What is the scaled score q·k / √d_k? Round to 3 decimal places."),
        answer="4.243", decimals=3, exact=repr(6 / math.sqrt(2)),
        why=N_("q·k = 6 and √2 ≈ 1.4142, so 6 / 1.4142 ≈ 4.243."),
        hint=N_("The raw dot product is 6 (question 10): divide it by √2."),
    ),
    Question(
        "values-trap", 13, "choice",
        N_("A student scores each key with q·vᵢ (against the values) instead of q·kᵢ (against the keys). What is "
        "wrong with that?"),
        answer=0,
        choices=(
            Choice(N_("Relevance would then depend on the very content to be retrieved instead of on a description "
                   "built for matching: keys and values do different jobs.")),
            Choice(N_("Nothing: keys and values are interchangeable, so the scores come out the same."),
                   N_("Keys and values are there for different jobs, so putting one in place of the other changes "
                   "what a score measures.")),
            Choice(N_("Values are always single numbers, so q·v can never be computed."),
                   N_("In general self-attention values can be vectors as easily as numbers; this section's example "
                   "only used single numbers to keep things simple.")),
            Choice(N_("Softmax only accepts scores that were computed from keys."),
                   N_("Softmax normalises whatever numbers it is given: what is wrong is what the score stands "
                   "for, and softmax itself sets no such limit.")),
        ),
        why=N_("Keys are built for matching and values for being retrieved. Scoring against the values makes "
            "relevance depend on the content that would be handed over, instead of on a description meant for "
            "comparison."),
    ),
    Question(
        "orthogonal-score", 14, "number",
        N_("q = (1, 1), k = (1, −1) and d_k = 2. What is the scaled score q·k / √d_k? Round to 3 decimal places."),
        answer="0.000", decimals=3, exact="0",
        why=N_("q·k = 1 × 1 + 1 × (−1) = 0, and 0 / √2 = 0: q and k are orthogonal, so their score is exactly zero, "
            "scaled or not."),
        hint=N_("Start with the raw dot product: 1 × 1 + 1 × (−1)."),
    ),
)

# Section 6, "Practice": five problems that do not count toward progress. The course gives only their answers
# and reasons; the wrong choices and their explanations here are this app's own.
PRACTICE: tuple[Question, ...] = (
    Question(
        "practice-blended", 1, "choice", N_("Which vectors are blended together to make the attention output?"),
        answer=2, counts=False,
        choices=(
            Choice(N_("The keys, weighted by the attention weights."),
                   N_("Keys are only compared with the query to give the scores; they are not part of the output.")),
            Choice(N_("The queries of every token."),
                   N_("The query makes the request; it is not mixed into the output.")),
            Choice(N_("The values, each in the proportion of its attention weight.")),
            Choice(N_("The raw scores q·kᵢ."),
                   N_("The scores only decide the weights; what gets mixed is the values.")),
        ),
        why=N_("Attention's output adds up the values, each in the proportion its softmax weight gives."),
    ),
    Question(
        "practice-dot", 2, "number", N_("q = (1, 2) and k = (2, 1). What is the raw dot product q·k?"),
        answer="4", decimals=0, exact="4", counts=False,
        why=N_("q·k = 1 × 2 + 2 × 1 = 4."),
        hint=N_("1 × 2 + 2 × 1."),
    ),
    Question(
        "practice-scale", 3, "number",
        N_("A raw dot product of 8, with d_k = 4: what is it after dividing by √d_k? Round to 3 decimal places."),
        answer="4.000", decimals=3, exact="4", counts=False,
        why=N_("√4 = 2, and 8 / 2 = 4."),
        hint=N_("√4 = 2: divide 8 by it."),
    ),
    Question(
        "practice-softmax", 4, "number",
        N_("Two scaled scores are s₁ = 2.0 and s₂ = 0.0. What is the softmax weight a₁? Round to 3 decimal places."),
        answer="0.881", decimals=3, exact=repr(1 / (1 + math.exp(-2.0))), counts=False,
        why=N_("Subtract the larger score: (0, −2.0). Exponentiate: (1, 0.1353). Add: 1.1353. "
            "a₁ = 1 / 1.1353 ≈ 0.881."),
        hint=N_("Subtract the larger score (2.0) from both first, then exponentiate and normalise."),
    ),
    Question(
        "practice-queries", 5, "choice",
        N_("Two queries differ, while the keys and values they attend over are the same. Can their outputs differ?"),
        answer=1, counts=False,
        choices=(
            Choice(N_("No: with the same keys and values, the output is fixed."),
                   N_("The query sets every score, so the same keys and values do not fix the output.")),
            Choice(N_("Yes: the query alone sets each key's relevance, so another query can move the weights, and "
                   "with them the output.")),
            Choice(N_("Only when d_k is larger than 2."),
                   N_("The size of the vectors has nothing to do with it: even this section's d_k = 2 example gives "
                   "different outputs for different queries.")),
        ),
        why=N_("Every score depends on the query: with the keys and values fixed, changing the query alone changes "
            "the output, as the worked examples for “I” and “love” show."),
    ),
)

# Module 2 on the Train tab: what training gives each W, and what one head cannot learn. They earn credit, scored
# on their own (Progress.score(TRAIN_QUESTIONS)): Section 6's score stays its fourteen questions'.
TRAIN_QUESTIONS: tuple[Question, ...] = (
    Question(
        "train-roles", 1, "choice",
        N_("On the Train tab, train “Attend to the previous token” to the end, then tick Swap W_Q and W_K. What "
           "happens to the loss?"),
        answer=1,
        choices=(
            Choice(N_("It stays about the same: W_Q and W_K were drawn from the same random distribution, so they "
                      "are interchangeable."),
                   N_("That holds at the random start only (1.6102 → 1.6088). Training gave each its specialty: "
                      "after it, the swap makes every token look for the next token instead of the previous one.")),
            Choice(N_("It jumps back up: W_Q learned what each token looks for and W_K what each token exposes; "
                      "swapped, every token attends to the next token instead of the previous one.")),
            Choice(N_("It falls further: the swap adds what W_K learned to what W_Q learned."),
                   N_("A swap trains nothing: it exchanges the two learned matrices, and the scores become their "
                      "transpose (token i scores j as j scored i).")),
        ),
        why=N_("A score is x_i W_Q W_Kᵀ x_jᵀ. Swapping W_Q and W_K transposes every score: token i now scores j as "
               "j scored i, so “the previous token” becomes “the next token”, and the loss goes from 0.0013 to "
               "about 19 (seed 0)."),
    ),
    Question(
        "train-floor", 2, "choice",
        N_("On the Train tab, paint “attend to the previous token” on “I love NLP” (I → I, love → I, "
           "NLP → love) and train one head. Why does the loss stop at log 2 = 0.6931 instead of reaching 0?"),
        answer=2,
        choices=(
            Choice(N_("The learning rate is too small: with more steps the loss would reach 0."),
                   N_("No number of steps and no learning rate helps: 0.6931 is the lowest loss any W_Q and W_K "
                      "give one head on these embeddings.")),
            Choice(N_("Softmax weights are never exactly 0 or 1, so no loss can go below log 2."),
                   N_("Weights only approach 0 and 1, but the loss can come as close to 0 as you like: the "
                      "presets train to 0.001. This floor comes from the embeddings.")),
            Choice(N_("x_NLP = x_I + x_love, so whatever W_Q and W_K are, NLP's scores are the sum of I's and "
                      "love's: the three rows cannot all be what the target asks.")),
        ),
        why=N_("One head scores token j for token i by x_i W_Q W_Kᵀ x_jᵀ, linear in x_i. With x_NLP = x_I + "
               "x_love, NLP's row of scores is I's plus love's, whatever the W's. Two heads average two patterns "
               "and go below it."),
    ),
)

# The Model tab: Section 6's recipe inside a real pretrained model (all-MiniLM-L6-v2). Scored on their own, like the
# Train tab's. The numbers are the model's, as the reference implementation gives them (tests/test_check_questions.py).
MODEL_QUESTIONS: tuple[Question, ...] = (
    Question(
        "model-previous", 1, "choice",
        N_("On the Real model tab, type “The cat sat on the mat.” Which head attends to the previous token: for "
           "each word, most of its weight on the word just before it?"),
        answer=1,
        choices=(
            Choice(N_("Layer 5, head 6."),
                   N_("That head puts 0.92 of each word’s weight on [CLS], the “no-op” where a head parks its "
                      "attention: press the [CLS] button to see it.")),
            Choice(N_("Layer 1, head 3.")),
            Choice(N_("Layer 2, head 9."),
                   N_("That head looks the other way: 0.68 of each word’s weight on the next word. Its queries match "
                      "the keys of the token after them.")),
        ),
        hint=N_("The tab’s “Previous token” button opens the head that does it most; its map has a bright line just "
                "below the diagonal."),
        why=N_("Layer 1, head 3 puts 1.00 of each word’s weight on the word before it (cat → the, sat → cat, …): "
               "the pattern the Train tab’s “Attend to the previous token” teaches one head, in a real model."),
    ),
    Question(
        "model-scale", 2, "number",
        N_("The model has d_model = 384 numbers per token and 12 heads per layer, so each head’s queries and keys "
           "have d_k = 384 / 12 = 32 numbers. By what number does every head divide q·k before the softmax? Round "
           "to 3 decimal places."),
        answer="5.657", decimals=3, exact="5.65685424949238",
        hint=N_("The scores are q·k/√d_k, as in Section 6."),
        why=N_("s = q·k/√d_k with d_k = 32: √32 ≈ 5.657. The inspector’s column s is its column q·k divided by it."),
    ),
)

ALL_QUESTIONS: tuple[Question, ...] = QUESTIONS + PRACTICE + TRAIN_QUESTIONS + MODEL_QUESTIONS
#: Every question by id; read-only, like all module-level data here (every learner's page shares it).
BY_ID = MappingProxyType({q.id: q for q in ALL_QUESTIONS})
if len(BY_ID) != len(ALL_QUESTIONS):
    raise ValueError("question ids must be unique")


# --- the two tasks on the explorer ------------------------------------------------------------------------------
#: The Section 6 example's tokens, in matrix order (``core.I_LOVE_NLP``; the tests hold the two together).
SECTION_TOKENS = ("I", "love", "NLP")
#: v_NLP, which the output of a query dragged onto k_NLP moves towards.
NLP_VALUE = 4.0


@dataclass(frozen=True)
class Task:
    """A check done on the explorer itself; it ticks when the learner has done ``prompt`` there."""

    id: str
    number: int
    prompt: str


TASKS: tuple[Task, ...] = (
    Task("nlp", 1, N_("Start from the query of “love”, q = (0, 1). Drag q towards k_NLP = (1, 1) until NLP's weight is "
                      "clearly the largest of the three (ahead of each other weight by at least 0.05) and the "
                      "output has moved at least 0.05 towards v_NLP = 4.")),
    Task("rows", 2, N_("Select each row of the attention matrix (click it, or press 1, 2, 3) and compare it with the "
                    "worked examples: row “love” reads about (0.20, 0.40, 0.40), and every row's weights add up "
                    "to 1.")),
    Task("train", 3, N_("On the Train tab, paint a target that one head cannot learn (the tab says so and why), "
                     "then train two heads on it: the loss goes below one head's floor.")),
)
#: The tasks' ids, as a stored record names them.
TASK_IDS = tuple(t.id for t in TASKS)
#: When the tasks count: on the numbers the course gives and the page shows, done by the learner.
TASK_RULE = N_("The tasks tick themselves as you work on the explorer, on the Section 6 example as the course gives "
             "it: its keys and values unedited, scaling by √d_k on, no causal mask, the numbers shown (not hidden "
             "by the step-through), and not while your page follows a presenter.")
#: Decimals the page shows weights and outputs with: a task is judged on the numbers as the learner reads them.
TASK_DECIMALS = 4
#: Task "nlp": how far NLP's weight must lead each other weight, and how much nearer v_NLP = 4 the output must have
#: come, for a learner to see it happen. At q_love love and NLP tie at 0.4011 (output 4.4067), so any move
#: would do without them; along the drag the course describes (q = (x, 1) towards k_NLP) the lead reaches 0.05
#: at x ≈ 0.18 (output 4.33), a fifth of the way, and at k_NLP it is 0.2552 (output 4.0000).
NLP_LEAD = NLP_MOVED = 0.05


def nlp_task_met(weights, output: float, start_output: float) -> bool:
    """Task "nlp": NLP's weight (the last of the three) leads each other weight by at least :data:`NLP_LEAD`,
    and the output is at least :data:`NLP_MOVED` nearer v_NLP = 4 than where the query started
    (``start_output``), all as the page shows them (4 decimals).

    >>> nlp_task_met([0.2246, 0.3199, 0.4555], 4.1905, 4.4067), nlp_task_met([0.1989, 0.3977, 0.4034], 4.3976, 4.4067)
    (True, False)
    """
    w = [round(float(x), TASK_DECIMALS) for x in weights]
    out, start = round(float(output), TASK_DECIMALS), round(float(start_output), TASK_DECIMALS)
    eps = 0.5 * 10 ** -TASK_DECIMALS  # the shown numbers' own rounding: a lead of exactly 0.0500 is enough
    return (len(w) == 3 and w[2] - max(w[:2]) >= NLP_LEAD - eps
            and abs(out - NLP_VALUE) <= abs(start - NLP_VALUE) - NLP_MOVED + eps)


# --- one learner's progress --------------------------------------------------------------------------------------
#: Why a question earns no credit any more: its answer was shown after three wrong tries, or because the learner
#: asked; or its record in the browser could not be read back, so it may have been (the answer is not shown).
SHOWN_BY_TRIES, SHOWN_ASKED_FOR, SHOWN_UNREADABLE = "tries", "asked", "unreadable"
#: Stored JSON: what it is, and its version. Anything else cannot be read (Progress.load).
FORMAT, VERSION = "attention-explorer.progress", 1
#: Largest stored text read back; a learner's whole progress, nineteen short records, is far below it.
MAX_JSON_CHARS = 50_000
_MAX_STORED_TRIES = 999
#: In what :meth:`Progress.load` could not read: the whole stored text, or a record of no known question or task.
ALL, UNKNOWN = "*", "?"


@dataclass(frozen=True)
class QuestionProgress:
    """One question's record: answers checked (``tries``; an answer not judged is not a try), whether it was
    answered ``right``, whether and how its answer was ``shown`` ("" no, "tries" after three wrong tries,
    "asked" by the learner, "unreadable": its record in the browser could not be read back, so it may have
    been), whether it earned ``credit``, and the ``last`` answer checked (a :class:`Grade` key), which the page
    puts back in its box after a reload. Credit only when right while ``shown`` is ""."""

    tries: int = 0
    right: bool = False
    shown: str = ""
    credit: bool = False
    last: str = ""

    @property
    def started(self) -> bool:
        return self != QuestionProgress()

    @property
    def answer_shown(self) -> bool:
        """Whether the page shows the answer (after three wrong tries, or asked for)."""
        return self.shown in (SHOWN_BY_TRIES, SHOWN_ASKED_FOR)


@dataclass(frozen=True)
class TaskRecord:
    """One task's record: ``done``, and the numbers the learner saw (``seen``, plain JSON values)."""

    done: bool = False
    seen: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """What a Check or a Show answer did: ``status`` "right", "wrong", "shown", "refused", "repeated" or "done"
    (nothing left to do), and ``message``, the line the page shows about it."""

    status: str
    message: str = ""


def credit_line(question: Question, qp: QuestionProgress) -> str:
    """The line under a question: its credit, or how many tries are left; empty before the first answer."""
    if not question.counts:
        if qp.right:
            return N_(PRACTICE_RIGHT.msgid, n=qp.tries)
        return PRACTICE_SHOWN if qp.shown else PRACTICE_WRONG if qp.tries else ""
    if qp.right:
        if qp.credit:
            return N_(RIGHT_CREDIT.msgid, n=qp.tries)
        return RIGHT_AFTER_UNREADABLE if qp.shown == SHOWN_UNREADABLE else RIGHT_AFTER_SHOWN
    if qp.shown:
        return {SHOWN_BY_TRIES: SHOWN_AFTER_TRIES, SHOWN_ASKED_FOR: SHOWN_ASKED}.get(qp.shown, UNREADABLE)
    if qp.tries:
        return N_(WRONG.msgid, used=qp.tries, most=MAX_TRIES, next=qp.tries + 1)
    return ""


def explanation(question: Question, qp: QuestionProgress) -> str:
    """What is wrong with the last answer checked, if it was wrong: the chosen choice's own explanation, or
    what is wrong with a typed number (too few decimals, wrong further decimals)."""
    if qp.right or not qp.last:
        return ""
    return question.grade_key(qp.last).feedback


@dataclass(frozen=True)
class Progress:
    """One learner's answers (by question id) and tasks (by task id). Immutable: every change returns a new
    record, so a param holding it notices each one, and an old record can be kept and compared."""

    answers: dict = field(default_factory=dict)
    tasks: dict = field(default_factory=dict)

    def of(self, question_id: str) -> QuestionProgress:
        return self.answers.get(question_id, QuestionProgress())

    def task(self, task_id: str) -> TaskRecord:
        return self.tasks.get(task_id, TaskRecord())

    @property
    def empty(self) -> bool:
        return not self.answers and not self.tasks

    def _with(self, question_id: str, qp: QuestionProgress) -> Progress:
        return replace(self, answers={**self.answers, question_id: qp})

    def with_task(self, task_id: str, record: TaskRecord) -> Progress:
        return replace(self, tasks={**self.tasks, task_id: record})

    def answer(self, question: Question, given, decimal: str | None = None) -> tuple[Progress, Outcome]:
        """Check ``given`` (typed with the page's ``decimal`` mark) for ``question`` and apply the credit rules.

        Credit when right before the answer was shown (or its record lost). The third wrong try shows the answer.
        A question answered right is done. Not tries: an answer not judged (a word in a number box, no choice
        made, too few decimal places) and the same wrong answer checked again (a double click).
        """
        qp = self.of(question.id)
        if qp.right:
            return self, Outcome("done", credit_line(question, qp))
        grade = question.grade(given, decimal)
        if grade.ok is None:
            return self, Outcome("refused", grade.feedback)
        if not grade.ok and qp.tries and grade.key == qp.last:
            return self, Outcome("repeated", REPEATED)
        tries = min(qp.tries + 1, _MAX_STORED_TRIES)
        if grade.ok:
            new = replace(qp, tries=tries, right=True, credit=question.counts and not qp.shown, last=grade.key)
            status = "right"
        else:
            shown = qp.shown if qp.answer_shown or tries < MAX_TRIES else SHOWN_BY_TRIES
            new = replace(qp, tries=tries, shown=shown, last=grade.key)
            status = "shown" if new.answer_shown and not qp.answer_shown else "wrong"
        return self._with(question.id, new), Outcome(status, credit_line(question, new))

    def show(self, question: Question) -> tuple[Progress, Outcome]:
        """The learner asks for the answer: shown, and no credit for this question any more."""
        qp = self.of(question.id)
        if qp.right or qp.answer_shown:
            return self, Outcome("done", credit_line(question, qp))
        new = replace(qp, shown=SHOWN_ASKED_FOR)
        return self._with(question.id, new), Outcome("shown", credit_line(question, new))

    def score(self, questions=QUESTIONS) -> tuple[int, int]:
        """(questions with credit, questions that count) among ``questions``."""
        counting = [q for q in questions if q.counts]
        return sum(self.of(q.id).credit for q in counting), len(counting)

    def score_text(self, questions=QUESTIONS) -> str:
        n, m = self.score(questions)
        return N_("{n} of {m} with credit", n=n, m=m)

    def merged(self, other: Progress) -> Progress:
        """This progress and ``other`` (the same learner's, from another tab or the browser's store) together.

        Per question the record further along wins (right, then shown, then more tries); a task is done if it
        is done in either, and the rows task keeps the rows seen in both. Commutative and idempotent, so two
        tabs writing the same store settle on the same progress.
        """
        def rank(qp: QuestionProgress):
            return (qp.right, bool(qp.shown), qp.tries, qp.credit, qp.shown, qp.last)

        answers = {k: max(self.of(k), other.of(k), key=rank) for k in {*self.answers, *other.answers}}
        tasks = {}
        for k in {*self.tasks, *other.tasks}:
            a, b = self.task(k), other.task(k)
            if k == "rows":
                seen = {row: max((t.seen[row] for t in (a, b) if row in t.seen), key=_json_rank)
                        for row in {*a.seen, *b.seen}}
                tasks[k] = TaskRecord(set(seen) == set(SECTION_TOKENS), seen)
            else:
                tasks[k] = max(a, b, key=lambda t: (t.done, _json_rank(t.seen)))
        return Progress(answers, tasks)

    # --- JSON ---------------------------------------------------------------------------------------------------
    def to_json(self) -> str:
        """This progress as compact JSON text, keys sorted (the same progress always writes the same text)."""
        data = {"format": FORMAT, "version": VERSION,
                "answers": {k: vars(qp) for k, qp in self.answers.items()},
                "tasks": {k: {"done": t.done, "seen": t.seen} for k, t in self.tasks.items()}}
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text) -> Progress:
        """The progress in ``text``, as :meth:`load` reads it."""
        return cls.load(text)[0]

    @classmethod
    def load(cls, text) -> tuple[Progress, tuple[str, ...]]:
        """The progress in ``text`` (what the browser kept), and what of it could not be read.

        Never raises: the text comes from the learner's browser, where it may have been edited or broken. A
        record that could not have been written by these rules (credit without a right answer, an answer the box
        does not take, ...) is not taken, nor is it forgotten: a question that counts keeps no chance of credit
        (``shown`` "unreadable"), as its answer may have been shown; a practice problem or a task starts over.
        Text that is not this version's progress at all (broken, or over :data:`MAX_JSON_CHARS`) counts as every
        question's record unreadable. The second value names what could not be read: question and task ids,
        :data:`UNKNOWN` for a record of no question or task this page has, :data:`ALL` for the whole text;
        empty when everything was read.
        """
        try:
            if not isinstance(text, str) or len(text) > MAX_JSON_CHARS:
                raise ValueError("not progress")
            data = json.loads(text)
            if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") == VERSION
                    and isinstance(data.get("answers"), dict) and isinstance(data.get("tasks"), dict)):
                raise ValueError("not progress")
            answers, tasks, lost = {}, {}, []
            for k, v in data["answers"].items():
                qp = _question_progress(BY_ID[k], v) if k in BY_ID else None
                if qp is not None:
                    answers[k] = qp
                else:
                    lost.append(k if k in BY_ID else UNKNOWN)
                    if k in BY_ID and BY_ID[k].counts:
                        answers[k] = QuestionProgress(shown=SHOWN_UNREADABLE)
            for k, v in data["tasks"].items():
                if (t := _task_record(k, v)) is not None:
                    tasks[k] = t
                else:
                    lost.append(k if k in TASK_IDS else UNKNOWN)
            return cls(answers, tasks), tuple(dict.fromkeys(lost))
        except (ValueError, TypeError, KeyError, RecursionError, AttributeError):
            return cls({q.id: QuestionProgress(shown=SHOWN_UNREADABLE) for q in QUESTIONS}), (ALL,)


def _json_rank(value) -> str:
    return json.dumps(value, sort_keys=True)


def _is_int(x, lo: int, hi: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) <= 1e6


def _numbers(x, n: int) -> bool:
    return isinstance(x, list) and len(x) == n and all(_number(c) for c in x)


def _question_progress(question: Question, v) -> QuestionProgress | None:
    if not isinstance(v, dict) or set(v) != {"tries", "right", "shown", "credit", "last"}:
        return None
    tries, right, shown, credit, last = v["tries"], v["right"], v["shown"], v["credit"], v["last"]
    if not (_is_int(tries, 0, _MAX_STORED_TRIES) and isinstance(right, bool) and isinstance(credit, bool)
            and shown in ("", SHOWN_BY_TRIES, SHOWN_ASKED_FOR, SHOWN_UNREADABLE) and isinstance(last, str)
            and len(last) <= MAX_KEY_CHARS):
        return None
    wrong = tries - right
    grade = question.grade_key(last) if last else None
    consistent = (
        (not right or tries >= 1)
        and (not credit or (right and question.counts and not shown))
        and (credit or not right or bool(shown) or not question.counts)  # right before shown always earned credit
        and (shown != SHOWN_BY_TRIES or wrong >= MAX_TRIES)
        and (shown not in ("", SHOWN_UNREADABLE) or wrong < MAX_TRIES)  # three wrong tries always show the answer
        and (shown != SHOWN_UNREADABLE or question.counts)
        and (bool(last) == (tries > 0))
        # the last answer grades as recorded; one with too few decimals was a wrong try before they stopped counting
        and (grade is None or grade.ok is right or (not right and grade.ok is None and bool(grade.key)))
    )
    return QuestionProgress(tries, right, shown, credit, last) if consistent else None


def _task_record(task_id: str, v) -> TaskRecord | None:
    if not isinstance(v, dict) or set(v) != {"done", "seen"} or not isinstance(v["done"], bool):
        return None
    done, seen = v["done"], v["seen"]
    if not isinstance(seen, dict):
        return None
    if task_id == "nlp":
        ok = (not done and not seen) or (
            done and set(seen) == {"row", "q", "weights", "output", "start"} and seen["row"] in SECTION_TOKENS
            and _numbers(seen["q"], 2) and _numbers(seen["weights"], 3) and _number(seen["output"])
            and _number(seen["start"]))
    elif task_id == "train":
        ok = (not done and not seen) or (
            done and set(seen) == {"pattern", "loss", "floor"} and isinstance(seen["pattern"], str)
            and len(seen["pattern"]) <= 40 and _number(seen["loss"]) and _number(seen["floor"])
            and seen["loss"] < seen["floor"])
    elif task_id == "rows":
        ok = (set(seen) <= set(SECTION_TOKENS) and done == (set(seen) == set(SECTION_TOKENS))
              and all(isinstance(r, dict) and set(r) == {"weights", "sum"} and _numbers(r["weights"], 3)
                      and _number(r["sum"]) for r in seen.values()))
    else:
        return None
    return TaskRecord(done, seen) if ok else None
