"""The n x n self-attention matrix: a heatmap whose rows can be clicked."""

from __future__ import annotations

import math
import numbers

import numpy as np
import param
from bokeh import events
from bokeh.core.properties import value
from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, LinearColorMapper, Range1d, Rect, Text
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from link.rules import cell_decimals, ink
from link.shown import PlotsShown
from link.updates import one_message
from widgets.base import BokehPane, View
from widgets.glyphs import draw, show_step
from widgets.style import PROJECTOR_FONT_STEP, PROJECTOR_MIN_FONT

#: Text sizes (CSS px) of the cells' numbers and of the axes' labels in normal mode (widgets/style.py
#: makes them at least 20 in projector mode).
CELL_FONT, AXIS_FONT = 14, 15
#: Where the matrix is wider than its tab (a phone, a projector), its box scrolls sideways and shows it with a shadow
#: at the side where more waits, drawn as the box's background (static/theme.css, --ae-scroll-shadows): under an
#: opaque canvas nobody saw it, and the output column was cut off with no sign. The figure is composed onto that
#: background keeping the darker of the two (the lighter in the dark theme): the page's background under it looks
#: as before, and the shadow darkens the figure's edge. The canvas itself, and so the PNG it saves, is unchanged.
MATRIX_CSS = ":host { mix-blend-mode: var(--ae-over-shadow, normal); }"
def _font(size: int, mode: str) -> int:
    return max(PROJECTOR_MIN_FONT, size + PROJECTOR_FONT_STEP) if mode == "projector" else size


def _text_px(text: str, size: float) -> float:
    """A generous width of ``text`` in bold sans-serif at ``size`` px (DejaVu Sans Bold: digits 0.7 em)."""
    return size * sum(0.4 if c in ".,()  " else 0.72 for c in text)


