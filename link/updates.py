"""Changes to a page that reach it as one message."""

from __future__ import annotations

from contextlib import contextmanager

import panel as pn

from server.patches.bokeh_model_walks import walk_models_once
from server.patches.panel_hold_lock import hold_being_released


@contextmanager
def one_message(doc=None):
    """Within the block, the page's changes are held and sent together (``pn.io.hold``), and Bokeh walks the
    document's models at most once (:func:`server.patches.bokeh_model_walks.walk_models_once`).

    If the document is held already, or its hold is being released, the block joins that. Under Bokeh's
    worker threads (a bare ``panel serve``), Panel releases a hold while keeping a per-document lock, and a
    change from the page that the release passes on to a callback of ours, which opened a hold of its own,
    waited for that lock forever (``tests/ui/test_drag_channel.py`` caught it). Whether the lock is held is read from
    Panel's own (``server/patches/panel_hold_lock.py``).
    """
    doc = doc or pn.state.curdoc
    if doc is not None and (doc.callbacks.hold_value or hold_being_released(doc)):
        yield
        return
    with pn.io.hold(doc), walk_models_once(doc):
        yield
