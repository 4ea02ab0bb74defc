"""The Heads tab: 1 to 4 heads side by side, concatenated and mixed by W_O, and the n² cost.

Vaswani et al. (2017), Sec. 3.2.2: MultiHead(X) = Concat(head_1, ..., head_h) W_O, head_i =
Attention(X W_Q[i], X W_K[i], X W_V[i]). Every head here has d_k = d_v = 2 on the Projections tab's X, so its
queries and keys are points of a plane: "Explore head i" loads that plane into the explorer on the left
(AttentionState.show_head_in_explorer), and the Projections tab then shows and edits that head.
"""

from __future__ import annotations

from html import escape

import numpy as np
import panel as pn
from bokeh.models import Plot
from bokeh.palettes import Cividis256

from session.heads import HEAD_TOKENS, MAX_HEADS
from session.i18n import N_, Translator, translator
from session.state import AttentionState
from widgets.base import View
from widgets.cost import CostView
from widgets.projections import HEADS_CSS, styled, text_pane
from widgets.style import mark_invalid

#: Text size (CSS px) the heads' SVG matrices are laid out for, by mode (static/theme.css's --ae-num).
NUM_PX = {"normal": 16, "projector": 22}


def _cell_color(w: float) -> str:
    return Cividis256[min(255, max(0, int(w * 256)))]


#: What a head attends to, read from its weights (HeadsView._names).
HEAD_NAMES = {"itself": N_("itself"), "previous token": N_("previous token")}


def head_svg(weights: np.ndarray, mode: str, label: str, tr: Translator | None = None) -> str:
    """One head's (n, n) weights as an SVG grid: a row per query, a column per key, each weight printed.

    Colours are Cividis on 0..1 (as the Matrix tab), and the ink of each number is chosen for its cell, so the
    colour is never the only cue. Numbers and the screen reader's label in ``tr``'s language (English by default).
    """
    tr = tr or translator("en")
    num = NUM_PX[mode]
    cell, name = round(num * 2.7), round(num * 3.0)  # two heads side by side on a 1024 px projector
    n = len(HEAD_TOKENS)
    width, height = name + n * cell, round(num * 1.6) + n * cell
    top = round(num * 1.6)
    parts = [f'<text x="{name + (j + 0.5) * cell}" y="{num}" text-anchor="middle">{escape(t)}</text>'
             for j, t in enumerate(HEAD_TOKENS)]
    for i, t in enumerate(HEAD_TOKENS):
        y = top + i * cell
        parts.append(f'<text x="{name - 6}" y="{y + cell / 2}" text-anchor="end" dominant-baseline="middle">'
                     f'{escape(t)}</text>')
        for j, w in enumerate(weights[i]):
            x = name + j * cell
            ink = "ink-light" if w < 0.55 else "ink-dark"  # Cividis is dark below ~0.55
            parts += [f'<rect class="cell" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{_cell_color(w)}"/>',
                      f'<text class="{ink}" x="{x + cell / 2}" y="{y + cell / 2}" text-anchor="middle" '
                      f'dominant-baseline="middle">{tr.num(w, 2)}</text>']
    # rows apart by "; ", or by " | " where a list's entries are already apart by ";" (a decimal comma)
    rows_sep = "; " if tr.list_sep.strip() != ";" else " | "
    text = rows_sep.join(f"{t}: " + tr.list_sep.join(f"{k} {tr.num(w, 2)}"
                                                     for k, w in zip(HEAD_TOKENS, row, strict=True))
                         for t, row in zip(HEAD_TOKENS, weights, strict=True))
    aria = tr._("{head} weights, query by key: {list}", head=label, list=text)
    # direction="ltr": a figure is drawn left to right in a right-to-left page too (its text anchors would flip)
    return (f'<svg width="{width}" height="{height}" direction="ltr" role="img" aria-label="{escape(aria)}">'
            f'{"".join(parts)}</svg>')


