"""The scaffolding every view of a page shares: its state, its layout built once, and its re-rendering."""

from __future__ import annotations

import panel as pn
import param

from server.patches.panel_bokeh_pane import bokeh_pane
from server.patches.panel_discrete_slider import discrete_slider
from session.state import AttentionState


class View(pn.viewable.Viewer):
    """A view over one page's :class:`~session.state.AttentionState` (Panel's custom-viewer pattern).

    A view builds its layout once, in ``__init__``, into ``self._layout`` (what :meth:`__panel__` returns),
    and changes it in place afterwards: :meth:`render_on` calls ``self._render`` whenever one of the state's
    named params changes (its language, usually, among them).
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def render_on(self, *names: str) -> None:
        """Call ``self._render`` now and whenever one of the state's params ``names`` changes."""
        self.state.param.watch(self._render, list(names))
        self._render()

    def _render(self, *_) -> None:
        raise NotImplementedError

    def __panel__(self):
        return self._layout


#: Panel's ``DiscreteSlider`` naming its chosen option in its own title, with no Panel link (where that fits the
#: installed Panel: ``server/patches/panel_discrete_slider.py``); the same parameters as Panel's.
DiscreteSlider = discrete_slider()

#: Panel's ``Bokeh`` pane for the Bokeh models the app makes, placed without a walk of every model each reaches
#: (where that fits the installed Panel: ``server/patches/panel_bokeh_pane.py``); the same parameters as Panel's.
BokehPane = bokeh_pane()
