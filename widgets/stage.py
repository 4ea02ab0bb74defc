"""The stage: a tab whose subject is not the query takes the whole page while it is shown.

The Train tab teaches how W_Q, W_K and W_V are learned, on sentences of its own: the query plot, its readout and the
recipe's step-through beside it say nothing about what it shows, and took the room its loss, weights, target and
planes need (at 1024×768 on a projector, a 538 px column a class had to scroll). The Real model tab is the same: a
pretrained model's heads on a sentence the learner types, whose matrix and one row's recipe need the page (at
800×600 on a projector, its sentence box was under the screen's edge). While such a tab is shown, they step
aside into a strip at the page's edge, whose button brings them back; they come back by themselves with any tab about
the query. The Projections and Heads tabs keep them: their heads are the explorer's query and keys (Heads'
"Explore head" loads one into the query plot, and Projections then edits it), so the plot beside them is their
subject (docs/classroom.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

import panel as pn

from session.state import AttentionState
from widgets.style import APP_CSS

#: The tabs (their names in a lesson link, app.TABS) that take the stage while shown.
STAGE_TABS = ("train", "model")


class Stage:
    """The page's stage over its tabs: ``aside`` (the query plot and readout, the step-through) hidden while a tab of
    :data:`STAGE_TABS` is shown, unless the learner brings them back with :attr:`strip`'s button.

    Test hooks: the strip is ``.stage-strip``, its button ``.stage-toggle``.
    """

    def __init__(self, state: AttentionState, aside: Sequence[pn.viewable.Viewable],
                 names: Callable[[], Sequence[str]], place: Callable[[pn.Column], None]):
        self.state = state
        self._aside = list(aside)
        self._names = names  # the tabs' names, in the order the page shows them now (a lesson link's few)
        self._place = place  # puts the strip in the page, at its edge
        self._tabs = None
        self._watcher = None
        self.staged = False  # a stage tab is shown
        self.opened = False  # and the learner brought the query plot back beside it
        state.param.watch(lambda *_: self._label(), "lang")

    @cached_property
    def strip(self) -> pn.Column:
        """The strip and its button, made and placed (``place``) the first time a stage tab is shown: most pages
        never show one, and the two were two Panel objects and three Bokeh models of every page's build."""
        self._toggle = pn.widgets.Button(css_classes=["stage-toggle"], stylesheets=[APP_CSS], margin=(6, 4),
                                         sizing_mode="stretch_height")
        self._toggle.on_click(self._on_toggle)
        strip = pn.Column(self._toggle, css_classes=["stage-strip"], stylesheets=[APP_CSS], margin=0, visible=False)
        self._place(strip)
        return strip

    def watch(self, tabs: pn.Tabs) -> None:
        """Follow ``tabs`` (a lesson's new tabs replace the old ones)."""
        if self._tabs is not None:
            self._tabs.param.unwatch(self._watcher)
        self._tabs = tabs
        self._watcher = tabs.param.watch(self._on_active, "active")
        self._on_active()

    def _on_active(self, *_) -> None:
        names = self._names()
        active = self._tabs.active
        staged = 0 <= active < len(names) and names[active] in STAGE_TABS
        if staged != self.staged:
            self.staged, self.opened = staged, False
            self._apply()

    def _on_toggle(self, _event) -> None:
        self.opened = not self.opened
        self._apply()

    def _apply(self) -> None:
        shown = not self.staged or self.opened
        with pn.io.hold():
            for view in self._aside:
                view.visible = shown
            if self.staged or "strip" in self.__dict__:
                self.strip.visible = self.staged
                self._label()

    def _label(self) -> None:
        # no tooltip: Bokeh draws a button's beside it, and beside a strip at the page's edge it covered the tab
        if "strip" not in self.__dict__:
            return
        tr = self.state.tr
        self._toggle.label = tr._("Hide the query plot") if self.opened else tr._("Show the query plot")
