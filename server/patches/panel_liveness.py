"""Panel's health check handler (``panel.io.liveness.LivenessHandler.get``, ``panel serve --liveness``): answered by
:func:`server.liveness.answer`, which builds the app's page at most once per
:data:`server.liveness.BUILD_EVERY` seconds, at the build gate, however many ask.

Panel 1.10.0 builds a whole page for every request with an ``endpoint``, outside the build gate
(``server/build_gate.py``): anyone could ask for it, unauthenticated, and one keep-alive connection built 467 pages
in 30 s while another learner's key waited up to 1.4 s. Installed on Panel's handler itself, so a bare ``panel serve
app.py --liveness`` gets it too. The discarded page is cleaned up with Panel's own ``_cleanup_doc``. Written for
Panel 1.10.0. Upstream: holoviz/panel#4302 (merged) stopped the check running a page's onload callbacks; none filed for
building less often.
"""

from __future__ import annotations

from server.patches.fit import Patch


def install() -> None:
    """Answer Panel's health check with :func:`server.liveness.answer` from now on. Idempotent."""
    from panel.io.liveness import LivenessHandler

    from server.liveness import answer

    if getattr(LivenessHandler.get, "sparing", False):
        return

    async def get(self) -> None:
        await answer(self)

    get.sparing = True
    get.__wrapped__ = LivenessHandler.get
    LivenessHandler.get = get


PATCH = Patch(
    name="panel_liveness",
    changes="the health check builds a page at most once in a while, at the build gate",
    targets={
        "panel.io.liveness:LivenessHandler.get": "809e548d5d5dd556",
        "panel.io.document:_cleanup_doc": "5793e4500c6ac69b",
    },
    written_for="Panel 1.10.0",
    upstream="holoviz/panel#4302 (related: onload callbacks skipped in the check)",
    apply=install,
)
