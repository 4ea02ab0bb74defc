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
from urllib.parse import urlencode

import panel as pn
import param
from bokeh.models import Div

from course.questions import MAX_JSON_CHARS
from link.updates import one_message
from server.transport import SCREENED, refuse_page
from session.address import HEAD_ARGUMENT_PARAMS, Q_RANGE, address_of
from session.i18n import N_, menu_languages
from session.progress import STORAGE_KEY, STORE_NAME
from session.state import AttentionState

log = logging.getLogger(__name__)

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
    lost = param.List(default=["", ""], doc="The connection-lost banner's text and its button's, in the page's language.")
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

    _esm = """
const TEXT_INPUTS = new Set(["INPUT", "TEXTAREA", "SELECT"])
const CLICKABLE_INPUTS = new Set(["checkbox", "radio", "button", "submit", "reset", "file"])
const OWN_ARROWS = new Set(["slider", "tab", "tablist", "listbox", "menu", "menubar", "radiogroup", "spinbutton"])
const KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", " ", "1", "2", "3", "r", "R"])

function wantsKey(e) {
  const path = e.composedPath()
  const target = path[0]
  if (!(target instanceof Element)) return true
  const tag = target.tagName
  if (target.isContentEditable) return false
  if (TEXT_INPUTS.has(tag) && !(tag === "INPUT" && CLICKABLE_INPUTS.has(target.type))) return false
  const role = target.getAttribute("role")
  if (e.key.startsWith("Arrow") && role && OWN_ARROWS.has(role)) return false
  // a radio button moves its group's choice with the arrows (the Check tab's answers)
  if (e.key.startsWith("Arrow") && tag === "INPUT" && target.type === "radio") return false
  const activates = tag === "BUTTON" || tag === "A" || tag === "INPUT" || ["button", "switch", "checkbox", "tab"].includes(role)
  if ((e.key === " " || e.key === "Enter") && activates) return false
  return true
}

// A nudge is previewed like a tap at the nudged position (link/drag.js's pointer handler, told not to send
// it: the key goes to the server), so the numbers change on this key press; the server's arrive after.
// Same arithmetic as handle_key: 9-decimal rounding, then the plane's bounds (the callback clamps).
const STEPS = {ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1]}
function previewNudge(doc, key, shift, inPlot) {
  // link/drag.js's handler for this document's query plot, once it is on the page
  const preview = window.attentionExplorerPointers?.get(doc)
  const inputs = doc.get_model_by_name("drag-inputs")
  if (preview == null || inputs == null) return
  if (inputs.data.guided[0] && !inPlot && (key === "ArrowLeft" || key === "ArrowRight")) return  // a step
  const h = shift ? %(fine)r : %(nudge)r, [dx, dy] = STEPS[key]
  const round9 = (v) => Math.round(v * 1e9) / 1e9
  const q = doc.get_model_by_name("drag-confirmed").data
  preview({event_name: "tap", x: round9(q.x[0] + dx * h), y: round9(q.y[0] + dy * h), preview_only: true})
}

// BokehJS restyles a layout from scratch whenever the page is laid out again (a notice shown above, a figure
// resized), and on the way the shown tab's scrolling contents went back to their top, away from the box a
// learner had just typed in. The tabs and the layouts around them keep that place through their restyling.
// The place is the one the tab's own scroll events last reported: reading it live is a layout the browser
// must do, hundreds of times as the page first lays itself out. True once done.
const scrolled = new WeakMap()  // a tab's scrolling contents -> {top, left}, from its scroll events

function focusedIn(area) {
  let el = document.activeElement
  while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
  for (let n = el; n != null; n = n.parentElement || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null))
    if (n === area) return el
  return null
}

function keepTabsScroll(doc) {
  const model = [...doc.all_models].find((m) => (m.css_classes || []).includes("explorer-tabs"))
  const tabs = model && window.Bokeh.index.find_one(model)
  if (tabs == null) return false
  const shown = () => {
    const child = tabs.model.tabs[tabs.model.active]?.child
    const area = tabs.child_views.find((v) => v.model === child)?.el
    if (area != null && !scrolled.has(area)) {
      scrolled.set(area, {top: 0, left: 0})
      area.addEventListener("scroll", () => scrolled.set(area, {top: area.scrollTop, left: area.scrollLeft}),
                            {passive: true})
    }
    return area
  }
  // a relayout starts at any view and runs up to the root and down again: whichever of these views it
  // enters puts the place back as it leaves, if the relayout lost it
  for (let v = tabs; v != null; v = v.parent) {
    if (v.keepsTabsScroll) continue
    v.keepsTabsScroll = true
    for (const name of ["invalidate_layout", "update_layout", "update_style", "after_layout"]) {
      const step = v[name]
      if (typeof step !== "function") continue
      v[name] = function (...args) {
        const out = step.apply(this, args)
        const area = shown(), place = area && scrolled.get(area)
        if (place != null && (place.top > 0 || place.left > 0) &&
            (area.scrollTop !== place.top || area.scrollLeft !== place.left)) {
          area.scrollTop = place.top
          area.scrollLeft = place.left
          // and the box being typed in stays in sight (a notice above pushes the tab down)
          focusedIn(area)?.scrollIntoView({block: "nearest"})
        }
        return out
      }
    }
  }
  return true
}

// Python's repr of a float, as session/address.py writes q: the shortest digits that read back to the same number
// (JavaScript's own choice too), written the way Python writes them: 1.0, 1e-05, 1e+16.
function reprFloat(x) {
  if (Object.is(x, -0)) return "-0.0"
  const [digits, exponent] = x.toExponential().split("e")
  const e = Number(exponent)
  if (e < -4 || e >= 16) return digits + "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0")
  const s = String(x)  // fixed-point at these exponents
  return s.includes(".") ? s : s + ".0"
}

// Everything is looked up in this component's own document, never in Bokeh.documents[0]: a notebook page holds
// one document per output (each display of the app, pn.extension's own), made in no fixed order.
export function render({ model, el, view }) {
  const root = document.documentElement
  const doc = view.model.document
  const keep = (tries) => { if (!keepTabsScroll(doc) && tries > 0) requestAnimationFrame(() => keep(tries - 1)) }
  keep(600)  // the tabs may be drawn after this component
  const go = () => { if (model.navigate) window.location.search = model.navigate }
  go()
  model.on("navigate", go)
  const here = window.location.origin + window.location.pathname
  if (model.page_address !== here) model.page_address = here
  // The whole app is the page's main content: one landmark for screen-reader navigation.
  const app = model.whole_page ? document.querySelector("[data-root-id]") : null  // a notebook has its own
  if (app && !app.hasAttribute("role")) app.setAttribute("role", "main")
  // Text sizes come from CSS, which Bokeh's layout does not watch: measure every view again once they apply.
  const relayout = () => requestAnimationFrame(() => {
    for (const m of doc.all_models) {
      const v = window.Bokeh.index.find_one(m)
      if (v && typeof v.invalidate_layout === "function") v.invalidate_layout()
    }
  })
  // the app's root element in a notebook cell (the one Bokeh renders the document into)
  const scope = () => {
    if (model.whole_page) return root
    let n = el
    while (n != null && !(n.dataset && n.dataset.rootId))
      n = n.parentElement || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null)
    return n
  }
  const paint = () => {
    const target = scope()
    if (target == null) { requestAnimationFrame(paint); return }  // not in the page yet
    const changed = target.dataset.mode !== model.mode || target.dir !== model.dir || target.lang !== model.lang
    target.dataset.mode = model.mode
    target.dataset.theme = model.theme
    target.lang = model.lang
    target.dir = model.dir
    if (changed) relayout()
  }
  paint()
  model.on(["mode", "theme", "lang", "dir"], paint)
  // The address bar follows the state a moment after it settles, so a drag does not fill the history; a
  // room's arguments stay, so reloading keeps presenting or following (widgets/room.py).
  let timer = null
  const written = doc.get_model_by_name("page-address")
  const replace = () => {
    clearTimeout(timer)
    const text = written?.text
    if (!text) return
    const next = new URLSearchParams(text)
    // the server's address (BrowserBridge.address), with q where the page's own drag last drew it
    // (link/drag.js): the server writes a drag's q only at the release, which a cut connection never brings
    const drawn = window.attentionExplorerDrawn?.get(doc)?.()
    if (drawn != null) next.set("q", drawn.map(reprFloat).join(","))
    const now = new URLSearchParams(window.location.search)
    for (const name of ["room", "token"]) if (now.has(name)) next.set(name, now.get(name))
    const search = "?" + next.toString()
    if (search !== window.location.search)
      window.history.replaceState(window.history.state, "", search + window.location.hash)
  }
  const address = () => { clearTimeout(timer); timer = setTimeout(replace, 300) }
  // the address as the page opens, then each one the server writes; at once when the page's drag lets go
  if (written != null) {
    address()
    written.connect(written.properties.text.change, address)
    ;(window.attentionExplorerAddress ??= new WeakMap()).set(doc, replace)
  }

  const onKey = (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || !KEYS.has(e.key) || !wantsKey(e)) return
    if (!model.whole_page && !e.composedPath().includes(scope())) return  // the notebook's own keys
    const inPlot = e.composedPath().some((n) => n.classList && n.classList.contains("ae-query-plot"))
    e.preventDefault()  // arrows and Space would otherwise scroll the page
    if (e.key.startsWith("Arrow")) previewNudge(doc, e.key, e.shiftKey, inPlot)
    model.send_msg({key: e.key, shift: e.shiftKey, in_plot: inPlot})
  }
  document.addEventListener("keydown", onKey)
  // the title's language menu (app.py) says what was chosen; the server rewrites the page in place
  const onLanguage = (e) => {
    if (!model.whole_page && !e.composedPath().includes(scope())) return  // another display of the app
    model.send_msg({lang: String(e.detail)})
  }
  document.addEventListener("ae-language", onLanguage)
  model.on("remove", () => {
    document.removeEventListener("keydown", onKey)
    document.removeEventListener("ae-language", onLanguage)
    clearTimeout(timer)
  })

  // The learner's progress on the Check tab (widgets/check.py's ProgressStore), kept in this browser's
  // localStorage: what it holds goes to this page's own session once as the page opens, and each progress the
  // server writes into its Div is stored. Storage that is disabled, full or private is left alone.
  const progress = doc.get_model_by_name(%(store)s)
  if (progress != null) {
    const read = () => { try { return window.localStorage.getItem(%(key)s) } catch (e) { return null } }
    const write = () => {
      try {
        if (progress.text) window.localStorage.setItem(%(key)s, progress.text)
        else window.localStorage.removeItem(%(key)s)
      } catch (e) {}
    }
    const stored = read()
    if (stored) model.send_msg({stored: stored.length <= %(max)d ? stored : ""})
    else if (progress.text) write()
    progress.connect(progress.properties.text.change, write)
    // Another tab of this browser wrote or removed the progress (Start again): this page takes it too, or its
    // next write would put the old answers back.
    const onStorage = (e) => {
      if (e.storageArea !== window.localStorage || (e.key !== null && e.key !== %(key)s)) return
      model.send_msg({stored: e.newValue && e.newValue.length <= %(max)d ? e.newValue : null})
    }
    window.addEventListener("storage", onStorage)
    model.on("remove", () => window.removeEventListener("storage", onStorage))
  }

  // The server went away (a restart, a cut network). Bokeh's own notice is not shown in a Panel page, and
  // a session does not survive a restart, so say so and offer a reload: the address holds the view.
  doc.on_event("connection_lost", () => {
    if (written != null) replace()  // now: a reload may come before the address's usual moment
    if (document.querySelector(".ae-connection-lost")) return
    const banner = document.createElement("div")
    banner.className = "ae-connection-lost"
    banner.setAttribute("role", "alert")
    banner.setAttribute("data-testid", "connection-lost")
    banner.style.cssText = "position: fixed; top: 0; left: 0; right: 0; z-index: 10000; padding: 12px 16px; " +
      "background: #8a1c00; color: #fff; font: 600 20px/1.4 system-ui, sans-serif; text-align: center"
    banner.textContent = model.lost[0] + " "
    const reload = document.createElement("button")
    reload.textContent = model.lost[1]
    reload.style.cssText = "font: inherit; margin-left: 12px; padding: 2px 14px; color: #8a1c00; background: #fff; " +
      "border: 2px solid #fff; border-radius: 4px; cursor: pointer"
    reload.addEventListener("click", () => window.location.reload())
    banner.append(reload)
    document.body.append(banner)
  })
  return document.createElement("span")
}
""" % {"fine": FINE_NUDGE, "nudge": NUDGE, "store": json.dumps(STORE_NAME), "key": json.dumps(STORAGE_KEY),
       "max": MAX_JSON_CHARS}

    def __init__(self, state: AttentionState, **params):
        super().__init__(width=0, height=0, margin=0, **params)
        self.state = state  # plain attribute: the state stays on the server, only the fields above sync
        self.on_stored = None  # plain attribute: the Check tab's progress store (ProgressStore.receive)
        self._ignored = False  # a message the page's script never sends has come (and was logged)
        # The address is a plain Bokeh property, not a param of this component: Panel's two-way sync of a
        # component's params cost the server about 1.5 ms on every update, and the address changes on most. The
        # page adds this Div to its document as a root of its own (app.py): it needs no view, only its text.
        self.address_div = Div(name="page-address", text="", visible=False)
        self.state.param.watch(self._sync_look, ["mode", "theme", "lang"])
        self.state.param.watch(self._sync_address, ["mode", "theme", "query", "selected", "guided", "step", "preset",
                                                    "tokens", "keys", "values", "scale", "causal", "trap",
                                                    "previewing", "lang", *HEAD_ARGUMENT_PARAMS,
                                                    "training_view"])
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
        if not s.previewing:
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
