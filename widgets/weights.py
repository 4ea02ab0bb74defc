"""The selected query's weights as bars, its output on the values' number line, and vector values in a plane."""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Div, Scatter, Segment, Text
from bokeh.plotting import figure

from link.rules import readout_words, value_size
from link.shown import PlotsShown
from widgets.base import BokehPane, View
from widgets.glyphs import draw, labels_placed_in_page, show_extent, true_units
from widgets.style import token_color

#: The SVG charts' look: text sizes and ink from the page's custom properties (static/theme.css).
CHARTS_CSS = (Path(__file__).resolve().parent.parent / "static" / "charts.css").read_text()


#: Text size (CSS px) of the numbers the SVG charts are laid out for, by mode (static/charts.css).
CHART_FONT = {"normal": 16, "projector": 22}
#: A bar's number sits this far (px) above its bar; the page's drag preview reads it from the chart (data-gap).
BAR_LABEL_GAP = 6
def bar_y(w, top, bottom):
    """The top (px) of the bar of weight ``w`` in a chart whose bars stand on ``bottom`` and reach ``top`` at weight 1
    (the page's drag preview: link/drag.js, barY)."""
    return bottom - w * (bottom - top)


def _x(j: int, n: int) -> float:
    """Centre of bar ``j`` of ``n``, in % of the chart's width."""
    return 100 * (j + 0.5) / n


def _heading(text: str) -> str:
    """A chart's title as page text above its SVG: it wraps on a narrow screen (an SVG text would run off)."""
    return f'<p class="heading">{escape(text)}</p>'


class WeightBars(View):
    """One bar per key: the softmax weight a_i of the selected query, printed above it.

    Drawn as one SVG in a Bokeh ``Div`` (``name="weight-bars"``), not a Bokeh figure: a figure is about 30
    models for the server to build for every page, this is one. Widths are in % of the chart, so it fills
    whatever width it is given; text sizes come from CSS (``static/charts.css``), in the theme's ink, and
    the layout makes room for them in each mode. Each bar carries ``data-weight``; the page's drag script
    moves the bars during a drag (``link/drag.js``). ``shown`` is what is drawn, for tests.
    """

    plots = param.ClassSelector(class_=PlotsShown, doc="What the plots show during a drag (link/shown.py).")

    def __init__(self, **params):
        super().__init__(**params)
        self.plots = self.plots or PlotsShown(state=self.state)
        # focusable: where the Weights tab is taller than its space it scrolls, and a keyboard reaches a scrolling
        # region only through something focusable inside it (axe: scrollable-region-focusable)
        self.div = Div(name="weight-bars", sizing_mode="stretch_width", stylesheets=[CHARTS_CSS],
                       css_classes=["chart"], html_attributes={"tabindex": "0"})
        self.shown: dict = {}
        self._layout = BokehPane(self.div, sizing_mode="stretch_width")
        self.plots.param.watch(self._render, "result")
        self.render_on("tokens", "guided", "step", "mode", "lang")

    def _render(self, *_):
        s = self.state
        tr = s.tr
        w = self.plots.result.weights[s.selected]
        n, num = len(w), CHART_FONT[s.mode]
        top = round(num * 1.4 + 4)  # room for a bar's number above it
        # a weight of 1 is this tall (px); less on a projector, whose larger text leaves a 1024x768 screen's
        # Weights tab too little room for the number line below
        bottom = top + (120 if s.mode == "normal" else 96)
        height = bottom + round(num * 1.6)
        revealed = s.revealed(2)
        self.shown = dict(top=w.tolist() if revealed else [], label=[tr.num(a) for a in w] if revealed else [])
        parts = [f'<line class="axis" x1="0" x2="100%" y1="{bottom}" y2="{bottom}"/>']
        width = 70 / n  # % of the chart: bars take 70 % of their slot
        for j, (token, a) in enumerate(zip(s.tokens, w, strict=True)):
            x = _x(j, n)
            if revealed:
                y = bar_y(a, top, bottom)
                parts += [f'<rect class="bar" data-j="{j}" data-weight="{float(a)!r}" x="{x - width / 2:.3f}%" '
                          f'width="{width:.3f}%" y="{y:.2f}" height="{bottom - y:.2f}" fill="{token_color(j)}"/>',
                          f'<text class="value" data-j="{j}" x="{x:.3f}%" y="{y - BAR_LABEL_GAP:.2f}" '
                          f'text-anchor="middle">{tr.num(a)}</text>']
            else:  # the step-through: a "?" stands where each bar will be, so the picture gives nothing away
                parts.append(f'<text class="unknown" x="{x:.3f}%" y="{(top + bottom) / 2:.0f}" text-anchor="middle" '
                             f'dominant-baseline="middle">?</text>')
            parts.append(f'<text class="token" x="{x:.3f}%" y="{height - 4}" text-anchor="middle">'
                         f'{escape(token)}</text>')
        label = tr._("Softmax weights: {list}", list=tr.list_sep.join(f"{t} {tr.num(a) if revealed else '?'}"
                                                                      for t, a in zip(s.tokens, w, strict=True)))
        self.div.text = (_heading(tr._("Softmax weights a = softmax(s)")) +
                         f'<svg class="bars" width="100%" height="{height}" data-top="{top}" data-bottom="{bottom}" '
                         f'data-gap="{BAR_LABEL_GAP}" '
                         f'role="img" aria-label="{escape(label)}">{"".join(parts)}</svg>')


