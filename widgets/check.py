"""The Check tab: Section 6's questions, its two tasks on the explorer, and the learner's progress.

Three parts, one of each per browser session:

- :class:`LearnerProgress` holds the learner's :class:`~widgets.questions.Progress`, grades their answers, and
  watches their :class:`~widgets.state.AttentionState` for the two tasks. It is cheap, and is made with the
  page, so the tasks tick even before the tab is first opened.
- :class:`ProgressStore` keeps that progress in the browser's ``localStorage`` (no accounts), through the page's
  browser bridge: the browser sends what it had stored when the page renders, and stores every change. Answers
  go only from the page to its own server session and back.
- :class:`CheckView` is the tab itself: build it when the tab is first shown.

Every text is shown escaped, never as HTML: a typed answer can be quoted back, and the stored progress comes
from the browser.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import partial
from html import escape
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.models import Div
from panel.io.state import set_curdoc

from core import I_LOVE_NLP, scaled_dot_product_attention
from session.training import write_pattern
from widgets.i18n import N_, Text, Translator, translator
from widgets.questions import (
    BY_ID, MAX_JSON_CHARS, MAX_NUMBER_CHARS, PRACTICE, PRECISION_RULE, QUESTIONS, SECTION_TOKENS, TASK_DECIMALS,
    TASK_RULE, TASKS, TRAIN_QUESTIONS, Outcome, Progress, Question, QuestionProgress, Task, TaskRecord, credit_line,
    explanation, nlp_task_met,
)
from widgets.state import AttentionState
from widgets.updates import one_message

CHECK_CSS = (Path(__file__).resolve().parents[1] / "static" / "check.css").read_text()
#: The section's Computational Laboratory, as it is in the project; the Check tab offers it for download.
LAB_NOTEBOOK = Path(__file__).resolve().parents[1] / "lab" / "attention_lab.ipynb"
#: Where a learner's answers go, as the Check tab says it.
PRIVACY = N_("Your answers stay in this browser, with no account, and are still here after a reload: they go only "
           "to this page's own server session (and, in a presenter's class poll, the one answer you send there, "
           "counted without your name).")
#: The browser's localStorage key. A new progress format gets a new key (and a new VERSION).
STORAGE_KEY = "attention-explorer.progress.v1"
#: The name of the Bokeh Div that carries the progress to the browser (ProgressStore).
STORE_NAME = "learner-progress"
ENGLISH = translator("en")

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


class ProgressStore:
    """The learner's progress in their browser's ``localStorage``, under :data:`STORAGE_KEY`.

    Not a component of its own: the page's :class:`~widgets.browser.BrowserBridge` script does the storing. A
    plain Bokeh ``Div`` named :data:`STORE_NAME`, which the page adds to its document as a root with no view
    (app.py, as it does the address), carries ``value`` to the browser, which stores it (an empty text removes
    the key). What the browser holds comes back as the bridge's message ``{"stored": text}``, once when the page
    renders and again whenever another tab of the same browser changes it; the bridge hands it to
    :meth:`receive`, which passes it to ``on_stored`` (None when the key was removed). Nothing else leaves the
    page. Storage that is disabled or full is ignored: progress then lasts as long as the session. (A component
    of its own cost every page two more Bokeh models and about 20,000 more function calls to build, for
    learners who never open the Check tab too.)
    """

    key = STORAGE_KEY

    def __init__(self):
        self.div = Div(name=STORE_NAME, text="", visible=False)
        self.on_stored = None  # set by LearnerProgress

    @property
    def value(self) -> str:
        """The progress JSON the browser should store; empty: remove it."""
        return self.div.text

    @value.setter
    def value(self, text: str) -> None:
        self.div.text = text

    def receive(self, msg) -> None:
        """What the bridge's script sent: ``{"stored": text}``, or ``{"stored": None}`` once the key was removed."""
        if not isinstance(msg, dict) or "stored" not in msg or self.on_stored is None:
            return
        text = msg["stored"] if isinstance(msg["stored"], str) else None
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._take(text)
        else:
            # the first message comes as the page renders, before Panel counts the page as loaded: its Div is a
            # plain Bokeh model, which may only change under the document's lock, in a callback of the session
            doc.add_next_tick_callback(partial(self._take, text, doc))

    def _take(self, text: str | None, doc=None) -> None:
        with set_curdoc(doc) if doc is not None else nullcontext(), one_message(doc):  # one update of the page
            self.on_stored(text)


