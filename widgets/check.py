"""The Check tab: Section 6's questions, its tasks on the explorer, and where the learner's progress is kept.

One of each per browser session, beside the progress itself (:class:`session.progress.LearnerProgress`, made
with the page so the tasks tick even before the tab is first opened):

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

import panel as pn
import param
from bokeh.models import Div
from panel.io.state import set_curdoc

from course.questions import (
    ALL,
    ALL_QUESTIONS,
    BY_ID,
    MAX_NUMBER_CHARS,
    MODEL_QUESTIONS,
    PRACTICE,
    PRECISION_RULE,
    QUESTIONS,
    SECTION_TOKENS,
    TASK_RULE,
    TASKS,
    TRAIN_QUESTIONS,
    Question,
    QuestionProgress,
    Task,
    TaskRecord,
    credit_line,
    explanation,
)
from link.updates import one_message
from session.i18n import N_, Text, Translator, translator
from session.progress import (  # noqa: F401  (the tab's model, also named here)
    START_OUTPUTS,
    STORAGE_KEY,
    STORE_NAME,
    TASK_INPUTS,
    LearnerProgress,
    StoredProgress,
    on_section_6,
)

STATIC = Path(__file__).resolve().parents[1] / "static"
CHECK_CSS = (STATIC / "check.css").read_text()
#: The page's side of the tab (CheckTab): read once per process, shared by every page.
CHECK_JS = (Path(__file__).with_name("check.js")).read_text()
#: The section's Computational Laboratory, as it is in the project; the Check tab offers it for download.
LAB_NOTEBOOK = Path(__file__).resolve().parents[1] / "lab" / "attention_lab.ipynb"
#: What the score is, as the Check tab says it under the score: progress lives in the learner's own browser, where
#: they can change it, so it is theirs to study with and nobody's to grade with.
OWN_RECORD = N_("This score is your own record, kept in this browser to help you study: it is not a grade, and "
                "your teacher does not see it.")
#: Where a learner's answers go, as the Check tab says it.
PRIVACY = N_("Your answers stay in this browser, with no account, and are still here after a reload: they go only "
           "to this page's own server session (and, in a presenter's class poll, the one answer you send there, "
           "counted without your name).")
ENGLISH = translator("en")


class ProgressStore(StoredProgress):
    """The learner's progress in their browser's ``localStorage``, under :data:`STORAGE_KEY`.

    Not a component of its own: the page's :class:`~link.browser.BrowserBridge` script does the storing. A
    plain Bokeh ``Div`` named :data:`STORE_NAME`, which the page adds to its document as a root with no view
    (app.py, as it does the address), carries ``value`` to the browser, which stores it (an empty text removes
    the key). What the browser holds comes back as the bridge's message ``{"stored": text}``, once when the page
    renders and again whenever another tab of the same browser changes it; the bridge hands it to
    :meth:`receive`, which passes it to ``on_stored`` (None when the key was removed). Nothing else leaves the
    page. Storage that is disabled or full is ignored: progress then lasts as long as the session. (A component
    of its own cost every page two more Bokeh models and about 20,000 more function calls to build, for
    learners who never open the Check tab too.)
    """

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


# --- the view ---------------------------------------------------------------------------------------------------
def title_of(q: Question) -> Text:
    """How a question is named: "Question 5", "Practice problem 2" or "Train tab, question 1"."""
    if q in TRAIN_QUESTIONS:
        return N_("Train tab, question {n}", n=q.number)
    if q in MODEL_QUESTIONS:
        return N_("Real model tab, question {n}", n=q.number)
    return N_("Question {n}", n=q.number) if q.counts else N_("Practice problem {n}", n=q.number)


def group_of(q: Question) -> str:
    """Where the tab puts a question: with Section 6's ("section"), the Train tab's ("train"), or the practice."""
    if q in MODEL_QUESTIONS:
        return "model"
    return "train" if q in TRAIN_QUESTIONS else "section" if q.counts else "practice"


def answer_text(q: Question, tr: Translator) -> str:
    """The right answer as the page shows it: the right choice, or the number with the language's mark."""
    return tr(q.choices[q.answer].text) if q.kind == "choice" else tr.mark(str(q.answer))


def prompt_html(q: Question, tr: Translator = ENGLISH) -> str:
    """A question's title, prompt and hint (a disclosure the browser opens: no server round trip)."""
    hint = (f'<details class="hint"><summary>{escape(tr._("Hint"))}</summary><p>{escape(tr(q.hint))}</p></details>'
            if q.hint else "")
    return f'<h4>{escape(tr(title_of(q)))}</h4><p class="prompt">{escape(tr(q.prompt))}</p>{hint}'


