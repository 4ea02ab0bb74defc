"""Bokeh's ``ApplicationContext._create_session`` (the coroutine that makes a session's document, run once per
session whoever asked for it): every page's build waits its turn at the process's build gate (``server/build_gate.py``)
first, and is charged the time it took.

Bokeh 3.10.2 builds a page's document on the loop's own thread, as soon as it is asked for: a hundred pages opened
within seconds kept the loop busy most of the time, and a key pressed on a page already open waited behind several
builds (``bench/HISTORY.md``). This is the one place every page's document is made (an HTTP GET of the page, a
websocket whose session had been discarded, the liveness check). Written for Bokeh 3.10.2. Upstream:
bokeh/bokeh#9018 (open) asks for the build to leave the loop; nothing upstream spaces builds.
"""

from __future__ import annotations

from server.patches.fit import Patch


def install() -> None:
    """Make every page's build wait its turn at the build gate (above). Idempotent."""
    from bokeh.server.contexts import ApplicationContext

    from server.build_gate import get_gate

    original = ApplicationContext._create_session
    if getattr(original, "_paced", False):
        return

    async def paced(self, session_id, request=None, token=None):
        async with get_gate().turn():
            return await original(self, session_id, request, token)

    paced._paced = True
    paced.__wrapped__ = original
    ApplicationContext._create_session = paced


PATCH = Patch(
    name="bokeh_create_session",
    changes="page builds take their share of the loop, one at a time (server/build_gate.py)",
    targets={
        "bokeh.server.contexts:ApplicationContext._create_session": "e83501e43a8061cb",
    },
    written_for="Bokeh 3.10.2",
    upstream="bokeh/bokeh#9018 (related: the build off the loop)",
    apply=install,
)
