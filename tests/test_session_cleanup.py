"""A closed page's session is discarded and its document freed (an in-process server with short lifetimes)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from bench.protocol_client import Learner
from tests.ui.conftest import free_port


def test_closed_pages_free_their_documents():
    import panel as pn
    from panel.io.server import get_server

    from app import create_app

    port = free_port()
    server = get_server({"app": create_app}, port=port, start=False, show=False,
                        unused_session_lifetime_milliseconds=500, check_unused_sessions_milliseconds=250)
    result = {}

    async def scenario():
        try:
            context = server._tornado._applications["/app"]
            learners = [Learner(f"ws://localhost:{port}/app/ws") for _ in range(4)]
            for learner in learners:
                await learner.connect()
            documents = [weakref.ref(s.document) for s in context.sessions]
            result["opened"] = len(documents)
            for learner in learners:
                learner.close()
            for _ in range(40):  # up to 10 s for Bokeh to discard them
                await asyncio.sleep(0.25)
                if not context.sessions:
                    break
            result["sessions_left"] = len(context.sessions)
            await asyncio.sleep(0.5)  # Panel's own clean-up runs after the session is destroyed
            gc.collect()
            result["documents_alive"] = sum(ref() is not None for ref in documents)
        finally:
            server.io_loop.stop()

    server.start()
    server.io_loop.add_callback(scenario)
    server.io_loop.start()
    server.stop()
    pn.state.kill_all_servers()
    assert result == {"opened": 4, "sessions_left": 0, "documents_alive": 0}