class OutputLine(View):
    """The values v_i on a number line from min(v) to max(v), and the output Σ a_i v_i on it.

    One SVG in a Bokeh ``Div`` (``name="output-line"``), like :class:`WeightBars`: positions in % of the
    width, text sizes from CSS, drawn left to right in every language (static/charts.css). The values' labels
    take turns above the line when two would touch, and the output's marker and number sit below it, so nothing
    is drawn over anything else. ``shown`` is what is drawn, for tests.
    """

    plots = param.ClassSelector(class_=PlotsShown, doc="What the plots show during a drag (link/shown.py).")

    def __init__(self, **params):
        super().__init__(**params)
        self.plots = self.plots or PlotsShown(state=self.state)
        self.div = Div(name="output-line", sizing_mode="stretch_width", stylesheets=[CHARTS_CSS],
                       css_classes=["chart"], html_attributes={"tabindex": "0"})  # as the bars
        self.shown: dict = {}
        self._layout = BokehPane(self.div, sizing_mode="stretch_width")
        self.plots.param.watch(self._render, "result")
        self.render_on("tokens", "values", "guided", "step", "mode", "lang")

    def _render(self, *_):
        s = self.state
        tr = s.tr
        v = np.asarray(s.values, dtype=float)
        if v.ndim != 1:  # vector values: ValuePlane shows them instead
            return
        num = CHART_FONT[s.mode]
        lo, hi = float(v.min()), float(v.max())
        pad = max(0.1 * (hi - lo), 0.5)
        lo, hi = lo - pad, hi + pad

        def at(x: float) -> float:
            return 100 * (x - lo) / (hi - lo)

        out = float(self.plots.result.output[s.selected])
        # value labels in rows above the line: a label goes one row up when it would touch the one before
        order = np.argsort(v, kind="stable")
        rows, last_end = {}, {}
        for j in order:
            # the name isolated (Translator.name_in_plot): after an Arabic name, "= 2" was drawn "2 =" before it
            text = f"v {tr.name_in_plot(s.tokens[j])} = {tr.short(v[j], 2)}"
            # % of a 420 px chart; wider charts have room to spare (the isolate's two marks take none)
            width = 100 * 0.6 * num * (len(text) - 2) / 420
            x = at(v[j])
            start = x if x < 15 else x - width if x > 85 else x - width / 2  # as the label is anchored below
            row = next(r for r in range(len(v) + 1) if last_end.get(r, -1e9) < start)
            rows[j], last_end[row] = (row, text), start + width
        n_rows = 1 + max(r for r, _ in rows.values())
        line_y = round(n_rows * num * 1.3 + 8)
        height = line_y + round(num * 3.2)
        parts = [f'<line class="axis" x1="2%" x2="98%" y1="{line_y}" y2="{line_y}"/>']
        for j, (row, text) in rows.items():
            x = at(v[j])
            parts += [f'<line class="tick" x1="{x:.3f}%" x2="{x:.3f}%" y1="{line_y - 10}" y2="{line_y + 10}" '
                      f'stroke="{token_color(j)}"/>',
                      # near an end of the line a label runs inwards, so it is never cut off
                      f'<text class="value" x="{x:.3f}%" y="{line_y - 14 - row * num * 1.3:.1f}" '
                      f'text-anchor="{"start" if x < 15 else "end" if x > 85 else "middle"}">{escape(text)}</text>']
        revealed = s.revealed(3)
        self.shown = dict(x=[out] if revealed else [], label=[tr.num(out)] if revealed else [])
        if revealed:
            parts += [f'<text class="marker" data-output="marker" x="{at(out):.3f}%" y="{line_y + num * 1.2:.1f}" '
                      'text-anchor="middle">▲</text>',
                      f'<text class="output" data-output="label" x="{at(out):.3f}%" y="{line_y + num * 2.5:.1f}" '
                      f'text-anchor="middle">{tr.num(out)}</text>']
        else:  # the step-through: the output is not shown yet, below the line where it will be
            parts.append(f'<text class="unknown" x="50%" y="{line_y + num * 2:.1f}" text-anchor="middle">'
                         f'{escape(tr._("output"))} = ?</text>')
        label = tr._("Output {value} between the values {list}", value=tr.num(out) if revealed else "?",
                     list=tr.list_sep.join(f"{t} {tr.short(x, 2)}" for t, x in zip(s.tokens, v, strict=True)))
        self.div.text = (_heading(tr._("Output = Σ aᵢ vᵢ on the values' number line")) +
                         f'<svg class="number-line" width="100%" height="{height}" data-lo="{lo!r}" '
                         f'data-hi="{hi!r}" role="img" aria-label="{escape(label)}">{"".join(parts)}</svg>')