def feedback_html(q: Question, qp: QuestionProgress, note: str = "", tr: Translator = ENGLISH) -> str:
    """Under a question: ``note`` (why an answer was not judged), the credit line, the chosen wrong choice's
    explanation, the answer once shown, and the "Why" once answered right or shown. The page puts it in a live
    region of its own (``role="status"``), so a screen reader reads each new line."""
    parts = [f'<p class="note">{escape(tr(note))}</p>'] if note else []
    line = credit_line(q, qp)
    if line:
        kind = "right" if qp.right and (qp.credit or not q.counts) else "none" if qp.shown or qp.right else "wrong"
        parts.append(f'<p class="credit {kind}">{escape(tr(line))}</p>')
    if why_not := explanation(q, qp):
        parts.append(f'<p class="explanation">{escape(tr(why_not))}</p>')
    if qp.answer_shown and not qp.right:
        parts.append(f'<p class="answer">{escape(tr._("Answer: {answer}", answer=answer_text(q, tr)))}</p>')
    if qp.right or qp.answer_shown:
        parts.append(f'<p class="why"><strong>{escape(tr._("Why:"))}</strong> {escape(tr(q.why))}</p>')
    return "".join(parts)


def task_html(task: Task, record: TaskRecord, paused: str, tr: Translator = ENGLISH) -> str:
    """A task: its tick, what to do, the numbers seen, and why it does not count right now (if it does not)."""
    tick, title = ("✓", N_("Task {n} — done", n=task.number)) if record.done else (
        "☐", N_("Task {n} — not done yet", n=task.number))
    parts = [f'<h4><span class="tick" aria-hidden="true">{tick}</span>{escape(tr(title))}</h4>',
             f"<p>{escape(tr(task.prompt))}</p>"]
    seen, sep = record.seen, tr.list_sep
    if task.id == "nlp" and record.done:
        w = sep.join(f"{t} {tr.num(x)}" for t, x in zip(SECTION_TOKENS, seen["weights"], strict=True))
        parts.append('<p class="seen">' + escape(tr._(
            "Seen on the query of “{token}”: q = {q}; weights {weights}; output {output}, from {start} where q "
            "started.", token=seen["row"], q=tr.vec(seen["q"], 4, short=True), weights=w, output=tr.num(seen["output"]),
            start=tr.num(seen["start"]))) + "</p>")
    elif task.id == "rows":
        rows = [f"<li>{escape(t)}: "
                + (" + ".join(tr.num(x) for x in seen[t]["weights"]) + f" = {tr.num(seen[t]['sum'])}"
                   if t in seen else escape(tr._("not selected yet")))
                + "</li>"
                for t in SECTION_TOKENS]
        parts.append(f'<ul class="seen">{"".join(rows)}</ul>')
    elif task.id == "train" and record.done:
        parts.append('<p class="seen">' + escape(tr._(
            "Seen on the target {pattern}: loss {loss}, below one head's floor {floor}.", pattern=seen["pattern"],
            loss=tr.num(seen["loss"]), floor=tr.num(seen["floor"]))) + "</p>")
    if paused and not record.done:
        parts.append(f'<p class="paused">{escape(tr._("Not counting right now: {why}.", why=tr(paused)))}</p>')
    return "".join(parts)


#: Each task's number, by its id, as the page names a task.
TASK_NUMBERS = {t.id: t.number for t in TASKS}


def unreadable_html(lost: tuple[str, ...], tr: Translator = ENGLISH) -> str:
    """What of the progress kept in the browser could not be read back (:meth:`Progress.load`), and what that
    means for the learner; empty when everything was read."""
    if not lost:
        return ""
    if ALL in lost:
        text = tr._("The progress saved in this browser could not be read, perhaps because it was changed outside "
                    "this page. No question earns credit now; Start again clears everything for a fresh start.")
    else:
        names = [tr(title_of(BY_ID[k])) if k in BY_ID else tr(N_("Task {n}", n=TASK_NUMBERS[k])) if k in TASK_NUMBERS
                 else tr._("a record this page does not know") for k in lost]
        text = tr._("Part of the progress saved in this browser could not be read, perhaps because it was changed "
                    "outside this page: {what}. A question among them no longer earns credit, and a task must be "
                    "done again; Start again clears everything for a fresh start.", what=tr.list_sep.join(names))
    return f"<p>{escape(text)}</p>"


