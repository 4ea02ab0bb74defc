"""Bokeh's ``HasProps.themed_values``: a model's theme overrides read from its own attributes, without raising.

Bokeh 3.10.2 reads them as ``getattr(self, '__themed_values__', None)``. A model no theme touches (almost every
model of a page: Panel's design themes few) has no such attribute, so each read falls through to
``HasProps.__getattr__``, which raises an ``AttributeError`` that ``getattr`` then swallows. Every read of a property
left at its default asks for the theme first (``PropertyDescriptor._get_default``, ``instance_default``): some 8,000
reads a first page, each about 1.3 µs where reading the instance's dictionary takes 0.1 (bench/HISTORY.md, "A page's
build without exceptions for unthemed models"). The replacement reads the dictionary that ``apply_theme`` writes the
attribute into, and answers the same: the theme's dict where one is applied, None where none is.

Written for Bokeh 3.10.2. Upstream: none filed.
"""

from __future__ import annotations

from bokeh.core.has_props import HasProps

from server.patches.fit import Patch


def install() -> bool:
    """Read ``__themed_values__`` from the model's own dictionary (above); True if this call did. Idempotent."""
    original = HasProps.themed_values
    if getattr(original, "reads_own_dict", False):
        return False

    def themed_values(self):
        # apply_theme sets (and deletes) '__themed_values__' with setattr/delattr, which HasProps passes to object's
        # own for a name starting with "_": into the instance's __dict__
        return self.__dict__.get("__themed_values__")

    themed_values.reads_own_dict = True
    themed_values.__doc__ = original.__doc__
    themed_values.original = themed_values.__wrapped__ = original
    HasProps.themed_values = themed_values
    return True


PATCH = Patch(
    name="bokeh_themed_values",
    changes="a Bokeh model's theme overrides read without an exception where it has none",
    targets={
        "bokeh.core.has_props:HasProps.themed_values": "015f63f849980135",
        # where the attribute is written and removed, and why a missing one raised
        "bokeh.core.has_props:HasProps.apply_theme": "f3354d8951741e2e",
        "bokeh.core.has_props:HasProps.__setattr__": "894da8cb0d278166",
        "bokeh.core.has_props:HasProps.__getattr__": "de7a05138b2585ba",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
    apply=install,
)
