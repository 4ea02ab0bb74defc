"""The health check, ``/liveness?endpoint=/app``: the app's page built at most once per :data:`BUILD_EVERY` seconds,
through the build gate, whatever the number of requests.

Panel's ``LivenessHandler`` (``panel serve --liveness``, which ``server/serve.py`` turns on for the container's
``HEALTHCHECK``) builds a whole page for every request with an ``endpoint``, and outside the build gate
(``server/build_gate.py``), which paces only the builds of pages opened: anyone could ask for it, unauthenticated,
and one keep-alive connection built 467 pages in 30 s while another learner's key waited up to 1.4 s. A health check
needs to know that a page can be built, not to build one for each asker. So here:

- ``/liveness`` alone answers that the server answers, as Panel's does;
- ``/liveness?endpoint=/app`` answers from the last build if it is younger than :data:`BUILD_EVERY` seconds; else
  it builds one page, waiting its turn at the build gate like any page, and every request that comes meanwhile
  waits for that one build; the page is then taken apart (``server/teardown.py``) as a closed page is;
- an endpoint the server does not serve gets 400 with a short answer that does not repeat it.

Installed on Panel's handler itself (``server/patches/panel_liveness.py``), so a bare ``panel serve app.py
--liveness`` gets it too.
"""

from __future__ import annotations

import asyncio
import logging
import time

#: Seconds a health check's build answers for: the container checks every 30 s, Kubernetes' probes every 10 s.
BUILD_EVERY = 15.0
#: Where the process keeps the health check's last builds.
CACHE_KEY = "explorer-liveness"

log = logging.getLogger(__name__)


class HealthCheck:
    """The last build of each endpoint (when, whether it worked) and the build under way, if any.

    ``build(app)`` makes and discards one page of ``app`` (Bokeh's ``Application``); ``clock`` gives seconds.
    """

    def __init__(self, build=None, clock=time.monotonic):
        self._build = build or _build_and_discard
        self.clock = clock
        self.last: dict[str, tuple[float, bool]] = {}
        self._under_way: dict[str, asyncio.Future] = {}
        self.builds = 0

    async def check(self, endpoint: str, app) -> bool:
        """Whether ``endpoint``'s page could be built, at most :data:`BUILD_EVERY` seconds ago."""
        last = self.last.get(endpoint)
        if last is not None and self.clock() - last[0] < BUILD_EVERY:
            return last[1]
        under_way = self._under_way.get(endpoint)
        if under_way is not None:
            return await asyncio.shield(under_way)
        future = self._under_way[endpoint] = asyncio.get_running_loop().create_future()
        try:
            ok = await self._built(app)
        finally:
            del self._under_way[endpoint]
        self.last[endpoint] = (self.clock(), ok)
        future.set_result(ok)
        return ok

    async def _built(self, app) -> bool:
        from server.build_gate import get_gate

        async with get_gate().turn():
            self.builds += 1
            try:
                self._build(app)
            except Exception as e:  # the app's own failure: the check says so, once a build
                log.error("The health check could not build the page: %s: %s", type(e).__name__, e)
                return False
        return True


def _build_and_discard(app) -> None:
    """Build one page of ``app`` and discard it at once, taken apart as a closed page is (``server/teardown.py``)."""
    from panel.io.document import _cleanup_doc

    from server.housekeeping import get_housekeeping
    from server.teardown import built_apart

    with built_apart() as made:
        doc = app.create_document()
        _cleanup_doc(doc)
        made.append(doc)
    get_housekeeping().page_discarded()


def get_health_check() -> HealthCheck:
    """This server process's :class:`HealthCheck`, created on first use."""
    import panel as pn

    check = pn.state.cache.get(CACHE_KEY)
    if check is None:
        check = pn.state.cache.setdefault(CACHE_KEY, HealthCheck())
    return check


async def answer(self) -> None:
    """Answer Panel's ``LivenessHandler.get`` (``self``: the handler): see the module's docstring."""
    endpoint = self.get_argument("endpoint", default=None)
    self.set_header("Content-Type", "application/json")
    self.set_header("Cache-Control", "no-store")
    if endpoint is None:
        self.write({self.request.path: True})
        return
    app = self.applications.get(endpoint)
    if app is None:
        self.set_status(400)
        self.finish({"error": "the server serves no such endpoint"})
        return
    if not await get_health_check().check(endpoint, app):
        self.set_status(500)
        self.finish({endpoint: False})
        return
    self.write({endpoint: True})
