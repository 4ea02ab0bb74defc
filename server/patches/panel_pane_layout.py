"""Panel's ``PaneBase``: a pane's own ``layout`` (a ``Row`` around it) made when something first asks for it, not as
the pane is made.

Panel 1.10.0 gives every pane a ``Row`` holding it (``PaneBase.__init__``: ``self.layout =
self.default_layout(self, ...)``), and a watcher that copies the pane's size and margins onto that ``Row`` whenever
they change. The ``Row`` is what ``pn.panel(obj)`` returns for an object it wraps and what a pane shown as a page's
root renders in; a pane placed in a layout of the app's own (every pane of this app's pages) never uses it. A first
page made eight, each a Panel object with its parameters, its design and its own watchers (bench/HISTORY.md, "A
page's build without exceptions for unthemed models"). Here ``layout`` is a property of ``PaneBase``: its first read
makes the ``Row`` exactly as Panel's ``__init__`` would have (the layout parameters the pane was made with), then
adds Panel's watcher and syncs it, as Panel's ``__init__`` does; a ``layout`` assigned by a subclass (``Param``) is
kept, and the watcher added then, as Panel had it from the start. Written for Panel 1.10.0; no upstream issue asks
for it.
"""

from __future__ import annotations

from server.patches.fit import Patch

#: Where a pane keeps its ``Row`` once made, and the layout parameters it was made with until then.
_LAYOUT, _KWARGS, _WATCHED = "_explorer_layout", "_explorer_layout_kwargs", "_explorer_layout_watched"


def install() -> bool:
    """Make a pane's ``layout`` on first use (above); True if this call did. Idempotent."""
    from panel.pane.base import PaneBase
    from panel.viewable import Layoutable

    original = PaneBase.__init__
    if getattr(original, "makes_layout_on_use", False):
        return False

    def _watch(self):
        if not self.__dict__.get(_WATCHED):
            self.__dict__[_WATCHED] = True
            self._internal_callbacks.append(self.param.watch(self._sync_layoutable, list(Layoutable.param)))

    def __init__(self, object=None, **params):
        # Panel's own, but for its last three statements (the Row, the watcher, the first sync): made on first use
        self._object_changing = False
        super(PaneBase, self).__init__(object=object, **params)
        if not hasattr(self, '_internal_callbacks'):
            self._internal_callbacks = []
        applies = self.applies(self.object, **(params if self._applies_kw else {}))
        if (isinstance(applies, bool) and not applies) and self.object is not None:
            self._type_error(self.object)
        self.__dict__[_KWARGS] = {
            k: v for k, v in params.items() if k in Layoutable.param and
            k not in self._skip_layoutable
        }

    def get_layout(self):
        layout = self.__dict__.get(_LAYOUT)
        if layout is None:
            layout = self.__dict__[_LAYOUT] = self.default_layout(self, **self.__dict__.pop(_KWARGS, {}))
            _watch(self)
            self._sync_layoutable()
        return layout

    def set_layout(self, layout):
        self.__dict__.pop(_KWARGS, None)
        self.__dict__[_LAYOUT] = layout
        _watch(self)

    __init__.__wrapped__ = original
    __init__.makes_layout_on_use = True
    PaneBase.__init__ = __init__
    PaneBase.layout = property(get_layout, set_layout, doc="The layout around the pane (Panel's default_layout).")
    return True


PATCH = Patch(
    name="panel_pane_layout",
    changes="a pane's own Row made when first asked for, not as the pane is made",
    targets={
        "panel.pane.base:PaneBase.__init__": "2942d8c68e3d6aeb",
        # what reads or writes the layout: each now makes it on first use, as it was made before
        "panel.pane.base:PaneBase._sync_layoutable": "c903643b75f05168",
        "panel.pane.base:PaneBase.__getitem__": "adef6d4f96821649",
        "panel.pane.base:Pane._update_object": "8eb3d22e03ae0c2d",
        "panel.pane.base:Pane._get_root_model": "6bb355d2e2ff18bd",
        "panel.pane.base:panel": "73cbb3fd0e94de4a",
        "panel.param:Param.__init__": "fa425aa08251c724",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
