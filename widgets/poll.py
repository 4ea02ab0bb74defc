"""The class poll on the page: the presenter asks one of Section 6's questions, the room's followers answer.

Two views, one per page of a room that needs it, both made by :class:`~widgets.room.RoomControls`:

- :class:`PresenterPoll`, on the presenter's page (the room card's "Class poll" button): a question to ask,
  then the live count of each choice (or a histogram of the numbers given), Close, Reveal the answer;
- :class:`FollowerPoll`, on each follower's page, shown when the room's poll is asked (or at once, for a page
  joining while one is open): the question, an answer sent once, and the answer and its "Why" once revealed.

The poll itself is the room's, in this process's registry (``services/polls.py``, ``RoomRegistry.ask`` ...). A
follower's answer goes from its page to its own server session only, which hands it to the registry under
the session's own key; the registry tells the presenter's page the counts, and every other page only when the
poll is asked, closed or revealed. A page answers only after its card has reported, on the same websocket,
that it has drawn the question the server sent it (with a nonce only that page was sent) and which browser
it runs in; a browser answers each poll once, also after a reload.

The registry calls a page from whichever callback changed the poll (the
presenter's, another follower's): each view only records what it was told and changes its own document in a
callback of its own session, as the room's views do.

Every text is escaped: choices and prompts are the project's own, but a refusal can quote what was typed.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
import weakref
from html import escape
from pathlib import Path
from typing import Callable

import panel as pn
import param
from panel.io.state import set_curdoc

from course.questions import BY_ID, MAX_NUMBER_CHARS, PRACTICE, QUESTIONS, Question
from services.polls import CLOSED, OPEN, REVEALED, PollCounts, PollRefused, PollView, choice_answer, number_bin
from services.rooms import RoomError, RoomRegistry
from services.sessions import page_connection
from session.i18n import N_, Text, Translator, translator
from widgets.check import answer_text, title_of

POLL_CSS = (Path(__file__).resolve().parents[1] / "static" / "poll.css").read_text()
LETTERS = "ABCDEFGH"
#: Bins the presenter's histogram shows; the others are summed up in one line.
MAX_BINS = 8
#: Shortest time between two updates of the presenter's counts, in seconds: a class answering at once, or a
#: script joining pages, is a few updates of the presenter's page a second, never one per answer.
COUNTS_GAP_S = 0.25
#: A browser's id, as the card's script makes it (18 random bytes, base64url) and keeps in localStorage.
BROWSER_ID = re.compile(r"[A-Za-z0-9_-]{24}")
#: How the presenter's card names a poll's state.
STATE_NAMES = {OPEN: N_("open"), CLOSED: N_("closed"), REVEALED: N_("answer shown")}
ENGLISH = translator("en")
#: The registry's refusals (server/ holds no page texts), as each page says them in its own language.
REFUSALS = {str(t): t for t in (
    N_("Choose one of the answers first."), N_("That number has too many digits."), N_("There is no such question."),
    N_("That poll is over: the presenter has asked another question."), N_("The presenter has closed this poll."),
    N_("You have already answered this poll: each page answers once."), N_("This room has ended."),
    N_("Only a page following the room answers its poll."), N_("There is no poll to answer."),
    N_("Only a page that shows the question answers it: reload the page."),
    N_("This browser has already answered this poll."))}


def refusal(error: Exception, tr: Translator) -> str:
    """A registry's refusal in the page's language (a text it does not know, as it is)."""
    message = error.args[0] if error.args else ""
    return tr(message if isinstance(message, Text) else REFUSALS.get(str(message), str(message)))
#: A card floats over the page (static/poll.css sets its real width): a fixed size here keeps the header row it
#: belongs to from stretching to make room for it, as it would for a card whose parts stretch.
CARD = dict(sizing_mode="fixed", width=540, margin=0)


def choice_label(q: Question, i: int, tr: Translator = ENGLISH) -> str:
    """Choice ``i`` as the poll shows it on every page, lettered so that a class can talk about it."""
    return f"{LETTERS[i]}. {tr(q.choices[i].text)}"


def given_text(q: Question, given, short: bool = False, tr: Translator = ENGLISH) -> str:
    """A follower's own answer as their page quotes it back: a choice with its text, or only its letter."""
    if q.kind == "choice":
        return LETTERS[given] if short else choice_label(q, given, tr)
    text = str(given).strip()
    return text if len(text) <= MAX_NUMBER_CHARS else text[:MAX_NUMBER_CHARS] + "…"


