"""Panel's stylesheets of a model (``panel.reactive``): while Panel makes a model's properties for a page, each
stylesheet file it names is the page's own ``ImportedStyleSheet`` for that file from the start, not a new one that
Panel replaces by the page's a moment later.

Panel 1.10.0 makes a model's properties in two steps: ``_process_param_change`` wraps every stylesheet file the model
names (Panel's loading.css, the design's and the component's files) in a new ``ImportedStyleSheet``, and
``Reactive._resolve_stylesheets`` then replaces each by the one the document already has for that file (its cache,
``state._stylesheets``), if it has one. On a page nearly every one is replaced: the explorer's first page made 38
``ImportedStyleSheet`` models and kept 5, each a Bokeh model whose properties' defaults were set and validated, then
garbage for the cycle collector (``bench/HISTORY.md``). While ``Reactive._get_properties`` runs for a document, a
file is looked up in that document's cache first, with Panel's own test of a cached sheet (its url still set, in no
other document); Panel's resolving step then finds the same sheet and keeps it, as before. Anywhere else (an update's
properties, a component outside a document) a new sheet is made, as before. The models a page gets and sends are the
same. Written for Panel 1.10.0; no upstream issue asks for it.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar

from bokeh.models import ImportedStyleSheet

from server.patches.fit import Patch

#: The document whose model's properties Panel is making (``Reactive._get_properties``), if any.
_MAKING_FOR: ContextVar[object | None] = ContextVar("stylesheets_making_for", default=None)


class _SameInstances(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, ImportedStyleSheet)


class PageStyleSheet(metaclass=_SameInstances):
    """What ``panel.reactive`` calls ``ImportedStyleSheet``: ``PageStyleSheet(url=...)`` is the document's own sheet
    for ``url`` while Panel makes a model's properties for a document that has one, else a new
    ``ImportedStyleSheet``; ``isinstance(obj, PageStyleSheet)`` is ``isinstance(obj, ImportedStyleSheet)``."""

    def __new__(cls, *args, **kwargs):
        from panel.io.resources import stylesheet_url
        from panel.io.state import state

        doc = _MAKING_FOR.get()
        if doc is not None and not args and kwargs.keys() == {"url"}:
            cached = state._stylesheets.get(doc, {}).get(kwargs["url"])
            # Panel's test of a cached sheet (Reactive._resolve_stylesheets)
            if cached is not None and stylesheet_url(cached) is not None and cached.document in (None, doc):
                return cached
        return ImportedStyleSheet(*args, **kwargs)


def install() -> None:
    """Look each stylesheet file up in the page's cache while Panel makes a model's properties (above). Idempotent."""
    from panel import reactive

    if reactive.ImportedStyleSheet is PageStyleSheet:
        return
    original = reactive.Reactive._get_properties

    def _get_properties(self, doc):
        making = _MAKING_FOR.set(doc)
        try:
            return original(self, doc)
        finally:
            _MAKING_FOR.reset(making)

    reactive.Reactive._get_properties = functools.update_wrapper(_get_properties, original)
    reactive.ImportedStyleSheet = PageStyleSheet


PATCH = Patch(
    name="panel_stylesheets",
    changes="a model's stylesheet files are the page's own sheets from the start, not new ones replaced at once",
    targets={
        "panel.reactive:Reactive._get_properties": "ecefaf516057475c",
        # where Panel makes the sheets it then replaces, and the replacing this patch's lookup repeats
        "panel.reactive:Syncable._process_param_change": "3c3c7c271176634b",
        "panel.reactive:ReactiveCustomBase._process_param_change": "6cd53c5a197f656f",
        "panel.reactive:ReactiveHTML._process_param_change": "6cd53c5a197f656f",
        "panel.reactive:Reactive._resolve_stylesheets": "72e6ead4c2cfb998",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
