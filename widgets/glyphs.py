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

from bokeh.models import AllIndices, CDSView, ColumnDataSource, GlyphRenderer, Plot
from bokeh.models.glyph import Glyph

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


def show_step(shown, placeholders, revealed: bool) -> None:
    """Step-through in a figure: show the renderers ``shown`` and hide their ``placeholders`` once revealed.

    Only ``visible`` flags change; the data sources stay as they are.
    """
    for r in shown:
        r.visible = revealed
    for r in placeholders:
        r.visible = not revealed
