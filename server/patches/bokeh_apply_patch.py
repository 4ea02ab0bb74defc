"""Bokeh's ``Document.apply_json_patch``: the models a page's patch names are looked up in the document one at a time,
instead of in a table of every model of the document made first.

Bokeh 3.10.2 reads each patch a page sends with ``Deserializer(list(self.models))``, whose ``__init__`` reads every
model's ``id`` into a new dict: some 110 models on a first page, every one of them a read of memory nothing else of a
drag position's update touches, for a patch that names one model (``bench/HISTORY.md``). Here, while a document
applies a patch, a deserialiser given references looks each id up in the document (``Document.get_model_by_id``) and
keeps the models the patch itself makes in a table of its own, as Bokeh's does (:class:`DocumentRefs`). The same
models are resolved and an unknown id is the same ``UnknownReferenceError`` (``tests/test_bokeh_defaults.py``).
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
    dict, as Bokeh's table keeps them) and, failing those, the document's own, looked up by id.

    Bokeh's ``Deserializer`` reads its references only through ``get``, ``in`` and item assignment (``has_ref``,
    ``_decode_ref``, ``_decode_object_ref``).
    """

    def __init__(self, doc: Document):
        super().__init__()
        self._doc = doc

    def get(self, key, default=None):
        found = dict.get(self, key)
        if found is None:
            found = self._doc.get_model_by_id(key)
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
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
    apply=install,
)