#: The value plane's least height (CSS px).
VALUE_PLANE_MIN_HEIGHT = 360


class ValuePlane(View):
    """Vector values (d_v = 2): each v_i as an arrow from the origin, and the output Σ a_i v_i as a point.

    The output is a weighted average of the values, so it always lies inside the
    triangle (polygon) they span; each value's marker grows with its weight.
    The figure has ``name="value-plane"``.
    """

    plots = param.ClassSelector(class_=PlotsShown, doc="What the plots show during a drag (link/shown.py).")

    def __init__(self, **params):
        super().__init__(**params)
        self.plots = self.plots or PlotsShown(state=self.state)
        # named: the page's drag script draws into them (link/drag.js)
        # each label's preferred place (px offsets and anchoring; the output's below its star, the values' labels
        # being above theirs): the page moves one that would cover another label or a marker (widgets/labels.js):
        # the output lies among the values, and Module 2's row I put "output (6.0167, 3.9833)" over "v NLP (5, 5)"
        self._values = ColumnDataSource(data=dict(x=[], y=[], x0=[], y0=[], label=[], color=[], size=[], dx=[], dy=[],
                                                  align=[], baseline=[]), name="value-plane-values")
        self._output = ColumnDataSource(data=dict(x=[], y=[], label=[], dx=[], dy=[], align=[], baseline=[]),
                                        name="value-plane-output")
        fig = figure(name="value-plane", title=self.state.tr._("Values vᵢ and the output Σ aᵢvᵢ"), width=420,
                     height=330, tools="", toolbar_location=None)
        true_units(fig, (-1, 1), (-1, 1))  # a weighted average's geometry, true on every screen
        fig.title.text_font_size = "16px"
        fig.axis.major_label_text_font_size = "13px"
        draw(fig, Segment, self._values, "x0", "y0", "x", "y", line_color="color", line_width=3, line_alpha=0.7)
        draw(fig, Scatter, self._values, "x", "y", size="size", color="color", marker="square")
        draw(fig, Text, self._values, "x", "y", text="label", x_offset="dx", y_offset="dy", text_align="align",
             text_baseline="baseline", text_font_size="14px", text_color="color", text_font_style="bold")
        draw(fig, Scatter, self._output, "x", "y", marker="star", size=24, color="black")
        draw(fig, Text, self._output, "x", "y", text="label", x_offset="dx", y_offset="dy", text_align="align",
             text_baseline="baseline", text_font_size="15px", text_font_style="bold")
        labels_placed_in_page(fig)
        self.figure = fig
        # at least this tall, however little of the tab is left below the bars: with true units a flat frame
        # squeezes the plane to a line (the tab scrolls instead)
        fig.min_height = VALUE_PLANE_MIN_HEIGHT
        self._layout = BokehPane(fig, sizing_mode="fixed", min_height=VALUE_PLANE_MIN_HEIGHT)
        self.plots.param.watch(self._render, "result")
        self.render_on("lang")

    def _render(self, *_):
        tr = self.state.tr
        self.figure.title.text = tr._("Values vᵢ and the output Σ aᵢvᵢ")
        V = np.asarray(self.state.values, dtype=float)
        if V.ndim != 2 or V.shape[1] != 2:
            return
        w, tokens = self.plots.result.weights[self.state.selected], self.state.tokens
        lo, hi = np.minimum(V.min(axis=0), 0), np.maximum(V.max(axis=0), 0)
        pad = np.maximum(0.25 * (hi - lo), 1.0)
        # labels are written to the right of each point: leave them room
        show_extent(self.figure, (lo[0] - pad[0], hi[0] + 2.2 * pad[0]), (lo[1] - pad[1], hi[1] + pad[1]))
        n = len(V)
        self._values.data = dict(
            x=V[:, 0].tolist(), y=V[:, 1].tolist(), x0=[0.0] * len(V), y0=[0.0] * len(V),
            color=[token_color(i) for i in range(len(V))],
            size=value_size(w).tolist(),
            label=[f"v {tr.name_in_plot(t)} {tr.vec(v, 4, isolate=False, short=True)}"
                   for t, v in zip(tokens, V, strict=True)],
            dx=[10] * n, dy=[-4] * n, align=["left"] * n, baseline=["bottom"] * n,
        )
        out = self.plots.result.output[self.state.selected]
        self._output.data = dict(x=[float(out[0])], y=[float(out[1])],
                                 label=[f"{readout_words(tr.lang)['output_word']} {tr.vec(out, 4, isolate=False)}"],
                                 dx=[0], dy=[-14], align=["center"], baseline=["top"])


