"""Bokeh's ``Model.__init__`` and param's ``Parameterized.__init__``: every Bokeh model and param object made while a
served page's document is Panel's current one is noted for that page (``server/teardown.py``), so that once the page
has closed its objects are taken apart and reference counting frees them.

Neither library has a hook for objects being made. Both constructors are wrapped for one purpose, noting a page's
objects, so they are one patch. Written for Bokeh 3.10.2 and param 2.4.2; no upstream issue asks for a hook.
"""

from __future__ import annotations

import functools

from server.patches.fit import Patch


def install() -> None:
    """Note every Bokeh model and param object a served page makes (above). Idempotent."""
    import param
    from bokeh.model import Model
    from panel.io.state import state

    from server.teardown import get_page_objects

    pages = get_page_objects()

    def noting(original):
        @functools.wraps(original)
        def init(self, *args, **kwargs):
            original(self, *args, **kwargs)
            pages.note(self, state.curdoc)
        init.notes_page_objects = True
        return init

    for cls in (Model, param.Parameterized):
        if not getattr(cls.__init__, "notes_page_objects", False):
            cls.__init__ = noting(cls.__init__)


PATCH = Patch(
    name="object_inits",
    changes="the Bokeh models and param objects each served page makes noted, to take the page apart once closed",
    targets={
        "bokeh.model.model:Model.__init__": "33b110de5d5a495b",
        "param.parameterized:Parameterized.__init__": "f17b2f968d6d2325",
    },
    written_for="Bokeh 3.10.2, param 2.4.2",
    upstream="none filed",
    apply=install,
)
