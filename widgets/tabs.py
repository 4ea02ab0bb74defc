"""The page's tabs, each built the first time it is shown.

In a module of its own, not in ``app.py``: Panel runs ``app.py`` again as a new module for every page, and a class
defined there would be a new class per page, which param keeps in its registries for as long as the server runs,
with the page module it was defined in (``tests/test_session_cleanup.py``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

import panel as pn
from bokeh.models import CustomJS, Spacer, TabPanel

from server.page_turns import later_turn
from server.patches.panel_tabs import PATCH as TABS_PATCH
from services.pacing import once_a_page

#: Brings a tapped tab's contents into view where the page scrolls as one column (a phone, an upright tablet).
INTO_VIEW_JS = Path(__file__).with_name("tabs.js").read_text()

#: Panel hides a tab with visibility and aria-hidden, which leaves its controls focusable (axe aria-hidden-focus):
#: out of the layout, nothing in it can take the focus or be read.
HIDDEN_TABS_CSS = ':host > [aria-hidden="true"], [aria-hidden="true"] {display: none}'


class Unbuilt(pn.Spacer):
    """What stands in a tab of :func:`lazy_tabs` until it is first shown."""


class LazyTabs(pn.Tabs):
    """Panel's ``Tabs`` whose tabs not yet built all hold one placeholder, and whose built tabs stay in the page.

    Panel would give each :class:`Unbuilt` a Bokeh ``Spacer`` of its own in a ``TabPanel`` (models the server
    builds and sends for most of the explorer's tabs at first). Here the tabs not built yet hold one
    :class:`Unbuilt` (one Panel object, where there was one a tab: :func:`lazy_tabs`), and their panels, one a tab
    with its title, one ``Spacer`` per page; BokehJS builds one view for a model however many tabs hold it.

    Not ``dynamic``: Panel's dynamic tabs take a hidden tab's models out of the document and put them back
    when it is shown again, so every switch to a built tab had the server walk and send all of them anew
    (``bench/HISTORY.md``), during which every other page's answer waits. A
    built tab stays in the page, hidden by Panel with visibility, and showing it again changes the tabs'
    ``active`` only.
    """

    def __init__(self, *objects, **params):
        super().__init__(*objects, dynamic=False, **params)
        self.stylesheets = [*self.stylesheets, HIDDEN_TABS_CSS]
        self._waiting: dict[str, dict[int, TabPanel]] = {}  # root's id -> a tab not built yet (index) -> its panel

    def _get_model(self, doc, root=None, parent=None, comm=None):
        model = super()._get_model(doc, root, parent, comm)
        # Bokeh's own callback on the tabs' model, not Panel's ``jscallback``: a Panel link makes Panel walk every
        # model of the page after any change of any layout in it (``Link._process_callbacks``: about as long as
        # the change itself on a page with every tab built)
        model.js_on_change("active", CustomJS(args={"source": model}, code=INTO_VIEW_JS))
        return model

    def _get_objects(self, model, old_objects, doc, root, comm=None):
        ref = root.ref["id"]
        panels, waiting = self._panels[ref], self._waiting.setdefault(ref, {})
        unbuilt = {i: pane for i, pane in enumerate(self) if isinstance(pane, Unbuilt)}
        if not unbuilt:
            waiting.clear()
            return super()._get_objects(model, old_objects, doc, root, comm)
        shared = next(iter(waiting.values())).child if waiting else Spacer(sizing_mode="stretch_both", margin=0,
                                                                            tags=["unbuilt"])
        for i in [i for i in waiting if i not in unbuilt]:
            del waiting[i]
        for i, pane in unbuilt.items():
            if i not in waiting:
                waiting[i] = TabPanel(title=self._names[i], name=pane.name, child=shared, closable=self.closable)
        # Panel reuses the panel of an object it had before, unchanged (layout/tabs.py, Tabs._get_objects), found by
        # the object's id: for a placeholder, any tab's panel, then each tab's own in its place
        placeholders = {id(pane): pane for pane in unbuilt.values()}
        for key, pane in placeholders.items():
            panels[key] = waiting[next(i for i, p in unbuilt.items() if p is pane)]
        new_models, old_models = super()._get_objects(
            model, [*old_objects, *(p for p in placeholders.values() if p not in old_objects)], doc, root, comm)
        for i in unbuilt:
            new_models[i] = waiting[i]
        return new_models, old_models


class PanelTabs(pn.Tabs):
    """Panel's own ``Tabs``, not dynamic and with the same hidden tabs and script as :class:`LazyTabs`, through
    Panel's public API only: what :func:`lazy_tabs` makes where :class:`LazyTabs` no longer fits the installed Panel
    (``server/patches/panel_tabs.py``). Every tab not built yet then has a spacer of its own, and a new title
    rebuilds each tab's panel (:func:`retitle`)."""

    def __init__(self, *objects, **params):
        super().__init__(*objects, dynamic=False, **params)
        self.stylesheets = [*self.stylesheets, HIDDEN_TABS_CSS]
        self.jscallback(active=INTO_VIEW_JS, args={"source": self})


class Retitled(pn.Column):
    """A :class:`PanelTabs` tab's contents, boxed anew under a new title (:func:`retitle`)."""

    def __init__(self, contents, **params):
        super().__init__(contents, sizing_mode="stretch_both", margin=0, **params)


def lazy_tabs(*tabs: tuple[str, Callable[[], pn.viewable.Viewable]], **params) -> pn.Tabs:
    """:class:`LazyTabs` whose contents are built by each ``(title, build)``'s ``build`` the first time the tab is
    shown.

    Most learners never open most tabs, and every view built costs the server memory for as long as the
    page is open, time when the page opens, and time on every update it follows (Panel's lazy
    ``ParamFunction`` does the same, but costs more server time for each tab than a plain spacer).
    Once built, a tab stays built and in the page: showing it again costs the server nothing but the switch.
    A built tab's contents with a ``shown_in_tab(shown: bool)`` method are told whenever their tab is shown or
    hidden: a view can leave work on a hidden tab until it is shown again.
    """
    # A Panel spacer stands in the tabs not built yet, the cheapest Panel object: one for all of them in
    # LazyTabs; one a tab in Panel's own tabs, which would take the first one's title for all of them
    waiting = {i: build for i, (_, build) in enumerate(tabs)}
    if TABS_PATCH.fits():
        unbuilt = Unbuilt(sizing_mode="stretch_both")
        layout = LazyTabs(*((title, unbuilt) for title, _ in tabs), **params)
    else:
        layout = PanelTabs(*((title, Unbuilt(sizing_mode="stretch_both")) for title, _ in tabs), **params)
    layout.titles = [title for title, _ in tabs]  # as shown now (retitle)

    told = {}  # tab index -> its contents' shown_in_tab

    def place(i, built):
        layout[i] = (layout.titles[i], built)
        if callable(getattr(built, "shown_in_tab", None)):
            told[i] = built.shown_in_tab
        tell()

    def tell():
        for i, shown_in_tab in told.items():
            shown_in_tab(i == layout.active)

    def show(event=None):
        i = layout.active
        build = waiting.pop(i, None)
        if build is None:
            tell()
            return
        start = time.perf_counter()
        with once_a_page():  # not counted against the page's share of the server's loop: it cannot be repeated
            built = build()
        # A tab the learner shows is put in the page in a later turn of the server's loop, after as long as its
        # views took to build, and other pages' answers come between: in one turn, the two held every other page
        # waiting (bench/HISTORY.md). The page's first tab is in it as it loads.
        if event is None or not later_turn(pn.state.curdoc, functools.partial(place, i, built),
                                           time.perf_counter() - start):
            with once_a_page():
                place(i, built)

    layout.param.watch(show, "active")
    show()
    return layout


def retitle(tabs: pn.Tabs, titles: list[str]) -> None:
    """New tab titles, in place: Panel reuses a built tab's Bokeh panel (and its title) when its contents stay, and
    BokehJS redraws the headers only for a new list of panels, so each gets a new panel around the same contents.
    Tabs other than :class:`LazyTabs` (:class:`PanelTabs`) are given each tab again, through Panel's own API."""
    tabs.titles = list(titles)
    if not isinstance(tabs, LazyTabs):
        # Panel keeps a tab's panel, and its title, while its contents stay: each tab's contents in a new box
        unwrap = lambda obj: obj[0] if isinstance(obj, Retitled) else obj  # noqa: E731
        tabs[:] = [(title, Retitled(unwrap(obj))) for title, obj in zip(titles, tabs.objects, strict=True)]
        return
    tabs._names[:] = titles
    for ref, (model, _) in tabs._models.items():
        cache = tabs._panels.get(ref, {})
        new = [TabPanel(child=old.child, title=title, closable=old.closable)
               for old, title in zip(model.tabs, titles, strict=True)]
        for key, old in list(cache.items()):  # Panel finds a tab's panel by its contents' id
            if old in model.tabs:
                cache[key] = new[model.tabs.index(old)]
        waiting = tabs._waiting.get(ref, {})
        for i in waiting:  # and LazyTabs a tab not built yet's by its index
            waiting[i] = new[i]
        model.tabs = new