class LearnerProgress(param.Parameterized):
    """One learner's progress on Section 6: their answers, their two tasks, kept in their browser.

    The tasks are watched on ``state`` as the learner works the explorer, and count only on the Section 6
    example as the course gives it (:data:`~widgets.questions.TASK_RULE`, :meth:`paused`).
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state the tasks are done on.")
    progress = param.ClassSelector(class_=Progress, doc="The learner's record; replaced, never changed in place.")
    following = param.Boolean(default=False, doc=(
        "The page follows a presenter's room (RoomControls.following): the explorer then shows the presenter's "
        "work, not the learner's, so the tasks wait."))

    def __init__(self, **params):
        super().__init__(**params)
        if self.progress is None:
            self.progress = Progress()
        self.store = ProgressStore()
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
        # rendered, or in another tab, is kept. Text that is not progress (another version, another app,
        # broken) merges as nothing.
        self.progress = Progress() if text is None else self.progress.merged(Progress.from_json(text))

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


# --- the view ---------------------------------------------------------------------------------------------------
def title_of(q: Question) -> Text:
    """How a question is named: "Question 5", "Practice problem 2" or "Train tab, question 1"."""
    if q in TRAIN_QUESTIONS:
        return N_("Train tab, question {n}", n=q.number)
    return N_("Question {n}", n=q.number) if q.counts else N_("Practice problem {n}", n=q.number)


def answer_text(q: Question, tr: Translator) -> str:
    """The right answer as the page shows it: the right choice, or the number with the language's mark."""
    return tr(q.choices[q.answer].text) if q.kind == "choice" else tr.mark(str(q.answer))


def prompt_html(q: Question, tr: Translator = ENGLISH) -> str:
    """A question's title, prompt and hint (a disclosure the browser opens: no server round trip)."""
    hint = (f'<details class="hint"><summary>{escape(tr._("Hint"))}</summary><p>{escape(tr(q.hint))}</p></details>'
            if q.hint else "")
    return f'<h4>{escape(tr(title_of(q)))}</h4><p class="prompt">{escape(tr(q.prompt))}</p>{hint}'


def feedback_html(q: Question, qp: QuestionProgress, note: str = "", tr: Translator = ENGLISH) -> str:
    """Under a question: ``note`` (why an input was refused), the credit line, the chosen wrong choice's
    explanation, the answer once shown, and the "Why" once answered right or shown."""
    parts = [f'<p class="note">{escape(tr(note))}</p>'] if note else []
    line = credit_line(q, qp)
    if line:
        kind = "right" if qp.right and (qp.credit or not q.counts) else "none" if qp.shown or qp.right else "wrong"
        parts.append(f'<p class="credit {kind}">{escape(tr(line))}</p>')
    if why_not := explanation(q, qp):
        parts.append(f'<p class="explanation">{escape(tr(why_not))}</p>')
    if qp.shown and not qp.right:
        parts.append(f'<p class="answer">{escape(tr._("Answer: {answer}", answer=answer_text(q, tr)))}</p>')
    if qp.right or qp.shown:
        parts.append(f'<p class="why"><strong>{escape(tr._("Why:"))}</strong> {escape(tr(q.why))}</p>')
    return f'<div role="status">{"".join(parts)}</div>' if parts else ""


def task_html(task: Task, record: TaskRecord, paused: str, tr: Translator = ENGLISH) -> str:
    """A task: its tick, what to do, the numbers seen, and why it does not count right now (if it does not)."""
    tick, title = ("✓", N_("Task {n} — done", n=task.number)) if record.done else (
        "☐", N_("Task {n} — not done yet", n=task.number))
    parts = [f'<h4><span class="tick" aria-hidden="true">{tick}</span>{escape(tr(title))}</h4>',
             f"<p>{escape(tr(task.prompt))}</p>"]
    seen, sep = record.seen, tr.list_sep
    if task.id == "nlp" and record.done:
        w = sep.join(f"{t} {tr.num(x)}" for t, x in zip(SECTION_TOKENS, seen["weights"]))
        parts.append('<p class="seen">' + escape(tr._(
            "Seen on the query of “{token}”: q = {q}; weights {weights}; output {output}, from {start} where q "
            "started.", token=seen["row"], q=tr.vec(seen["q"], 4, short=True), weights=w, output=tr.num(seen["output"]),
            start=tr.num(seen["start"]))) + "</p>")
    elif task.id == "rows":
        rows = [f"<li>{escape(t)}: " + (" + ".join(tr.num(x) for x in seen[t]["weights"]) + f" = {tr.num(seen[t]['sum'])}"
                                        if t in seen else escape(tr._("not selected yet"))) + "</li>"
                for t in SECTION_TOKENS]
        parts.append(f'<ul class="seen">{"".join(rows)}</ul>')
    elif task.id == "train" and record.done:
        parts.append('<p class="seen">' + escape(tr._(
            "Seen on the target {pattern}: loss {loss}, below one head's floor {floor}.", pattern=seen["pattern"],
            loss=tr.num(seen["loss"]), floor=tr.num(seen["floor"]))) + "</p>")
    if paused and not record.done:
        parts.append(f'<p class="paused">{escape(tr._("Not counting right now: {why}.", why=tr(paused)))}</p>')
    return "".join(parts)


