"""The n² cost: the NumPy core measured on the server for n = 3 to 4096 tokens, on log-log axes.

Module 2: "Computing Q Kᵀ produces a matrix of size n × n for a sequence of length n. That is quadratic in
the sequence length, in both compute and memory. For n = 100 it is fine, for n = 10 000 it is a hundred
million entries per head per layer." :class:`CostView` runs ``core.cost.measure_attention`` (seeded random
Q, K, V with d_k = 64) for every size up to the chosen n, plots time and memory against n beside a slope-2
line, draws the weights as a 64 x 64 image of block means, and computes the course's figures.

The measurements are the server's own, made once per process (``services/cost.py``), never on the event loop: a
page waiting for n = 4096 shows a progress bar, and every other page goes on being served meanwhile.
"""

from __future__ import annotations

import asyncio
from functools import partial
from html import escape

import numpy as np
import panel as pn
from bokeh.document import without_document_lock
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    Image,
    Line,
    LinearColorMapper,
    PrintfTickFormatter,
    Range1d,
    Scatter,
)
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from core import CostMeasurement, score_matrix_size
from core.cost import D_K, NN_ARRAYS
from services.cost import CACHE_KEY, CostCache, cost_cache  # noqa: F401  (the process's measurements, also named here)
from session.heads import COST_SIZES
from session.i18n import N_, Translator, translator
from widgets.base import BokehPane, DiscreteSlider, View
from widgets.glyphs import draw
from widgets.projections import styled

#: Wait before the first measurement after the view asks (ms).
START_AFTER_MS = 300


ENGLISH = translator("en")
#: A size in bytes, decimal units as the course counts; a language may name them its own way (Mo in French).
BYTE_UNITS = ((N_("{n} GB"), 1e9), (N_("{n} MB"), 1e6), (N_("{n} kB"), 1e3))


def count_text(k: int, tr: Translator = ENGLISH) -> str:
    """``10,000 (10⁴)``: a count with its power of ten when it is one (``10 000 (10⁴)`` in French)."""
    text = tr.count(k)
    e = len(str(k)) - 1
    if k == 10 ** e and e >= 2:
        text += " (10" + str(e).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")) + ")"
    return text


def bytes_text(b: float, tr: Translator = ENGLISH) -> str:
    """Decimal units, as the course counts (10⁸ float64 entries = 800 MB; 800 Mo in French)."""
    for unit, size in BYTE_UNITS:
        if b >= size:
            return tr(N_(unit.msgid, n=tr.mark(f"{b / size:.3g}")))
    return tr._("{n} B", n=f"{b:.0f}")


def _loglog(name: str) -> figure:
    # its title and axis labels are the page's language (CostView._relabel); 272 px: Spanish's "Tiempo de cálculo"
    # at a projector's 20 px fits right of the frame's edge
    fig = figure(name=name, title="", width=272, height=250, x_axis_type="log", y_axis_type="log", tools="save",
                 toolbar_location=None, x_range=Range1d(2, 6000), y_range=Range1d(1e-6, 1))
    fig.title.text_font_size = "15px"
    fig.axis.axis_label_text_font_size = "14px"
    fig.axis.major_label_text_font_size = "14px"
    return fig


