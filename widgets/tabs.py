"""The page's tabs, each built the first time it is shown.

In a module of its own, not in ``app.py``: Panel runs ``app.py`` again as a new module for every page, and a class
defined there would be a new class per page, which param keeps in its registries for as long as the server runs,
with the page module it was defined in (``tests/test_session_cleanup.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import panel as pn
from bokeh.models import Spacer, TabPanel

from server.pacing import once_a_page

#: Brings a tapped tab's contents into view where the page scrolls as one column (a phone, an upright tablet).
INTO_VIEW_JS = Path(__file__).with_name("tabs.js").read_text()


class LazyTabs(pn.Tabs):
    """Panel's dynamic ``Tabs``, with one placeholder model for every hidden tab instead of one each.

    Panel gives each hidden tab of dynamic tabs a Bokeh ``Spacer`` of its own in a ``TabPanel`` (models the
    server builds and sends for every hidden tab, most of the explorer's tabs at first). Here the
    hidden tabs' panels all hold one ``Spacer`` per page, tagged ``hidden`` as Panel tags its own, so Panel
    takes them for its own hidden panels and reuses them; BokehJS builds one view for a model however many
    tabs hold it. A tab that is shown gets its own contents as before, and a tab hidden again its
    placeholder back (Panel keeps its contents' models for when it is shown again).
    """

    def _get_objects(self, model, old_objects, doc, root, comm=None):
        panels = self._panels[root.ref["id"]]
        shared = next((p.child for p in panels.values() if isinstance(p.child, Spacer) and p.child.tags == ["hidden"]),
                      None)
        if shared is None:
            shared = Spacer(sizing_mode="stretch_both", margin=0, tags=["hidden"])
        placed = []
        for i, (name, pane) in enumerate(zip(self._names, self, strict=True)):
            if i == self.active or not isinstance(pane, pn.viewable.Viewable):
                continue  # the shown tab, and one that Panel has still to wrap: Panel's own way
            panel = panels.get(id(pane))
            if panel is None or panel.child is not shared:
                # Panel reuses a panel of a hidden object it had before (layout/tabs.py, Tabs._get_objects)
                panels[id(pane)] = TabPanel(title=name, name=pane.name, child=shared, closable=self.closable)
                placed.append(pane)
        return super()._get_objects(model, [*old_objects, *(p for p in placed if p not in old_objects)], doc, root,
                                    comm)


def lazy_tabs(*tabs: tuple[str, Callable[[], pn.viewable.Viewable]], **params) -> pn.Tabs:
    """:class:`LazyTabs` whose contents are built by each ``(title, build)``'s ``build`` the first time the tab is shown.

    Most learners never open most tabs, and every view built costs the server memory for as long as the
    page is open, time when the page opens, and time on every update it follows (Panel's lazy
    ``ParamFunction`` does the same, but costs more server time for each tab than a plain spacer).
    The tabs are ``dynamic``: a hidden tab is not in the page at all (Panel hides them with visibility only,
    which leaves their focusable parts reachable but aria-hidden).
    """
    # A Panel spacer stands in each tab not built yet: the cheapest Panel object. (One spacer shared by every
    # tab would be cheaper, but Panel's tabs then take the first one's title for all of them.)
    waiting = {i: build for i, (_, build) in enumerate(tabs)}
    layout = LazyTabs(*((title, pn.Spacer(sizing_mode="stretch_both")) for title, _ in tabs), dynamic=True, **params)

    def show(*_):
        build = waiting.pop(layout.active, None)
        if build is not None:
            with once_a_page():  # not counted against the page's share of the server's loop: it cannot be repeated
                layout[layout.active] = (layout._names[layout.active], build())

    layout.param.watch(show, "active")
    layout.jscallback(active=INTO_VIEW_JS)
    show()
    return layout


def retitle(tabs: pn.Tabs, titles: list[str]) -> None:
    """New tab titles, in place: Panel reuses a built tab's Bokeh panel (and its title) when its contents stay, and
    BokehJS redraws the headers only for a new list of panels, so each gets a new panel around the same contents."""

    tabs._names[:] = titles
    for ref, (model, _) in tabs._models.items():
        cache = tabs._panels.get(ref, {})
        new = [TabPanel(child=old.child, title=title, closable=old.closable) for old, title in zip(model.tabs, titles, strict=True)]
        for key, old in list(cache.items()):  # Panel finds a tab's panel by its contents' id
            if old in model.tabs:
                cache[key] = new[model.tabs.index(old)]
        model.tabs = new
