"""Presets, switches and the exact numbers: q, every k_i and v_i, and the token names.

Every field is a text box whose text goes to the state's validating setters when the
learner presses Enter or leaves the box. A refused entry keeps its text (so it can
be fixed), is outlined in red, and the state's message appears right under its row;
nothing else changes. Token names, and messages quoting what was typed, are always
shown as text (escaped), never as HTML.
"""

from __future__ import annotations

from html import escape

import numpy as np
import panel as pn
import param

from link.updates import one_message
from session.i18n import N_, Translator
from session.state import MAX_TOKENS, MIN_TOKENS, AttentionState
from widgets.style import mark_invalid

FIELD_WIDTH = 74
NAME_WIDTH = 96
#: The preset menu's widest (CSS px): "Module 2 : valeurs vectorielles" in projector mode's 20 px text, with room.
PRESET_MAX_WIDTH = 440
#: The table has boxes for at least this many entries of a key and of a value (d_k, d_v), hidden where an example
#: has fewer: every example the page loads has 2-D keys, and 1-D or 2-D values, so one table serves them all. Built
#: for the 1-D values of Section 6, the table was built anew at the first example with 2-D ones ("Module 2",
#: "Explore head"): one long turn of the server's loop, which every other page waited behind (bench/HISTORY.md).
TABLE_AT_LEAST = (2, 2)
# The columns' widths follow the mode (static/theme.css): a projector's 20 px digits need wider boxes.
EDITOR_CSS = """
:host(.col-number) { width: var(--ae-field-w, 74px) !important; min-width: var(--ae-field-w, 74px) !important; }
:host(.col-name) { width: var(--ae-name-w, 96px) !important; min-width: var(--ae-name-w, 96px) !important; }
strong { font-size: var(--ae-text, 16px); }
"""
MESSAGE_CSS = """
.field-message { color: var(--ae-notice-fg); background: var(--ae-notice-bg); font-weight: 600;
  font-size: var(--ae-text, 16px); margin: 0 0 4px 4px; }
"""


#: The switches' labels, by the param each sets.
SWITCH_LABELS = {"scale": N_("Divide by √d_k (scaling)"), "causal": N_("Causal mask (attend to earlier tokens only)"),
                 "trap": N_("Score against values instead of keys (the trap)")}


def switch(state: AttentionState, name: str, **params) -> pn.widgets.CheckBoxGroup:
    """A checkbox for the boolean param ``name`` of ``state``, named by ``SWITCH_LABELS[name]`` in the page's language.

    A one-box ``CheckBoxGroup``, not Panel's ``Checkbox``: Bokeh draws a ``Checkbox``'s text beside its box
    with no ``<label>``, so the box has no accessible name; a group's boxes sit inside ``<label>``s. The box's
    value is the param's name, so a new language changes only its label (:func:`relabel_switch`).
    """
    box = pn.widgets.CheckBoxGroup(options={state.tr(SWITCH_LABELS[name]): name},
                                   value=[name] * bool(getattr(state, name)), **params)
    box.param.watch(lambda e: setattr(state, name, bool(e.new)), "value")
    state.param.watch(lambda e: setattr(box, "value", [name] * bool(e.new)), name)
    return box


def relabel_switch(box: pn.widgets.CheckBoxGroup, tr: Translator) -> None:
    """A :func:`switch`'s label in ``tr``'s language; its value stays."""
    (name,) = box.options.values()
    box.options = {tr(SWITCH_LABELS[name]): name}


def _column(width: int) -> str:
    return "col-name" if width == NAME_WIDTH else "col-number"


def _number_text(x: float, tr: Translator) -> str:
    # enough digits to retype the number; 4 decimals is what every other view shows; read back in the same language
    return tr.short(float(x), 4)


