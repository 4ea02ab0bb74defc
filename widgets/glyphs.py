"""Glyphs added to a figure as one model each.

Bokeh's figure methods (``fig.text``, ``fig.scatter``, …) make three glyph models per renderer: the
glyph, a "nonselection" copy and a "muted" copy, for selections and legends these views never use.
Building and serializing those copies was a good share of the server's time to build a page (about
290 Bokeh models; a class of 60 opens its pages within the same minute). :func:`draw` adds the one glyph;
BokehJS derives the others itself if they are ever needed.

Each renderer also gets a view of its source (``CDSView``) with a filter (``AllIndices``): two models more
per renderer, for every row of the source always. A figure's renderers of one source share one view (BokehJS
computes the same rows of the same source into it for each), and all the views of a figure one filter
(``AllIndices`` keeps nothing: it answers every row of whichever source asks).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bokeh.models import (
    AllIndices,
    BasicTickFormatter,
    CDSView,
    ColumnDataSource,
    CustomJS,
    CustomJSTickFormatter,
    DataRange1d,
    GlyphRenderer,
    Plot,
    Scatter,
    Segment,
)
from bokeh.models.glyph import Glyph

#: The page's placement of a plane's labels in screen pixels, after each drawing of the plane.
LABELS_JS = (Path(__file__).with_name("labels.js")).read_text()
#: The most labels a plane has (the Projections tab's right plane: three tokens, two basis tips): its leader lines'
#: rows.
LEADER_ROWS = 8
#: Keywords that belong to the renderer, not the glyph.
RENDERER_KEYWORDS = ("level", "visible", "name")


def draw(fig: Plot, glyph: type[Glyph], source: ColumnDataSource, *fields, **props) -> GlyphRenderer:
    """Add ``glyph(*fields, **props)`` over ``source`` to ``fig``; returns its renderer.

    ``fields`` are the glyph's positional properties in Bokeh's order (``Text``: x, y; ``Rect``: x, y,
    width, height); ``color`` sets both fill and line colour, as in Bokeh's figure methods; ``level``,
    ``visible`` and ``name`` go to the renderer.

    >>> from bokeh.models import Text
    >>> from bokeh.plotting import figure
    >>> r = draw(figure(), Text, ColumnDataSource(dict(x=[1], y=[2], t=["a"])), "x", "y", text="t", visible=False)
    >>> (type(r.glyph).__name__, r.glyph.text, r.visible, r.nonselection_glyph)
    ('Text', 't', False, 'auto')
    """
    renderer = {k: props.pop(k) for k in RENDERER_KEYWORDS if k in props}
    if "color" in props:
        color = props.pop("color")
        for name in ("fill_color", "line_color"):
            if name in glyph.properties():
                props.setdefault(name, color)
    props.update(zip(glyph._args, fields, strict=False))
    views = [r.view for r in fig.renderers if isinstance(r, GlyphRenderer)]
    view = next((r.view for r in fig.renderers if isinstance(r, GlyphRenderer) and r.data_source is source), None)
    if view is None:
        every = next((v.filter for v in views if isinstance(v.filter, AllIndices)), None) or AllIndices()
        view = CDSView(filter=every)
    return fig.add_glyph(source, glyph(**props), view=view, **renderer)


def true_units(fig: Plot, x: tuple[float, float], y: tuple[float, float]) -> ColumnDataSource:
    """Ranges for ``fig`` that show at least ``x`` = (lo, hi) and ``y`` = (lo, hi) (data units), one unit as long
    across as up, whatever the frame's shape in pixels; returns the source of the extent to show, two points
    (x: [lo, hi], y: [lo, hi]) that a view writes to show another.

    A plane whose picture is geometry (a dot product's angles and lengths) needs true units, and only the page
    knows the frame's pixels: Bokeh's ``match_aspect`` widens the ranges there, but only ``DataRange1d`` ranges,
    computed from renderers. So the ranges follow one hidden renderer of the extent, with no padding; the page
    writes the ranges it computes back (``start`` and ``end``, as a zoom would): the server's own copy of the
    extent is this source.

    >>> from bokeh.plotting import figure
    >>> fig = figure()
    >>> extent = true_units(fig, (-1.5, 2.5), (-1.5, 2.5))
    >>> (fig.match_aspect, fig.x_range.range_padding, extent.data)
    (True, 0.0, {'x': [-1.5, 2.5], 'y': [-1.5, 2.5]})
    """
    extent = ColumnDataSource(data=dict(x=list(x), y=list(y)))
    shown = draw(fig, Scatter, extent, "x", "y", size=0, visible=False, name="extent")
    fig.x_range = DataRange1d(renderers=[shown], range_padding=0.0)
    fig.y_range = DataRange1d(renderers=[shown], range_padding=0.0)
    fig.match_aspect = True
    return extent


def _extent(fig: Plot) -> ColumnDataSource:
    # among the figure's own renderers: a figure's references reach other figures through its callbacks
    return next(r.data_source for r in fig.renderers if r.name == "extent")


def shown_extent(fig: Plot) -> tuple[tuple[float, float], tuple[float, float]]:
    """The x and y extent ``fig`` shows at least (set by :func:`true_units`): ((x_lo, x_hi), (y_lo, y_hi))."""
    data = _extent(fig).data
    return (tuple(data["x"]), tuple(data["y"]))


def show_extent(fig: Plot, x: tuple[float, float], y: tuple[float, float]) -> None:
    """Show at least ``x`` and ``y`` in ``fig`` (set up by :func:`true_units`); nothing is sent when they stay."""
    source = _extent(fig)
    new = dict(x=[float(v) for v in x], y=[float(v) for v in y])
    if dict(source.data) != new:
        source.data = new


def labels_placed_in_page(fig: Plot) -> None:
    """Let the page place ``fig``'s point labels in its pixels, clear of each other, the markers and the frame's edge
    (``widgets/labels.js``): every Text glyph whose source has the columns dx, dy, align and baseline (the server's
    preferred offsets in px and anchoring, tried first).

    Only the page knows the plane's size in pixels and its text's. The tick formatter is the script Bokeh runs each
    time it draws the figure (a resize, new ranges, projector mode, a drag's preview); it formats the ticks as
    Bokeh's own does. A label placed far from its point gets a leader line: the page writes them in place
    (:data:`LEADER_ROWS` at most).
    """
    leaders = ColumnDataSource(data={k: np.full(LEADER_ROWS, np.nan) for k in ("x0", "y0", "x1", "y1")})
    draw(fig, Segment, leaders, "x0", "y0", "x1", "y1", line_color="#666666", line_width=1.5, name="label-leaders")
    place = CustomJS(args=dict(fig=fig), code=LABELS_JS + "\nscheduleLabels(fig);")
    fig.xaxis.formatter = CustomJSTickFormatter(
        args=dict(basic=BasicTickFormatter(), place=place, fig=fig),
        code="if (index === 0) place.execute(fig); return basic.doFormat(ticks, {loc: 0})[index];")
def show_step(shown, placeholders, revealed: bool) -> None:
    """Step-through in a figure: show the renderers ``shown`` and hide their ``placeholders`` once revealed.

    Only ``visible`` flags change; the data sources stay as they are.
    """
    for r in shown:
        r.visible = revealed
    for r in placeholders:
        r.visible = not revealed
