"""Bokeh's ``Serializer.__init__``: a patch's serialiser makes the reference of a model the page already has only
when the patch names it, instead of one for every model of the document.

Bokeh 3.10.2 makes a ``Serializer(references=...)`` anew for each of a page's updates, with every model of the
document as a reference made at once (many with the Projections tab shown). Here the references are made when the
serialiser first asks for one (:class:`LazyRefs`); the message is the same (``tests/test_bokeh_defaults.py``).
Written for Bokeh 3.10.2; no upstream issue asks for it.
"""

from __future__ import annotations

from bokeh.core.has_props import HasProps
from bokeh.core.serialization import Serializer

from server.patches.fit import Patch


class LazyRefs(dict):
    """A serialiser's known models by ``id``: each model's reference made when first asked for, then kept.

    Bokeh's ``Serializer`` reads its references only through ``in``, ``get`` and item assignment
    (``has_ref``, ``get_ref``, ``add_ref``); the values it stores itself are already references.
    """

    def get(self, key, default=None):
        value = dict.get(self, key, default)
        if isinstance(value, HasProps):
            value = self[key] = value.ref
        return value


def install() -> bool:
    """Make ``Serializer`` take its references lazily (above); True if this call did. Idempotent."""
    original = Serializer.__init__
    if getattr(original, "original", None) is not None:
        return False

    def serializer_init(self, *, references=frozenset(), deferred=True, check_circular=False):
        original(self, deferred=deferred, check_circular=check_circular)
        self._references = LazyRefs((id(obj), obj) for obj in references)

    serializer_init.original = serializer_init.__wrapped__ = original
    Serializer.__init__ = serializer_init
    return True


PATCH = Patch(
    name="bokeh_serializer",
    changes="a patch's serialiser makes a model's reference only when the patch names it",
    targets={
        "bokeh.core.serialization:Serializer.__init__": "1f28fde48bebb8ba",
        # what LazyRefs stands in for: how the serialiser reads its references
        "bokeh.core.serialization:Serializer.has_ref": "383df13eb69a1f8d",
        "bokeh.core.serialization:Serializer.get_ref": "78e536e9894dd34b",
        "bokeh.core.serialization:Serializer.add_ref": "5bc01793d3f4dcee",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
    apply=install,
)
