"""Panel's ``state._add_busy_event`` and ``_remove_busy_event``: a page's click, key or widget change marks the process
busy only while something shows that it is.

Panel 1.10.0 marks the whole process busy around every event it handles (``Syncable._process_events`` and
``_process_bokeh_event``): a new uuid, the process's list of busy events set twice and ``state.busy`` twice, each
through param's watchers, for its busy indicators (a template's spinner, an indicator given to ``state.sync_busy``).
This app shows none, so each of a class's row keys and clicks paid for an indicator nobody sees (a row key's server
CPU: ``bench/HISTORY.md``). Here both return at once while no indicator is registered and nothing but Panel's own
``_update_busy`` watches ``busy``; the moment one is, Panel's own code runs again. Written for Panel 1.10.0; no upstream
issue asks for it.
"""

from __future__ import annotations

from panel.io.state import _state

from server.patches.fit import Patch


def _shown(state: _state) -> bool:
    """Whether anything shows the process's ``busy``: an indicator given to ``sync_busy``, or a watcher of ``busy``
    other than Panel's own ``_update_busy``."""
    if state._indicators:
        return True
    watchers = state.param.watchers.get("busy", {})
    return sum(len(group) for group in watchers.values()) > 1


def install() -> bool:
    """Have Panel mark the process busy only where it is shown (above); True if this call did. Idempotent."""
    add, remove = _state._add_busy_event, _state._remove_busy_event
    if getattr(add, "original", None) is not None:
        return False

    def _add_busy_event(self, event_id: str) -> None:
        if _shown(self):
            add(self, event_id)

    def _remove_busy_event(self, event_id: str) -> None:
        # also while nothing shows it: an event added while something did leaves the list as Panel would
        if self._busy_counter or _shown(self):
            remove(self, event_id)

    for new, old in ((_add_busy_event, add), (_remove_busy_event, remove)):
        new.original = new.__wrapped__ = old
        new.__name__ = new.__qualname__ = old.__name__
    _state._add_busy_event, _state._remove_busy_event = _add_busy_event, _remove_busy_event
    return True


PATCH = Patch(
    name="panel_busy_events",
    changes="a page's event marks the process busy only while a busy indicator shows it",
    targets={
        "panel.io.state:_state._add_busy_event": "9e786a8174047729",
        "panel.io.state:_state._remove_busy_event": "352e4c99cfb517dd",
        # what decides whether busy is shown: the indicators sync_busy keeps, and Panel's own watcher of busy
        "panel.io.state:_state.sync_busy": "8d844e17b37a4d0f",
        "panel.io.state:_state._update_busy": "e6e995abca50a854",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
