"""One learner's record: each question's tries, answer and credit, each task's, the credit rules applied to an
answer, two records merged, and the JSON the browser keeps (read back without ever raising).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace

from course.questions.bank import BY_ID, QUESTIONS
from course.questions.grading import (
    MAX_KEY_CHARS,
    MAX_TRIES,
    PRACTICE_RIGHT,
    PRACTICE_SHOWN,
    PRACTICE_WRONG,
    REPEATED,
    RIGHT_AFTER_SHOWN,
    RIGHT_AFTER_UNREADABLE,
    RIGHT_CREDIT,
    SHOWN_AFTER_TRIES,
    SHOWN_ASKED,
    UNREADABLE,
    WRONG,
    Question,
)
from course.questions.tasks import SECTION_TOKENS, TASK_IDS
from course.text import N_

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
