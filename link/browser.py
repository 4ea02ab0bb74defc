"""The page's client-side half: keyboard shortcuts, the address bar, the document's mode and theme, and the
learner's progress in the browser's storage.

One small :class:`pn.custom.JSComponent` (no framework, no request outside the
page): keys are read in the browser and sent to the server as messages, the
server changes the state, and the state's mode, theme and address come back as
parameters that the browser applies to ``<html>`` and ``history``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import urlencode

import panel as pn
import param
from bokeh.models import Div

from course.questions import MAX_JSON_CHARS
from link.shown import PlotsShown
from link.updates import one_message
from server.guard import refuse_page
from services.sessions import SCREENED
from session.address import HEAD_ARGUMENT_PARAMS, Q_RANGE, address_of
from session.i18n import N_, menu_languages
from session.model import MODEL_PARAMS
from session.progress import STORAGE_KEY, STORE_NAME
from session.state import AttentionState

log = logging.getLogger(__name__)

#: The answer line's stylesheet (link/answer.js puts it in the document).
ANSWER_CSS = (Path(__file__).resolve().parents[1] / "static" / "answer.css").read_text()

#: Nudge of q per arrow key, and with Shift held.
NUDGE, FINE_NUDGE = 0.1, 0.01

#: Shortcut -> what it does, as the help text and the README list them.
SHORTCUTS = (
    ("← ↑ → ↓", N_("move q by 0.1 (with Shift: 0.01)")),
    ("← →", N_("in step-through: previous / next step (↑ ↓ still move q; arrows always move q while the plot has "
               "focus)")),
    (N_("Space"), N_("next step (starts the step-through)")),
    ("1  2  3", N_("inspect the query of I / love / NLP")),
    ("R", N_("reset the example")),
    (N_("Space  ← →"), N_("on the Train tab: play and pause / one step of the run (with Shift: ten)")),
)

_ARROWS = {"ArrowLeft": (-1, 0), "ArrowRight": (1, 0), "ArrowUp": (0, 1), "ArrowDown": (0, -1)}


def handle_key(state: AttentionState, key: str, shift: bool = False, in_plot: bool = False) -> bool:
    """Apply one keyboard shortcut to ``state``; returns False for keys that are not shortcuts.

    Arrows nudge q (clamped to the plane the query plot shows), except ← and →
    in guided mode, which step back and forth unless the query plot has focus.
    """
    if key in _ARROWS:
        if state.guided and not in_plot and key in ("ArrowLeft", "ArrowRight"):
            (state.next_step if key == "ArrowRight" else state.previous_step)()
            return True
        dx, dy = _ARROWS[key]
        h = FINE_NUDGE if shift else NUDGE
        lo, hi = Q_RANGE
        x, y = state.query
        state.move_query(min(max(round(x + dx * h, 9), lo), hi), min(max(round(y + dy * h, 9), lo), hi))
        return True
    if key == " ":
        state.next_step()
    elif key in ("1", "2", "3") and int(key) <= len(state.tokens):
        state.select_row(int(key) - 1)
    elif key in ("r", "R"):
        state.reset()
    else:
        return False
    return True


#: The address bar follows ``BrowserBridge.address`` a moment after it settles (so a drag does not fill the
#: history); a room's arguments stay, so reloading keeps presenting or following (widgets/room.py).
#: The constants link/browser.js shares with the server, written before it as ``const NAME = value``.
SCRIPT_CONSTANTS = {"FINE_NUDGE": FINE_NUDGE, "NUDGE": NUDGE, "STORE_NAME": STORE_NAME, "STORAGE_KEY": STORAGE_KEY,
                    "MAX_JSON_CHARS": MAX_JSON_CHARS}


class BrowserBridge(pn.custom.JSComponent):
    """Keyboard shortcuts, ``<html data-mode data-theme>`` and the shareable address, for one page.

    Keys are taken only when no text field, select or slider has focus, and
    Space/Enter are left to a focused button or checkbox; keys with Ctrl, Alt
    or Meta are never taken. The address bar is updated with
    ``history.replaceState`` a moment after the state settles, so a drag does
    not fill the history; at once, with the q the page last drew (``link/drag.js``), when its drag of q
    lets go or the connection is lost. The page's own address comes back as ``page_address``, and
    ``navigate`` loads the page at another query (Panel's ``Location`` is not used: it parses
    every query argument on the server, and one over 4,300 digits breaks the session there).
    The Check tab's progress is kept in ``localStorage`` from the text of the page's ``learner-progress`` Div,
    and what the browser holds comes back as the message ``{"stored": text}``, passed to ``on_stored``
    (:class:`widgets.check.ProgressStore`). The title's language menu (app.py) sends ``{"lang": code}``.
    """

    mode = param.String(default="normal")
    theme = param.String(default="light")
    lang = param.String(default="en", doc="<html lang>: the page's language (session/i18n.py).")
    dir = param.String(default="ltr", doc="<html dir>: 'rtl' for a language written right to left.")
    lost = param.List(default=["", ""],
                      doc="The connection-lost banner's text and its button's, in the page's language.")
    navigate = param.String(default="", doc=(
        "A query to load the page at, e.g. '?room=K7M4QX': the browser goes there (a new page load, which a "
        "proxy routes by its arguments). Empty: stay."))
    whole_page = param.Boolean(default=True, doc=(
        "True: the app is the page, and its mode and theme go on <html>. False (a notebook cell, among other "
        "outputs and other displays of the app): they go on the app's own root element, and keys are taken "
        "only while focus is inside it."))
    page_address = param.String(default="", doc=(
        "The page's own address without its query, 'http://host:port/path', as the browser reports it when "
        "the page renders; join links are made from it."))

    # The script (link/browser.js), read once per process; the constants it shares with the server go before it,
    # and the answer line (link/answer.js, with its stylesheet), which the bridge shows without a model of its own.
    # A string, not the file's path: Panel reads a path's file again for every page it builds.
    _esm = "".join(f"const {name} = {json.dumps(value)}\n" for name, value in {
        **SCRIPT_CONSTANTS, "ANSWER_CSS": ANSWER_CSS}.items()) + "".join(
        (Path(__file__).resolve().parent / name).read_text() for name in ("answer.js", "browser.js"))

    def __init__(self, state: AttentionState, plots: PlotsShown | None = None, **params):
        super().__init__(width=0, height=0, margin=0, **params)
        self.state = state  # plain attribute: the state stays on the server, only the fields above sync
        self.plots = plots or PlotsShown(state=state)  # plain attribute too: the address waits for a drag's release
        self.on_stored = None  # plain attribute: the Check tab's progress store (ProgressStore.receive)
        self._ignored = False  # a message the page's script never sends has come (and was logged)
        # The address is a plain Bokeh property, not a param of this component: Panel's two-way sync of a
        # component's params costs the server on every update (bench/HISTORY.md), and the address changes on most. The
        # page adds this Div to its document as a root of its own (app.py): it needs no view, only its text.
        self.address_div = Div(name="page-address", text="", visible=False)
        self.state.param.watch(self._sync_look, ["mode", "theme", "lang"])
        self.state.param.watch(self._sync_address, ["mode", "theme", "query", "selected", "guided", "step", "preset",
                                                    "tokens", "keys", "values", "scale", "causal", "trap",
                                                    "lang", *HEAD_ARGUMENT_PARAMS,
                                                    "training_view", *MODEL_PARAMS])
        self.plots.param.watch(self._sync_address, "previewing")
        self._sync_look()
        self._sync_address()

    @property
    def address(self) -> str:
        """What the address bar holds once the page has settled, e.g. ``'?q=0.0%2C1.0&row=love'``."""
        return self.address_div.text

    def _sync_look(self, *_):
        s, tr = self.state, self.state.tr
        self.param.update(mode=s.mode, theme=s.theme, lang=s.lang, dir="rtl" if tr.rtl else "ltr", lost=[
            tr._("Lost the connection to the server. The page address keeps this view: reload once the server is "
                 "back."), tr._("Reload")])

    def _sync_address(self, *_):
        s = self.state
        # The page's own drag of q: the address follows at the release. The browser would only write the
        # position at which the hand rests (it waits for the state to settle), and sending every position
        # cost the server a message per update.
        if not self.plots.previewing:
            self.address_div.text = "?" + urlencode(address_of(s))

    def _handle_msg(self, msg) -> None:
        kind = page_message(msg)
        if kind is None:  # no page's script sends it: its connection is closed, or where it cannot be, it is ignored
            why = f"a message the page's script never sends ({_shape(msg)})"
            if not refuse_page(pn.state.curdoc, why) and not self._ignored:
                self._ignored = True  # said once a page, never the message itself
                log.warning("Ignored %s, and will ignore the page's next such silently (%s)", why, SCREENED)
            return
        if kind == "lang":  # the language menu's choice (app.py): a known code only, whatever the page sent
            if msg["lang"] in menu_languages() and msg["lang"] != self.state.lang:
                with one_message():
                    self.state.lang_chosen = True
                    self.state.lang = msg["lang"]
        elif kind == "stored":  # the learner's progress, as the browser holds it (ProgressStore)
            if self.on_stored is not None:
                self.on_stored(msg)
        else:
            with one_message():
                handle_key(self.state, msg["key"], msg.get("shift", False), msg.get("in_plot", False))


#: What each message of the page's script (``BrowserBridge._esm``) holds: its keys, and the type of each value.
PAGE_MESSAGES = {
    "key": {"key": (str,), "shift": (bool,), "in_plot": (bool,)},
    "lang": {"lang": (str,)},
    "stored": {"stored": (str, type(None))},
}


def page_message(msg) -> str | None:
    """Which of :data:`PAGE_MESSAGES` ``msg`` is (its first key), or None if the page's script never sends it.

    A key's ``shift`` and ``in_plot`` may be left out (False); nothing else may be: another key, or a value of
    another type.

    >>> page_message({"key": "1"}), page_message({"lang": "de"}), page_message({"stored": None})
    ('key', 'lang', 'stored')
    >>> page_message({"lang": {}}), page_message({"key": []}), page_message({"key": "1", "x": 2}), page_message([])
    (None, None, None, None)
    """
    if not isinstance(msg, dict) or not msg:
        return None
    kind = next(iter(msg))
    shape = PAGE_MESSAGES.get(kind) if isinstance(kind, str) else None
    if shape is None or not all(isinstance(k, str) and isinstance(v, shape.get(k, ())) for k, v in msg.items()):
        return None
    return kind


def _shape(msg) -> str:
    """What a message is made of, never what it says: ``dict(key: list)``."""
    if isinstance(msg, dict):
        return "dict(" + ", ".join(f"{str(k)[:20]}: {type(v).__name__}" for k, v in list(msg.items())[:5]) + ")"
    return type(msg).__name__