class CheckTab(pn.custom.JSComponent):
    """The Check tab as the page draws it (``widgets/check.js``): one Bokeh model for the tab's intro, score, tasks,
    nineteen question cards and Start again, with the browser's own form controls.

    Panel's widgets and panes for the same came to about 110 Bokeh models and a hundred Panel objects per page,
    held in the server's memory for each learner who opened the tab (see bench/RESULTS.md, "a page with the Check
    tab open"). Every text comes from the server in the page's
    language: HTML the server has escaped, or plain text set as text. The page sends its own session messages
    (``widgets/check.js`` lists them), which go to ``on_message`` (a plain attribute, never synced). Test hooks:
    ``check-score``, ``check-notice``, ``task-<id>``, ``question-<id>``, ``feedback-<id>``, ``check-practice``,
    ``check-start-again``, each around a ``div`` holding its contents.
    """

    words = param.Dict(default={}, doc="The tab's own labels, as plain texts in the page's language.")
    intro = param.String(default="", doc="HTML: the credit rules, the number rule, where the answers go.")
    notice = param.String(default="", doc="HTML: what of the progress kept in the browser could not be read.")
    score = param.String(default="", doc="HTML: the score line.")
    tasks_intro = param.String(default="", doc="HTML: when the tasks count.")
    train_intro = param.String(default="", doc="HTML: the Train tab's questions' heading and their own score.")
    model_intro = param.String(default="", doc="HTML: the Real model tab's questions' heading and their own score.")
    tasks = param.List(default=[], doc="[task id, HTML] for each task, in order.")
    questions = param.List(default=[], doc=(
        "Each question, in order: {id, title, kind, counts, group ('section', 'train', 'model' or 'practice'), "
        "prompt (HTML), "
        "choices}."))
    records = param.List(default=[], doc=(
        "Each question's record as the card shows it, in the order of ``questions``: {feedback (HTML), value (the "
        "last answer checked, or None: a box the learner has not typed in shows it), done (answered right), shown "
        "(Show answer no longer applies)}."))
    practice_intro = param.String(default="", doc="HTML: the practice problems' heading.")
    practice_open = param.Boolean(default=False, doc="The practice problems are shown.")
    asking = param.Boolean(default=False, doc="Start again asks to be confirmed.")
    lab = param.String(default="", doc="HTML: the lab notebook's section (its download button follows the tab).")
    restarts = param.Integer(default=0, doc="How many times the progress was cleared: the page then empties every box.")
    max_chars = param.Integer(default=MAX_NUMBER_CHARS, constant=True, doc="The longest text a number box takes.")

    _esm = CHECK_JS

    def __init__(self, **params):
        super().__init__(**params)
        self.on_message = None  # plain attribute: set by CheckView

    def _handle_msg(self, msg) -> None:
        if isinstance(msg, dict) and self.on_message is not None:
            self.on_message(msg)


