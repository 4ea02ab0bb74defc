"""Data a page's script and the server share, as one Bokeh model."""

from __future__ import annotations

from bokeh.core.properties import Any, Dict, String
from bokeh.model import DataModel


class OneRow(DataModel):
    """One row of named values that the server and the page's script share: ``data`` as a
    ``ColumnDataSource``'s (each name to a list holding its one value), as one model.

    A ``ColumnDataSource`` brings a ``Selection`` and a selection policy with it, three models to build and
    send with every page for data nothing draws or selects; BokehJS makes this one's class from its
    definition in the document (Bokeh's ``DataModel``), so the page needs no script of its own for it.
    The script reads and writes ``data`` exactly as a source's (``link/drag.js``), and a change of it, from
    either side, is a change of one property, as a source's is.
    """

    data = Dict(String, Any, help="Each name to a list of its one value.")
