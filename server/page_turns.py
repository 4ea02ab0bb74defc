"""Work for a page done in a later turn of the server's loop, so that other pages are answered between two long ones."""

from __future__ import annotations

from panel.io.document import hold
from panel.io.state import set_curdoc

from server.patches.bokeh_model_walks import walk_models_once
from services.pace import run_later
from services.pacing import once_a_page


def later_turn(doc, work, after: float) -> bool:
    """Run ``work()`` (no arguments) on ``doc``'s session ``after`` seconds from now, in a turn of the loop of its own,
    as a page's event is run (the document held, walked once: ``server/patches/panel_syncable_events.py``) and not
    counted against the session's share (:func:`services.pacing.once_a_page`: a tab's first showing, which a page does
    once).

    The turns between are other pages': a tab's first showing built its views and their Bokeh models in one turn
    long enough served that every other page's answer waited visibly (``bench/HISTORY.md``); built in one turn and
    put in the page in the next, each is about half, and other pages' answers come between (``widgets/tabs.py``).
    Returns False, and runs nothing, outside a served page (a test, a notebook): the caller does the work at once.
    """
    if doc is None or doc.session_context is None:
        return False

    def run():
        with set_curdoc(doc), once_a_page(doc), hold(doc), walk_models_once(doc):
            work()

    run_later(doc, run, after)
    return True
