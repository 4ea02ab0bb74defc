"""A closed page taken apart once Bokeh has discarded its session, so that its memory comes back at once, without
a pass of Python's cycle collector over every page still open.

A page is about 9,000 objects the collector tracks (its Bokeh models, Panel's views of them, the app's state and
views), nearly all of them in reference cycles: a model and the containers of its properties refer to each other,
a param object and the watchers that call its methods, a view and its state. Bokeh's and Panel's own clean-up when a
session ends (``Model.destroy``, Panel's ``_cleanup_doc``) clear a few of the links, and leave about nine tenths of
the page for the collector. But the collector finds a cycle only by passing over every object of the generation it
sits in, the pages still open included: a class of 40 leaving cost the class that stayed a pause of 1 s or more
(``bench/memory.py --close-all``), during which no page was answered.

So each object a page made is noted as it is made (``server/patches/object_inits.py``: the Bokeh models and param
objects made while the page's document is Panel's current one), and once the page's session has been discarded
(:func:`take_apart`, called by the sweep of ``server/housekeeping.py``) its models' property values and the state of
its param objects are cleared: the cycles are cut, and reference counting frees nearly all of the page there and
then, a few milliseconds of the loop per page. The functions ``pn.bind`` made for the page's views and the
reactive expressions (``.rx``) of its params are cut likewise when a view taken apart holds them (each refers to
itself through the display hooks param gives it), or when one of its params calls them back (with what they were made
of: their function, the expression they follow), and the watchers param keeps for a reactive expression; a plain
object of the app's (not param's) that keeps the watcher of its own method on the page's params lets go of it; the
document's config model is taken apart with the page's; and the websocket guard cuts a closed connection's
(``server/guard.py``). A page that leaves its first tab unopened leaves nothing for the collector
(``tests/test_class_leaving.py``); what another may leave waits for the collector's next full pass
(``server/housekeeping.py``).

Taken apart: every Bokeh model made for the page (Bokeh keeps a model in one document only, and its ``Model.destroy``
already empties the properties of each model of a discarded one), Panel's reactive objects made for it (its
layouts, panes, widgets and per-page helpers: ``Syncable``, which Panel's own clean-up stops watching) and the
app's param objects made for it (its state and views: one per page, never shared). Left alone: param objects of
Panel's and param's own classes that are not Panel's reactive objects (a ``Design`` or ``Theme`` Panel makes for
the first page and keeps for every page), and anything made outside a page.
"""

from __future__ import annotations

import contextlib
import weakref

#: Where the process keeps its pages' objects.
CACHE_KEY = "explorer-page-objects"


class PageObjects:
    """The objects each served page made, by document, held weakly (a page that closes and is collected drops out)."""

    def __init__(self):
        self._pages: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # document -> [weakref to object]
        self.unserved = False  # note the objects of a page built with no session too (the health check's)

    def note(self, obj, doc) -> None:
        if doc is None or (doc.session_context is None and not self.unserved):  # a notebook, a test, start-up
            return
        refs = self._pages.get(doc)
        if refs is None:
            refs = self._pages[doc] = []
        refs.append(weakref.ref(obj))

    def pop(self, doc) -> list:
        """The objects ``doc``'s page made that are still alive (forgotten here), and the document's config (a model
        Bokeh makes with every document, before the page is built: its property containers and it refer to each
        other)."""
        objects = [obj for ref in self._pages.pop(doc, ()) if (obj := ref()) is not None]
        config = getattr(doc, "_config", None)
        return objects if config is None else [*objects, config]

    def __len__(self) -> int:
        return len(self._pages)


def get_page_objects() -> PageObjects:
    """This server process's :class:`PageObjects`, created on first use."""
    import panel as pn

    pages = pn.state.cache.get(CACHE_KEY)
    if pages is None:
        pages = pn.state.cache.setdefault(CACHE_KEY, PageObjects())
    return pages


@contextlib.contextmanager
def built_apart():
    """``with built_apart() as made:`` build a page with no session (Bokeh's ``Application.create_document``) and
    put its document in ``made``; once the block ends, the page's objects are taken apart (:func:`take_apart`).
    For a page built and discarded in one go, synchronously (the health check's: ``server/liveness.py``)."""
    pages = get_page_objects()
    made: list = []
    pages.unserved = True
    try:
        yield made
    finally:
        pages.unserved = False
        for doc in made:
            take_apart(pages.pop(doc))


