"""The Model tab: a real pretrained Transformer's 72 heads on the learner's own sentence (core/pretrained.py).

Type a sentence; see its tokens as the model sees them, the 6 × 12 heads as small maps (click one to open it), the
chosen head's matrix (hover a cell, click a row) and, for one row, Section 6's recipe with the model's own numbers:
scores q·k/√32, softmax, weights. The heads are also found by what they do on the sentence (Clark et al., 2019), and
the previous-token head leads to the Train tab, where the learner trains that pattern themselves.

Test hooks: the figures ``model-grid`` and ``model-matrix``; the panes ``model-tokens`` (``li[data-i]``),
``model-message``, ``model-behaviour``, ``model-inspector`` (``table.model-recipe tr[data-j]``, ``td[data-weight]``);
the sentence box ``.model-sentence`` and its button ``.model-run``; each behaviour's button ``.model-find-<kind>``
(previous, next, itself, cls, sep); ``.model-train``; the downloads ``.model-csv``, ``.model-json``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
from html import escape
from pathlib import Path

import numpy as np
import panel as pn
from bokeh import events
from bokeh.models import ColumnDataSource, CustomJS, FixedTicker, HoverTool, Image, LinearColorMapper, Range1d, Rect
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from core.pretrained import D_K, HEADS, LAYERS, MAX_TOKENS, MODEL_NAME, HeadBehaviour, head_behaviour
from services.train_queue import scheduler_for
from session.i18n import N_
from session.model import MAX_SENTENCE_CHARS
from widgets.base import View
from widgets.export import text_cell
from widgets.glyphs import draw
from widgets.projections import STATIC, styled, text_pane
from widgets.style import APP_CSS

#: A box that scrolls sideways is at most as wide as the tab: Bokeh gives a column its widest child's width (the
#: grid's 600 px in a phone's 390), and the whole tab scrolled instead, with no hint.
FIT = ":host { max-width: min(100%, 100cqw) !important; min-width: 0 !important; }"

MODEL_CSS = (STATIC / "model.css").read_text()
#: The side of one head's map in the grid (CSS px).
MAP_PX = 34
#: The space between two maps of the grid, in maps.
GAP = 0.18
#: What a behaviour's button says, by HeadBehaviour's kinds.
KINDS = {"previous": N_("Previous token"), "next": N_("Next token"), "itself": N_("Itself"), "cls": "[CLS]",
         "sep": "[SEP]"}
#: A head "does" a pattern when its mean weight on it is at least this (Clark et al. count heads the same way).
DOES = 0.5

#: Brings the head a tap on the grid opens into view (its matrix, below the grid).
INTO_VIEW_JS = (Path(__file__).parent / "model_into_view.js").read_text()


def _slot(i: int) -> float:
    return i * (1 + GAP)


class ModelView(View):
    """The tab's one view over the page's state (session/model.py). ``on_train()`` opens the Train tab, on its
    "previous token" target (app.py gives it; without it the tab has no such button)."""

    def __init__(self, on_train=None, **params):
        super().__init__(**params)
        s = self.state
        self._on_train = on_train
        self.intro = text_pane()
        self.box = styled(pn.widgets.TextInput(value=s.sentence, max_length=MAX_SENTENCE_CHARS,
                                               css_classes=["model-sentence"], sizing_mode="stretch_width",
                                               min_width=200))
        # Enter, or the box left; not the sentence shown coming back to the box (the state's own, a room's)
        self.box.param.watch(lambda e: e.new == s.sentence or s.set_sentence(e.new), "value")
        self.run = styled(pn.widgets.Button(color="primary", css_classes=["model-run"]))
        self.run.on_click(lambda _: s.set_sentence(self.box.value))
        self.message = self._pane("model-message")
        self.tokens = self._pane("model-tokens")
        self.behaviour = self._pane("model-behaviour")
        self.finds = {}
        for kind in HeadBehaviour.KINDS:
            button = styled(pn.widgets.Button(css_classes=[f"model-find-{kind}", "wraps"]))
            button.on_click(lambda _, kind=kind: self._find(kind))
            self.finds[kind] = button
        self.train = styled(pn.widgets.Button(css_classes=["model-train", "wraps"], visible=on_train is not None))
        self.train.on_click(lambda _: self._open_train())
        self.layer = styled(pn.widgets.Select(options={str(i + 1): i for i in range(LAYERS)}, value=s.model_layer,
                                              width=90))
        self.head = styled(pn.widgets.Select(options={str(i + 1): i for i in range(HEADS)}, value=s.model_head,
                                             width=90))
        self.layer.param.watch(lambda e: s.show_head(e.new, s.model_head), "value")
        self.head.param.watch(lambda e: s.show_head(s.model_layer, e.new), "value")
        self.grid, self._maps, self._chosen = self._grid_figure()
        self.matrix, self._cells, self._row = self._matrix_figure()
        self.grid.js_on_event(events.Tap, CustomJS(args={"matrix": self.matrix}, code=INTO_VIEW_JS))
        self.heading = text_pane()
        self.inspector = self._pane("model-inspector")
        self.csv = styled(pn.widgets.FileDownload(callback=lambda: io.StringIO(self.to_csv()), filename="head.csv",
                                                  css_classes=["model-csv"]))
        self.json = styled(pn.widgets.FileDownload(callback=lambda: io.StringIO(self.to_json()), filename="head.json",
                                                   css_classes=["model-json"]))
        self._layout = pn.Column(
            self.intro,
            pn.FlexBox(self.box, self.run, align_items="center", sizing_mode="stretch_width"),
            self.message, self.tokens,
            pn.Column(self.grid, css_classes=["scroll-x"], sizing_mode="stretch_width", stylesheets=[APP_CSS, FIT]),
            pn.FlexBox(*self.finds.values(), self.train, align_items="center", sizing_mode="stretch_width"),
            self.behaviour,
            self.heading,
            pn.FlexBox(self.layer, self.head, self.csv, self.json, align_items="end", sizing_mode="stretch_width"),
            pn.Column(self.matrix, css_classes=["scroll-x"], sizing_mode="stretch_width", stylesheets=[APP_CSS, FIT]),
            self.inspector,
            name="model", css_classes=["model-tab"], sizing_mode="stretch_both", scroll=True,
        )
        for pane in (self.tokens, self.inspector, self.box):
            pane.stylesheets = [*pane.stylesheets, MODEL_CSS]
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:  # a served page: its sentences wait their turn
            s.model_scheduler = scheduler_for(doc)
        s.require_model()  # at once outside a served page (its result is rendered below), else in the page's turn
        s.param.watch(self._render, ["model_result", "lang"])
        s.param.watch(self._render_message, ["model_message", "lang"])
        s.param.watch(self._render_choice, ["model_layer", "model_head", "model_row"])
        s.param.watch(lambda e: self.box.param.update(value=e.new), "sentence")
        self.box.value = s.sentence
        self._render()
        self._render_message()

    @staticmethod
    def _pane(name: str) -> pn.pane.HTML:
        return styled(pn.pane.HTML("", name=name, css_classes=[name], sizing_mode="stretch_width", margin=(0, 5)))

    # --- figures ----------------------------------------------------------------------------------------------------
    def _grid_figure(self):
        maps = ColumnDataSource(data=dict(image=[], x=[], y=[], dw=[], dh=[], layer=[], head=[]))
        chosen = ColumnDataSource(data=dict(x=[], y=[]))
        # each map MAP_PX square: the twelve heads of a layer fit an 800x600 projector's tab, and scroll on a phone
        fig = figure(name="model-grid", frame_width=round((_slot(HEADS) + 0.6) * MAP_PX),
                     frame_height=round((_slot(LAYERS) + 0.6 - GAP) * MAP_PX), tools="", toolbar_location=None,
                     x_range=Range1d(-0.6, _slot(HEADS)), y_range=Range1d(-GAP, _slot(LAYERS) + 0.6 - GAP),
                     x_axis_location="above", min_border=4)
        mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        images = draw(fig, Image, maps, image="image", x="x", y="y", dw="dw", dh="dh", color_mapper=mapper)
        draw(fig, Rect, chosen, "x", "y", 1 + GAP / 2, 1 + GAP / 2, fill_alpha=0, line_color="#D55E00", line_width=4)
        fig.add_tools(HoverTool(renderers=[images], tooltips=[("", "@layer · @head")]))
        fig.grid.visible = False
        fig.xaxis.ticker = FixedTicker(ticks=[_slot(h) + 0.5 for h in range(HEADS)])
        fig.xaxis.major_label_overrides = {_slot(h) + 0.5: str(h + 1) for h in range(HEADS)}
        fig.yaxis.ticker = FixedTicker(ticks=[_slot(LAYERS - 1 - i) + 0.5 for i in range(LAYERS)])
        fig.yaxis.major_label_overrides = {_slot(LAYERS - 1 - i) + 0.5: str(i + 1) for i in range(LAYERS)}
        fig.axis.major_label_text_font_size = "14px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.on_event(events.Tap, self._on_grid_tap)
        return fig, maps, chosen

    def _matrix_figure(self):
        cells = ColumnDataSource(data=dict(x=[], y=[], weight=[], query=[], key=[], label=[]))
        row = ColumnDataSource(data=dict(x=[], y=[], width=[]))
        fig = figure(name="model-matrix", width=400, height=400, tools="save", toolbar_location="below",
                     x_range=Range1d(-0.5, 5.5), y_range=Range1d(5.5, -0.5), x_axis_location="above", min_border=4)
        fig.toolbar.logo = None
        mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        rects = draw(fig, Rect, cells, "x", "y", 1, 1, fill_color={"field": "weight", "transform": mapper},
                     line_color="white", line_width=1)
        draw(fig, Rect, row, "x", "y", "width", 0.96, fill_alpha=0, line_color="#D55E00", line_width=4,
             level="overlay")
        fig.add_tools(HoverTool(renderers=[rects], tooltips=[("", "@query → @key"), ("", "@label")]))
        fig.grid.visible = False
        fig.axis.major_label_text_font_size = "14px"
        fig.xaxis.ticker, fig.yaxis.ticker = FixedTicker(ticks=[]), FixedTicker(ticks=[])
        fig.xaxis.major_label_orientation = math.pi / 2
        fig.on_event(events.Tap, self._on_matrix_tap)
        return fig, cells, row

    # --- the learner's clicks ---------------------------------------------------------------------------------------
    def _on_grid_tap(self, event) -> None:
        x, y = event.x, event.y
        # a browser sends finite numbers; a broken or hostile client's NaN, inf or list is ignored
        if not all(isinstance(c, numbers.Real) and math.isfinite(c) for c in (x, y)):
            return
        head, layer = int(x // (1 + GAP)), LAYERS - 1 - int(y // (1 + GAP))
        if 0 <= head < HEADS and 0 <= layer < LAYERS:
            self.state.show_head(layer, head)

    def _on_matrix_tap(self, event) -> None:
        y = event.y
        if isinstance(y, numbers.Real) and math.isfinite(y):
            self.state.show_row(round(y))

    def _find(self, kind: str) -> None:
        r = self.state.model_result
        found = None if r is None else head_behaviour(r.tokens, r.weights).strongest(kind)
        if found is not None:
            self.state.show_head(found[0], found[1])

    def _open_train(self) -> None:
        self._find("previous")
        self.state.training.target = "previous"
        self._on_train()

    # --- rendering --------------------------------------------------------------------------------------------------
    def _render_message(self, *_):
        text = self.state.tr(self.state.model_message) if self.state.model_message else ""
        self.message.object = f'<p class="field-message" role="alert">{escape(text)}</p>' if text else ""

    def _render(self, *_):
        s, tr = self.state, self.state.tr
        self.intro.object = (f"<h3>{escape(tr._('A real model’s heads on your sentence'))}</h3><p>" + escape(tr._(
            "{model} is a small pretrained Transformer: {layers} layers of {heads} heads, each with queries and keys "
            "of d_k = {d_k} numbers. Every head runs Section 6’s recipe on your sentence. The model reads English "
            "(it was trained on English text): type an English sentence of up to {limit} word pieces.",
            model=MODEL_NAME, layers=LAYERS, heads=HEADS, d_k=D_K, limit=MAX_TOKENS)) + "</p>")
        self.box.placeholder = tr._("Type a sentence in English")
        self.run.label = tr._("Show its attention")
        self.train.label = tr._("Train this pattern yourself (Train tab)")
        self.layer.name, self.head.name = tr._("Layer"), tr._("Head")
        self.csv.label, self.json.label = tr._("This head as CSV"), tr._("This head as JSON")
        self.grid.xaxis.axis_label, self.grid.yaxis.axis_label = tr.in_plot(tr._("head")), tr.in_plot(tr._("layer"))
        self.matrix.xaxis.axis_label = tr.in_plot(tr._("key"))
        self.matrix.yaxis.axis_label = tr.in_plot(tr._("query"))
        r = s.model_result
        if r is None:
            self.tokens.object = self.behaviour.object = ""
            return
        n = len(r.tokens)
        items = "".join(f'<li data-i="{i}"{" class=special" if t in ("[CLS]", "[SEP]", "[UNK]") else ""}>'
                        f'<span class="i">{i}</span> {escape(t)}</li>' for i, t in enumerate(r.tokens))
        unknown = (" " + escape(tr.ngettext("{n} word is [UNK]: the vocabulary cannot spell it.",
                                            "{n} words are [UNK]: the vocabulary cannot spell them.", r.unknown))
                   if r.unknown else "")
        self.tokens.object = (f"<h4>{escape(tr.ngettext('The model sees {n} token', 'The model sees {n} tokens', n))}"
                              f"</h4><ol class=\"model-tokens\">{items}</ol><p>" + escape(tr._(
                                  "[CLS] and [SEP] are added at the start and the end; ## marks a piece that "
                                  "continues a word.")) + unknown + "</p>")
        self._render_behaviour(r)
        self._maps.data = dict(
            image=[np.ascontiguousarray(r.weights[layer, head, ::-1], dtype=np.float32)
                   for layer in range(LAYERS) for head in range(HEADS)],
            x=[_slot(h) for _ in range(LAYERS) for h in range(HEADS)],
            y=[_slot(LAYERS - 1 - layer) for layer in range(LAYERS) for _ in range(HEADS)],
            dw=[1] * (LAYERS * HEADS), dh=[1] * (LAYERS * HEADS),
            layer=[tr._("layer {layer}", layer=layer + 1) for layer in range(LAYERS) for _ in range(HEADS)],
            head=[tr._("head {head}", head=h + 1) for _ in range(LAYERS) for h in range(HEADS)])
        self.matrix.x_range.update(start=-0.5, end=n - 0.5)
        self.matrix.y_range.update(start=n - 0.5, end=-0.5)
        # a cell of 12 to 36 px: a sentence of 48 word pieces scrolls sideways on a phone, and a short one stays small
        cell = max(12, min(36, 480 // n))
        self.matrix.update(frame_width=n * cell, frame_height=n * cell)
        names = {i: t for i, t in enumerate(r.tokens)}
        for axis in (self.matrix.xaxis, self.matrix.yaxis):  # the tickers changed in place: a new model would
            axis.ticker.ticks = list(range(n))                   # have Bokeh walk the whole page
            axis.major_label_overrides = names
        self._render_choice()

    def _render_behaviour(self, r) -> None:
        tr = self.state.tr
        b = head_behaviour(r.tokens, r.weights)
        sinks = int(((b.cls >= DOES) | (b.sep >= DOES)).sum())
        for kind, button in self.finds.items():
            found = b.strongest(kind)
            button.visible = found is not None
            if found is not None:
                layer, head, mean = found
                button.label = tr._("{kind}: layer {layer}, head {head} ({mean})", kind=tr(KINDS[kind]),
                                    layer=layer + 1, head=head + 1, mean=tr.num(mean, 2))
        self.train.visible = self._on_train is not None and b.strongest("previous") is not None
        previous = b.strongest("previous")
        found = (tr._("Layer {layer}, head {head} puts {mean} of each token’s weight on the token before it: the "
                      "pattern the Train tab’s “Attend to the previous token” teaches one head, found in a real "
                      "model.", layer=previous[0] + 1, head=previous[1] + 1, mean=tr.num(previous[2], 2))
                 if previous is not None and previous[2] >= DOES else
                 tr._("Type a sentence of at least two words to find the head that attends to the previous token."))
        self.behaviour.object = (
            f"<h4>{escape(tr._('Heads by what they do on your sentence'))}</h4><p>" + escape(tr._(
                "Each button opens the head that puts the most weight, on average over your sentence’s tokens, on "
                "the previous token, the next token, itself, [CLS] or [SEP].")) + " " + escape(found) + " " + escape(
                tr.ngettext("{n} of the {total} heads puts over half its weight on [CLS] or [SEP]: the “no-op” Clark "
                            "et al. (2019) describe, where a head parks its attention when its pattern does not apply.",
                            "{n} of the {total} heads put over half their weight on [CLS] or [SEP]: the “no-op” Clark "
                            "et al. (2019) describe, where a head parks its attention when its pattern does not "
                            "apply.", sinks, total=LAYERS * HEADS)) + "</p>")

    def _render_choice(self, *_):
        s, tr, r = self.state, self.state.tr, self.state.model_result
        layer, head = s.model_layer, s.model_head
        if self.layer.value != layer:
            self.layer.value = layer
        if self.head.value != head:
            self.head.value = head
        self._chosen.data = dict(x=[_slot(head) + 0.5], y=[_slot(LAYERS - 1 - layer) + 0.5])
        # the matrix's instruction beside the heading, not in the figure: a title longer than a short sentence's
        # matrix was cut at its edge (German's, 592 px in 216)
        self.heading.object = (f"<h4>{escape(tr._('Layer {layer}, head {head}', layer=layer + 1, head=head + 1))}</h4>"
                               f"<p>{escape(tr._('Click a row: its query’s recipe is below'))}</p>")
        if r is None:
            return
        n, row = len(r.tokens), s.model_row_shown
        w = r.weights[layer, head]
        rows, cols = (a.ravel() for a in np.indices(w.shape))
        self._cells.data = dict(x=cols.tolist(), y=rows.tolist(), weight=w.ravel().tolist(),
                                query=[r.tokens[i] for i in rows], key=[r.tokens[j] for j in cols],
                                label=[tr._("weight {weight}", weight=tr.num(x, 4)) for x in w.ravel()])
        self._row.data = dict(x=[(n - 1) / 2], y=[row], width=[n])
        self.inspector.object = self.recipe_html(r, layer, head, row)

    def recipe_html(self, r, layer: int, head: int, row: int) -> str:
        """Section 6's three steps for one row of one head, with the model's numbers."""
        tr = self.state.tr
        s = r.scores(layer, head, row)
        dots = s * math.sqrt(D_K)
        e = np.exp(s - s.max())
        a = r.weights[layer, head, row]
        top = int(np.argmax(a))

        def signed(x) -> str:  # a negative number with the minus sign, as the page's other tables write it
            return tr.minus_sign(tr.num(x, 4))

        body = "".join(
            f'<tr data-j="{j}"{" class=current" if j == top else ""}><th scope="row">{j} {escape(tr.name(t))}</th>'
            f"<td>{signed(dots[j])}</td><td>{signed(s[j])}</td><td>{tr.num(e[j], 4)}</td>"
            f'<td data-weight="{float(a[j])!r}">{tr.num(a[j], 4)}</td></tr>' for j, t in enumerate(r.tokens))
        steps = "".join(f"<li>{escape(text)}</li>" for text in (
            tr._("Score: s_j = q·k_j / √d_k. The query of {query} is compared with every key, and each dot product "
                 "is divided by √{d_k} = {root}.", query=tr.name(r.tokens[row]), d_k=D_K, root=tr.num(math.sqrt(D_K))),
            tr._("Normalise: a_j = e^(s_j) / Σ e^(s_l). Softmax turns the scores into weights between 0 and 1 "
                 "that add up to 1 (here {total}); subtracting the largest score first changes no weight.",
                 total=tr.num(a.sum(), 4)),
            tr._("Combine: the head’s output for {query} is Σ a_j v_j, a blend of the values ({d_k} numbers each), "
                 "weighted toward the best match: here {key}, with {weight}.", query=tr.name(r.tokens[row]),
                 d_k=D_K, key=tr.name(r.tokens[top]), weight=tr.num(a[top], 4))))
        caption = escape(tr._("Row {query}: layer {layer}, head {head}", query=tr.name(r.tokens[row]), layer=layer + 1,
                              head=head + 1))
        return (f"<ol class=\"model-steps\">{steps}</ol><div class=\"scroll-table\"><table class=\"nums model-recipe\" "
                f"data-query=\"{escape(r.tokens[row])}\"><caption>{caption}</caption><thead><tr>"
                f"<th scope=\"col\">{escape(tr._('key'))}</th><th scope=\"col\">q·k</th>"
                f"<th scope=\"col\">s = q·k/√{D_K}</th><th scope=\"col\">e^(s − max)</th>"
                f"<th scope=\"col\">{escape(tr._('weight'))} a</th></tr></thead><tbody>{body}</tbody></table></div>")

    # --- export -----------------------------------------------------------------------------------------------------
    def numbers(self) -> dict:
        """The chosen head on the sentence: tokens, scores and weights (row = query), queries and keys, in full."""
        s, r = self.state, self.state.model_result
        if r is None:
            return {"model": MODEL_NAME, "sentence": s.sentence, "tokens": []}
        layer, head = s.model_layer, s.model_head
        n = len(r.tokens)
        return {"model": MODEL_NAME, "sentence": s.sentence, "tokens": list(r.tokens), "layer": layer + 1,
                "head": head + 1, "d_k": D_K,
                "scores": [r.scores(layer, head, i).tolist() for i in range(n)],
                "weights": r.weights[layer, head].tolist(),
                "queries": r.queries[layer, head].astype(float).tolist(),
                "keys": r.keys[layer, head].astype(float).tolist()}

    def to_json(self) -> str:
        return json.dumps(self.numbers(), indent=1, ensure_ascii=False)

    def to_csv(self) -> str:
        """One line per (query, key): the score q·k/√d_k and the weight; token names as text cells."""
        d = self.numbers()
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(("layer", "head", "query_index", "query_token", "key_index", "key_token", "score", "weight"))
        tokens = [text_cell(t) for t in d["tokens"]]
        for i, q in enumerate(tokens):
            for j, k in enumerate(tokens):
                writer.writerow((d["layer"], d["head"], i, q, j, k, repr(d["scores"][i][j]), repr(d["weights"][i][j])))
        return out.getvalue()


def model_tab(state, styler=None, on_train=None) -> pn.viewable.Viewable:
    """The tab's contents; its figures restyled by ``styler`` (projector mode, the theme)."""
    view = ModelView(state=state, on_train=on_train)
    if styler is not None:
        styler.add([view.grid, view.matrix])
    return view.__panel__()
