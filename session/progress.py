"""One learner's progress on the Check tab: their answers, their tasks on the explorer, and its keeping.

- :class:`LearnerProgress` holds the learner's :class:`~course.questions.Progress`, grades their answers, and
  watches their :class:`~session.state.AttentionState` for the tasks. It is cheap, and is made with the page, so
  the tasks tick even before the tab is first opened.
- :class:`StoredProgress` is what the progress asks of a store: the text to keep (``value``), and the text kept,
  handed back through :meth:`StoredProgress.receive`. On a page, ``widgets.check.ProgressStore`` keeps it in the
  browser's ``localStorage`` (no accounts); on its own (tests, a notebook) it is kept here.

The questions and their rules are the course's (``course/questions/``).
"""

from __future__ import annotations

import numpy as np
import param

from core import I_LOVE_NLP, scaled_dot_product_attention
from course.questions import BY_ID, SECTION_TOKENS, TASK_DECIMALS, Outcome, Progress, TaskRecord, nlp_task_met
from session.i18n import N_
from session.state import AttentionState
from session.training import write_pattern

#: The browser's localStorage key. A new progress format gets a new key (and a new VERSION).
STORAGE_KEY = "attention-explorer.progress.v1"
#: The name of the Bokeh Div that carries the progress to the browser (ProgressStore).
STORE_NAME = "learner-progress"
#: Each row's output with its own query (q = its key) on the Section 6 example: where a moved query started
#: (I 3.5933, love 4.4067, NLP 4.0000). An immutable constant, the same for every learner.
START_OUTPUTS = tuple(float(x) for x in
                      scaled_dot_product_attention(I_LOVE_NLP.keys, I_LOVE_NLP.keys, I_LOVE_NLP.values).output)
#: What makes the page's numbers those of the course, and the tasks count (see questions.TASK_RULE).
TASK_INPUTS = ("tokens", "keys", "values", "scale", "causal", "guided", "step")


def on_section_6(state: AttentionState) -> bool:
    """Whether ``state`` holds the Section 6 example's tokens, keys and values, as the course gives them."""
    return (tuple(state.tokens) == SECTION_TOKENS and np.array_equal(state.keys, I_LOVE_NLP.keys)
            and np.array_equal(state.values, I_LOVE_NLP.values))


def _rounded(x) -> float:
    return round(float(x), TASK_DECIMALS)




class StoredProgress:
    """Where a learner's progress is kept: ``value``, the JSON text to keep (empty: nothing), and
    :meth:`receive`, which hands what was kept to ``on_stored`` (None once it was removed).
    """

    key = STORAGE_KEY

    def __init__(self):
        self.value = ""
        self.on_stored = None  # set by LearnerProgress

    def receive(self, msg) -> None:
        """What was kept: ``{"stored": text}``, or ``{"stored": None}`` once the key was removed; else ignored."""
        if not isinstance(msg, dict) or "stored" not in msg or self.on_stored is None:
            return
        self._take(msg["stored"] if isinstance(msg["stored"], str) else None)

    def _take(self, text: str | None) -> None:
        self.on_stored(text)


