"""Changes to a page that reach it as one message."""

from __future__ import annotations

from contextlib import contextmanager

import panel as pn
from panel.io import document as panel_document

from server.transport import walk_models_once


@contextmanager
def one_message(doc=None):
    """Within the block, the page's changes are held and sent together (``pn.io.hold``), and Bokeh walks the
    document's models at most once (:func:`server.transport.walk_models_once`).

    If the document is held already, or its hold is being released, the block joins that. Under Bokeh's
    worker threads (a bare ``panel serve``), Panel releases a hold while keeping a per-document lock, and a
    change from the page that the release passes on to a callback of ours, which opened a hold of its own,
    waited for that lock forever (``tests/ui/test_drag_channel.py`` caught it). The lock is Panel's own
    (``panel.io.document._HOLD_LOCK``); where it is not found, the block holds as usual.
    """
    doc = doc or pn.state.curdoc
    releasing = getattr(panel_document, "_HOLD_LOCK", {}).get(doc) if doc is not None else None
    if doc is not None and (doc.callbacks.hold_value or (releasing is not None and releasing.locked())):
        yield
        return
    with pn.io.hold(doc), walk_models_once(doc):
        yield
