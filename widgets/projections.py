"""The Projections tab: embeddings X, learned projections W_Q, W_K, W_V, and a softmax temperature T.

Module 2: "The three vectors come from three different learned linear projections of the same input:
Q = X W_Q, K = X W_K, V = X W_V." The tab shows "I love NLP" with 2-D embeddings (d_model = 2) and one
head (d_k = d_v = 2), every row of X, Q, K and V as a point:

- the left plane holds the embeddings x_i, which a learner drags;
- the right plane holds the queries, keys and values, and the images e_1 W and e_2 W of the two basis
  vectors under the W chosen beside it: since x W = x_1 (e_1 W) + x_2 (e_2 W), those two arrows are the
  rows of W, and dragging their tips edits W;
- the numbers: X and each W as text boxes (refused input gets a message and changes nothing), the scores
  s = q·k / T, the weights, the outputs, and each row's largest weight and entropy;
- a temperature T for the scores, with sqrt(d_k) the paper's case, and what T -> 0 and T -> inf do.

A drag costs the server two messages, whatever its length: the page computes every position itself
(``link/projections.js``, a mirror of the core checked against it in tests/ui/test_heads.py) and sends
only the press and the release through :class:`link.projections.ProjectionChannel` (the query's drag, which the server
answers along the way, sends a position per round trip: link/drag.py). The session's state takes the
dragged value at the release, computed with the NumPy core, when the page's address, a room's followers and
the export follow.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

import numpy as np
import panel as pn
from bokeh.core.property.validation import without_property_validation
from bokeh.models import Column as BkColumn
from bokeh.models import (
    ColumnDataSource,
    CustomJS,
    Div,
    Scatter,
    Segment,
    Text,
    TextInput,
)
from bokeh.models import Row as BkRow
from bokeh.plotting import figure

from core import I_LOVE_NLP, linear_values_reachable, saturation, self_attention, temperature_sweep
from core.projections import IDENTITY, _combination
from link.projections import PROJECTIONS_JS, ProjectionChannel, handle_names, projection_status
from session.heads import DEFAULT_TEMPERATURE, HEAD_TOKENS, PROJECTION_CHOICES, ROLES
from session.i18n import N_, Translator, translator
from session.state import AttentionState
from widgets.base import BokehPane, DiscreteSlider, View
from widgets.glyphs import draw, labels_placed_in_page, show_extent, shown_extent, true_units
from widgets.query_plot import label_sides
from widgets.style import COMPONENT_CSS, mark_invalid, token_color

STATIC = Path(__file__).resolve().parent.parent / "static"
#: The tabs' look (also widgets/heads.py): sizes and ink from the page's custom properties.
HEADS_CSS = (STATIC / "heads.css").read_text()
#: The page's placement of the planes' labels in screen pixels, after each drawing of a plane.
#: Temperatures on the slider: from nearly argmax to nearly uniform, with sqrt(d_k) among them.
T_STOPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, DEFAULT_TEMPERATURE, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
#: The temperatures the table of limits shows, T -> 0 to T -> inf.
T_TABLE = (0.01, 0.1, 1.0, DEFAULT_TEMPERATURE, 10.0, 100.0)
#: The scalar values of the course's Section 6, which a linear W_V of 2-D embeddings cannot give.
COURSE_VALUES = I_LOVE_NLP.values
#: Markers of the queries, keys and values in the right plane.
ROLE_MARKERS = ("circle", "square", "triangle")


ENGLISH = translator("en")
#: The presets' buttons in the page's language ("Q = K = V = X" is written the same in every language).
PRESET_LABELS = {"Section 6": N_("Section 6")}


def t_label(t: float, tr: Translator = ENGLISH) -> str:
    """How the page writes a temperature: ``0.01``, ``1.4142 = √d_k`` (``0,01`` in French)."""
    return f"{tr.num(t)} = √d_k" if t == DEFAULT_TEMPERATURE else tr.short(t)


def nearest_stop(t: float) -> float:
    """The slider's stop (:data:`T_STOPS`) nearest to temperature ``t`` > 0 on a log scale."""
    return min(T_STOPS, key=lambda stop: abs(math.log(stop / t)))


def styled(widget):
    """A widget or pane with the tabs' stylesheet in its shadow root."""
    widget.stylesheets = [*widget.stylesheets, HEADS_CSS]
    return widget


def text_pane() -> pn.pane.HTML:
    """An empty line of the tabs' text, the width of the tab: the views write its HTML."""
    return styled(pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 5)))