class LearnerProgress(param.Parameterized):
    """One learner's progress on Section 6: their answers, their two tasks, kept in their browser.

    The tasks are watched on ``state`` as the learner works the explorer, and count only on the Section 6
    example as the course gives it (:data:`~course.questions.TASK_RULE`, :meth:`paused`).
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state the tasks are done on.")
    progress = param.ClassSelector(class_=Progress, doc="The learner's record; replaced, never changed in place.")
    following = param.Boolean(default=False, doc=(
        "The page follows a presenter's room (RoomControls.following): the explorer then shows the presenter's "
        "work, not the learner's, so the tasks wait."))
    unreadable = param.Parameter(default=(), doc=(
        "What of the progress the browser kept could not be read when it last arrived (Progress.load): question "
        "and task ids, questions.ALL for all of it. The tab says so until Start again."))

    def __init__(self, store: StoredProgress | None = None, **params):
        super().__init__(**params)
        if self.progress is None:
            self.progress = Progress()
        #: where the progress is kept: the page's browser (widgets.check.ProgressStore), else here
        self.store = StoredProgress() if store is None else store
        self.store.on_stored = self._on_stored
        self.param.watch(self._save, "progress")
        self.state.param.watch(self._observe_nlp, "result")
        # every selection, also of the row already selected: a click on it is a click
        self.state.param.watch(self._observe_rows, "selected", onlychanged=False)
        self.state.training.param.watch(self._observe_train, ["run", "step", "playing"])
        self._save()

    # --- answers ------------------------------------------------------------------------------------------------
    def answer(self, question_id: str, given) -> Outcome:
        """Check ``given`` (a choice's index, or the typed text) for question ``question_id``."""
        progress, outcome = self.progress.answer(BY_ID[question_id], given, self.state.tr.decimal)
        if progress is not self.progress:
            self.progress = progress
        return outcome

    def show_answer(self, question_id: str) -> Outcome:
        """Show question ``question_id``'s answer: it earns no credit any more."""
        progress, outcome = self.progress.show(BY_ID[question_id])
        if progress is not self.progress:
            self.progress = progress
        return outcome

    def start_again(self) -> None:
        """Forget every answer and task, here and in the browser's store."""
        self.unreadable = ()
        self.progress = Progress()

    @property
    def score_text(self) -> str:
        """"n of m with credit", m the questions that count."""
        return self.progress.score_text()

    # --- the store ----------------------------------------------------------------------------------------------
    def _save(self, *_):
        self.store.value = "" if self.progress.empty else self.progress.to_json()

    def _on_stored(self, text: str | None) -> None:
        # None: removed by Start again in another tab. Otherwise merged: a task done before the page had
        # rendered, or in another tab, is kept. What could not be read is said, and a question whose record it
        # was keeps no chance of credit (Progress.load): that is stored back, so a reload does not forget it.
        if text is None:
            self.start_again()
            return
        stored, lost = Progress.load(text)
        self.unreadable = lost
        self.progress = self.progress.merged(stored)

    # --- the tasks ----------------------------------------------------------------------------------------------
    def paused(self, task_id: str) -> str:
        """Why task ``task_id`` does not count on the explorer as it is now; empty when it does."""
        s = self.state
        if self.following:
            return N_("your page is following a presenter, so the explorer shows their work")
        if task_id == "train":  # the Train tab's own sentences and targets
            return ""
        if not on_section_6(s):
            return N_("the tokens, keys or values are not the Section 6 example's (choose its preset, or press "
                      "Reset after an edit)")
        if not s.scale:
            return N_("scaling by √d_k is switched off")
        if s.causal:
            return N_("the causal mask is on")
        if task_id == "nlp" and not s.revealed(3):
            return N_("the step-through still hides the output")
        if not s.revealed(2):
            return N_("the step-through still hides the weights")
        return ""

    def _observe_nlp(self, *_):
        if self.progress.task("nlp").done or self.paused("nlp"):
            return
        s = self.state
        i, r = s.selected, s.result
        weights, output = r.weights[i], float(r.output[i])
        if nlp_task_met(weights, output, START_OUTPUTS[i]):
            seen = {"row": s.tokens[i], "q": [_rounded(c) for c in s.query], "weights": [_rounded(w) for w in weights],
                    "output": _rounded(output), "start": _rounded(START_OUTPUTS[i])}
            self.progress = self.progress.with_task("nlp", TaskRecord(True, seen))

    def _observe_train(self, *_):
        """Task 3: a painted target one head cannot learn, trained (with two heads) below one head's floor, at the
        step the page shows (the run's end while it plays)."""
        t = self.state.training
        if self.progress.task("train").done or self.paused("train") or t.run is None or t.floor is None \
                or t.floor.learnable:
            return
        loss = float(t.run.loss[t.run.steps if t.playing else t.step])
        if loss < t.floor.loss - 1e-3:
            seen = {"pattern": write_pattern(t.pattern), "loss": _rounded(loss), "floor": _rounded(t.floor.loss)}
            self.progress = self.progress.with_task("train", TaskRecord(True, seen))

    def _observe_rows(self, *_):
        record = self.progress.task("rows")
        if record.done or self.paused("rows"):
            return
        s = self.state
        i = s.selected
        token = s.tokens[i]
        # row i of the self-attention matrix has q_i = k_i; a query moved away from its key is not that row
        if token in record.seen or not np.array_equal(s.query, s.keys[i]):
            return
        weights = s.result.weights[i]
        seen = {**record.seen, token: {"weights": [_rounded(w) for w in weights], "sum": _rounded(weights.sum())}}
        self.progress = self.progress.with_task("rows", TaskRecord(set(seen) == set(SECTION_TOKENS), seen))
