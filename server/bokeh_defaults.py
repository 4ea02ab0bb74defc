"""Bokeh's class-level facts about properties worked out once per process instead of on every read.

Bokeh 3.10 works out again, on every read of a property that was never set, its default
(``PropertyDescriptor._get_default``: copy the class's default, validate it against the property's type, look
for overrides) and whether that default must be made per object (``has_unstable_default``, through every type
parameter of the property); every model's constructor asks the latter for each of its properties, and
serialising a model reads all of its properties before it skips the unset ones
(``HasProps.query_properties_with_values``). On a page build that was the largest single cost of the server's
CPU for a page (``bench/RESULTS.md``, "Where a page's build time goes"), for answers that are the same on every
page of every session.

:func:`install` changes four things, and nothing a model reads or sends:

- a property's default on one model class, when no theme overrides it on that object, is kept once it is an
  immutable value (None, a bool, a number, a string): it is the same every time. Defaults Bokeh makes fresh per
  object (lists, dicts, models such as a source's ``Selection``; Bokeh keeps those per object itself), themed
  values (Panel's design themes some) and values of any other type go to Bokeh's own code as before;
- whether a (model class, property)'s default is made per object is kept;
- a model given to a new model's constructor for a property whose default is a model is set without making
  that default model first, only to compare the given one with it;
- serialising without defaults reads only the properties it can send (set ones, those made per object, themed
  ones) instead of all of them;
- a patch's serialiser makes the reference of a model the page already has only when the patch names it,
  instead of one for every model of the document (``Serializer(references=...)``, made anew for each of a
  page's updates, many with the Projections tab shown).

``tests/test_bokeh_defaults.py`` compares each with Bokeh's own code: every default of every model on a built
page, and the page's whole serialised document. The kept answers are constants of Bokeh's classes, never
anything of a session's: one entry per (model class, property) read, a few thousand at most.
"""

from __future__ import annotations

from bokeh.core.has_props import HasProps
from bokeh.core.property.descriptors import PropertyDescriptor, UnsetValueError
from bokeh.core.property.instance import InstanceDefault
from bokeh.core.property.singletons import Undefined
from bokeh.core.property.wrappers import PropertyValueContainer
from bokeh.core.serialization import Serializer

#: The types of default kept: immutable, so one value can be shared by every object. Exact types only: a
#: subclass could carry state.
IMMUTABLE = (type(None), bool, int, float, str)


def install() -> bool:
    """Make ``PropertyDescriptor._get_default`` keep the stable defaults (above); True if this call did.

    Idempotent: a second call (the app module imported again, a notebook cell run twice) changes nothing.
    """
    original = PropertyDescriptor._get_default
    if getattr(original, "keeps_stable_defaults", False):
        return False
    kept: dict[tuple[type, str], object] = {}
    missing = object()

    def _get_default(self, obj):
        themed = obj.themed_values()
        if themed is not None and self.name in themed:
            return original(self, obj)
        key = (type(obj), self.name)
        value = kept.get(key, missing)
        if value is missing:
            value = original(self, obj)
            # Bokeh stores a default it must make per object in _unstable_default_values (a callable default
            # can return a string, e.g. a fresh id): never shared
            if type(value) in IMMUTABLE and self.name not in obj._unstable_default_values:
                kept[key] = value
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

    original_query = HasProps.query_properties_with_values

    def query_properties_with_values(self, query, *, include_defaults=True, include_undefined=False):
        # Bokeh's own (HasProps.query_properties_with_values), except that without the defaults it reads only the
        # properties it can return: set ones, defaults made per object, themed ones. Bokeh reads every property
        # first (its comment: it had no other way to tell an unset one), which works out every default of every
        # model each time a page is serialised.
        if include_defaults:
            return original_query(self, query, include_defaults=True, include_undefined=include_undefined)
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

    original_init = Serializer.__init__

    def serializer_init(self, *, references=frozenset(), deferred=True, check_circular=False):
        original_init(self, deferred=deferred, check_circular=check_circular)
        self._references = _LazyRefs((id(obj), obj) for obj in references)

    serializer_init.original = original_init
    Serializer.__init__ = serializer_init

    query_properties_with_values.original = original_query
    __set__.original = original_set
    PropertyDescriptor.__set__ = __set__
    HasProps.query_properties_with_values = query_properties_with_values

    _get_default.keeps_stable_defaults = True
    _get_default.kept = kept
    _get_default.original = original
    has_unstable_default.original = original_unstable
    PropertyDescriptor._get_default = _get_default
    PropertyDescriptor.has_unstable_default = has_unstable_default
    return True


class _LazyRefs(dict):
    """A serialiser's known models by ``id``: each model's reference made when first asked for, then kept.

    Bokeh's ``Serializer`` reads its references only through ``in``, ``get`` and item assignment
    (``has_ref``, ``get_ref``, ``add_ref``); the values it stores itself are already references.
    """

    def get(self, key, default=None):
        value = dict.get(self, key, default)
        if isinstance(value, HasProps):
            value = self[key] = value.ref
        return value
