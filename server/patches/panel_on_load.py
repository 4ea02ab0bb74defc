"""Panel's ``state._on_load`` (a page's ``onload`` callbacks, run on the loop when its page reports it has loaded):
their time charged to the process's build gate (``server/build_gate.py``).

A page's work once it has loaded (a joining page's room, its header and its poll card, about a tenth of a second
each) cannot wait, the page is open, but the next build waits for it: a hundred pages joining a room within 20 s
otherwise did their room work in the gaps the gate keeps for the open pages, and the presenter's key waited again.
Written for Panel 1.10.0; no upstream issue asks for it.
"""

from __future__ import annotations

from server.patches.fit import Patch


def install() -> None:
    """Charge each page's ``onload`` work to the build gate (above). Idempotent."""
    import panel as pn

    from server.build_gate import get_gate

    cls = type(pn.state)
    original = cls._on_load
    if getattr(original, "_charged", False):
        return

    def charged(self, doc=None):
        gate = get_gate()
        start = gate.clock()
        try:
            return original(self, doc)
        finally:
            gate.charge(gate.clock() - start, start)

    charged._charged = True
    charged.__wrapped__ = original
    cls._on_load = charged


PATCH = Patch(
    name="panel_on_load",
    changes="a loaded page's onload work charged to the build gate",
    targets={
        "panel.io.state:_state._on_load": "ef72d3198869fc78",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
    apply=install,
)
