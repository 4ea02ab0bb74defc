"""Panel's ``panel.io.document._garbage_collect`` (a full pass of Python's cycle collector five seconds after the last
session it saw discarded): in a process the server has settled, left to the housekeeping round, which makes it when it
is short (``server/housekeeping.py``).

A full pass cannot be cut short: it goes over every object of the process, the pages still open included, a pause of
the loop that every page waits behind, longer with every page open (``bench/HISTORY.md``). Written for Panel 1.10.0.
Upstream: holoviz/panel#6518 (merged) brought the debounce this defers to the round; none filed for leaving it to
the application.
"""

from __future__ import annotations

from server.patches.fit import Patch


def install() -> None:
    """Leave Panel's full pass to the round in a settled process (above). Idempotent."""
    from panel.io import document

    from server.housekeeping import COLLECTOR

    original = document._garbage_collect
    if getattr(original, "left_to_the_round", False):
        return

    def garbage_collect():
        if not COLLECTOR.settled:
            original()

    garbage_collect.left_to_the_round = True
    garbage_collect.__wrapped__ = original
    document._garbage_collect = garbage_collect


PATCH = Patch(
    name="panel_garbage_collect",
    changes="Panel's full pass of the collector after a session ends left to the housekeeping round",
    targets={
        "panel.io.document:_garbage_collect": "9d00644da8235197",
        "panel.io.document:_destroy_document": "40ae93cd49d60a81",
    },
    written_for="Panel 1.10.0",
    upstream="holoviz/panel#6518 (the debounced pass this defers)",
    apply=install,
)