def _takes_apart(obj) -> bool:
    import param
    from bokeh.model import Model
    from panel.reactive import Syncable
    from panel.theme.base import Design, Theme

    if isinstance(obj, (Design, Theme)):  # Panel makes one for the first page that asks and keeps it for all
        return False
    if isinstance(obj, (Model, Syncable)):
        return True
    # the app's own param objects (its state and views); not param's, Panel's or Bokeh's
    root = type(obj).__module__.partition(".")[0]
    return isinstance(obj, param.Parameterized) and root not in ("param", "panel", "bokeh")


def _cut_reactive(value, apart: set) -> None:
    """Cut the self-references of a page's ``pn.bind`` function or ``.rx`` expression ``value`` (a value of a param
    object being taken apart), if every param it depends on belongs to an object in ``apart`` (the page's)."""
    import param

    if isinstance(value, param.reactive.rx):
        state = getattr(value, "__dict__", None)
        if state is not None and _owned_by(state.get("_params", ()), apart):
            # what it was made of (its function, the expression it follows) depends on the same params
            made_of = [state.get(name) for name in ("_fn", "_prev", "_root")]
            state.clear()
            for part in made_of:
                if part is not None:
                    _cut_reactive(part, apart)
        return
    state = getattr(value, "__dict__", None)
    if not callable(value) or not state or "__bound_function__" not in state:
        return
    dependencies = (state.get("_dinfo") or {}).get("dependencies", ())
    if _owned_by([*dependencies, *(state.get("_dinfo") or {}).get("kw", {}).values()], apart):
        state.clear()


def _owned_by(parameters, apart: set) -> bool:
    """Whether each of ``parameters`` (param's ``Parameter`` objects) belongs to an object in ``apart``; False if
    there are none (a function of nothing the page owns is not the page's to cut)."""
    owners = [getattr(p, "owner", None) for p in parameters]
    return bool(owners) and all(id(o) in apart for o in owners)


def _cut_watchers(obj, apart: set) -> None:
    """The watchers param keeps on ``obj`` for reactive expressions (``_WeakInvalidator``) each refer to themselves
    through their watcher: cut, and the expression each calls back (one of ``obj``'s params, ``apart``, makes it the
    page's: ``obj.param.x.rx`` passed to a view holds it nowhere a view's values are)."""
    import param

    private = obj.__dict__.get("_param__private")
    watchers = getattr(private, "watchers", None) or {}
    for by_what in watchers.values():
        for listed in by_what.values():
            for watcher in listed:
                fn = getattr(watcher, "fn", None)
                if isinstance(fn, param.reactive._WeakInvalidator):
                    fn._watcher = None
                    method = fn._ref()
                    if method is not None:
                        _cut_reactive(method.__self__, apart)
                owner = getattr(fn, "__self__", None)
                if owner is not None and not isinstance(owner, param.Parameterized):
                    _drop_watcher(owner, watcher)


def _drop_watcher(owner, watcher) -> None:
    """An object that is not param's (a plain view of the app's) may keep the watcher that calls its own method, to
    unwatch it later: each refers to the other. The page's object it watched is being taken apart: dropped."""
    state = getattr(owner, "__dict__", None) or {}
    for name, value in list(state.items()):
        if value is watcher:
            state[name] = None


def take_apart(objects) -> int:
    """Cut the reference cycles of a discarded page's ``objects`` (from :meth:`PageObjects.pop`): each Bokeh model's
    property values and callbacks, each param object's state. Returns how many were taken apart.

    A model keeps its id (Bokeh's ``repr`` and hashing need nothing else); nothing else of them is used again: their
    document is gone, and Bokeh and Panel have let go of them (``server/housekeeping.py`` calls this only after
    Bokeh has discarded the session and run every clean-up of its own and Panel's).
    """
    import param
    from bokeh.model import Model

    objects = [obj for obj in objects if _takes_apart(obj)]
    apart = {id(obj) for obj in objects}
    for obj in objects:
        if isinstance(obj, param.Parameterized):
            private = obj.__dict__.get("_param__private")
            for values in (getattr(private, "values", None) or {}, getattr(private, "refs", None) or {},
                           obj.__dict__):
                for value in list(values.values()):
                    _cut_reactive(value, apart)
            _cut_watchers(obj, apart)
    done = 0
    for obj in objects:
        state = obj.__dict__
        kept = {"_id": state["_id"]} if isinstance(obj, Model) and "_id" in state else {}
        state.clear()
        state.update(kept)
        done += 1
    return done