def question_options(tr: Translator = ENGLISH) -> dict[str, dict[str, str]]:
    """The presenter's choice of question, in two groups: the fourteen that count and the practice problems."""
    def label(q):
        # short enough for the select box of a projector's card; the whole prompt shows beneath it
        prompt = tr(q.prompt)
        short = prompt if len(prompt) <= 44 else prompt[:43].rstrip() + "…"
        return f"{tr(title_of(q))} · {short}"
    return {tr._("Questions that count"): {label(q): q.id for q in QUESTIONS},
            tr._("Practice problems (do not count)"): {label(q): q.id for q in PRACTICE}}


def counts_html(q: Question, counts: PollCounts | None, revealed: bool, tr: Translator = ENGLISH) -> str:
    """The presenter's counts: one bar per choice, or per number given (rounded to the question's places).

    The right choice (or the right answer's bin) is marked only once revealed: the projector shows the
    class's answers, not the answer, while the poll is open.
    """
    if counts is None:
        return ""
    answers, pages = counts.answers, counts.pages
    head = (f'<p class="poll-total" role="status"><strong>{answers}</strong> '
            + escape(tr.ngettext("answer", "answers", answers)) + " · "
            + escape(tr.ngettext("{n} page following", "{n} pages following", pages)) + "</p>")
    if counts.late:  # a class is there before the question; pages opened, or browsers made up, to answer it come after
        head += ('<p class="poll-late">' + escape(tr.ngettext(
            "{n} of them from a page that joined, or named its browser, after the question was asked",
            "{n} of them from pages that joined, or named their browser, after the question was asked",
            counts.late)) + "</p>")
    if q.kind == "choice":
        rows = [(choice_label(q, i, tr), n, i == q.answer) for i, n in enumerate(counts.choices)]
    else:
        right_bin = number_bin(q, str(q.answer))
        bins = sorted(counts.numbers, key=lambda kv: -kv[1])[:MAX_BINS]
        shown = {v for v, _ in bins}
        rows = [(tr.mark(v), n, v == right_bin) for v, n in counts.numbers if v in shown]
        rest = sum(n for v, n in counts.numbers if v not in shown)
    top = max([n for _, n, _ in rows], default=0) or 1
    items = []
    for label, n, right in rows:
        mark = ' class="right"' if revealed and right else ""
        tick = (f'<span class="poll-tick" aria-label="{escape(tr._("the answer"))}">✓</span>' if revealed and right
                else "")
        bar = f'<span class="poll-bar" style="width:{100 * n / top:.1f}%"></span>'
        # a choice's text lies over its bar, so the projector shows each choice and its count on one row
        items.append(f'<li{mark}>{bar}<span class="poll-label">{escape(label)}</span>'
                     f'<span class="poll-n">{n}</span>{tick}</li>')
    if q.kind == "number" and not rows:
        items.append(f'<li class="poll-empty">{escape(tr._("No numbers yet."))}</li>')
    more = ""
    if q.kind == "number":
        if rest:
            more = f'<p class="poll-more">{escape(tr._("{n} more at other values.", n=rest))}</p>'
        more += (f'<p class="poll-more">{escape(tr._("Rounded to {n} decimal places.", n=q.decimals))}'
                 + (f" {escape(tr._('Right by the number rule:'))} <strong>{counts.right}</strong>.</p>"
                    if revealed else "</p>"))
    return f'{head}<ul class="poll-counts poll-{q.kind}">{"".join(items)}</ul>{more}'


def answer_html(q: Question, tr: Translator = ENGLISH) -> str:
    """The answer and its "Why", as every page shows them once revealed."""
    return (f'<p class="poll-answer"><strong>{escape(tr._("Answer:"))}</strong> {escape(answer_text(q, tr))}</p>'
            f'<p class="poll-why"><strong>{escape(tr._("Why:"))}</strong> {escape(tr(q.why))}</p>')