def reach_reason(reach, X, values, tr: Translator = ENGLISH) -> str:
    """Why the values are (or are not) reachable with a linear W_V, as :func:`core.linear_values_reachable`
    says it, in the page's language (the core returns its English sentence with the numbers it is made of)."""
    names, n = HEAD_TOKENS, len(HEAD_TOKENS)
    v = np.asarray(values, dtype=float)
    if reach.reachable:
        if np.linalg.matrix_rank(np.asarray(X, dtype=float)) < np.shape(X)[1]:
            return tr._("Reachable: W_V = {w} (one of many: X's columns are dependent) gives the values {values}.",
                        w=tr.vec(reach.W_V, short=True), values=tr.list_sep.join(tr.short(x) for x in v))
        return tr._("Reachable: W_V = {w} gives the values {values}.", w=tr.vec(reach.W_V, short=True),
                    values=tr.list_sep.join(tr.short(x) for x in v))
    c = reach.dependency
    j = next(i for i in range(n) if abs(c[i] + 1) < 1e-12)
    others = [i for i in range(n) if i != j]
    x_side = tr.mark(_combination(c[others], [f"x_{names[i]}" for i in others]))
    v_side = tr.mark(_combination(c[others], [f"v_{names[i]}" for i in others]))
    products = c[others] * v[others]
    forced = tr.short(float(products.sum()))
    terms = tr.mark(_combination(products, [""] * len(others)))
    need = forced if terms in (forced, "0") else f"{terms} = {forced}"
    return tr._("Not reachable with a linear W_V: x_{token} = {x_side}, so every W_V gives v_{token} = {v_side}; "
                "the values need {need} there, not {value}. Linearly independent embeddings (d_model ≥ {n} here) "
                "make any values reachable.", token=names[j], x_side=x_side, v_side=v_side, need=need,
                value=tr.short(v[j]), n=n)


def identity_weights_text(tr: Translator = ENGLISH) -> str:
    """Why the first preset's weights are not symmetric though its scores are, with its numbers at T = √d_k."""
    a = self_attention(IDENTITY.X, IDENTITY.W_Q, IDENTITY.W_K, IDENTITY.W_V).attention
    i, nlp = HEAD_TOKENS.index("I"), HEAD_TOKENS.index("NLP")
    return tr._(
        "The weights are not symmetric: I gives NLP {i_nlp}, but NLP gives I only {nlp_i} back. The score is "
        "{score} both ways, yet each row is normalised on its own, by its own softmax sum: NLP's row also holds "
        "NLP's score for itself, {own}, the largest of all, which takes {own_weight} of that row and leaves less "
        "for I.", i_nlp=tr.num(a.weights[i, nlp]), nlp_i=tr.num(a.weights[nlp, i]), score=tr.num(a.scores[i, nlp]),
        own=tr.num(a.scores[nlp, nlp]), own_weight=tr.num(a.weights[nlp, nlp]))


def _fit(points: np.ndarray, least: float = 1.5) -> tuple[tuple[float, float], tuple[float, float]]:
    """x and y ranges of equal length holding ``points`` (and the origin) with a margin, at least ±least wide."""
    P = np.vstack([points, [[0.0, 0.0]]])
    lo, hi = P.min(axis=0), P.max(axis=0)
    centre = (lo + hi) / 2
    half = max(least, float((hi - lo).max()) / 2 * 1.25 + 0.4)
    return ((float(centre[0] - half), float(centre[0] + half)), (float(centre[1] - half), float(centre[1] + half)))


#: A point label's columns: screen offsets and anchoring, on the side away from the other points. The page
#: keeps them where they are clear in its pixels, and moves a label elsewhere only where it is not (labels.js).
_PLACED = dict(dx=[], dy=[], align=[], baseline=[])
#: A plane narrower than this (CSS px) goes below the other: side by side on an 800 px screen they were 204 px
#: wide, a projector's frame 162 × 127 px, where five 20 px labels among eleven markers found no room.
PLANE_MIN_WIDTH = 250
#: Screen px from a point to its label (across, up), by mode: a projector's markers are larger.
_LABEL_OFFSETS = {"normal": (10, 5), "projector": (16, 9)}


def _placed(points, among, fig, mode: str) -> dict:
    """Label columns for ``points``: each on the side facing away from the others of ``among``, the side the page
    tries first when it places the labels in its pixels (widgets/labels.js)."""
    mx, my = _LABEL_OFFSETS[mode]
    (x0, x1), (y0, y1) = shown_extent(fig)
    bounds = (min(x0, y0), max(x1, y1))
    sides = label_sides(points, among, bounds).tolist()
    return dict(dx=[mx * sx for sx, _ in sides], dy=[-my * sy for _, sy in sides],  # screen y runs down
                align=["left" if sx > 0 else "right" for sx, _ in sides],
                baseline=["bottom" if sy > 0 else "top" for _, sy in sides])


