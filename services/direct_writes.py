"""A page's write to a property that the server hands straight to the code that reads it, without Bokeh setting the
property on the server's model.

A drag channel (``link/channel.py``) reads each position a page writes once, and nothing on the server reads the
property again. Bokeh's own way with such a write (reading the patch a second time, checking the value against the
property a second time, setting it and calling its change callbacks) was a large part of what a drag position cost
the server (``bench/HISTORY.md``). The websocket guard (``server/guard.py``), which reads and checks every write a
page sends before Bokeh does, hands a write to a property named here to its reader instead, under the session's
document lock, one event at a time and paced as any other. Where no guard serves the page (a notebook, a bare
``panel serve``), Bokeh sets the property and the model's own change callback reads it: a model that takes writes
directly also keeps that callback.

What a model takes directly is kept on the model itself, so it goes with the page's document.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from bokeh.document.callbacks import invoke_with_curdoc
from bokeh.model import Model

#: The model's own attribute holding its readers, by property name (Bokeh keeps names starting "_" off the wire).
_READERS = "_direct_readers"


def read_directly(model: Model, attr: str, reader: Callable[[object], None]) -> None:
    """Have the guard hand each value a page writes into ``model.attr`` to ``reader(value)`` (the value as Bokeh's
    deserialiser reads it, checked against the property), without setting the property. Raises ``ValueError`` if
    ``model`` has no property ``attr``."""
    if attr not in model.properties():
        raise ValueError(f"{type(model).__name__} has no property {attr!r}")
    setattr(model, _READERS, {**getattr(model, _READERS, {}), attr: reader})


def direct_reader(model: object, attr: object) -> Callable[[object], None] | None:
    """The reader :func:`read_directly` gave ``model.attr``, or None: Bokeh sets the property as usual."""
    readers = getattr(model, _READERS, None)
    return readers.get(attr) if isinstance(readers, dict) and isinstance(attr, str) else None


async def hand_over(session, doc, reader: Callable[[object], None], value, _message=None) -> None:
    """``reader(value)`` as Bokeh calls a property's change callback when it applies a page's patch: under
    ``session``'s document lock, with ``doc`` (the session's) the current document. Nothing is answered: BokehJS
    asks no reply to its patches. ``_message``: the page's message it stands for (the guard's handlers take one)."""
    await session.with_document_locked(invoke_with_curdoc, doc, partial(reader, value))