class CostView(View):
    """Pick n (3 to 4096): time and memory of the core against n, the weights as an image, Module 2's figures.

    Test hooks: the figures ``cost-time``, ``cost-memory``, ``cost-image``; the progress bar and its text carry
    ``cost-progress``; the figures' table is ``cost-figures``.
    """

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self._cache = cost_cache()
        self._doc = pn.state.curdoc
        self._generation = 0
        self._syncing = False
        self.n = styled(DiscreteSlider(options=list(COST_SIZES), value=s.cost_n, width=320))
        self.n.param.watch(self._on_slider, "value")
        self.progress = styled(pn.indicators.Progress(value=0, max=1, width=220, visible=False,
                                                      css_classes=["cost-progress"], margin=(14, 8)))
        self.progress_text = styled(pn.pane.HTML("", visible=False, css_classes=["cost-progress"], margin=(6, 5)))
        self._times = ColumnDataSource(data=dict(x=[], y=[]))
        self._time_ref = ColumnDataSource(data=dict(x=[], y=[]))
        self._peaks = ColumnDataSource(data=dict(x=[], y=[]))
        self._kept = ColumnDataSource(data=dict(x=[], y=[]))
        self._mem_ref = ColumnDataSource(data=dict(x=[], y=[]))
        self._image = ColumnDataSource(data=dict(image=[], dw=[], dh=[]))
        self.time_fig = _loglog("cost-time")
        draw(self.time_fig, Line, self._time_ref, "x", "y", line_color="#444444", line_dash="dashed", line_width=2)
        draw(self.time_fig, Scatter, self._times, "x", "y", size=10, color="#0072B2")
        self.memory_fig = _loglog("cost-memory")
        draw(self.memory_fig, Line, self._mem_ref, "x", "y", line_color="#444444", line_dash="dashed", line_width=2)
        draw(self.memory_fig, Line, self._kept, "x", "y", line_color="#009E73", line_width=3)
        draw(self.memory_fig, Scatter, self._peaks, "x", "y", size=10, color="#D55E00", marker="square")
        self._mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        # 344 px: its title, "n = 256: 64² block means" at a projector's 20 px (German's, French's and Arabic's
        # longer), fits right of the frame's edge
        self.image_fig = figure(name="cost-image", title="", width=344, height=262, tools="save",
                                toolbar_location=None, x_range=Range1d(0, 1), y_range=Range1d(1, 0),
                                x_axis_location="above")
        self.image_fig.title.text_font_size = "15px"
        self.image_fig.axis.axis_label_text_font_size = "14px"
        self.image_fig.axis.major_label_text_font_size = "14px"
        self.image_fig.axis.ticker.desired_num_ticks = 3  # n up to 4096 in a narrow plot
        draw(self.image_fig, Image, self._image, image="image", x=0, y=0, dw="dw", dh="dh", color_mapper=self._mapper)
        self.image_fig.add_layout(ColorBar(color_mapper=self._mapper, width=12, major_label_text_font_size="14px",
                                           formatter=PrintfTickFormatter(format="%.2g")), "right")
        self.figures = styled(pn.pane.HTML("", name="cost-figures", sizing_mode="stretch_width"))
        self.legend = styled(pn.pane.HTML("", sizing_mode="stretch_width"))
        self.heading = styled(pn.pane.HTML("", sizing_mode="stretch_width"))
        self._relabel()
        self._layout = pn.Column(
            self.heading,
            pn.FlexBox(self.n, self.progress, self.progress_text, align_items="center"),
            pn.FlexBox(BokehPane(self.time_fig), BokehPane(self.memory_fig), BokehPane(self.image_fig)),
            self.legend, self.figures, margin=0, sizing_mode="stretch_width",
        )
        s.param.watch(self._on_n, "cost_n")
        s.param.watch(self._on_lang, "lang")
        self._on_n()

    def _relabel(self) -> None:
        """The words of the n² cost in the page's language (its numbers are redrawn by _show)."""
        tr = self.state.tr
        self.n.name = tr._("n (tokens)")
        # short titles: they fit a plot's width on a projector; the legend says what was measured
        for fig, title, y_label in ((self.time_fig, tr._("Computing time"), tr._("seconds")),
                                    (self.memory_fig, tr._("Memory used"), tr._("bytes"))):
            fig.title.text = tr.in_plot(title)
            fig.xaxis.axis_label, fig.yaxis.axis_label = tr.in_plot(tr._("n (tokens)")), tr.in_plot(y_label)
        self.image_fig.xaxis.axis_label = tr.in_plot(tr._("key"))
        self.image_fig.yaxis.axis_label = tr.in_plot(tr._("query"))
        self.image_fig.title.text = tr.in_plot(tr._("Weights"))
        self.legend.object = "<p>" + tr._(
            "Dashed: slope 2, through the largest n measured (on log-log axes, n² is a line of slope 2). Blue: the "
            "seconds it takes to compute attention once; orange: the most memory that uses at any moment; green: "
            "the memory of the {tables} n × n tables it keeps, one for each step (dot products, scores, scores "
            "minus their row's largest, their exponentials, weights, and the mask): 41 bytes for each of the n² "
            "pairs of tokens. Random Q, K, V with d<sub>k</sub> = {d_k}, seed 0, measured on this server, each size "
            "once.", tables=len(NN_ARRAYS), d_k=D_K) + "</p>"
        self.heading.object = f"<h3>{escape(tr._('The n² cost'))}</h3><p>" + tr._(
            "Q Kᵀ holds one score for every pair of tokens: an n × n matrix, quadratic in n in both time and memory. "
            "Module 2: <q>for n = 10 000 it is a hundred million entries per head per layer</q>.") + "</p>"

    def _on_lang(self, *_) -> None:
        with pn.io.hold():
            self._relabel()
            if self._cache.measured(up_to=self.state.cost_n):
                self._show()

    # --- measuring, off the event loop --------------------------------------------------------------------------

    def _on_slider(self, event) -> None:
        if not self._syncing:
            self.state.cost_n = event.new

    def _on_n(self, *_) -> None:
        n = self.state.cost_n
        self._syncing = True
        try:
            self.n.value = n
        finally:
            self._syncing = False
        todo = [m for m in COST_SIZES if m <= n and self._cache.get(m) is None]
        self._generation += 1
        generation = self._generation
        doc = self._doc
        if not todo:
            self._show()
            return
        if doc is None or doc.session_context is None:  # no server (tests, a notebook): measure here
            for m in todo:
                self._cache.measure(m).result()
            self._show()
            return
        self._progress(0, todo)

        # after a pause: the tab's own models, just built, go to the page first; a measurement sharing the
        # interpreter with that work would time it too
        @without_document_lock
        async def run():
            for k, m in enumerate(todo):
                try:
                    await asyncio.wrap_future(self._cache.measure(m))
                except Exception as exc:  # noqa: BLE001 (MemoryError, ...): the page says so, the server goes on
                    self._later(partial(self._failed, generation, m, exc))
                    return
                if generation != self._generation:
                    return  # another n was chosen meanwhile; its own run shows it
                self._later(partial(self._progress, k + 1, todo, generation))

        doc.add_timeout_callback(run, START_AFTER_MS)

    def _later(self, callback) -> None:
        """Run ``callback`` under the document's lock, as Bokeh requires for changes made after an ``await``."""
        doc = self._doc
        if doc is not None and doc.session_context is not None:
            doc.add_next_tick_callback(callback)

    def _progress(self, done: int, todo: list[int], generation: int | None = None) -> None:
        if generation is not None and generation != self._generation:
            return
        if done == len(todo):
            self.progress.visible = self.progress_text.visible = False
            self._show()
            return
        self.progress.param.update(value=done, max=len(todo), visible=True)
        tr = self.state.tr
        self.progress_text.object = "<p role='status'>" + escape(tr._(
            "Measuring n = {n} on the server ({k} of {m})…", n=tr.count(todo[done]), k=done + 1, m=len(todo))) + "</p>"
        self.progress_text.visible = True
        if done:
            self._show()

    def _failed(self, generation: int, n: int, exc: Exception) -> None:
        if generation != self._generation:
            return
        self.progress.visible = False
        tr = self.state.tr
        self.progress_text.object = "<p role='alert'>" + escape(tr._(
            "Could not measure n = {n}: {why}", n=tr.count(n), why=str(exc) or type(exc).__name__)) + "</p>"

    # --- drawing ------------------------------------------------------------------------------------------------

    def _show(self) -> None:
        n = self.state.cost_n
        done = self._cache.measured(up_to=n)
        self._plot(done)
        m = self._cache.get(n)
        if m is not None:
            image = np.asarray(m.image)
            self._mapper.update(low=float(image.min()), high=float(image.max()))
            self._image.data = dict(image=[image], dw=[n], dh=[n])
            self.image_fig.x_range.update(start=0, end=n)
            self.image_fig.y_range.update(start=n, end=0)
            side, tr = image.shape[0], self.state.tr
            self.image_fig.title.text = tr.in_plot(  # short: it fits the image's own width
                tr._("Weights, n = {n}", n=tr.count(n)) if side == n else
                tr._("n = {n}: {side}² block means", n=tr.count(n), side=side))
        self.figures.object = self._figures_html(m, n)

    def _plot(self, done: list[CostMeasurement]) -> None:
        ns = [m.n for m in done]
        self._times.data = dict(x=ns, y=[m.seconds for m in done])
        self._peaks.data = dict(x=ns, y=[m.peak_bytes for m in done])
        self._kept.data = dict(x=ns, y=[m.nn_bytes for m in done])
        if done:
            top = done[-1]
            line = np.array([COST_SIZES[0], top.n], dtype=float)
            # slope 2 through the largest n: y = y_top (n / n_top)²
            self._time_ref.data = dict(x=line.tolist(), y=(top.seconds * (line / top.n) ** 2).tolist())
            self._mem_ref.data = dict(x=line.tolist(), y=(top.peak_bytes * (line / top.n) ** 2).tolist())
            for fig, ys in ((self.time_fig, [top.seconds * (COST_SIZES[0] / top.n) ** 2, *self._times.data["y"]]),
                            (self.memory_fig, [top.peak_bytes * (COST_SIZES[0] / top.n) ** 2,
                                               *self._peaks.data["y"], *self._kept.data["y"]])):
                lo, hi = min(ys), max(ys)
                fig.y_range.update(start=lo / 2, end=hi * 2)  # log axes: a factor of 2 of room each way
        else:
            self._time_ref.data = dict(x=[], y=[])
            self._mem_ref.data = dict(x=[], y=[])

    def _figures_html(self, m: CostMeasurement | None, n: int) -> str:
        tr = self.state.tr
        rows = []
        for k, what in ((100, tr._("Module 2: fine")), (10_000, tr._("Module 2: a hundred million"))):
            size = score_matrix_size(k)
            rows.append(f"<tr><th scope='row'>{tr.count(k)}</th><td>{count_text(size.entries, tr)}</td>"
                        f"<td>{bytes_text(size.bytes, tr)}</td><td>{escape(what)}</td></tr>")
        size = score_matrix_size(n)
        rows.append(f"<tr class='current'><th scope='row'>{tr.count(n)}</th><td>{count_text(size.entries, tr)}</td>"
                    f"<td>{bytes_text(size.bytes, tr)}</td><td>{escape(tr._('your n'))}</td></tr>")
        here = f"<p>{escape(tr._('Measuring…'))}</p>" if m is None else "<p>" + escape(tr._(
            "On this server, n = {n}: computing attention once took {ms} ms and used at most {peak} of memory; "
            "the {tables} n × n tables it keeps take {kept}, 41 bytes for each pair of tokens.", n=tr.count(n),
            ms=tr.num(m.seconds * 1000, 2), peak=bytes_text(m.peak_bytes, tr), tables=len(NN_ARRAYS),
            kept=bytes_text(m.nn_bytes, tr))) + "</p>"
        # in its own sideways-scrolling box (heads.css): on an 800 px projector it is 455 px in 397
        return ("<div class='scroll-table'><table class='nums'>"
                f"<caption>{escape(tr._('One n × n score matrix, per head per layer'))}</caption>"
                f"<thead><tr><th scope='col'>n</th><th scope='col'>{escape(tr._('entries n²'))}</th>"
                f"<th scope='col'>{escape(tr._('memory (8 bytes a number)'))}</th><th scope='col'></th></tr></thead>"
                "<tbody>" + "".join(rows) + "</tbody></table></div>" + here)
