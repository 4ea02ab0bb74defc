"""Bokeh's ``Deserializer``, subclassed (:class:`PageReader`): what a page sent read as Bokeh reads it, its references
resolved in the session's document, changing nothing.

The websocket guard (``server/guard.py``, :func:`~server.guard.check_page_events`) reads each of a page's events
before Bokeh applies any, so that a value Bokeh would refuse half-way through a message (after the events before
it, logging the whole message three times) is found first. Bokeh 3.10.2's ``Deserializer`` makes a new model for a
model written out in full and looks references up in its own table; its two methods ``_decode_ref`` and
``_decode_object_ref`` are replaced here by a lookup in the document. Written for Bokeh 3.10.2; no upstream issue
asks for a read-only decode. Where it does not fit, the guard leaves the reading to Bokeh (its screening of kinds,
sizes and encodings still applies).
"""

from __future__ import annotations

from bokeh.core.serialization import Deserializer, UnknownReferenceError

from server.patches.fit import Patch

PATCH = Patch(
    name="bokeh_deserializer",
    changes="a page's events read as Bokeh reads them, references resolved in the document, before any is applied",
    targets={
        "bokeh.core.serialization:Deserializer._decode_ref": "35e4fdc8af569b82",
        "bokeh.core.serialization:Deserializer._decode_object_ref": "3d6c94887592d80b",
        "bokeh.core.serialization:Deserializer.decode": "3145148835fdf22c",
        "bokeh.core.serialization:Deserializer.__init__": "aaf3089c42cf293e",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
)


class PageReader(Deserializer):
    """Bokeh's ``Deserializer`` with the document's models as its references; a model written out in full is one of
    them (the guard refused any other), read as its reference."""

    def __init__(self, doc):
        super().__init__()
        self._doc = doc

    def _decode_ref(self, obj):
        model = self._doc.get_model_by_id(obj["id"])
        if model is None:
            self.error(UnknownReferenceError(obj["id"]))
        return model

    _decode_object_ref = _decode_ref
