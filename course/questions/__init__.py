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

One module each: ``grading.py`` (a question, the number rule, the credit lines), ``bank.py`` (the questions),
``tasks.py`` (the tasks on the explorer), ``record.py`` (one learner's :class:`Progress` and its JSON); every
name is importable from ``course.questions``.
"""

from course.questions.bank import (
    ALL_QUESTIONS,
    BY_ID,
    MODEL_QUESTIONS,
    PRACTICE,
    QUESTIONS,
    TRAIN_QUESTIONS,
)
from course.questions.grading import (
    CHOOSE_FIRST,
    KINDS,
    MAX_KEY_CHARS,
    MAX_NUMBER_CHARS,
    MAX_TRIES,
    PRACTICE_RIGHT,
    PRACTICE_SHOWN,
    PRACTICE_WRONG,
    PRECISION_RULE,
    REPEATED,
    RIGHT_AFTER_SHOWN,
    RIGHT_AFTER_UNREADABLE,
    RIGHT_CREDIT,
    SHOWN_AFTER_TRIES,
    SHOWN_ASKED,
    UNREADABLE,
    WRONG,
    Choice,
    Grade,
    Question,
    check_number,
    parse_number,
)
from course.questions.record import (
    ALL,
    FORMAT,
    MAX_JSON_CHARS,
    SHOWN_ASKED_FOR,
    SHOWN_BY_TRIES,
    SHOWN_UNREADABLE,
    UNKNOWN,
    VERSION,
    Outcome,
    Progress,
    QuestionProgress,
    TaskRecord,
    credit_line,
    explanation,
)
from course.questions.tasks import (
    NLP_LEAD,
    NLP_MOVED,
    NLP_VALUE,
    SECTION_TOKENS,
    TASK_DECIMALS,
    TASK_IDS,
    TASK_RULE,
    TASKS,
    Task,
    nlp_task_met,
)

__all__ = ["ALL", "ALL_QUESTIONS", "BY_ID", "CHOOSE_FIRST", "Choice", "FORMAT", "Grade", "KINDS", "MAX_JSON_CHARS",
           "MAX_KEY_CHARS", "MAX_NUMBER_CHARS", "MAX_TRIES", "MODEL_QUESTIONS", "NLP_LEAD", "NLP_MOVED",
           "NLP_VALUE", "Outcome", "PRACTICE", "PRACTICE_RIGHT", "PRACTICE_SHOWN", "PRACTICE_WRONG",
           "PRECISION_RULE", "Progress", "QUESTIONS", "Question", "QuestionProgress", "REPEATED",
           "RIGHT_AFTER_SHOWN", "RIGHT_AFTER_UNREADABLE", "RIGHT_CREDIT", "SECTION_TOKENS", "SHOWN_AFTER_TRIES",
           "SHOWN_ASKED", "SHOWN_ASKED_FOR", "SHOWN_BY_TRIES", "SHOWN_UNREADABLE", "TASKS", "TASK_DECIMALS",
           "TASK_IDS", "TASK_RULE", "TRAIN_QUESTIONS", "Task", "TaskRecord", "UNKNOWN", "UNREADABLE", "VERSION",
           "WRONG", "check_number", "credit_line", "explanation", "nlp_task_met", "parse_number"]