class _OnPage:
    """Runs ``take(*latest)`` on a page's own document for whatever the registry last told it.

    The registry calls from another session's callback (the presenter's, another follower's): this records
    the newest call only and schedules one callback on the page's session, so a burst of answers is one
    update of the presenter's page, and no page's document is ever touched outside its own lock. Without a
    served document (tests) it runs at once.

    ``gap``: seconds at least between two runs for the same first argument (the poll's view: only its counts
    changed), so a stream of answers and joining pages is a few updates a second; a new view runs at once.
    """

    def __init__(self, take: Callable, gap: float = 0.0):
        self._take, self._doc, self._gap = take, pn.state.curdoc, gap
        self._lock = threading.Lock()
        self._pending, self._scheduled, self.closed = None, False, False
        self._taken, self._ran = None, -float("inf")  # the first argument last run with, and when

    def __call__(self, *args) -> None:
        doc = self._doc
        served = doc is not None and doc.session_context is not None
        with self._lock:
            self._pending = args
            if self._scheduled:
                return
            self._scheduled = True
            wait = self._ran + self._gap - time.monotonic() if args[:1] == (self._taken,) else 0
        if served and wait > 0:
            doc.add_timeout_callback(self._run, max(1, round(wait * 1000)))
        elif served:
            doc.add_next_tick_callback(self._run)
        else:
            self._run()

    def _run(self) -> None:
        with self._lock:
            args, self._pending, self._scheduled = self._pending, None, False
            if args is not None:
                self._taken, self._ran = args[0] if args else None, time.monotonic()
        if args is None or self.closed:
            return
        with set_curdoc(self._doc), pn.io.hold(self._doc):
            self._take(*args)

    def close(self) -> None:
        """The page has gone: nothing more runs, and its document can be let go."""
        self.closed, self._doc = True, None


class FollowerCard(pn.custom.JSComponent):
    """A follower's poll card, drawn by the page itself from the few texts below: one Bokeh model.

    Panel's widgets for the same card are about 28 Bokeh models, which the server built for every page when a
    question was asked: a whole class waited for all of them. The card sends three messages to its
    own session only: as it loads, the browser it runs in, ``{"hello": this browser's id}``, passed to ``on_hello``;
    once it has drawn a question it may answer (two animation frames after it came, which a
    browser runs only while the page is shown), ``{"drawn": id, "nonce": the nonce it came with, "browser": this
    browser's id, "mine": this browser's remembered answer to it, or null}``, passed to ``on_drawn``; then the
    learner's answer ``{"poll": id, "answer": choice index or typed text}``, passed to ``on_answer`` (plain
    attributes, never synced). The browser's id and its last answer are kept in ``localStorage`` (under
    :data:`BROWSER_KEY` and :data:`ANSWER_KEY`), so a reloaded page is the same browser. Every text is set as
    text, never as HTML; Hide and Show are the page's own (no server round trip). Test hooks: ``.poll-status``,
    ``.poll-choices``, ``.poll-number``, ``.poll-send``, ``.poll-hide`` inside the card.
    """

    #: Where the browser keeps its id (what a room knows it by, for its polls) and its last poll answer.
    BROWSER_KEY = "attention-explorer.browser.v1"
    ANSWER_KEY = "attention-explorer.poll.v1"
    #: The constants the card's script shares with the server, written before it as ``const NAME = value``: the
    #: browser's id it keeps is one the server takes (:data:`BROWSER_ID`, a JavaScript regular expression too).
    SCRIPT_CONSTANTS = {"BROWSER_KEY": BROWSER_KEY, "ANSWER_KEY": ANSWER_KEY, "MAX_NUMBER_CHARS": MAX_NUMBER_CHARS,
                        "BROWSER_ID": BROWSER_ID.pattern}

    #: What the card shows, as one value so that each change is one update of the page: ``id`` (the room's poll;
    #: a new one shows itself, even if hidden), ``title``, ``prompt``, ``kind`` ("choice" or "number"),
    #: ``choices`` (lettered labels), ``can_answer`` (show the choices or the number box, and Send) and
    #: ``status``, the lines under the question as ``[css class, text, bold text, text after]``, ``words``,
    #: the card's own labels in the page's language, ``nonce`` (while it may answer: what its report of the
    #: question drawn must carry), ``key`` (the room's poll, for the browser's memory) and ``mine`` (this page's
    #: answer, once given, which the browser remembers).
    poll = param.Dict(default={}, doc="What the card shows (see above); empty: no poll.")

    # The script (widgets/poll.js), read once per process (Panel reads a path's file again for every page); the
    # constants it shares with the server go before it.
    _esm = "".join(f"const {name} = {json.dumps(value)}\n" for name, value in SCRIPT_CONSTANTS.items()) + (
        Path(__file__).resolve().parent / "poll.js").read_text()

    def __init__(self, **params):
        super().__init__(**params)
        self.on_answer = self.on_drawn = self.on_hello = None  # plain attributes: set by FollowerPoll

    def _handle_msg(self, msg) -> None:
        # whatever the page sends: only a dict is looked at, and the registry judges its poll and its answer
        if not isinstance(msg, dict):
            return
        if "hello" in msg:
            if self.on_hello is not None:
                self.on_hello(msg.get("hello"))
        elif "drawn" in msg:
            if self.on_drawn is not None:
                self.on_drawn(msg.get("drawn"), msg.get("nonce"), msg.get("browser"), msg.get("mine"))
        elif self.on_answer is not None:
            self.on_answer(msg.get("poll"), msg.get("answer"))


