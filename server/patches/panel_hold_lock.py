"""Panel's per-document hold lock (``panel.io.document._HOLD_LOCK``), read (not replaced): whether Panel is releasing
a hold of a document now (:func:`hold_being_released`).

Under Bokeh's worker threads (a bare ``panel serve``), Panel releases a hold while keeping a per-document lock, and a
change from the page that the release passes on to a callback of ours, which opened a hold of its own, waited for
that lock forever (``tests/ui/test_drag_channel.py`` caught it): ``link/updates.py`` joins the hold being released
instead. Panel 1.10.0 offers no public way to ask. Where this does not fit the installed Panel, the answer is False
(the block holds as usual) and the log has said so once at start. Written for Panel 1.10.0; no upstream issue.
"""

from __future__ import annotations

from server.patches.fit import Patch

PATCH = Patch(
    name="panel_hold_lock",
    changes="whether Panel is releasing a document's hold, read from its hold lock",
    targets={
        "panel.io.document:hold": "25f7cbf8b3594465",
        "panel.io.document:unlocked": "b071a1f2520fd2bb",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
)


def hold_being_released(doc) -> bool:
    """Whether Panel holds ``doc``'s hold lock now, releasing a hold (above); False where this does not fit."""
    if doc is None or not PATCH.fits():
        return False
    from panel.io import document

    lock = getattr(document, "_HOLD_LOCK", {}).get(doc)
    return lock is not None and lock.locked()
