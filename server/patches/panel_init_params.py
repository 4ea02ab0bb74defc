"""Panel's ``Syncable._init_params``: a component's synced parameters listed once per model it makes, not once per
parameter.

Panel 1.10.0 loops over a component's parameters and asks, for each, whether it is in ``self._synced_params``, a
property that builds the list anew from every parameter each time it is read: some 30 lists of some 30 names for one
component, about 500 lists a first page (5 % of a page's build in a profile, ``bench/HISTORY.md``, "A page's build
without exceptions for unthemed models"). The replacement reads the property once per call and keeps the same loop,
order and test, so a component's initial properties are the same dict. Subclasses that override ``_synced_params``
are asked as before, once. Written for Panel 1.10.0; no upstream issue asks for it.
"""

from __future__ import annotations

import functools

from server.patches.fit import Patch


def install() -> bool:
    """Read ``_synced_params`` once per ``_init_params`` call (above); True if this call did. Idempotent."""
    from panel.reactive import Syncable

    original = Syncable._init_params
    if getattr(original, "lists_synced_once", False):
        return False

    def _init_params(self):
        synced = set(self._synced_params)
        params = {}
        for p in self.param:
            if p not in synced:
                continue
            v = getattr(self, p)
            if v is not None:
                params[p] = v
        return params

    _init_params = functools.update_wrapper(_init_params, original)
    _init_params.lists_synced_once = True
    Syncable._init_params = _init_params
    return True


PATCH = Patch(
    name="panel_init_params",
    changes="a component's synced parameters listed once per model it makes",
    targets={
        "panel.reactive:Syncable._init_params": "1ad927d307cd1a7c",
        # the list it reads (the subclasses' own lists are read as they are)
        "panel.reactive:Syncable._synced_params": "32146bea7e168395",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