def _is_answer(q: Question, given) -> bool:
    """Whether ``given`` is one of question ``q``'s answers (a choice's index, or a number it takes)."""
    try:
        choice_answer(q, given) if q.kind == "choice" else number_bin(q, given)
    except PollRefused:
        return False
    return True


class FollowerPoll(pn.viewable.Viewer):
    """A follower's card of the room's poll: the question, one answer, then the answer and its "Why".

    Made when the page joins a room. Its :class:`FollowerCard` (one Bokeh model, hidden until a question is
    asked) is added once the page has loaded (``on_build`` is then called, so the page can lay it out): not in
    the page's first view, and not when the room asks, when every follower page of the server would build one
    at once, each page waiting for the others. Without a served page it is made when the room first asks. Test hook:
    ``.poll-follower`` on the card.

    The page answers a question only after its card has reported it drawn (:meth:`_on_drawn`): with the nonce
    this page alone was sent with the question, on the websocket the answer then comes on, and naming its
    browser (which the room lets answer each poll once).
    """

    view = param.ClassSelector(class_=PollView, allow_None=True, doc="The room's poll as this page last heard it.")

    def __init__(self, registry: RoomRegistry, code: str, key: object, on_build: Callable[[], None] | None = None,
                 tr: Callable[[], Translator] | None = None, **params):
        super().__init__(**params)
        self._registry, self._code, self._key, self._on_build = registry, code, key, on_build
        self._tr = tr or (lambda: ENGLISH)  # the page's language, now
        self._mine: dict[int, object] = {}  # poll id -> what this page answered (kept on its own server only)
        self._nonces: dict[int, str] = {}  # poll id -> the nonce its question was sent to this page with
        self._drawn: dict[int, Callable] = {}  # poll id -> the page's connection when it reported it drawn (weak)
        self._elsewhere: set[int] = set()  # polls this page's browser had answered before (another page, a reload)
        self._browser: str | None = None  # the browser's id, as the page first named it
        self._doc = pn.state.curdoc
        self.card: FollowerCard | None = None
        self.on_page = _OnPage(self._take)
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            # after the page's first render, as the page joins the room (widgets/room.py): a page built and never
            # shown hears of no poll
            pn.state.onload(self._prepare)
        else:
            registry.watch_poll(code, key, self.on_page)
            self.on_page(registry.poll(code), None)

    def _prepare(self) -> None:
        """The page has loaded: hear of the room's poll, add the card, hidden, and show the poll if one is open."""
        if self.card is None and not self.on_page.closed:
            try:
                self._registry.watch_poll(self._code, self._key, self.on_page)
            except RoomError:
                return  # the room ended before the page had loaded: the page says so (widgets/room.py)
            self._build()
            self._take(self._registry.poll(self._code))

    @property
    def built(self) -> bool:
        return self.card is not None

    def _build(self) -> None:
        # no width here: the page's CSS sizes the card (a Bokeh width would fix its inside at that width)
        self.card = FollowerCard(css_classes=["room-poll", "poll-follower"], stylesheets=[POLL_CSS], margin=0,
                                 visible=False)
        self.card.on_answer, self.card.on_drawn, self.card.on_hello = self._on_answer, self._on_drawn, self._on_hello
        if self._on_build is not None:
            self._on_build()

    def _take(self, view: PollView | None, _counts=None) -> None:
        self.view = view
        if not self.built:
            if view is None or pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
                return  # a served page shows it once it has loaded (_prepare)
            self._build()
        if view is None:  # no poll yet, or the room has ended
            self.card.visible = False
            return
        self._render()
        self.card.visible = True

    def relabel(self) -> None:
        """The card in the page's language, after a switch."""
        if self.card is not None and self.view is not None:
            self._render()

    def _render(self, note: str = "") -> None:
        view, tr = self.view, self._tr()
        q, state = view.question, view.state
        answered = view.id in self._mine
        mine = self._mine.get(view.id)
        lines = [["poll-note", note, "", ""]] if note else []
        if answered:
            text = given_text(q, mine, tr=tr)
            yours = (text, "" if text.endswith((".", "。")) else tr._("."))  # a choice ends with its own full stop
        if view.id in self._elsewhere and not answered:
            lines.append(["", tr._("This browser has already answered this poll."), "", ""])
            if state == REVEALED:
                lines[-1:-1] = [["poll-answer", "", tr._("Answer: "), answer_text(q, tr)],
                                ["poll-why", "", tr._("Why: "), tr(q.why)]]
        elif state == OPEN:
            lines.append(["", tr._("The presenter reveals the answer when the class is done. Your answer is in: "),
                          *yours] if answered else
                         ["", tr._("Answer once. The presenter sees only how many gave each answer, never who."),
                          "", ""])
        elif state == CLOSED:
            lines.append(["", tr._("The presenter has closed the poll. Your answer: "), *yours] if answered else
                         ["", tr._("The presenter has closed the poll before you answered."), "", ""])
        else:
            lines += [["poll-answer", "", tr._("Answer: "), answer_text(q, tr)],
                      ["poll-why", "", tr._("Why: "), tr(q.why)]]
            if answered:
                right = q.grade(mine).ok
                lines.append([f"poll-yours {'right' if right else 'wrong'}", tr._("Your answer, "),
                              given_text(q, mine, short=True, tr=tr),
                              tr._(", is right.") if right else tr._(", is not the answer.")])
            else:
                lines.append(["", tr._("You did not answer this one."), "", ""])
        can_answer = state == OPEN and not answered and view.id not in self._elsewhere
        # once answered (or closed) the card shrinks to the question and its status: the explorer shows again
        self.card.poll = dict(
            id=view.id, title=tr._("Class poll · {question}", question=tr(title_of(q))), prompt=tr(q.prompt),
            kind=q.kind, choices=[choice_label(q, i, tr) for i in range(len(q.choices))],
            can_answer=can_answer, status=lines,
            words=dict(your_answer=tr._("Your answer"), a_number=tr._("a number"), send=tr._("Send my answer"),
                       show=tr._("Show"), hide=tr._("Hide")),
            # what the page's report of the question drawn must carry: sent to this page only, with the question
            nonce=self._nonces.setdefault(view.id, secrets.token_urlsafe(12)) if can_answer else None,
            key=f"{self._code}/{view.id}", mine=mine)

    def _on_hello(self, browser) -> None:
        """The card has loaded and names the browser it runs in (``{"hello": id}``), before any question: the room
        keeps it as the page's browser. Anything else is ignored."""
        if isinstance(browser, str) and BROWSER_ID.fullmatch(browser) and not self.on_page.closed:
            self._registry.name_browser(self._code, self._key, browser)

    def _on_drawn(self, poll_id, nonce, browser, mine=None) -> None:
        """The page's card has drawn poll ``poll_id``'s question (as its script reports it): from now on, on this
        websocket, the page may answer it. ``browser``: the id the browser keeps; if the room says that browser
        has answered the poll already (a reload), the page may not, and shows ``mine``, the answer the browser
        remembers, if it is one of the question's. Anything else the page sends here is ignored."""
        view = self.view
        if (view is None or poll_id != view.id or not isinstance(nonce, str) or nonce != self._nonces.get(view.id)
                or view.id in self._drawn or not (isinstance(browser, str) and BROWSER_ID.fullmatch(browser))):
            return
        self._browser = self._browser or browser  # the page keeps the browser it named first
        connection = page_connection(self._doc)
        try:
            answered = self._registry.poll_drawn(self._code, self._key, view.id, self._browser)
        except PollRefused:
            return
        self._drawn[view.id] = weakref.ref(connection) if connection is not None else (lambda: None)
        if answered:
            self._elsewhere.add(view.id)
            if _is_answer(view.question, mine):
                self._mine[view.id] = mine
            with pn.io.hold():
                self._render()

    def _same_connection(self, poll_id: int) -> bool:
        """Whether the page answers on the websocket it reported the question drawn on (always, unserved)."""
        if self._doc is None or self._doc.session_context is None:
            return True
        return self._drawn[poll_id]() is page_connection(self._doc) is not None

    def _on_answer(self, poll_id, given) -> None:
        """The page's answer, as its card sent it: the registry judges it; this page then says what happened."""
        view = self.view
        if view is None:
            return
        if isinstance(poll_id, bool) or not isinstance(poll_id, int):
            poll_id = -1  # not a poll's number: refused as an answer to a poll that is over
        try:
            if poll_id in self._drawn and not self._same_connection(poll_id):
                raise PollRefused("Only a page that shows the question answers it: reload the page.")
            self._registry.answer_poll(self._code, self._key, poll_id, given,
                                       refused=lambda e, poll_id=poll_id: self._refused_later(poll_id, e))
        except PollRefused as e:
            with pn.io.hold():
                self._render(note=refusal(e, self._tr()))
            return
        self._mine[poll_id] = given  # the poll the room counted it for
        with pn.io.hold():
            self._render()

    def _refused_later(self, poll_id: int, error: PollRefused) -> None:
        """The room refused an answer after all (rooms shared through Redis: this browser answered on another
        process a moment before, or the poll closed meanwhile): the page says so, in its own session."""
        doc = self._doc

        def show():
            self._mine.pop(poll_id, None)
            if str(error) == "This browser has already answered this poll.":
                self._elsewhere.add(poll_id)  # no second try: the room has this browser's answer
            if doc is not None and self.view is not None and self.view.id == poll_id:
                with set_curdoc(doc), pn.io.hold(doc):
                    self._render(note=refusal(error, self._tr()))

        if doc is not None and doc.session_context is not None:
            doc.add_next_tick_callback(show)
        else:
            show()

    def close(self) -> None:
        """The page has gone: stop watching the room's poll."""
        self._registry.unwatch_poll(self._code, self._key)
        self.on_page.close()
        self._doc = None

    def __panel__(self):
        if self.card is None:
            self._build()
        return self.card


