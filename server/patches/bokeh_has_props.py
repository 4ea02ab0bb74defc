"""Bokeh's ``HasProps.query_properties_with_values``: serialising a model without its defaults reads only the
properties it can send (set ones, those made per object, themed ones) instead of all of them.

Bokeh 3.10.2 reads every property of a model before it skips the unset ones (its comment: it had no other way to
tell an unset one), which works out every default of every model each time a page is serialised. The properties it
returns are the same (``tests/test_bokeh_defaults.py`` compares a built page's whole serialised document with
Bokeh's own code's). Written for Bokeh 3.10.2; no upstream issue asks for it.
"""

from __future__ import annotations

from bokeh.core.has_props import HasProps
from bokeh.core.property.descriptors import UnsetValueError
from bokeh.core.property.singletons import Undefined
from bokeh.core.property.wrappers import PropertyValueContainer

from server.patches.fit import Patch


def install() -> bool:
    """Make ``HasProps.query_properties_with_values`` read only what it can send (above); True if this call did.
    Idempotent."""
    original = HasProps.query_properties_with_values
    if getattr(original, "original", None) is not None:
        return False

    def query_properties_with_values(self, query, *, include_defaults=True, include_undefined=False):
        if include_defaults:
            return original(self, query, include_defaults=True, include_undefined=include_undefined)
        themed = self.themed_values() or {}
        selected = self._property_values.keys() | self._unstable_default_values.keys() | themed.keys()
        result = {}
        for key in self.properties(_with_props=True):
            if key not in selected:
                continue
            descriptor = self.lookup(key)
            if not query(descriptor):
                continue
            try:
                value = descriptor.get_value(self)
            except UnsetValueError:
                if not include_undefined:
                    raise
                value = Undefined
            else:
                # an unchanged default container is left out, as Bokeh leaves it out
                if (key not in themed and isinstance(value, PropertyValueContainer)
                        and key in self._unstable_default_values):
                    continue
            result[key] = value
        return result

    query_properties_with_values.original = query_properties_with_values.__wrapped__ = original
    HasProps.query_properties_with_values = query_properties_with_values
    return True


PATCH = Patch(
    name="bokeh_has_props",
    changes="a model serialised without defaults reads only the properties it sends",
    targets={
        "bokeh.core.has_props:HasProps.query_properties_with_values": "09eff830d7349bb2",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
    apply=install,
)
