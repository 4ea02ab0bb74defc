"""A closed page's session is discarded, its document and state freed (in-process server, short lifetimes)."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from pathlib import Path

import panel as pn

from testing.protocol_client import Learner
from tests.ui.conftest import free_port

#: Seconds to wait for Bokeh and Panel to let a closed page go: a wait for it, however loaded the machine.
WAIT = 60


def _page_classes() -> int:
    """Parameterized classes alive that a page's run of app.py defined (Panel runs it as a module ``bokeh_app_…``)."""
    import param

    return sum(isinstance(o, param.parameterized.ParameterizedMetaclass) and o.__module__.startswith("bokeh_app_")
               for o in gc.get_objects())


def _open_and_close(learners: int, script: bool = False) -> dict:
    """Serve the app, open and close ``learners`` pages; what is left of their sessions once Bokeh is done.

    ``script``: serve app.py as ``panel serve`` does, the script run again as a new module for each page, instead
    of its ``create_app``."""
    from panel.io.server import get_server

    from app import create_app

    port = free_port()
    app = str(Path(__file__).resolve().parents[1] / "app.py") if script else create_app
    server = get_server({"app": app}, port=port, start=False, show=False,
                        unused_session_lifetime_milliseconds=500, check_unused_sessions_milliseconds=250)
    result = {}

    async def scenario():
        try:
            context = server._tornado._applications["/app"]
            pages = [Learner(f"ws://localhost:{port}/app/ws") for _ in range(learners)]
            for page in pages:
                await page.connect()
            documents = [weakref.ref(s.document) for s in context.sessions]
            # each served page (create_app hangs the session's state on it), found by the document it renders into
            served = {id(s.document) for s in context.sessions}
            states = [weakref.ref(view.state) for view, _, doc, _ in pn.state._views.values()
                      if id(doc) in served and hasattr(view, "state")]
            result["opened"], result["states"] = len(documents), len(states)
            for page in pages:
                page.close()
            deadline = time.monotonic() + WAIT  # for Bokeh to discard them, however slowly a loaded machine runs
            while context.sessions and time.monotonic() < deadline:
                await asyncio.sleep(0.25)
            result["sessions_left"] = len(context.sessions)
            # Panel's own clean-up runs after the session is destroyed
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:
                await asyncio.sleep(0.25)
                gc.collect()
                result["documents_alive"] = sum(ref() is not None for ref in documents)
                result["states_alive"] = sum(ref() is not None for ref in states)
                result["page_classes"] = _page_classes()
                if not result["documents_alive"] and not result["states_alive"] and not result["page_classes"]:
                    break
        finally:
            server.io_loop.stop()

    server.start()
    server.io_loop.add_callback(scenario)
    server.io_loop.start()
    server.stop()
    pn.state.kill_all_servers()
    return result


FREED = {"sessions_left": 0, "documents_alive": 0, "states_alive": 0, "page_classes": 0}


def test_closed_pages_free_their_documents_and_states():
    assert _open_and_close(4) == {"opened": 4, "states": 4, **FREED}


def test_a_page_served_from_the_script_leaves_no_class_of_its_own_behind():
    # param keeps every Parameterized class in its registries: one defined in app.py would be a new one for each
    # page, kept with the page's whole module (its functions, its texts) for as long as the server runs
    assert _open_and_close(3, script=True) == {"opened": 3, "states": 3, **FREED}