class _QuestionCard:
    """One question's widgets: a prompt, the choices or a number box, Check and Show answer, one feedback pane
    (seven Bokeh models). Test hooks: ``question-<id>`` on the card, ``check-feedback`` and ``feedback-<id>`` on
    its feedback."""

    def __init__(self, learner: LearnerProgress, question: Question):
        self.learner, self.question = learner, question
        q, tr = question, learner.state.tr
        self.prompt = pn.pane.HTML(prompt_html(q, tr), stylesheets=[CHECK_CSS], sizing_mode="stretch_width",
                                   margin=(0, 10))
        if q.kind == "choice":
            self.input = pn.widgets.RadioBoxGroup(options=self._choices(tr), stylesheets=[CHECK_CSS], margin=(0, 10),
                                                  sizing_mode="stretch_width")
        else:
            self.input = pn.widgets.TextInput(label=tr._("Your answer"), placeholder=tr._("a number"), width=200,
                                              max_length=MAX_NUMBER_CHARS, stylesheets=[CHECK_CSS], margin=(0, 10))
            self.input.param.watch(self._on_check, "enter_pressed")
        # no descriptions: each would be one more Bokeh model (a Tooltip) per button, for a whole class
        self.check = pn.widgets.Button(label=tr._("Check"), color="primary", stylesheets=[CHECK_CSS])
        self.show = pn.widgets.Button(label=tr._("Show answer"), stylesheets=[CHECK_CSS])
        self.check.on_click(self._on_check)
        self.show.on_click(self._on_show)
        self.feedback = pn.pane.HTML("", css_classes=["check-feedback", f"feedback-{q.id}"], stylesheets=[CHECK_CSS],
                                     sizing_mode="stretch_width", margin=(0, 10))
        self.layout = pn.Column(self.prompt, self.input, pn.Row(self.check, self.show, margin=(0, 5)), self.feedback,
                                css_classes=["check-question", f"question-{q.id}"], stylesheets=[CHECK_CSS],
                                sizing_mode="stretch_width")
        self._note = ""
        self.sync()

    def _choices(self, tr: Translator) -> dict:
        return {tr(c.text): i for i, c in enumerate(self.question.choices)}

    def relabel(self) -> None:
        """Every word of the card in the page's language, after a switch; the learner's input is kept."""
        tr = self.learner.state.tr
        self.prompt.object = prompt_html(self.question, tr)
        if self.question.kind == "choice":
            value = self.input.value
            self.input.param.update(options=self._choices(tr), value=value)
        else:
            self.input.param.update(label=tr._("Your answer"), placeholder=tr._("a number"))
        self.check.label, self.show.label = tr._("Check"), tr._("Show answer")
        self.sync(self._note)

    def _on_check(self, *_):
        with one_message():
            outcome = self.learner.answer(self.question.id, self.input.value)
            if outcome.status in ("refused", "repeated"):  # nothing recorded: only this card says why
                self.sync(note=outcome.message)

    def _on_show(self, *_):
        with one_message():
            self.learner.show_answer(self.question.id)

    def sync(self, note: str = "") -> None:
        """Show this question's record: feedback, which buttons still apply, the last answer put back."""
        qp, tr = self.learner.progress.of(self.question.id), self.learner.state.tr
        self._note = note
        if not qp.started:  # a fresh question (Panel would have chosen the first choice), or Start again
            self.input.value = None if self.question.kind == "choice" else ""
        elif qp.last and self.input.value in (None, ""):  # after a reload: the answer the learner last checked
            self.input.value = int(qp.last) if self.question.kind == "choice" else tr.mark(qp.last)
        self.input.disabled = self.check.disabled = qp.right
        self.show.disabled = qp.right or bool(qp.shown)
        self.feedback.object = feedback_html(self.question, qp, note, tr)


