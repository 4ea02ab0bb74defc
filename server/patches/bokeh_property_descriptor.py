"""Bokeh's ``PropertyDescriptor``: a property's stable default, and whether its default is made per object, worked
out once per (model class, property) instead of on every read; a model given to a constructor set without first
making the default model it replaces.

Bokeh 3.10.2 works out again, on every read of a property that was never set, its default
(``PropertyDescriptor._get_default``: copy the class's default, validate it against the property's type, look for
overrides) and whether that default must be made per object (``has_unstable_default``, through every type parameter
of the property); every model's constructor asks the latter for each of its properties. On a page build that was the
largest single cost of the server's CPU for a page (``bench/HISTORY.md``, "Where a page's build time goes"), for
answers that are the same on every page of every session. Three of the descriptor's methods change, and nothing a
model reads or sends:

- ``_get_default``: a property's default on one model class, when no theme overrides it on that object, is kept once
  it is an immutable value (None, a bool, a number, a string): it is the same every time. Defaults Bokeh makes fresh
  per object (lists, dicts, models such as a source's ``Selection``; Bokeh keeps those per object itself), themed
  values (Panel's design themes some) and values of any other type go to Bokeh's own code as before, except one
  Bokeh makes per object as an empty list, dict or set (a model's ``tags``, ``js_event_callbacks``, ``css_classes``:
  some 760 a first page, each copied, validated and wrapped by Bokeh's code): that one is made as a new empty
  container of the type Bokeh wraps it in, and stored and owned as Bokeh stores it;
- ``has_unstable_default``: kept per (model class, property);
- ``__set__``: a model given to a new model's constructor for a property whose default is a model is set without
  making that default model first, only to compare the given one with it.

Written for Bokeh 3.10.2. Upstream: bokeh/bokeh#13174 made the default's lookup cheaper where Bokeh keeps it per
object already; nothing upstream keeps a class's stable defaults. ``tests/test_bokeh_defaults.py`` compares each
with Bokeh's own code: every default of every model on a built page, and the page's whole serialised document. The
kept answers are constants of Bokeh's classes, never anything of a session's: one entry per (model class, property)
read, a few thousand at most.
"""

from __future__ import annotations

from bokeh.core.has_props import HasProps
from bokeh.core.property.descriptors import PropertyDescriptor
from bokeh.core.property.instance import InstanceDefault
from bokeh.core.property.wrappers import PropertyValueDict, PropertyValueList, PropertyValueSet

from server.patches.fit import Patch

#: The types of default kept: immutable, so one value can be shared by every object. Exact types only: a
#: subclass could carry state.
IMMUTABLE = (type(None), bool, int, float, str)
#: The containers Bokeh wraps an empty list, dict or set default in (exact types: a data source's column data is a
#: subclass with its own notifications).
EMPTY_CONTAINERS = (PropertyValueList, PropertyValueDict, PropertyValueSet)


def install() -> bool:
    """Make ``PropertyDescriptor`` keep the stable defaults (above); True if this call did. Idempotent."""
    original = PropertyDescriptor._get_default
    if getattr(original, "keeps_stable_defaults", False):
        return False
    kept: dict[tuple[type, str], object] = {}
    empty_kind: dict[tuple[type, str], type] = {}
    missing = object()

    def _get_default(self, obj):
        themed = obj.themed_values()
        if themed is not None and self.name in themed:
            return original(self, obj)
        key = (type(obj), self.name)
        value = kept.get(key, missing)
        if value is not missing:
            return value
        unstable = obj._unstable_default_values
        empty = empty_kind.get(key)
        if empty is not None:
            # Bokeh's own first step (descriptors.py): a default already made for this object is the one
            value = unstable.get(self.name, missing)
            if value is missing:
                value = unstable[self.name] = empty()
                value._register_owner(obj, self)
            return value
        value = original(self, obj)
        # Bokeh stores a default it must make per object in _unstable_default_values (a callable default
        # can return a string, e.g. a fresh id): never shared
        if type(value) in IMMUTABLE and self.name not in unstable:
            kept[key] = value
        elif type(value) in EMPTY_CONTAINERS and not value and unstable.get(self.name) is value:
            empty_kind[key] = type(value)
        return value

    unstable: dict[tuple[type, str], bool] = {}
    original_unstable = PropertyDescriptor.has_unstable_default

    def has_unstable_default(self, obj) -> bool:
        # a class-level fact (the property's default and the class's overrides of it) that every model's
        # constructor asks for each of its properties, and Bokeh works out through every type parameter each time
        key = (type(obj), self.name)
        answer = unstable.get(key)
        if answer is None:
            answer = unstable[key] = original_unstable(self, obj)
        return answer

    original_set = PropertyDescriptor.__set__
    model_default: dict[tuple[type, str], bool] = {}

    def __set__(self, obj, value, *, setter=None):
        # Bokeh's own (PropertyDescriptor.__set__) reads the old value first, to tell whether the new one changes
        # anything; for a property passed to a model's constructor whose default is a model of its own
        # (InstanceDefault: a GlyphRenderer's CDSView, a figure's ranges), that makes the default model only to
        # compare a given model with it, which it never is. Set such a one without it.
        if (obj._initialized or not isinstance(value, HasProps) or self.property.readonly
                or self.name in obj._property_values or not hasattr(obj, "_property_values")):
            return original_set(self, obj, value, setter=setter)
        key = (type(obj), self.name)
        made = model_default.get(key)
        if made is None:
            default = obj._overridden_defaults().get(self.name, self.property._default)
            made = model_default[key] = isinstance(default, InstanceDefault)
        if not made or self.name in obj._unstable_default_values:
            return original_set(self, obj, value, setter=setter)
        self._set(obj, None, self.property.prepare_value(obj, self.name, value), setter=setter)

    _get_default.keeps_stable_defaults = True
    _get_default.kept = kept
    for replacement, replaced in ((_get_default, original), (has_unstable_default, original_unstable),
                                  (__set__, original_set)):
        replacement.original = replacement.__wrapped__ = replaced
    PropertyDescriptor.__set__ = __set__
    PropertyDescriptor._get_default = _get_default
    PropertyDescriptor.has_unstable_default = has_unstable_default
    return True


PATCH = Patch(
    name="bokeh_property_descriptor",
    changes="Bokeh's stable property defaults kept once per model class",
    targets={
        "bokeh.core.property.descriptors:PropertyDescriptor._get_default": "f7d3a9e021faec46",
        "bokeh.core.property.descriptors:PropertyDescriptor.has_unstable_default": "1603ba73db414727",
        "bokeh.core.property.descriptors:PropertyDescriptor.__set__": "0002de1890961fdd",
        # what the kept answers rely on: where Bokeh makes a default per object, and how it sets a value
        "bokeh.core.property.descriptors:PropertyDescriptor._set": "ee1c41db77170cfa",
        "bokeh.core.property.descriptors:PropertyDescriptor.instance_default": "d36982e4a516f7f1",
        "bokeh.core.has_props:HasProps._overridden_defaults": "c2ef947faf594226",
    },
    written_for="Bokeh 3.10.2",
    upstream="bokeh/bokeh#13174 (related: the default's lookup made cheaper where it is per object; none filed for "
             "this)",
    apply=install,
)