def _plane(name: str, title: str) -> figure:
    fig = figure(name=name, title=title, width=258, height=258, tools="save", toolbar_location=None,
                 sizing_mode="scale_width", max_width=400, min_width=180)
    true_units(fig, (-1.5, 1.5), (-1.5, 1.5))  # a projection's angles and lengths true on every screen
    fig.title.text_font_size = "15px"
    fig.axis.major_label_text_font_size = "14px"
    fig.axis.ticker.desired_num_ticks = 4  # projector-sized labels do not crowd a small plane
    # Only the page knows the plane's size in pixels and its text's: it moves a label that would cover a marker
    # or another label (widgets/labels.js)
    labels_placed_in_page(fig)
    return fig


class ProjectionsView(View):
    """The Projections tab over ``state``: planes, numbers, presets, the temperature.

    Test hooks: the planes are the figures ``projection-x`` and ``projection-w``; the numbers the ``Div``
    ``projection-numbers`` (cells ``[data-m][data-i][data-j]``, m one of scores, weights, output, maxWeight,
    entropy), the outputs' line ``projection-status``; the text boxes carry ``field-x-<row>-<axis>``,
    ``field-w<role>-<row>-<col>`` and ``field-t``; the table of temperatures is ``projection-limits``.
    """

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self._syncing = False
        self._reach_for = None  # the embeddings the note on the course's values was written for
        self._resend = False  # _send sends equal data too (_redraw)
        # --- the planes; named, the page's drag script writes into them -------------------------------------
        self._x_points = ColumnDataSource(data=dict(x=[], y=[], label=[], color=[], **_PLACED),
                                          name="projection-x-points")
        self._basis = ColumnDataSource(data=dict(x0=[], y0=[], x=[], y=[], label=[], **_PLACED),
                                       name="projection-basis")
        self._qkv = ColumnDataSource(data=dict(x=[], y=[], marker=[], color=[], alpha=[], label=[], **_PLACED),
                                     name="projection-qkv")
        self.x_fig = _plane("projection-x", s.tr.in_plot(s.tr._("Embeddings X")))
        draw(self.x_fig, Scatter, self._x_points, "x", "y", size=15, color="color", marker="circle")
        draw(self.x_fig, Text, self._x_points, "x", "y", text="label", x_offset="dx", y_offset="dy",
             text_align="align", text_baseline="baseline", text_font_size="14px",
             text_color="color", text_font_style="bold")
        self.w_fig = _plane("projection-w", "Q ●  K ■  V ▲")
        draw(self.w_fig, Segment, self._basis, "x0", "y0", "x", "y", line_color="#444444", line_width=3)
        draw(self.w_fig, Scatter, self._qkv, "x", "y", size=13, color="color", marker="marker", fill_alpha="alpha",
             line_alpha="alpha")
        draw(self.w_fig, Scatter, self._basis, "x", "y", size=15, fill_color="white", line_color="#444444",
             line_width=3, marker="circle")
        draw(self.w_fig, Text, self._qkv, "x", "y", text="label", x_offset="dx", y_offset="dy",
             text_align="align", text_baseline="baseline", text_font_size="14px",
             text_color="color", text_font_style="bold")
        draw(self.w_fig, Text, self._basis, "x", "y", text="label", x_offset="dx", y_offset="dy", text_align="align",
             text_baseline="baseline", text_font_size="14px", text_color="#444444", text_font_style="bold")
        self.numbers = Div(name="projection-numbers", sizing_mode="stretch_width", stylesheets=[HEADS_CSS])
        self.status = Div(name="projection-status", sizing_mode="stretch_width", stylesheets=[HEADS_CSS],
                          render_as_text=True, css_classes=["status"],
                          html_attributes={"role": "status", "aria-live": "off"})
        bounds = {plane: shown_extent(fig) for plane, fig in (("x", self.x_fig), ("w", self.w_fig))}
        self.channel = ProjectionChannel(bounds, self._redraw, lambda: self.status.text, state=s)
        self._wire_drag()

        # --- controls ------------------------------------------------------------------------------------------
        tr = s.tr
        self.presets = [styled(pn.widgets.Button(label=tr(PRESET_LABELS.get(name, name))))
                        for name in PROJECTION_CHOICES[:2]]
        for button, name in zip(self.presets, PROJECTION_CHOICES[:2], strict=True):
            button.on_click(lambda _, name=name: self.state.load_projection_preset(name))
        self.new_draw = styled(pn.widgets.Button(label=tr._("New draw"), color="primary"))
        self.new_draw.on_click(lambda _: self.state.new_projection_draw())
        self.role = styled(pn.widgets.RadioButtonGroup(options=list(ROLES), value=ROLES[0]))
        self.role.param.watch(self._on_role, "value")
        self.head_choice = styled(pn.widgets.RadioButtonGroup(options=self._head_options(), value=s.head,
                                                              visible=s.heads > 1))
        self.head_choice.param.watch(self._on_head, "value")
        self._inputs: dict[tuple, TextInput] = {}
        self._shown: dict[tuple, str] = {}  # the text each box was last given: its value says the state's number
        # shown by its text, never by `visible`: a pane shown or hidden makes BokehJS lay the page out anew, which
        # scrolled the tab back to its top, away from the box just refused
        self.field_message = text_pane()
        grids = [self._grid("X", "x", [f"x_{t}" for t in HEAD_TOKENS], 3)]
        grids += [self._grid(name, f"w{k}", ["e₁", "e₂"], 2) for k, name in enumerate(ROLES)]

        self.t_slider = styled(DiscreteSlider(
            label=tr._("Temperature T"), options={t_label(t, tr): t for t in T_STOPS}, value=DEFAULT_TEMPERATURE,
            width=300))
        self.t_slider.param.watch(self._on_t_slider, "value")
        self.t_input = self._field(("t",), "field-t", width=110)
        self.t_reset = styled(pn.widgets.Button(label="T = √d_k"))
        self.t_reset.on_click(lambda _: self.state.set_temperature(DEFAULT_TEMPERATURE))
        self.t_row = styled(pn.widgets.RadioButtonGroup(options=list(HEAD_TOKENS), value=HEAD_TOKENS[1]))
        self.t_row.param.watch(self._render_limits, "value")
        # Bokeh Divs rather than Panel HTML panes: both change at every release, and a pane re-renders all its HTML
        self.limits = Div(name="projection-limits", sizing_mode="stretch_width", stylesheets=[HEADS_CSS])
        self.reachable = Div(sizing_mode="stretch_width", stylesheets=[HEADS_CSS])
        self.title = text_pane()
        self._texts = [text_pane() for _ in range(4)]
        self._row_label = styled(pn.pane.HTML("", margin=(8, 5)))
        self._relabel()

        self._layout = pn.Column(
            self.title,
            pn.FlexBox(*self.presets, self.new_draw, self.head_choice, self.role, align_items="center"),
            # side by side where both get PLANE_MIN_WIDTH, else one above the other: a plane of a short screen's
            # projector or a phone had a 130 px frame, too small for its labels. Square, up to 400 px
            pn.FlexBox(*(BokehPane(fig, sizing_mode="stretch_width", max_width=400, min_width=PLANE_MIN_WIDTH,
                                       margin=(5, 4), styles={"flex": f"1 1 {PLANE_MIN_WIDTH}px"})
                         for fig in (self.x_fig, self.w_fig)), flex_wrap="wrap", sizing_mode="stretch_width",
                       max_width=820, margin=(0, 8, 0, 0)),
            BokehPane(self.status, sizing_mode="stretch_width"),
            BokehPane(self.numbers, sizing_mode="stretch_width"),
            self._texts[0], self._texts[1], BokehPane(self.reachable, sizing_mode="stretch_width"), self._texts[2],
            pn.FlexBox(*grids), self.field_message,
            self._texts[3],
            pn.FlexBox(self.t_slider, self.t_input, self.t_reset, align_items="center"),
            pn.FlexBox(self._row_label, self.t_row, align_items="center"),
            BokehPane(self.limits, sizing_mode="stretch_width"),
            name="projections", css_classes=["heads-tab"], sizing_mode="stretch_both", scroll=True,
            stylesheets=[HEADS_CSS],
        )
        s.param.watch(self._on_lang, "lang")
        s.param.watch(self._render, ["embeddings", "projections", "head", "temperature", "mode"])
        s.param.watch(self._on_heads, "heads")
        s.param.watch(self._on_message, ["message", "message_field"])
        self._on_heads()
        self._render()

    # --- building ---------------------------------------------------------------------------------------------------

    def _wire_drag(self) -> None:
        c = self.channel
        models = dict(inputs=c.inputs, channel=c.channel, confirmed=c.confirmed, x_fig=self.x_fig, w_fig=self.w_fig,
                      x_points=self._x_points, basis=self._basis, qkv=self._qkv, numbers=self.numbers,
                      status=self.status)
        bundle = "const a = {" + ", ".join(models) + "};\n"
        # One callback takes the planes' pointers (link/outbox.js: listenToPointer, not Bokeh's pan, which a slow
        # finger never starts), run where each plane is drawn (its ticks' formatter, see _plane), so a plane drawn
        # anew (the tab shown again, projector mode) is listened to again; one takes the server's answers.
        attach = CustomJS(args=models, code=PROJECTIONS_JS + bundle + "attachPlanes(a);")
        for fig in (self.x_fig, self.w_fig):
            formatter = fig.xaxis[0].formatter
            formatter.args = {**formatter.args, "attach": attach}
            formatter.code = formatter.code.replace("place.execute(fig);",
                                                    "{ place.execute(fig); attach.execute(fig); }")
        c.confirmed.js_on_change("data", CustomJS(args=models, code=PROJECTIONS_JS + bundle + "onProjectionAnswer(a);"))

    def _head_options(self) -> dict:
        tr = self.state.tr
        return {tr._("Head {n}", n=h + 1): h for h in range(self.state.heads)}

    def _relabel(self) -> None:
        """The tab's own words in the page's language (its numbers are redrawn by _render)."""
        tr = self.state.tr
        for button, name in zip(self.presets, PROJECTION_CHOICES[:2], strict=True):
            label = tr(PRESET_LABELS.get(name, name))
            button.param.update(label=label, description=tr._("Load {name} into X and this head", name=label))
        self.new_draw.param.update(label=tr._("New draw"), description=tr._("Random W_Q, W_K, W_V (the next seed)"))
        self.role.param.update(label=tr._("Drag the rows of"),
                               description=tr._("Which W the right plane shows and edits"))
        self.t_slider.param.update(label=tr._("Temperature T"), options={t_label(t, tr): t for t in T_STOPS},
                                   value=self.t_slider.value)
        self.t_reset.description = tr._("The paper's scaling: T = √2")
        self.x_fig.title.text = tr.in_plot(tr._("Embeddings X"))
        self.t_row.label = tr._("Row")
        self._row_label.object = f"<span class='label'>{escape(tr._('Row'))}</span>"
        self._texts[0].object = "<p>" + tr._(
            "q = x W<sub>Q</sub> asks, k = x W<sub>K</sub> offers, v = x W<sub>V</sub> is read: <q>three different "
            "learned linear projections of the same input</q> (Module 2). Drag an embedding x (left), or the tip of "
            "e₁W or e₂W (right) for the W chosen above: those two arrows are the rows of W, since x W = x₁ (e₁W) + "
            "x₂ (e₂W). The chosen W's points are solid and named.") + "</p>"
        self._texts[1].object = "<p class='note'>" + tr._(
            "<strong>Q = K = V = X</strong> (the first preset) computes, but the roles are indistinguishable: the "
            "scores X Xᵀ are symmetric, s(I, love) = s(love, I) for every pair, and x·x = |x|² makes each token "
            "score itself highly. Module 2: skip the projections and <q>you have removed the learning surface</q>. "
            "Learned W<sub>Q</sub> ≠ W<sub>K</sub> break the symmetry: drag e₁W<sub>Q</sub> and watch the scores "
            "table lose it.") + " " + identity_weights_text(tr) + "</p>"
        self._texts[2].object = f"<h4>{escape(tr._('The numbers'))}</h4><p>" + tr._(
            "Type a number and press Enter: X (one row per token), and the shown head's W<sub>Q</sub>, "
            "W<sub>K</sub>, W<sub>V</sub> (row r is e<sub>r</sub>W).") + "</p>"
        self._texts[3].object = (f"<h4>{escape(tr._('Temperature: s = q·k / T'))}</h4><p>" + tr._(
            "T = √d<sub>k</sub> = {sqrt2} is the paper's scaling. As T → 0 the softmax becomes argmax: all the "
            "weight on the largest score (equal scores share it), and the output is that token's value. As T → ∞ "
            "every weight tends to 1/3 (entropy ln 3 = {ln3} nats) and the output to the mean of the values.",
            sqrt2=tr.num(DEFAULT_TEMPERATURE), ln3=tr.num(math.log(3))) + "</p>")

    def _on_lang(self, *_) -> None:
        self._reach_for = None  # the note on the course's values is in words: written again in the new language
        with pn.io.hold():
            self._relabel()
            self._on_heads()
            self._render()

    def _field(self, key: tuple, css: str, width: int = 84) -> TextInput:
        # Bokeh's own text box, not Panel's: a release sets two, and Panel's widget syncs each set through its params
        w = TextInput(width=width, margin=(2, 3), css_classes=[css], stylesheets=[COMPONENT_CSS, HEADS_CSS])
        w.on_change("value", lambda attr, old, new, key=key: self._on_input(key, new))
        self._inputs[key] = w
        return w

    def _grid(self, title: str, kind: str, rows: list[str], n: int) -> pn.pane.Bokeh:
        # Bokeh's own layouts and Divs, one Panel pane around them: built of Panel rows and panes (a pane for
        # each label and each box), the four grids were about half the tab's first showing, one turn of the
        # server's loop that every other page waits behind (bench/HISTORY.md)
        def label(html, width, css=()):
            return Div(text=f"<span class='label'>{html}</span>", width=width, margin=(6, 3, 6, 3),
                       css_classes=list(css), stylesheets=[HEADS_CSS])
        # the rows' names widen with projector text (heads.css: .row-name): at 70 px "x_love" ran into its box
        head = BkRow(children=[label(title, 70, ["row-name"]), label("[1]", 84), label("[2]", 84)])
        body = [BkRow(children=[label(escape(rows[i]), 70, ["row-name"]),
                                *(self._field((kind, i, c), f"field-{kind}-{i}-{c}") for c in range(2))])
                for i in range(n)]
        return BokehPane(BkColumn(children=[head, *body], margin=(0, 12, 6, 0)), margin=0)

    # --- input ------------------------------------------------------------------------------------------------------

    def _on_input(self, key: tuple, text: str) -> None:
        # The view's own writes come back here too, after the document's hold: the text it wrote is no input
        if self._syncing or text == self._shown.get(key):
            mark_invalid(self._inputs[key], False)
            return
        s = self.state
        with pn.io.hold():
            if key[0] == "x":
                ok = s.set_embedding(key[1], key[2], text)
            elif key[0] == "t":
                ok = s.set_temperature(text)
            else:
                ok = s.set_projection(int(key[0][1]), key[1], key[2], text)
            if not ok:
                mark_invalid(self._inputs[key])
                self._show_message()

    def _on_role(self, event) -> None:
        self.channel.role = ROLES.index(event.new)
        self._render()

    def _on_head(self, event) -> None:
        if not self._syncing and event.new is not None:
            self.state.select_head(int(event.new))

    def _on_t_slider(self, event) -> None:
        if not self._syncing:
            self.state.set_temperature(event.new)

    def _on_heads(self, *_) -> None:
        s = self.state
        self._syncing = True
        try:
            self.head_choice.param.update(options=self._head_options(), value=s.head, visible=s.heads > 1)
        finally:
            self._syncing = False

    def _on_message(self, *_) -> None:
        if not self.state.message:
            self.field_message.object = ""

    def _show_message(self) -> None:
        self.field_message.object = (f'<div class="field-message" role="alert">'
                                     f'{escape(self.state.tr(self.state.message))}</div>')

    # --- rendering --------------------------------------------------------------------------------------------------

    # the data is the core's numbers in lists this method builds: Bokeh's checks of every element would be
    # the largest part of a release's cost (bench/channel_cost.py)
    @without_property_validation
    def _render(self, *_) -> None:
        s = self.state
        r = s.head_self_attention()
        X, (Q, K, V) = np.asarray(s.embeddings, dtype=float), r.projections
        W = np.asarray(s.projections[s.head], dtype=float)
        role = self.channel.role
        colors = [token_color(i) for i in range(len(HEAD_TOKENS))]
        for plane, fig, points in (("x", self.x_fig, X), ("w", self.w_fig, np.vstack([Q, K, V, W[role]]))):
            self.channel.bounds[plane] = fit = _fit(points)
            show_extent(fig, *fit)  # mostly it stays: a Bokeh set costs even when unchanged
        names = handle_names(role)
        self._send(self._x_points, dict(x=X[:, 0].tolist(), y=X[:, 1].tolist(), label=list(HEAD_TOKENS),
                                        color=colors, **_placed(X, X, self.x_fig, s.mode)))
        P = np.vstack([Q, K, V])
        among = np.vstack([P, W[role], [[0.0, 0.0]]])
        n = len(X)
        # the right plane's labels in one pass: each point's side depends only on the others of `among`
        placed = _placed(np.vstack([P, W[role]]), among, self.w_fig, s.mode)
        qkv_place, tips = ({k: v[:3 * n] for k, v in placed.items()}, {k: v[3 * n:] for k, v in placed.items()})
        # a tip on a labelled point (x_love = e₂, so q_love = e₂W_Q): the other side
        on = np.isclose(W[role][:, None, :], P[role * n:(role + 1) * n][None, :, :]).all(axis=2)  # (2, n)
        for b, j in zip(*np.nonzero(on), strict=True):
            i = role * n + int(j)
            tips["dx"][b], tips["dy"][b] = -qkv_place["dx"][i], -qkv_place["dy"][i]
            tips["align"][b] = "right" if qkv_place["align"][i] == "left" else "left"
            tips["baseline"][b] = "top" if qkv_place["baseline"][i] == "bottom" else "bottom"
        self._send(self._basis, dict(x0=[0.0, 0.0], y0=[0.0, 0.0], x=W[role][:, 0].tolist(),
                                     y=W[role][:, 1].tolist(), label=names["w"], **tips))
        # the chosen W's points are labelled and solid, the other two faint
        self._send(self._qkv, dict(x=P[:, 0].tolist(), y=P[:, 1].tolist(), marker=[m for m in ROLE_MARKERS for _ in X],
                                   color=colors * 3, alpha=[1.0 if k == role else 0.35 for k in range(3) for _ in X],
                                   label=[t if k == role else "" for k in range(3) for t in HEAD_TOKENS],
                                   **qkv_place))
        self.numbers.text = self._numbers_html(r)
        tr = s.tr
        self.status.text = projection_status(r, tr=tr)
        head = " · " + tr._("head {n} of {m}", n=s.head + 1, m=s.heads) if s.heads > 1 else ""
        title = f"<h3>Q = X W<sub>Q</sub>, K = X W<sub>K</sub>, V = X W<sub>V</sub>{escape(head)}</h3>"
        if self.title.object != title:  # a pane's update costs about a millisecond even for the same text
            self.title.object = title
        if self._reach_for is not s.embeddings:  # a drag of W's rows leaves X, and this note, as they were
            self._reach_for = s.embeddings
            self._render_reachable(X)
        self._sync_inputs(X, W)
        self._render_limits()

    def _send(self, source: ColumnDataSource, data: dict) -> None:
        # In a document Bokeh sends a data source's data even when it equals the old. The page's preview draws over
        # a plane's data during a drag and puts back the server's at the release unless newer came, so data equal
        # to the source's own (X in a drag of W's rows) need not go again. Compared with the source itself, not
        # with what was sent: whatever a page wrote into it is replaced at the next render.
        if self._resend or source.data != data:
            source.data = data

    def _redraw(self) -> None:
        """Send the state's planes again in full: a release that changed nothing takes back the page's preview."""
        self._resend = True
        try:
            self._render()
        finally:
            self._resend = False

    def _render_reachable(self, X) -> None:
        reach = linear_values_reachable(X, COURSE_VALUES, HEAD_TOKENS)
        tr = self.state.tr
        self.reachable.text = "<p class='note'>" + tr._(
            "<strong>Why not the course's values 2, 6, 4?</strong> With two embedding dimensions, three embeddings "
            "are always linearly dependent, and a linear W<sub>V</sub> keeps that dependency in the values. For this "
            "X (each value's first coordinate): {reason} What it would take: a third embedding dimension, "
            "x<sub>NLP</sub> = {x} with W<sub>V</sub> = {w} (then v<sub>NLP</sub> = 2 + 6 − 4 = 4), or a "
            "non-linear map.",
            reason=escape(reach_reason(reach, X, COURSE_VALUES, tr)),
            x=tr.vec((1, 1, 1), short=True), w=tr.vec((2, 6, -4), short=True).replace("-", "−")) + "</p>"

    def _numbers_html(self, r) -> str:
        """Scores, weights, outputs, largest weights and entropies; each cell names what it holds, for the drag."""
        a = r.attention
        sat = saturation(a.weights)
        tokens = [escape(t) for t in HEAD_TOKENS]
        T, tr = self.state.temperature, self.state.tr

        def table(caption, columns, rows):
            head = "".join(f"<th scope='col'>{c}</th>" for c in columns)
            return (f"<table class='nums'><caption>{caption}</caption><thead><tr><th></th>{head}</tr></thead><tbody>"
                    + "".join(rows) + "</tbody></table>")

        def cells(m, i, values):
            return "".join(f"<td data-m='{m}' data-i='{i}' data-j='{j}'>{tr.num(x)}</td>" for j, x in enumerate(values))

        scores = [f"<tr><th scope='row'>q {t}</th>{cells('scores', i, a.scores[i])}</tr>"
                  for i, t in enumerate(tokens)]
        weights = [f"<tr><th scope='row'>q {t}</th>{cells('weights', i, a.weights[i])}</tr>"
                   for i, t in enumerate(tokens)]
        outputs = [f"<tr><th scope='row'>{t}</th>{cells('output', i, a.output[i])}"
                   f"<td data-m='maxWeight' data-i='{i}'>{tr.num(sat.max_weight[i])}</td>"
                   f"<td data-m='entropy' data-i='{i}'>{tr.num(sat.entropy[i])}</td></tr>"
                   for i, t in enumerate(tokens)]
        keys = [f"k {t}" for t in tokens]
        return ("<div class='tables'>"
                + table(escape(tr._("Scores s = q·k / T (T = {t})", t=tr.num(T))), keys, scores)
                + table(escape(tr._("Weights a = softmax(s)")), keys, weights)
                + table(escape(tr._("Output Σ aⱼvⱼ, largest weight, entropy (nats)")), ["[1]", "[2]", "max a", "H"],
                        outputs)
                + "</div>")

    def _render_limits(self, *_) -> None:
        """The chosen row's weights and output as T goes from nearly 0 to nearly ∞, and at the current T."""
        s = self.state
        tr = s.tr
        i = HEAD_TOKENS.index(self.t_row.value)
        p = s.head_self_attention().projections  # the render's own, kept by the state
        # every temperature in one core call: one at a time, the table was a sixth of a drag's release
        r = temperature_sweep(p.Q[i], p.K, p.V, sorted({*T_TABLE, float(s.temperature)}))
        sat = saturation(r.weights)
        weights, outputs = [], []
        T = s.temperature  # a param's read costs as much as a row's formatting
        for k, t in enumerate(r.temperatures.tolist()):
            current = " class='current'" if t == T else ""
            # √d_k's row by name only: its number is in the scores' caption, and the table fits a projector
            head = f"<tr{current}><th scope='row'>{'√d_k' if t == DEFAULT_TEMPERATURE else tr.short(t)}</th>"
            weights.append(head + "".join(f"<td>{tr.num(w)}</td>" for w in r.weights[k]) + "</tr>")
            outputs.append(head + "".join(f"<td>{tr.num(o)}</td>" for o in r.output[k])
                           + f"<td>{tr.num(float(sat.max_weight[k]))}</td>"
                             f"<td>{tr.num(float(sat.entropy[k]))}</td></tr>")
        token = self.t_row.value
        keys = "".join(f"<th scope='col'>a {escape(t)}</th>" for t in HEAD_TOKENS)
        # two tables, side by side when the tab is wide enough: each fits a 1024 px projector on its own
        self.limits.text = (
            "<div class='tables'>"
            f"<table class='nums'><caption>{escape(tr._('Query of {token}: weights as T changes', token=token))}"
            "</caption>"
            f"<thead><tr><th scope='col'>T</th>{keys}</tr></thead><tbody>{''.join(weights)}</tbody></table>"
            f"<table class='nums'><caption>{escape(tr._('Its output, largest weight, entropy H (nats)'))}</caption>"
            f"<thead><tr><th scope='col'>T</th><th scope='col'>{escape(tr._('out [1]'))}</th>"
            f"<th scope='col'>{escape(tr._('out [2]'))}</th>"
            "<th scope='col'>max a</th><th scope='col'>H</th></tr></thead>"
            f"<tbody>{''.join(outputs)}</tbody></table></div>"
            f"<p>{escape(tr._('The current T is outlined.'))}</p>")

    def _sync_inputs(self, X, W) -> None:
        s = self.state
        tr = s.tr
        texts = {("x", i, c): tr.short(X[i, c]) for i in range(3) for c in range(2)}
        texts.update({(f"w{k}", i, c): tr.short(W[k, i, c]) for k in range(3) for i in range(2) for c in range(2)})
        texts[("t",)] = tr.short(s.temperature)
        self._syncing = True
        try:
            for key, text in texts.items():  # only the boxes that differ: each set is a change the page is sent
                w = self._inputs[key]
                self._shown[key] = text
                if w.value != text:  # the page shows value; value_input is only what a learner types
                    w.value = text
                mark_invalid(w, False)
            nearest = nearest_stop(s.temperature)
            if self.t_slider.value != nearest:
                self.t_slider.value = nearest
            if self.head_choice.value != s.head:
                self.head_choice.value = s.head
        finally:
            self._syncing = False
        if self.field_message.object:  # a Panel pane's set costs a fraction of a millisecond, even unchanged
            self.field_message.object = ""


def projections_tab(state: AttentionState, styler=None) -> pn.viewable.Viewable:
    """The tab's contents, its figures restyled by ``styler`` (a :class:`~widgets.style.FigureStyler`)."""
    view = ProjectionsView(state=state)
    if styler is not None:
        styler.add([view.x_fig, view.w_fig])
    return view.__panel__()