class HeadsView(View):
    """The heads' weights side by side, their concatenation, W_O (editable) and the output; the n² cost below.

    Test hooks: the heads' matrices are in the pane ``heads-matrices`` (one ``figure`` each, ``data-head``), the
    concatenation and output in ``heads-output``; W_O's text boxes carry ``field-wo-<row>-<col>``; the buttons
    read "Explore head 1" and so on.
    """

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self._syncing = False
        self.count = styled(pn.widgets.RadioButtonGroup(options=[str(h) for h in range(1, MAX_HEADS + 1)],
                                                        value=str(s.heads)))
        self.count.param.watch(lambda e: self._syncing or self.state.set_heads(int(e.new)), "value")
        self.preset = styled(pn.widgets.Button(color="primary", css_classes=["wraps"]))
        self.preset.on_click(lambda _: self.state.load_heads_preset())
        self.new_draw = styled(pn.widgets.Button())
        self.new_draw.on_click(lambda _: self.state.new_heads_draw())
        self.explore = []
        for h in range(MAX_HEADS):
            button = styled(pn.widgets.Button(visible=h < s.heads))
            button.on_click(lambda _, h=h: self.state.show_head_in_explorer(h))
            self.explore.append(button)
        self.matrices = styled(pn.pane.HTML("", name="heads-matrices", sizing_mode="stretch_width"))
        self.output = styled(pn.pane.HTML("", name="heads-output", sizing_mode="stretch_width"))
        self._w_o = pn.Column(margin=0)
        # W_O's boxes of the rows the heads use now, and of every row built (the most heads shown so far)
        self._inputs: dict[tuple[int, int], pn.widgets.TextInput] = {}
        self._built_inputs: dict[tuple[int, int], pn.widgets.TextInput] = {}
        self._w_o_rows: list[pn.Row] = []
        # shown by its text, never by `visible` (widgets/projections.py: showing a pane scrolled the tab to its top)
        self.field_message = text_pane()
        self._texts = [text_pane() for _ in range(3)]
        self._count_label = styled(pn.pane.HTML("", margin=(8, 5)))
        self._relabel()
        self._layout = pn.Column(
            self._texts[0],
            pn.FlexBox(self._count_label, self.count, self.preset, self.new_draw, align_items="center"),
            self.matrices,
            pn.FlexBox(*self.explore, align_items="center"),
            self._texts[1],
            self.output,
            self._texts[2],
            self._w_o, self.field_message,
            CostView(state=s),
            name="heads", css_classes=["heads-tab"], sizing_mode="stretch_both", scroll=True, stylesheets=[HEADS_CSS],
        )
        s.param.watch(self._on_lang, "lang")
        s.param.watch(self._render, ["embeddings", "projections", "heads", "w_o", "temperature", "mode"])
        s.param.watch(self._on_message, "message")
        self._render()

    def _relabel(self) -> None:
        """The tab's own words in the page's language (its numbers are redrawn by _render)."""
        tr = self.state.tr
        self._count_label.object = f"<span class='label'>{escape(tr._('Heads'))}</span>"
        self.count.label = tr._("Heads")
        names = tr.list_sep.join((tr(HEAD_NAMES["previous token"]), tr(HEAD_NAMES["itself"])))
        # the tooltip is the core's description of the preset (core.PREVIOUS_AND_SELF_2D.note), as the catalogs hold it
        self.preset.param.update(label=tr._("Two heads: {names}", names=names), description=tr._(
            "Two heads on \"I love NLP\", embeddings 60° apart. Head 1 turns each query back by 60°, onto the "
            "previous token (I, which has none, stays nearest to itself); head 2 asks for the token itself. Both "
            "read V = X, and W_O averages them: each output lies between the previous token's embedding and the "
            "token's own."))
        self.new_draw.param.update(label=tr._("New draw"), description=tr._("Random projections for every head"))
        for h, button in enumerate(self.explore):
            button.param.update(label=tr._("Explore head {n}", n=h + 1),
                                description=tr._("Show head {n}'s queries and keys in the explorer", n=h + 1))
        self._texts[0].object = f"<h3>{escape(tr._('Multi-head attention'))}</h3><p>" + tr._(
            "Concat(head₁, …, head<sub>h</sub>) W<sub>O</sub> (Vaswani et al., 2017, Sec. 3.2.2): each head has its "
            "own W<sub>Q</sub>, W<sub>K</sub>, W<sub>V</sub> (d<sub>k</sub> = d<sub>v</sub> = 2), so two heads can "
            "attend to different tokens.") + "</p>"
        self._texts[1].object = "<p class='note'>" + tr._(
            "<strong>Explore head i</strong> loads that head into the explorer on the left: its keys "
            "K = X W<sub>K</sub>, its values V = X W<sub>V</sub>, and the selected token's query q = x W<sub>Q</sub> "
            "(love's, unless I or NLP is selected), and the Projections tab then shows that head. The explorer "
            "shows one query at a time (its other rows use their keys as queries) and divides by √d<sub>k</sub>: "
            "its numbers for the selected token are the head's when T = √d<sub>k</sub>.") + "</p>"
        self._texts[2].object = "<h4>W<sub>O</sub></h4><p>" + tr._(
            "Rows 2i − 1 and 2i take head i's output; the default averages the heads (changing the number of heads "
            "sets it again).") + "</p>"

    def _on_lang(self, *_) -> None:
        with pn.io.hold():
            self._relabel()
            self._build_w_o(len(self.state.w_o), relabel=True)  # the rows' labels
            self._render()

    def _field(self, row: int, col: int) -> pn.widgets.TextInput:
        w = styled(pn.widgets.TextInput(width=84, margin=(2, 3), css_classes=[f"field-wo-{row}-{col}"]))
        w.param.watch(lambda e, key=(row, col): self._on_input(key, e.new, e.obj), "value")
        self._built_inputs[(row, col)] = w
        return w

    def _build_w_o(self, rows: int, relabel: bool = False) -> None:
        """Show W_O's boxes for ``rows`` rows. New boxes only for more rows than built so far (or for new labels):
        fewer hide the rest, as a page alternating head counts would otherwise rebuild them at each change (a
        model per box, a long turn of the loop under a flood: bench/HISTORY.md)."""
        if relabel or rows > len(self._w_o_rows):
            def label(html):
                return styled(pn.pane.HTML(f"<span class='label'>{escape(html)}</span>", width=110, margin=(6, 3)))
            tr = self.state.tr
            self._built_inputs = {}
            self._w_o_rows = [pn.Row(label(tr._("head {n}", n=r // 2 + 1) + f" [{r % 2 + 1}]"), self._field(r, 0),
                                     self._field(r, 1), margin=0)
                              for r in range(max(rows, len(self._w_o_rows)))]
            self._w_o[:] = [pn.FlexBox(*self._w_o_rows)]
        for r, row in enumerate(self._w_o_rows):
            row.visible = r < rows
        self._inputs = {key: w for key, w in self._built_inputs.items() if key[0] < rows}

    def _on_input(self, key, text, box: pn.widgets.TextInput) -> None:
        # a hidden row's box (more heads than shown now) is nobody's: what a crafted message writes there is not taken
        if self._syncing or self._inputs.get(key) is not box:
            return
        with pn.io.hold():
            if not self.state.set_w_o(*key, text):
                w = self._inputs[key]
                mark_invalid(w)
                self.field_message.object = (f'<div class="field-message" role="alert">'
                                             f'{escape(self.state.tr(self.state.message))}</div>')

    def _on_message(self, *_) -> None:
        if not self.state.message and self.field_message.object:
            self.field_message.object = ""

    def _render(self, *_) -> None:
        s = self.state
        tr = s.tr
        r = s.head_attention()
        names = self._names(r)
        figures = []
        for h, head in enumerate(r.heads):
            label = (tr._("Head {n}: {name}", n=h + 1, name=tr(HEAD_NAMES[names[h]])) if names[h] else
                     tr._("Head {n}", n=h + 1))
            figures.append(f"<figure data-head='{h}'><figcaption>{escape(label)}</figcaption>"
                           f"{head_svg(head.attention.weights, s.mode, label, tr)}</figure>")
        self.matrices.object = f"<div class='heads'>{''.join(figures)}</div>"
        for h, button in enumerate(self.explore):
            button.visible = h < s.heads
        self._syncing = True
        try:
            self.count.value = str(s.heads)
            if len(self._inputs) != s.w_o.size:
                self._build_w_o(len(s.w_o))
            for (i, j), w in self._inputs.items():
                w.value = tr.short(float(s.w_o[i, j]))
                mark_invalid(w, False)
        finally:
            self._syncing = False
        self.output.object = self._output_html(r)

    def _names(self, r) -> list[str]:
        """What each head attends to, read from its weights: "previous token", "itself", or nothing."""
        n = len(HEAD_TOKENS)
        out = []
        for head in r.heads:
            w = head.attention.weights
            # a pattern only where each row leans clearly on one token, not where a tie picks the first
            chosen = w.argmax(axis=1).tolist() if w.max(axis=1).min() > 0.5 else None
            out.append("itself" if chosen == list(range(n)) else
                       "previous token" if chosen == [0, *range(n - 1)] else "")
        return out

    def _output_html(self, r) -> str:
        h, tr = len(r.heads), self.state.tr
        head_cols = "".join(f"<th scope='col' colspan='2'>{escape(tr._('head {n}', n=i + 1))}</th>" for i in range(h))
        sub = "".join("<th scope='col'>[1]</th><th scope='col'>[2]</th>" for _ in range(h + 1))
        rows = []
        for i, t in enumerate(HEAD_TOKENS):
            concat = "".join(f"<td>{tr.num(x)}</td>" for x in r.concat[i])
            out = "".join(f"<td>{tr.num(x)}</td>" for x in r.output[i])
            rows.append(f"<tr><th scope='row'>{escape(t)}</th>{concat}{out}</tr>")
        caption = tr._("Concat(head₁, …, head<sub>h</sub>), then × W<sub>O</sub> (T = {t})",
                       t=tr.num(self.state.temperature))
        return ("<div class='scroll-table'><table class='nums'><caption>" + caption + "</caption><thead><tr>"
                f"<th></th>{head_cols}<th scope='col' colspan='2'>{escape(tr._('output'))}</th></tr><tr><th></th>"
                f"{sub}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def heads_tab(state: AttentionState, styler=None) -> pn.viewable.Viewable:
    """The tab's contents, its figures (the n² cost's) restyled by ``styler``."""
    view = HeadsView(state=state)
    layout = view.__panel__()
    if styler is not None:
        styler.add([p.object for p in layout.select(pn.pane.Bokeh) if isinstance(p.object, Plot)])
    return layout