class AttentionMatrix(View):
    """Heatmap of the weights a[i, j]: query i (row) attending to key j (column).

    Colours use the perceptually uniform, colour-blind-safe Cividis map on a
    fixed 0..1 scale, and every cell prints its weight, so colour is never the
    only cue. Cells a mask forbids are not weights: they are drawn light grey and
    hatched, labelled "masked", outside the colour scale. The last columns print
    each row's sum and its output Σ a_j v_j (a vector for vector values). A cell is never narrower than its
    number: the figure's smallest size follows its numbers and token names (the tab scrolls when the screen is
    narrower), and in projector mode the numbers have two decimals and the colour bar gives way to them.
    Clicking anywhere in a row
    selects it (a plain ``Tap`` event, not a TapTool selection, so a second click
    never deselects). The figure has ``name="attention-matrix"``.
    """

    plots = param.ClassSelector(class_=PlotsShown, doc="What the plots show during a drag (link/shown.py).")

    def __init__(self, **params):
        super().__init__(**params)
        self.plots = self.plots or PlotsShown(state=self.state)
        # named: the page's drag script draws the selected row into them (link/drag.js)
        self._cells = ColumnDataSource(data=dict(x=[], y=[], weight=[], label=[], text_color=[]), name="matrix-cells")
        self._sums = ColumnDataSource(data=dict(x=[], y=[], label=[]), name="matrix-sums")
        self._masked = ColumnDataSource(data=dict(x=[], y=[], label=[]))
        self._outputs = ColumnDataSource(data=dict(x=[], y=[], label=[]), name="matrix-outputs")
        self._highlight = ColumnDataSource(data=dict(x=[], y=[], width=[]))
        mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        fig = figure(
            name="attention-matrix", title="",
            width=640, height=400, tools="save", toolbar_location="below", x_range=Range1d(-0.5, 4.5),
            y_range=Range1d(2.5, -0.5), x_axis_location="above",
        )
        fig.toolbar.logo = None
        fig.title.text_font_size = "16px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.major_label_text_font_size = f"{AXIS_FONT}px"
        fig.grid.visible = False
        cells = draw(fig, Rect, self._cells, "x", "y", 1, 1, fill_color={"field": "weight", "transform": mapper},
                     line_color="white", line_width=2)
        labels = draw(fig, Text, self._cells, "x", "y", text="label", text_align="center", text_baseline="middle",
                      text_font_size=f"{CELL_FONT}px", text_color="text_color", text_font_style="bold")
        sums = draw(fig, Text, self._sums, "x", "y", text="label", text_align="center", text_baseline="middle",
                    text_font_size=f"{CELL_FONT}px", text_color="#333333")
        # level="overlay": the row outline stays on top of the masked cells drawn after it
        draw(fig, Rect, self._highlight, "x", "y", "width", 0.96, fill_alpha=0, line_color="#D55E00", line_width=5,
             level="overlay")
        draw(fig, Rect, self._masked, "x", "y", 1, 1, fill_color="#e6e6e6", hatch_pattern="/", hatch_color="#a0a0a0",
             hatch_scale=10, line_color="white", line_width=2, name="masked-cells")
        draw(fig, Text, self._masked, "x", "y", text="label", text_align="center", text_baseline="middle",
             text_font_size="14px", text_color="#444444", text_font_style="italic")
        outputs = draw(fig, Text, self._outputs, "x", "y", text="label", text_align="center", text_baseline="middle",
                       text_font_size=f"{CELL_FONT}px", text_color="#111111", text_font_style="bold",
                       name="row-outputs")
        # step-through: until step 2 (normalise) the cells are grey and hold a "?"; outputs wait for step 3
        blank = draw(fig, Rect, self._cells, "x", "y", 1, 1, fill_color="#c8c8c8", line_color="white", line_width=2,
                     level="underlay", visible=False)
        unknown = draw(fig, Text, self._cells, "x", "y", text=value("?"), text_align="center", text_baseline="middle",
                       text_font_size="22px", text_color="#111111", text_font_style="bold", visible=False)
        self._reveal = ([cells, labels, sums], [blank, unknown])
        self._reveal_output = [outputs]
        self._colorbar = ColorBar(color_mapper=mapper, ticker=FixedTicker(ticks=[0, 0.25, 0.5, 0.75, 1]),
                                  major_label_text_font_size="13px", width=16)
        fig.add_layout(self._colorbar, "right")
        fig.on_event(events.Tap, self._on_tap)
        fig.stylesheets = [MATRIX_CSS]
        self.figure = fig
        self._layout = BokehPane(fig, sizing_mode="fixed")
        self.state.param.watch(self._render_words, "lang")
        self.plots.param.watch(self._render, "result")
        self.state.param.watch(self._render, ["tokens", "mode", "lang"])
        self.state.param.watch(self._show_step, ["guided", "step"])
        self._laid_out = None
        self._render_words()
        self._render()
        self._show_step()

    def _show_step(self, *_):
        show_step(*self._reveal, self.state.revealed(2))
        show_step(self._reveal_output, [], self.state.revealed(3))

    def _on_tap(self, event) -> None:
        # a browser sends a finite number; a broken or hostile client's NaN, inf or list is ignored
        if not isinstance(event.y, numbers.Real) or not math.isfinite(event.y):
            return
        row = round(event.y)
        if 0 <= row < len(self.state.tokens):
            with one_message():
                self.state.select_row(row)

    def _render_words(self, *_):
        """The title, the axes' and the colour bar's words, and its ticks' numbers, in the page's language."""
        fig, tr = self.figure, self.state.tr
        fig.title.text = tr.in_plot(tr._("Attention weights (click a row)"))
        fig.xaxis.axis_label, fig.yaxis.axis_label = tr.in_plot(tr._("key")), tr.in_plot(tr._("query"))
        self._colorbar.title = tr.in_plot(tr._("weight"))
        # a tick's number, as the language writes it (0,25)
        self._colorbar.major_label_overrides = {t: tr.short(t) for t in (0, 0.25, 0.5, 0.75, 1)}

    def _geometry(self) -> tuple[float, float]:
        """(cell width in px, output column in cells) for the numbers and names now shown."""
        s, mode, tr = self.state, self.state.mode, self.state.tr
        r, dec = self.plots.result, cell_decimals(mode)
        cell, axis = _font(CELL_FONT, mode), _font(AXIS_FONT, mode)
        widest = max([_text_px(tr.num(1.0, dec), cell), *(_text_px(t, axis) for t in s.tokens),
                      _text_px(tr._("sum"), axis)])
        cell_px = widest + 12
        outputs = [_text_px(self._output_text(o, dec), cell) for o in r.output]
        # the column is at least as wide as its heading too, which some languages write longer than its numbers
        return cell_px, max(1.0, (max(outputs) + 12) / cell_px, _text_px(tr._("output"), axis) / cell_px)

    def _output_text(self, o, dec: int) -> str:
        tr = self.state.tr
        return tr.num(o, dec) if np.ndim(o) == 0 else tr.vec(o, dec, isolate=False)

    def _render_axes(self, cell_px: float, out: float) -> None:
        n, fig, mode, tr = len(self.state.tokens), self.figure, self.state.mode, self.state.tr
        self._out_x = n + 0.5 + out / 2
        for rng, (start, end) in ((fig.x_range, (-0.5, n + 0.5 + out)), (fig.y_range, (n - 0.5, -0.5))):
            if (rng.start, rng.end) != (start, end):  # row 0 on top, as in a matrix
                rng.update(start=start, end=end)
        names = {i: t for i, t in enumerate(self.state.tokens)}
        fig.xaxis.ticker = FixedTicker(ticks=[*range(n + 1), self._out_x])
        fig.xaxis.major_label_overrides = {**names, n: tr._("sum"), self._out_x: tr._("output")}
        fig.yaxis.ticker = FixedTicker(ticks=list(range(n)))
        fig.yaxis.major_label_overrides = names
        self._colorbar.visible = mode != "projector"
        axis = _font(AXIS_FONT, mode)
        y_axis = max(_text_px(t, axis) for t in self.state.tokens) + axis + 30
        # on the pane: Panel gives its own sizes to the figure it shows
        self._layout.param.update(min_width=round(y_axis + (n + 1 + out) * cell_px
                                                  + (90 if mode != "projector" else 25)),
                                  min_height=round(n * max(2.2 * _font(CELL_FONT, mode), 40) + 4 * axis + 60))

    def _render(self, *_):
        r, tr = self.plots.result, self.state.tr
        w, n = r.weights, r.weights.shape[0]
        dec = cell_decimals(self.state.mode)
        # the axes, ticks and smallest size change with the names, the mode and the outputs' width only
        cell_px, out = self._geometry()
        laid_out = (tuple(self.state.tokens), self.state.mode, self.state.lang, cell_px, out)
        if laid_out != self._laid_out:
            self._laid_out = laid_out
            self._render_axes(cell_px, out)
        rows, cols = (a.ravel() for a in np.indices(w.shape))
        allowed = r.mask.ravel()
        ok = w.ravel()[allowed]
        self._cells.data = dict(
            x=cols[allowed].tolist(), y=rows[allowed].tolist(), weight=ok.tolist(),
            label=[tr.num(a, dec) for a in ok],
            text_color=[ink(a) for a in ok],
        )
        self._masked.data = dict(x=cols[~allowed].tolist(), y=rows[~allowed].tolist(),
                                 label=[tr._("masked")] * int((~allowed).sum()))
        self._sums.data = dict(x=[n] * n, y=list(range(n)), label=[tr.num(s, dec) for s in w.sum(axis=1)])
        self._outputs.data = dict(x=[self._out_x] * n, y=list(range(n)),
                                  label=[self._output_text(o, dec) for o in r.output])
        end = self.figure.x_range.end
        self._highlight.data = dict(x=[(end - 0.5) / 2], y=[self.state.selected], width=[end + 0.46])