class PresenterPoll(pn.viewable.Viewer):
    """The presenter's card of the room's poll: choose a question and ask it, watch the counts come in, close
    the poll, reveal the answer and its "Why" to every page (also straight from an open poll, which it closes),
    ask the next one.

    Test hooks: ``.poll-presenter`` on the card, ``.poll-prompt-pane`` on the question's prompt, ``.poll-counts`` in
    its counts, ``.poll-total`` on the line of how many answered.
    """

    view = param.ClassSelector(class_=PollView, allow_None=True, doc="The room's poll; None before the first.")
    counts = param.ClassSelector(class_=PollCounts, allow_None=True, doc="How the room has answered it so far.")

    def __init__(self, registry: RoomRegistry, code: str, token: str, key: object,
                 tr: Callable[[], Translator] | None = None, **params):
        super().__init__(**params)
        self._registry, self._code, self._key = registry, code, key
        self._tr = tr or (lambda: ENGLISH)  # the page's language, now
        t = self._tr()
        self._token = token  # never a param: it would reach the page
        css = dict(stylesheets=[POLL_CSS])
        self._title = pn.pane.HTML("", css_classes=["poll-title"], sizing_mode="stretch_width",
                                   margin=(4, 10), **css)
        self._pick = pn.widgets.Select(label=t._("Question to ask"), groups=question_options(t),
                                       sizing_mode="stretch_width", margin=(0, 10), **css)
        self._pick.param.watch(lambda _: self._render(), "value")  # the whole prompt of the question picked
        self._ask = pn.widgets.Button(label=t._("Ask the room"), color="primary", margin=(6, 10), **css)
        self._ask.on_click(self._on_ask)
        self._prompt = pn.pane.HTML("", css_classes=["poll-prompt-pane"], sizing_mode="stretch_width",
                                    margin=(0, 10), **css)
        self._counts = pn.pane.HTML("", css_classes=["poll-results"], sizing_mode="stretch_width", margin=(0, 10),
                                    **css)
        self._close = pn.widgets.Button(label=t._("Close the poll"), margin=(6, 10), **css)
        self._reveal = pn.widgets.Button(label=t._("Reveal the answer"), color="primary", margin=(6, 10), **css)
        self._next = pn.widgets.Button(label=t._("Ask another question"), margin=(6, 10), **css)
        self._close.on_click(lambda _: self._step(self._registry.close_poll))
        self._reveal.on_click(lambda _: self._step(self._registry.reveal_poll))
        self._next.on_click(lambda _: self._show_picker(True))
        self._back = pn.widgets.Button(label=t._("Back to the poll"), margin=(6, 10), **css)
        self._back.on_click(lambda _: self._show_picker(False))
        self._note = pn.pane.HTML("", css_classes=["poll-status"], sizing_mode="stretch_width", margin=(0, 10), **css)
        self._layout = pn.Column(
            self._title, self._pick, self._prompt, self._counts,
            pn.Row(self._ask, self._back, self._close, self._reveal, self._next, margin=0), self._note,
            css_classes=["room-poll", "poll-presenter"], **CARD, **css)
        self._picking = True
        self.on_page = _OnPage(self._take, gap=COUNTS_GAP_S)
        registry.watch_poll(code, key, self.on_page, token=token)
        view = registry.poll(code)  # a presenter who reloads finds the room's poll where it was
        if view is not None:
            self._picking = False
            self.on_page(view, registry.poll_counts(code, token))
        else:
            self._render()

    def _on_ask(self, _event) -> None:
        try:
            self._registry.ask(self._code, self._token, self._pick.value)
        except (RoomError, PollRefused) as e:
            self._note.object = f'<p class="poll-note">{escape(refusal(e, self._tr()))}</p>'
            return
        self._picking = False  # the registry's call (self._take) shows the poll

    def _step(self, step) -> None:
        try:
            step(self._code, self._token)
        except RoomError as e:
            self._note.object = f'<p class="poll-note">{escape(str(e))}</p>'

    def _show_picker(self, picking: bool) -> None:
        self._picking = picking
        with pn.io.hold():
            self._render()

    def _take(self, view: PollView | None, counts: PollCounts | None) -> None:
        if view is None:  # the room has ended
            self._layout.visible = False
            return
        self.param.update(view=view, counts=counts)
        if self.view.state == OPEN:
            self._picking = False
        self._render()

    def relabel(self) -> None:
        """The card in the page's language, after a switch."""
        t = self._tr()
        with pn.io.hold():
            value = self._pick.value
            self._pick.param.update(label=t._("Question to ask"), groups=question_options(t), value=value)
            for button, label in ((self._ask, t._("Ask the room")), (self._close, t._("Close the poll")),
                                  (self._reveal, t._("Reveal the answer")), (self._next, t._("Ask another question")),
                                  (self._back, t._("Back to the poll"))):
                button.label = label
            self._render()

    def _render(self) -> None:
        view, counts, tr = self.view, self.counts, self._tr()
        picking = self._picking or view is None  # choosing the next question, or the first
        self._pick.visible = self._ask.visible = picking
        self._back.visible = picking and view is not None
        if picking:
            self._title.object = f"<h3>{escape(tr._('Class poll'))}</h3>"
            self._prompt.object = f'<p class="poll-prompt">{escape(tr(BY_ID[self._pick.value].prompt))}</p>'
            self._counts.object = ""
            self._close.visible = self._reveal.visible = self._next.visible = False
        else:
            q, state = view.question, view.state
            self._title.object = "<h3>" + escape(tr._("Class poll · {question} · {state}", question=tr(title_of(q)),
                                                      state=tr(STATE_NAMES[state]))) + "</h3>"
            self._prompt.object = f'<p class="poll-prompt">{escape(tr(q.prompt))}</p>'
            self._counts.object = counts_html(q, counts, state == REVEALED, tr) + (
                answer_html(q, tr) if state == REVEALED else "")
            self._close.visible = state == OPEN
            # offered as soon as the poll is asked: a teacher whose class has answered reveals at once (the poll
            # closes with it); Close is for talking it over before the answer is shown
            self._reveal.visible = state in (OPEN, CLOSED)
            self._next.visible = state in (CLOSED, REVEALED)
        if self._note.object:
            self._note.object = ""

    def close(self) -> None:
        """The page has gone: stop watching the room's poll."""
        self._registry.unwatch_poll(self._code, self._key)
        self.on_page.close()

    def __panel__(self):
        return self._layout
