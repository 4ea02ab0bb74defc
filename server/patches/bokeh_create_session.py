"""Bokeh's ``ApplicationContext._create_session`` (the coroutine that makes a session's document, run once per
session whoever asked for it): every page's build waits its turn at the process's build gate (``server/build_gate.py``)
first, in its client's line, and is charged the time it took; and the page handlers' ``on_connection_close``
(Tornado's hook, which Bokeh's ``SessionHandler`` leaves as Tornado's): a page whose request's connection closes while
its build waits leaves the gate's line and is not built.

Bokeh 3.10.2 builds a page's document on the loop's own thread, as soon as it is asked for: a hundred pages opened
within seconds kept the loop busy most of the time, and a key pressed on a page already open waited behind several
builds (``bench/HISTORY.md``). This is the one place every page's document is made (an HTTP GET of the page, a
websocket whose session had been discarded, the liveness check). And every page asked for was built, also once its
asker had gone: 150 page requests closed after 2 s were built one after another, and a new learner's page waited
64.9 s behind them.

A build the gate does not make raises :class:`server.build_gate.PageLeft` (Tornado's ``Finish``: the handler ends
the request without an error) or :class:`server.build_gate.TooManyWaiting` (HTTP 429) in Bokeh's session-creation
task; ``create_session_if_needed`` logs "Failed to create session" with the traceback for any exception of that
task, and ``server/logs.py`` leaves that line out for these two. A request that left while its build waited is
logged with status 499 (nginx's "client closed request"), so its line backs off per client like other 4xx lines.

Written for Bokeh 3.10.2 and Tornado 6.6.1. Upstream: bokeh/bokeh#9018 (open) asks for the build to leave the loop;
nothing upstream spaces builds or drops the build of a request that has gone.
"""

from __future__ import annotations

from server.patches.fit import Patch

#: The status a request that left while its build waited is logged with (nginx's for a client that closed first).
CLIENT_CLOSED = 499


def install() -> None:
    """Make every page's build wait its turn at the build gate, and a page request that closes while its build
    waits leave it (above). Idempotent."""
    from bokeh.server.contexts import ApplicationContext
    from bokeh.server.views.session_handler import SessionHandler

    from server.build_gate import get_gate

    original = ApplicationContext._create_session
    if not getattr(original, "_paced", False):
        async def paced_page_build(self, session_id, request=None, token=None):
            async with get_gate().turn(request):
                return await original(self, session_id, request, token)

        paced_page_build._paced = True
        paced_page_build.__wrapped__ = original
        ApplicationContext._create_session = paced_page_build

    closed = SessionHandler.on_connection_close
    if not getattr(closed, "_leaves_gate", False):
        def on_connection_close(self) -> None:
            closed(self)
            if get_gate().left(self.request):
                self.set_status(CLIENT_CLOSED, "Client Closed Request")

        on_connection_close._leaves_gate = True
        on_connection_close.__wrapped__ = closed
        SessionHandler.on_connection_close = on_connection_close


PATCH = Patch(
    name="bokeh_create_session",
    changes="page builds take their share of the loop, one client's at a time, and none once its request has gone "
            "(server/build_gate.py)",
    targets={
        "bokeh.server.contexts:ApplicationContext._create_session": "e83501e43a8061cb",
        # runs _create_session as a task and logs the line server/logs.py leaves out for a build the gate did not make
        "bokeh.server.contexts:ApplicationContext.create_session_if_needed": "32fd67c57f3defb8",
        "bokeh.server.contexts:ApplicationContext._session_creation_done": "b70f74095a9a542e",
        # Tornado's own, which SessionHandler does not override: the patch calls it first
        "bokeh.server.views.session_handler:SessionHandler.on_connection_close": "238a228d35f4ad43",
    },
    written_for="Bokeh 3.10.2, Tornado 6.6.1",
    upstream="bokeh/bokeh#9018 (related: the build off the loop)",
    apply=install,
)