class ValuesView(View):
    """The values' view that fits them: a number line for scalar values, the plane for 2-D vectors.

    Each is built the first time the values need it (most pages only ever show the number line), and
    ``on_build`` is called with it then, so the page can size and style its figure. Other value sizes
    are listed in the inspector and the matrix's output column.
    """

    plots = param.ClassSelector(class_=PlotsShown, doc="What the plots show during a drag (link/shown.py).")
    on_build = param.Callable(default=None, doc="Called with each view (OutputLine, ValuePlane) when it is built.")

    def __init__(self, **params):
        super().__init__(**params)
        self.plots = self.plots or PlotsShown(state=self.state)
        self.line: OutputLine | None = None
        self.plane: ValuePlane | None = None
        self._layout = pn.Column(margin=0)
        self.state.param.watch(self._show, "values")
        self._show()

    def _show(self, *_):
        shape = np.shape(self.state.values)
        if len(shape) == 1:
            if self.line is None:
                self.line = self._built(OutputLine(state=self.state, plots=self.plots))
            shown = self.line
        elif len(shape) == 2 and shape[1] == 2:
            if self.plane is None:
                self.plane = self._built(ValuePlane(state=self.state, plots=self.plots))
            shown = self.plane
        else:
            shown = None
        # a view once built stays in the layout, shown or hidden: a page switching between scalar and vector
        # values (Reset example, Explore head) changes two flags instead of the layout's children, which had the
        # server walk the whole page's models each time
        views = [view for view in (self.line, self.plane) if view is not None]
        if len(self._layout) != len(views):
            self._layout[:] = [view.__panel__() for view in views]
        for view, pane in zip(views, self._layout, strict=True):
            # each is Panel's pane around a Bokeh model, which takes its `visible` from the model's: set there
            if pane.object.visible != (view is shown):
                pane.object.visible = view is shown
        if shown is not None:
            shown._render()

    def _built(self, view):
        if self.on_build is not None:
            self.on_build(view)
        return view
