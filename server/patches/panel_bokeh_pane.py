"""Panel's ``Bokeh`` pane, subclassed (:class:`OwnModelsBokeh`) for the Bokeh models the app makes itself: the pane
places its model without walking every model it reaches.

Panel 1.10.0's ``Bokeh._get_model`` walks everything its model refers to (``model.select({'type': CustomJS})``)
to rewrite, in each ``CustomJS``'s code, the model's id into the root's: a rewrite for code generated elsewhere
(HoloViews) that names a model by its id. The app's scripts name none (they take their models as ``args``, and
their code is the app's own files). Yet the readout's and the weights' ``Div``s carry the drag's script, whose
``args`` hold the query plot, its sources and the channels: each of the first page's Bokeh panes walked most of the
page's models, a whole-page walk four times over in every page's build (``bench/HISTORY.md``, "A page's build
without walks…"). The subclass does the rest of Panel's method as Panel does (the root's id, the model taken out
of another document, the design's Bokeh theme), through the same private attributes (``_models``, ``_design``).

Written for Panel 1.10.0; no upstream issue asks for it. Where this does not fit the installed Panel,
:func:`bokeh_pane` gives Panel's own ``Bokeh`` pane.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import Spacer
from panel.io.model import remove_root

from server.patches.fit import Patch

PATCH = Patch(
    name="panel_bokeh_pane",
    changes="the app's own Bokeh models placed without a walk of every model each reaches",
    targets={
        "panel.pane.plot:Bokeh._get_model": "4fd45b99155203a8",
        "panel.io.model:remove_root": "8cb0864e76591a1d",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
)


class OwnModelsBokeh(pn.pane.Bokeh):
    """Panel's ``Bokeh`` pane (the same parameters) for a model whose scripts name no model by its id."""

    def _get_model(self, doc, root=None, parent=None, comm=None):
        if root is None:
            return self.get_root(doc, comm)
        model = Spacer() if self.object is None else self.object
        if comm and self.autodispatch:
            self._wrap_bokeh_callbacks(root, model, doc, comm)
        if model._document and doc is not model._document:
            remove_root(model, doc)
        self._models[root.ref["id"]] = (model, parent)
        self._design.apply_bokeh_theme_to_model(model, self.theme)
        return model


def bokeh_pane() -> type:
    """The Bokeh pane class for the app's own models: :class:`OwnModelsBokeh` where it fits the installed Panel,
    Panel's own ``Bokeh`` otherwise."""
    return OwnModelsBokeh if PATCH.fits() else pn.pane.Bokeh
