"""Bokeh's ``Document.apply_json_patch``: the models a page's patch names are looked up in the document's own table of
its models, instead of in a copy of it made first.

Bokeh 3.10.2 reads each patch a page sends with ``Deserializer(list(self.models))``, whose ``__init__`` reads every
model's ``id`` into a new dict: some 110 models on a first page, every one of them a read of memory nothing else of a
drag position's update touches, for a patch that names one model (``bench/HISTORY.md``). Here, while a document
applies a patch, the deserialiser it makes first looks each id up in the document's table as the patch began and
keeps the models the patch itself makes in a table of its own, as Bokeh's does (:class:`DocumentRefs`). The same
models are resolved, an unknown id is the same ``UnknownReferenceError``, and the same models count as the page's
once the events are handled: not one the server's code added meanwhile (``tests/test_bokeh_defaults.py``).
Written for Bokeh 3.10.2; no upstream issue asks for it.
"""

from __future__ import annotations

import contextvars
from functools import wraps

from bokeh.core.serialization import Deserializer
from bokeh.document import Document

from server.patches.fit import Patch

#: The document applying a page's patch in this context, if any.
_APPLYING: contextvars.ContextVar[Document | None] = contextvars.ContextVar("applying", default=None)


class DocumentRefs(dict):
    """A deserialiser's references while ``doc`` applies a patch: the models the patch itself makes (items of this
    dict, as Bokeh's table keeps them) and, failing those, the models the document held as the patch began, by id.

    Bokeh's ``Deserializer`` reads its references only through ``get``, ``in`` and item assignment (``has_ref``,
    ``_decode_ref``, ``_decode_object_ref``). Once the patch's events are handled, ``apply_json_patch`` asks ``in``
    (``has_ref``) which of the models the page has not been sent yet it knows: those it named or made. A model the
    server's code added while the events were handled is in the document by then, and its change may wait to be sent
    (a hold, Panel's writes queued behind a busy socket): counted as the page's, it would be sent as a reference to a
    model the page never had.
    """

    def __init__(self, doc: Document):
        super().__init__()
        # the document's table of its models by id: Bokeh's walk of the models (``recompute``) puts a new table in its
        # place and never changes one, so this stays the table Bokeh's own deserialiser copies as the patch begins
        self._held = doc.models._models

    def get(self, key, default=None):
        found = dict.get(self, key)
        if found is None:
            found = self._held.get(key)
        return default if found is None else found

    def __contains__(self, key) -> bool:
        return self.get(key) is not None


def install() -> bool:
    """Have a document's patch look its models up one at a time (above); True if this call did. Idempotent."""
    original_init, original_apply = Deserializer.__init__, Document.apply_json_patch
    if getattr(original_apply, "original", None) is not None:
        return False

    def deserializer_init(self, references=None, *, setter=None):
        doc = _APPLYING.get()
        if doc is None or references is None:
            original_init(self, references, setter=setter)
            return
        # the patch's own deserialiser, made first, and no other: not one that code run by its events makes, nor one
        # made later in a callback scheduled meanwhile (a callback runs in a copy of the context it was scheduled in)
        _APPLYING.set(None)
        original_init(self, setter=setter)
        self._references = DocumentRefs(doc)

    @wraps(original_apply)
    def apply_json_patch(self, patch_json, *, setter=None):
        token = _APPLYING.set(self)
        try:
            return original_apply(self, patch_json, setter=setter)
        finally:
            _APPLYING.reset(token)

    deserializer_init.original = deserializer_init.__wrapped__ = original_init
    apply_json_patch.original = original_apply
    Deserializer.__init__ = deserializer_init
    Document.apply_json_patch = apply_json_patch
    return True


PATCH = Patch(
    name="bokeh_apply_patch",
    changes="a page's patch looks up the models it names in the document, without a table of every model",
    targets={
        # makes Deserializer(list(self.models), setter=setter) for the patch, and nothing else with references
        "bokeh.document.document:Document.apply_json_patch": "c5dc2d783d337643",
        "bokeh.core.serialization:Deserializer.__init__": "aaf3089c42cf293e",
        # what DocumentRefs stands in for: how the deserialiser reads its references
        "bokeh.core.serialization:Deserializer.has_ref": "756ff4d0de2cd9f3",
        "bokeh.core.serialization:Deserializer._decode_ref": "35e4fdc8af569b82",
        "bokeh.core.serialization:Deserializer._decode_object_ref": "3d6c94887592d80b",
        # the table DocumentRefs reads: what list(self.models) lists, replaced by each walk and never changed
        "bokeh.document.models:DocumentModelManager.__iter__": "818f8e73860e329a",
        "bokeh.document.models:DocumentModelManager.recompute": "1628ae8a8a3a19cb",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
    apply=install,
)
