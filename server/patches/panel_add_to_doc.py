"""Panel's ``add_to_doc`` as ``Viewable.server_doc`` calls it for a served page: the page's root added to its
document without first walking every model it reaches to take each out of a document it was shown in before.

Panel 1.10.0's ``add_to_doc`` calls ``remove_root``, which walks the whole page (``obj.select({'type': Model})``)
and detaches each model from any document it is in, for an object shown again in another document (a notebook's
second cell showing the same figure, a module-level figure served to every session). This app builds every model of
a page for that page's session (``app.py``, ``create_app``), and the only models its document has before (the
address bar's and the progress store's ``Div``, roots of their own) are not in the page's tree; the walk found
nothing to do and was 5 % of a page's build (bench/HISTORY.md, "A page's build without exceptions for unthemed
models"). Bokeh's own walk as the root is added (``DocumentModelManager.recompute``) still attaches every model, and
raises for one already in another document. Only ``panel.viewable``'s name is replaced, and only a served page's
document (one with a session context) skips the walk: a notebook's display and anything else is Panel's own.
Written for Panel 1.10.0; no upstream issue asks for it.
"""

from __future__ import annotations

from server.patches.fit import Patch


def install() -> bool:
    """Add a served page's root without Panel's walk (above); True if this call did. Idempotent."""
    from panel import viewable

    original = viewable.add_to_doc
    if getattr(original, "served_pages_skip_walk", False):
        return False

    def add_to_doc(obj, doc, hold=False, skip=None):
        if doc.session_context is None or skip:
            return original(obj, doc, hold, skip)
        # Panel's own, but for remove_root's walk: the root added, the hold as Panel takes it
        doc.add_root(obj)
        if doc.callbacks.hold_value is None and hold:
            doc.hold()
        return set()  # (server_doc drops what Panel's returns: the models it walked)

    add_to_doc.__wrapped__ = original
    add_to_doc.served_pages_skip_walk = True
    viewable.add_to_doc = add_to_doc
    return True


PATCH = Patch(
    name="panel_add_to_doc",
    changes="a served page's root added without Panel's walk of every model for another document's",
    targets={
        "panel.io.model:add_to_doc": "07828d87e8a0a14c",
        "panel.io.model:remove_root": "8cb0864e76591a1d",
        # the caller whose name is replaced, which drops the returned models
        "panel.viewable:Viewable.server_doc": "648e95454e2d1c1c",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
