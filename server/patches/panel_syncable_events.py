"""Panel's two handlers of a page's events (``panel.reactive.Syncable._change_event``, a widget's change, and
``_process_bokeh_event``, a click or a message): each event processed inside a hold of its document, and each run
through its session's pacing.

**Held.** Panel runs a page's event that arrives while another is pending as a callback without the session's lock,
and wraps its own widgets' updates in a hold that writes the changes itself. This app's views also write into Bokeh
models directly (a ``Div``'s text, a data source); such a change, outside any hold and without the lock, reached
Bokeh's session, which refused it ("_pending_writes should be non-None …", the error of holoviz/panel#1447): the
rest of the event was lost, a traceback logged, and the page stopped showing the server's numbers. A learner who
ticked "Step through" and pressed Next at once did it. Holding the document while Panel processes the event
(synchronous code: no other callback runs meanwhile) collects every change, and Panel writes them when it ends, as it
does for its own widgets; inside the lock the hold changes nothing. Inside the hold, Bokeh walks the document's models
at most once (``server/patches/bokeh_model_walks.py``).

**Paced.** Each event goes through the session's :class:`services.pacing.SessionEvents` first, which runs it at once
unless the session has taken more than its share of the loop, and otherwise queues it for its turn
(``services/pacing.py``). The websocket guard (``server/guard.py``) reads the session's next message only once its
queue is empty. Outside a served page nothing changes.

Written for Panel 1.10.0. Upstream: holoviz/panel#1447 (closed) is the error; no upstream hook paces a session's
events.
"""

from __future__ import annotations

import functools

from server.patches.fit import Patch

#: Panel's two methods that process a page's events in a session (``panel.reactive.Syncable``).
PAGE_EVENT_HANDLERS = ("_change_event", "_process_bokeh_event")


def _wrap_page_event_handlers(flag: str, wrap) -> None:
    """Replace each of :data:`PAGE_EVENT_HANDLERS` with ``wrap(method)``, marked with the attribute ``flag``; a method
    already marked is left alone (so each wrapping is made once)."""
    from panel.reactive import Syncable

    for name in PAGE_EVENT_HANDLERS:
        original = getattr(Syncable, name)
        if getattr(original, flag, False):
            continue
        wrapper = functools.update_wrapper(wrap(original), original)
        setattr(wrapper, flag, True)
        setattr(Syncable, name, wrapper)


def hold_page_events() -> None:
    """Process each of a page's events inside a Panel hold of its document, its models walked once (above).
    Idempotent."""
    from panel.io.document import hold

    from server.patches.bokeh_model_walks import walk_models_once

    def held(original):
        def run(self, doc, *args):
            with hold(doc), walk_models_once(doc):
                return original(self, doc, *args)
        return run

    _wrap_page_event_handlers("holds_document", held)


def pace_page_events() -> None:
    """Run each of a page's events through its session's pacing (above). Idempotent."""
    from services.pacing import get_event_pacer

    def paced(original):
        def run(self, doc, *args):
            events = get_event_pacer().session(doc)
            if events is None:
                return original(self, doc, *args)
            events.run(functools.partial(original, self, doc, *args))
        return run

    _wrap_page_event_handlers("paced", paced)


def install() -> None:
    hold_page_events()
    pace_page_events()  # outside the hold: a queued event is held when its turn comes


PATCH = Patch(
    name="panel_syncable_events",
    changes="each of a page's events held, its models walked once, and paced",
    targets={
        "panel.reactive:Syncable._change_event": "f9f9eecfcff6c88a",
        "panel.reactive:Syncable._process_bokeh_event": "4c693bbe02e30441",
        "panel.io.document:hold": "25f7cbf8b3594465",
    },
    written_for="Panel 1.10.0",
    upstream="holoviz/panel#1447 (the error a view's write outside a hold raised)",
    apply=install,
)