class CheckView(pn.viewable.Viewer):
    """The Check tab: the credit rules and the number rule, the score (the learner's own record, not a grade), what
    of the stored progress could not be read, the two tasks, the fourteen questions in order, the practice problems
    (they do not count), Start again, and the lab notebook to download.

    Build it when the tab is first shown; ``learner`` is made with the page. Drawn by the page itself
    (:class:`CheckTab`); the lab's download is Panel's (it sends the file through the page's own session).
    :meth:`receive` takes what the page sends, as the page sends it. Test hooks: those of :class:`CheckTab`, and
    ``check-lab-download``.
    """

    learner = param.ClassSelector(class_=LearnerProgress, doc="The session's progress, grading and tasks.")

    def __init__(self, **params):
        super().__init__(**params)
        learner = self.learner
        tr = learner.state.tr
        self._notes: dict[str, str] = {}  # question id -> why its last answer was not judged, until the next one
        self.tab = CheckTab(stylesheets=[CHECK_CSS], sizing_mode="stretch_width", margin=(0, 10))
        self.tab.on_message = self.receive
        # sent through the page's own session when pressed (embed=False): no address, so it works offline and
        # under any URL prefix, and costs the page nothing until then
        self._lab = pn.widgets.FileDownload(file=str(LAB_NOTEBOOK), filename=LAB_NOTEBOOK.name, embed=False,
                                            label=tr._("Download the lab notebook"), color="primary",
                                            stylesheets=[CHECK_CSS], css_classes=["check-lab-download"],
                                            sizing_mode=None, width=None, margin=(4, 10))  # as wide as its text
        self._layout = pn.Column(
            self.tab, self._lab,
            # scrolls inside its tab, like the √d_k panel: the page itself never scrolls
            name="check", css_classes=["check"], sizing_mode="stretch_both", scroll=True,
        )
        self._relabel()
        learner.param.watch(self._on_progress, "progress")
        learner.param.watch(self._render_notice, "unreadable")
        learner.param.watch(self._render_tasks, "following")
        learner.state.param.watch(self._render_tasks, list(TASK_INPUTS))
        learner.state.param.watch(self._relabel, "lang")

    # --- what the page sends ------------------------------------------------------------------------------------
    def receive(self, msg: dict) -> None:
        """One message of the page (``widgets/check.js``): ``{"check": id, "answer": ...}``, ``{"show": id}``,
        ``{"practice": bool}`` or ``{"restart": "ask" | "keep" | "confirm"}``. Anything else is ignored."""
        with one_message():
            qid = msg.get("check", msg.get("show"))
            if isinstance(qid, str) and qid in BY_ID:
                if "check" in msg:
                    self._check(qid, msg.get("answer"))
                else:
                    self.learner.show_answer(qid)
            elif isinstance(msg.get("practice"), bool):
                self.tab.practice_open = msg["practice"]
            elif msg.get("restart") in ("ask", "keep"):
                self.tab.asking = msg["restart"] == "ask"
            elif msg.get("restart") == "confirm" and self.tab.asking:
                self.tab.asking = False
                self.learner.start_again()

    def _check(self, qid: str, given) -> None:
        if isinstance(given, str) and len(given) > 4 * MAX_NUMBER_CHARS:  # a page's box holds far less
            given = given[:4 * MAX_NUMBER_CHARS]
        outcome = self.learner.answer(qid, given)
        if outcome.status in ("refused", "repeated"):  # nothing recorded: only this card says why
            self._notes[qid] = outcome.message
            self._render_records()
        elif qid in self._notes:
            del self._notes[qid]
            self._render_records()

    # --- what the page shows ------------------------------------------------------------------------------------
    def records(self) -> dict[str, dict]:
        """Each question's record as its card shows it, by id."""
        return {q["id"]: r for q, r in zip(self.tab.questions, self.tab.records, strict=True)}

    def _relabel(self, *_):
        tr = self.learner.state.tr
        with one_message():
            self.tab.param.update(
                words={"check": tr._("Check"), "show": tr._("Show answer"), "your_answer": tr._("Your answer"),
                       "a_number": tr._("a number"), "open_practice": tr._("Open the practice problems"),
                       "close_practice": tr._("Close the practice problems"), "start_again": tr._("Start again"),
                       "confirm": tr._("Yes, clear my progress"), "keep": tr._("Keep it"),
                       "own_record": tr(OWN_RECORD)},
                intro=self._intro_html(tr), tasks_intro=self._tasks_intro_html(tr),
                practice_intro=self._practice_html(tr), lab=self._lab_html(tr),
                questions=[{"id": q.id, "title": tr(title_of(q)), "kind": q.kind, "counts": q.counts,
                            "group": group_of(q), "prompt": prompt_html(q, tr),
                            "choices": [tr(c.text) for c in q.choices]}
                           for q in ALL_QUESTIONS])
            self._lab.label = tr._("Download the lab notebook")
            self._render_records()
            self._render_score()
            self._render_tasks()
            self._render_notice()

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

    def _on_progress(self, event):
        with one_message():
            if event.new.empty and event.old is not None and not event.old.empty:  # Start again, here or elsewhere
                self._notes.clear()
                self.tab.restarts += 1
            self._render_records()
            self._render_score()
            if event.old is None or event.old.tasks != event.new.tasks:
                self._render_tasks()

    def _render_records(self):
        progress, tr = self.learner.progress, self.learner.state.tr
        records = []
        for q in ALL_QUESTIONS:
            qp = progress.of(q.id)
            value = (int(qp.last) if q.kind == "choice" else tr.mark(qp.last)) if qp.last else None
            records.append({"feedback": feedback_html(q, qp, self._notes.get(q.id, ""), tr), "value": value,
                            "done": qp.right, "shown": qp.right or qp.answer_shown})
        if records != self.tab.records:
            self.tab.records = records

    def _render_score(self):
        tr = self.learner.state.tr
        self.tab.score = f'<p>{escape(tr._("Score: {score}", score=tr(self.learner.score_text)))}</p>'
        self.tab.train_intro = (f"<h3>{escape(tr._('On the Train tab'))}</h3><p>" + escape(tr._(
            "Two questions on Module 2's claim that training gives W_Q, W_K and W_V their roles: train on the Train "
            "tab first. They are scored on their own: {score}.",
            score=tr(self.learner.progress.score_text(TRAIN_QUESTIONS)))) + "</p>")
        self.tab.model_intro = (f"<h3>{escape(tr._('On the Real model tab'))}</h3><p>" + escape(tr._(
            "Two questions on Section 6's recipe inside a real pretrained model. They are scored on their own: "
            "{score}.", score=tr(self.learner.progress.score_text(MODEL_QUESTIONS)))) + "</p>")

    def _render_notice(self, *_):
        self.tab.notice = unreadable_html(self.learner.unreadable, self.learner.state.tr)

    def _render_tasks(self, *_):
        tasks = [[task.id, task_html(task, self.learner.progress.task(task.id), self.learner.paused(task.id),
                                     self.learner.state.tr)] for task in TASKS]
        if tasks != self.tab.tasks:
            self.tab.tasks = tasks

    def __panel__(self):
        return self._layout