class Editor(pn.viewable.Viewer):
    """The preset selector, the scaling / causal-mask / trap switches, and a table of inputs.

    Test hooks: each input carries the CSS class ``field-<kind>-<row>-<axis>``
    (``field-q--0``, ``field-name-1-``, ``field-k-0-1``, ``field-v-2-0``); row
    messages carry ``field-message``; the switches ``switch-scale``, ``switch-causal``, ``switch-trap``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view edits.")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self._syncing = False
        # the boxes and row messages of the example's shape, and of the whole table (rows and boxes for the
        # largest shape shown so far, those the example does not need hidden)
        self._inputs: dict[tuple[str, int | str, int | str], pn.widgets.TextInput] = {}
        self._row_messages: dict[int | str, pn.pane.HTML] = {}
        self._built_inputs: dict[tuple[str, int | str, int | str], pn.widgets.TextInput] = {}
        self._built_messages: dict[int | str, pn.pane.HTML] = {}
        self._grid = (0, 0, 0)  # the table's (n, d_k, d_v)
        # as wide as the tab allows (up to PRESET_MAX_WIDTH): a select cannot wrap its choice, and a fixed width
        # cut "Abschnitt 6: skalare Werte" in projector mode; its label stays above it
        self.preset = pn.widgets.Select.from_param(s.param.preset, width=None, sizing_mode="stretch_width",
                                                   max_width=PRESET_MAX_WIDTH)
        self._switches = {name: switch(s, name, css_classes=[f"switch-{name}"]) for name in SWITCH_LABELS}
        self.switches = pn.Column(*self._switches.values(), margin=(0, 0, 6, 0))
        self.add_button = pn.widgets.Button(width=110)
        self.add_button.on_click(lambda _: s.add_token())
        self._table = pn.Column(margin=0)
        self._heading = pn.pane.HTML("", margin=(0, 10))
        self._layout = pn.Column(self._heading, self.preset, self.switches, self._table, name="editor",
                                 css_classes=["editor"])
        self._relabel()
        s.param.watch(self._on_language, "lang")
        self._shape = None
        self._shown, self._stale = True, False
        s.param.watch(self._on_data, ["tokens", "keys", "values"])
        # a drag moves q many times a second: then only the two q boxes change
        s.param.watch(self._on_query, "query")
        s.param.watch(self._on_message, ["message", "message_field"])
        self._on_data()

    # --- building and syncing ----------------------------------------------------------
    def _relabel(self) -> None:
        tr = self.state.tr
        self._heading.object = f"<h3>{tr._('Edit the example')}</h3>"
        self.preset.param.update(name=tr._("Preset"), options=tr.options(self.state.param.preset.objects))
        for box in self._switches.values():
            relabel_switch(box, tr)
        self.add_button.param.update(label=tr._("Add token"), description=tr._("Append a token (up to 8)"))

    def _on_language(self, *_):
        self._relabel()
        self._shape, self._grid = None, (0, 0, 0)  # a new table: its headers and the numbers' decimal mark
        self._on_data()
    def _field(self, kind: str, row, axis, width=FIELD_WIDTH) -> pn.widgets.TextInput:
        w = pn.widgets.TextInput(width=width, margin=(2, 3), stylesheets=[EDITOR_CSS],
                                 css_classes=[f"field-{kind}-{row}-{axis}", _column(width)])
        w.param.watch(lambda e, k=(kind, row, axis): self._on_input(k, e.new, e.obj), "value")
        self._built_inputs[(kind, row, axis)] = w
        return w

    def _message_pane(self, key) -> pn.pane.HTML:
        # shown by its text, never by `visible`: a pane shown or hidden makes BokehJS lay the page out anew, which
        # scrolled the tab back to its top, away from the box just refused
        pane = pn.pane.HTML("", margin=(0, 3), stylesheets=[MESSAGE_CSS])
        self._built_messages[key] = pane
        return pane

    def _header(self, text: str, width: int) -> pn.pane.HTML:
        return pn.pane.HTML(f"<strong>{text}</strong>", width=width, margin=(2, 3), css_classes=[_column(width)],
                            stylesheets=[EDITOR_CSS])

    def _build(self, n: int, d_k: int, d_v: int) -> None:
        """A new table with rows for ``n`` tokens and boxes for ``d_k`` key and ``d_v`` value entries."""
        tr = self.state.tr
        self._built_inputs, self._built_messages = {}, {}
        self._k_headers = [self._header(f"k[{a + 1}]", FIELD_WIDTH) for a in range(d_k)]
        self._v_headers = [self._header("v", FIELD_WIDTH) for _ in range(d_v)]
        rows = [pn.Row(self._header(tr._("query q"), NAME_WIDTH),
                       *[self._field("q", "", a) for a in range(d_k)]),
                self._message_pane("q"),
                pn.Row(self._header(tr._("token"), NAME_WIDTH), *self._k_headers, *self._v_headers)]
        self._token_rows, self._removes = [], []
        for i in range(n):
            remove = pn.widgets.Button(label="✕", width=34, margin=(2, 3), css_classes=["remove-token"],
                                       description=tr._("Remove token {n}", n=i + 1))
            remove.on_click(lambda _, i=i: self.state.remove_token(i))
            self._removes.append(remove)
            row = pn.Row(self._field("name", i, "", NAME_WIDTH), *[self._field("k", i, a) for a in range(d_k)],
                         *[self._field("v", i, a) for a in range(d_v)], remove)
            self._token_rows.append((row, self._message_pane(i)))
            rows += self._token_rows[-1]
        rows.append(pn.Row(self.add_button, self._message_pane("tokens")))
        self._grid = (n, d_k, d_v)
        self._table.objects = rows

    def _fit(self, shape) -> None:
        """Show the table for ``shape`` = (n, d_k, value dims, d_v): a new one only for a shape larger than any
        shown before (and than :data:`TABLE_AT_LEAST`); a smaller one hides the rows and boxes it does not need (a
        new table is a model per box, the costliest thing a click can make the server do, and examples of two
        shapes alternate)."""
        n, d_k, ndim, d_v = shape
        want = (n, max(d_k, TABLE_AT_LEAST[0]), max(d_v, TABLE_AT_LEAST[1]))
        if any(w > have for w, have in zip(want, self._grid, strict=True)):
            self._build(*(max(w, have) for w, have in zip(want, self._grid, strict=True)))
        for a, header in enumerate(self._k_headers):
            header.visible = a < d_k
        for a, header in enumerate(self._v_headers):
            header.param.update(visible=a < d_v, object=f"<strong>{f'v[{a + 1}]' if ndim == 2 else 'v'}</strong>")
        self._inputs = {}
        for (kind, row, axis), w in self._built_inputs.items():
            shown = (row == "" or row < n) and (axis == "" or axis < (d_v if kind == "v" else d_k))
            w.visible = shown
            if shown:
                self._inputs[(kind, row, axis)] = w
        self._row_messages = {key: pane for key, pane in self._built_messages.items()
                              if not isinstance(key, int) or key < n}
        for i, (row, message) in enumerate(self._token_rows):
            row.visible = message.visible = i < n
            if i >= n and message.object:
                message.object = ""
        for remove in self._removes:
            remove.disabled = n <= MIN_TOKENS
        self.add_button.disabled = n >= MAX_TOKENS

    def shown_in_tab(self, shown: bool) -> None:
        """The page shows the editor's tab (True) or another (False): while hidden, the table waits for the state's
        changes, and catches up at once when shown (widgets/tabs.py calls this)."""
        self._shown = shown
        if shown and self._stale:
            self._on_data()

    def _on_data(self, *_):
        s = self.state
        shape = (len(s.tokens), s.d_k, np.ndim(s.values), s.d_v)
        if not self._shown:
            # a new table is the costliest thing a click can make the server do (a model per number, and a walk of
            # the whole page to find them); no one sees it on a hidden tab, and a page switching examples from
            # another tab, or a message alternating "Reset example" and "Explore head", need not pay for it
            self._stale = True
            return
        self._stale = False
        if shape != self._shape:
            self._shape = shape
            self._fit(shape)
        V = np.asarray(s.values, dtype=float).reshape(len(s.tokens), -1)
        tr = s.tr
        texts = {("q", "", a): _number_text(c, tr) for a, c in enumerate(s.query)}
        for i, t in enumerate(s.tokens):
            texts[("name", i, "")] = t
            texts.update({("k", i, a): _number_text(c, tr) for a, c in enumerate(s.keys[i])})
            texts.update({("v", i, a): _number_text(c, tr) for a, c in enumerate(V[i])})
        self._syncing = True
        try:
            for key, text in texts.items():
                w = self._inputs[key]
                w.value = text
                mark_invalid(w, False)
        finally:
            self._syncing = False
        self._on_message()

    def _on_query(self, *_):
        if self._stale:  # the table may be of another shape: it catches up when shown
            return
        self._syncing = True
        try:
            for a, c in enumerate(self.state.query):
                w = self._inputs[("q", "", a)]
                w.value = _number_text(c, self.state.tr)
                mark_invalid(w, False)
        finally:
            self._syncing = False

    # --- user input --------------------------------------------------------------------
    def _on_input(self, key, text: str, box: pn.widgets.TextInput) -> None:
        # a hidden table may be of another shape than the state's (its row gone): nobody types in a hidden tab, and
        # what a crafted message writes there is not taken; nor what it writes into a hidden box
        if self._syncing or self._stale or self._inputs.get(key) is not box:
            return
        kind, row, axis = key
        s = self.state
        with one_message():
            if kind == "q":
                ok = s.set_query_coordinate(axis, text)
            elif kind == "name":
                ok = s.rename_token(row, text)
            elif kind == "k":
                ok = s.set_key(row, axis, text)
            else:
                ok = s.set_value(row, axis, text)
            w = self._inputs.get(key)
            if w is not None and not ok:
                mark_invalid(w)
                self._show_at("q" if kind == "q" else row)

    def _on_message(self, *_):
        s = self.state
        if not s.message:
            for pane in self._row_messages.values():
                if pane.object:
                    pane.object = ""
        elif s.message_field == "tokens":
            self._show_at("tokens")

    def _show_at(self, where) -> None:
        for key, pane in self._row_messages.items():
            text = (f'<div class="field-message" role="alert">{escape(self.state.tr(self.state.message))}</div>'
                    if key == where else "")
            if pane.object != text:
                pane.object = text

    def __panel__(self):
        return self._layout