class CheckView(pn.viewable.Viewer):
    """The Check tab: the credit rules and the number rule, the score, the two tasks, the fourteen questions
    in order, the practice problems (built when first opened; they do not count), the lab notebook to download and
    Start again.

    Build it when the tab is first shown; ``learner`` is made with the page. Test hooks: ``check-score``,
    ``task-nlp``, ``task-rows``, ``question-<id>``, ``feedback-<id>``, ``check-practice``, ``check-start-again``,
    ``check-lab-download``.
    """

    learner = param.ClassSelector(class_=LearnerProgress, doc="The session's progress, grading and tasks.")

    def __init__(self, **params):
        super().__init__(**params)
        learner = self.learner
        tr = learner.state.tr
        self._cards: dict[str, _QuestionCard] = {}
        html = dict(stylesheets=[CHECK_CSS], sizing_mode="stretch_width", margin=(0, 10))
        self._intro = pn.pane.HTML(self._intro_html(tr), **html)
        self._score = pn.pane.HTML("", css_classes=["check-score"], **html)
        self._tasks = {t.id: pn.pane.HTML("", css_classes=["check-task", f"task-{t.id}"], **html) for t in TASKS}
        self._tasks_intro = pn.pane.HTML(self._tasks_intro_html(tr), **html)
        questions = [self._card(q).layout for q in QUESTIONS]
        # the Train tab's two questions (Module 2), scored on their own: Section 6's score stays its own
        self._train_intro = pn.pane.HTML("", css_classes=["check-train"], **html)
        train_questions = [self._card(q).layout for q in TRAIN_QUESTIONS]
        self._practice_toggle = pn.widgets.Toggle(label=tr._("Open the practice problems"), stylesheets=[CHECK_CSS],
                                                  width=280, margin=(4, 10))
        self._practice_toggle.param.watch(self._toggle_practice, "value")
        self._practice = pn.Column(visible=False, sizing_mode="stretch_width", margin=0)
        self._practice_intro = pn.pane.HTML(self._practice_html(tr), css_classes=["check-practice"], **html)
        self._lab_intro = pn.pane.HTML(self._lab_html(tr), css_classes=["check-lab"], **html)
        # sent through the page's own session when pressed (embed=False): no address, so it works offline and
        # under any URL prefix, and costs the page nothing until then
        self._lab = pn.widgets.FileDownload(file=str(LAB_NOTEBOOK), filename=LAB_NOTEBOOK.name, embed=False,
                                            label=tr._("Download the lab notebook"), color="primary",
                                            stylesheets=[CHECK_CSS], css_classes=["check-lab-download"],
                                            sizing_mode="fixed", width=None, margin=(4, 10))  # as wide as its text
        self._start = pn.widgets.Button(label=tr._("Start again"), stylesheets=[CHECK_CSS],
                                        css_classes=["check-start-again"])
        self._confirm = pn.widgets.Button(label=tr._("Yes, clear my progress"), color="danger", visible=False,
                                          stylesheets=[CHECK_CSS])
        self._keep = pn.widgets.Button(label=tr._("Keep it"), visible=False, stylesheets=[CHECK_CSS])
        self._start.on_click(lambda _: self._ask_to_clear(True))
        self._keep.on_click(lambda _: self._ask_to_clear(False))
        self._confirm.on_click(self._clear)
        self._layout = pn.Column(
            self._intro, self._score, self._tasks_intro, *self._tasks.values(), *questions,
            self._train_intro, *train_questions,
            self._practice_intro, self._practice_toggle, self._practice, self._lab_intro, self._lab,
            pn.Row(self._start, self._confirm, self._keep, margin=(10, 5)),
            # scrolls inside its tab, like the √d_k panel: the page itself never scrolls
            name="check", css_classes=["check"], sizing_mode="stretch_both", scroll=True,
        )
        learner.param.watch(self._on_progress, "progress")
        learner.param.watch(self._render_tasks, "following")
        learner.state.param.watch(self._render_tasks, list(TASK_INPUTS))
        learner.state.param.watch(self._relabel, "lang")
        self._render_score()
        self._render_tasks()

    @staticmethod
    def _intro_html(tr: Translator) -> str:
        return (f"<h3>{escape(tr._('Check your understanding'))}</h3>"
                "<p>" + escape(tr._(
                    "Questions 1–{n} count toward your progress. A question earns credit when you answer it right "
                    "before its answer is shown. After three wrong tries the answer is shown, and you can also "
                    "choose to see it sooner: either way that question earns no credit.", n=len(QUESTIONS))) +
                f"</p><p>{escape(tr(PRECISION_RULE))}</p><p class='privacy'>{escape(tr(PRIVACY))}</p>")

    @staticmethod
    def _tasks_intro_html(tr: Translator) -> str:
        return f"<h3>{escape(tr._('On the explorer'))}</h3><p>{escape(tr(TASK_RULE))}</p>"

    @staticmethod
    def _practice_html(tr: Translator) -> str:
        return (f"<h3>{escape(tr._('Practice — does not count'))}</h3><p>" + escape(tr.ngettext(
            "{n} more problem to try. It does not count toward your progress.",
            "{n} more problems to try. They do not count toward your progress.", len(PRACTICE))) + "</p>")

    @staticmethod
    def _lab_html(tr: Translator) -> str:
        return (f"<h3>{escape(tr._('Computational laboratory'))}</h3><p>" + escape(tr._(
            "The notebook works this section's numbers step by step in plain NumPy (the output {love} for “love”, "
            "{i} for “I”), then Module 2's five steps on its 3×3 example, with exercises whose answers it checks. "
            "Open it in Jupyter: it needs only NumPy, and no network. It is also in the project, as {path}.",
            love=tr.mark("4.41"), i=tr.mark("3.59"), path="lab/attention_lab.ipynb")) + "</p>")

    def _relabel(self, *_):
        tr = self.learner.state.tr
        with one_message():
            self._intro.object = self._intro_html(tr)
            self._tasks_intro.object = self._tasks_intro_html(tr)
            self._practice_intro.object = self._practice_html(tr)
            self._lab_intro.object = self._lab_html(tr)
            self._practice_toggle.label = (tr._("Close the practice problems") if self._practice_toggle.value
                                           else tr._("Open the practice problems"))
            self._lab.label = tr._("Download the lab notebook")
            self._start.label, self._confirm.label, self._keep.label = (
                tr._("Start again"), tr._("Yes, clear my progress"), tr._("Keep it"))
            for card in self._cards.values():
                card.relabel()
            self._render_score()
            self._render_tasks()

    def _card(self, q: Question) -> _QuestionCard:
        card = self._cards[q.id] = _QuestionCard(self.learner, q)
        return card

    @property
    def cards(self) -> dict[str, _QuestionCard]:
        """The questions built so far, by id (the practice problems once opened)."""
        return self._cards

    def _toggle_practice(self, event):
        if not self._practice.objects:  # the first opening
            self._practice.objects = [self._card(q).layout for q in PRACTICE]
        self._practice.visible = event.new
        tr = self.learner.state.tr
        self._practice_toggle.label = tr._("Close the practice problems") if event.new else tr._(
            "Open the practice problems")

    def _ask_to_clear(self, asking: bool):
        self._confirm.visible = self._keep.visible = asking
        self._start.visible = not asking

    def _clear(self, *_):
        with one_message():
            self._ask_to_clear(False)
            self.learner.start_again()

    def _on_progress(self, event):
        old, new = event.old, event.new
        with one_message():
            for qid, card in self._cards.items():
                if old is None or old.of(qid) != new.of(qid):
                    card.sync()
            self._render_score()
            if old is None or old.tasks != new.tasks:
                self._render_tasks()

    def _render_score(self):
        tr = self.learner.state.tr
        self._score.object = f'<p role="status">{escape(tr._("Score: {score}", score=tr(self.learner.score_text)))}</p>'
        self._train_intro.object = (f"<h3>{escape(tr._('On the Train tab'))}</h3><p>" + escape(tr._(
            "Two questions on Module 2's claim that training gives W_Q, W_K and W_V their roles: train on the Train "
            "tab first. They are scored on their own: {score}.",
            score=tr(self.learner.progress.score_text(TRAIN_QUESTIONS)))) + "</p>")

    def _render_tasks(self, *_):
        for task in TASKS:
            text = task_html(task, self.learner.progress.task(task.id), self.learner.paused(task.id),
                             self.learner.state.tr)
            if self._tasks[task.id].object != text:
                self._tasks[task.id].object = text

    def __panel__(self):
        return self._layout
