"""Bokeh's ``DocumentModelManager`` (``doc.models``), for the length of a block: Bokeh walks the document's models (to
find every model its roots reach) at most once, at the block's end, and only if the block changed what refers to
what (:func:`walk_models_once`).

Bokeh 3.10.2 walks the whole document after each change of a property that holds models (a layout's children)
unless the document is frozen, and Panel freezes it around each layout it updates; a click that replaced several
layouts had it walked once for each, the longer the more tabs the page had built (``bench/HISTORY.md``). Bokeh's own
``doc.models.freeze()`` (and Panel 1.10's ``hold(freeze=True)``, which uses it) walks once at its end whether or not
anything changed, which would add a walk to every row key and drag release. Here the manager's ``invalidate`` and
``_push_freeze`` are replaced on the one document's manager, for the block only. Written for Bokeh 3.10.2.
Upstream: bokeh/bokeh#14962 (open) asks for ``models.freeze()`` to be documented; nothing upstream walks only when
something changed.

Used where the block runs (``link/updates.py``, ``server/page_turns.py``, the held page events of
``server/patches/panel_syncable_events.py``), not installed: where it does not fit, the block is a plain block and
Bokeh walks as it does.
"""

from __future__ import annotations

from contextlib import contextmanager

from server.patches.fit import Patch

PATCH = Patch(
    name="bokeh_model_walks",
    changes="a block's changes of a document walk its models at most once, and only if needed",
    targets={
        "bokeh.document.models:DocumentModelManager.invalidate": "10fd42c43e60a2c2",
        "bokeh.document.models:DocumentModelManager._push_freeze": "bf0fcbd22a5e1784",
        "bokeh.document.models:DocumentModelManager._pop_freeze": "61f727a8131ceab8",
        "bokeh.document.models:DocumentModelManager.recompute": "1628ae8a8a3a19cb",
    },
    written_for="Bokeh 3.10.2",
    upstream="bokeh/bokeh#14962 (related: models.freeze() undocumented; none filed for walking only on change)",
)


@contextmanager
def walk_models_once(doc):
    """Within the block, Bokeh walks ``doc``'s models at most once, at the end, and only if the block changed what
    refers to what (above). Inside a block already frozen, nothing changes: the outer one walks."""
    models = getattr(doc, "models", None)
    if models is None or getattr(models, "_freeze_count", 1) != 0 or not PATCH.fits():
        yield
        return
    changed = False

    def invalidate():  # a property holding models has changed: the walk is needed, at the end
        nonlocal changed
        changed = True

    def push_freeze():  # Bokeh's and Panel's own freezes, made only around changes of what refers to what
        nonlocal changed
        changed = True
        type(models)._push_freeze(models)

    models.invalidate, models._push_freeze = invalidate, push_freeze
    models._freeze_count += 1
    try:
        yield
    finally:
        del models.invalidate, models._push_freeze
        models._freeze_count -= 1
        if changed and models._freeze_count == 0:
            models.recompute()
