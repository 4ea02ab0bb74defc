"""Panel's link hook (``panel.links.Callback._process_callbacks``): Panel looks for its links (``jslink``,
``jscallback``) after a change of a layout only while one is registered.

From the first link any page of the process made, Panel 1.10.0's hook walked the changed page after each change of any
of its layouts (every Panel object, then every Bokeh model under the change, the whole page for a tab shown the first
time), even in a page with no link, and with the registry empty again. This app makes no Panel link (its discrete
sliders name their option in their own title: ``server/patches/panel_discrete_slider.py``), so the walks found
nothing, and took a good part of a tab's first showing on a page with its other tabs built (``bench/HISTORY.md``).
With a link registered, Panel's hook runs as before. Written for Panel 1.10.0; no upstream issue asks for it.
"""

from __future__ import annotations

import functools

from server.patches.fit import Patch


def install() -> None:
    """Skip Panel's walk for links while none is registered (above). Idempotent."""
    from panel.links import Callback
    from panel.viewable import Viewable

    original = Callback._process_callbacks.__func__
    if getattr(original, "only_with_links", False):
        return

    def process_callbacks(cls, root_view, root_model, changed=None, old_models=None):
        if not any(Callback.registry.values()):  # a link unwatched leaves its source's empty list
            return None
        return original(cls, root_view, root_model, changed, old_models)

    process_callbacks.only_with_links = True
    Callback._process_callbacks = classmethod(functools.update_wrapper(process_callbacks, original))
    # Panel put its hook in the list when its first link was made, which may have been before this call
    Viewable._preprocessing_hooks[:] = [Callback._process_callbacks if getattr(hook, "__func__", None) is original
                                        else hook for hook in Viewable._preprocessing_hooks]


PATCH = Patch(
    name="panel_link_callbacks",
    changes="no walk of a page for Panel links while none is registered",
    targets={
        "panel.links:Callback._process_callbacks": "0da9ddd68adddbdd",
        # where Panel puts the hook, and the registry the skip reads
        "panel.links:Callback.init": "4c11e2c367d7c2c7",
        "panel.links:Callback.unwatch": "64d23de7ceef1608",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
