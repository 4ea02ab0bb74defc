"""The served page's websocket sends without Nagle's delay, under both ways of serving the app."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import panel as pn
import pytest
from bokeh.models import Div
from panel.io.server import get_server

from app import create_app
from bench.protocol_client import Learner
from server.transport import session_websockets, set_websocket_nodelay

ROOT = Path(__file__).resolve().parents[1]


def _plain_page():
    return pn.pane.Bokeh(Div(name="readout", text="plain"))


async def _served_nodelay(app) -> list[int]:
    """Serve ``app`` on loopback, open one session as a browser does, return TCP_NODELAY of its websockets."""
    server = get_server(app, port=0, address="127.0.0.1", start=False, show=False,
                        allow_websocket_origin=["127.0.0.1"])
    server.start()
    learner = Learner(f"ws://127.0.0.1:{server.port}/ws", figure="readout")
    try:
        await learner.connect()  # pulls the document and announces document_ready, as the browser does
        for _ in range(100):  # onload callbacks run on the server's loop shortly after document_ready
            await asyncio.sleep(0.02)
            sessions = server.get_sessions()
            flags = [ws.ws_connection.stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                     for s in sessions for ws in session_websockets(s.document)]
            if flags and all(flags):
                break
        return flags
    finally:
        learner.close()
        server.stop()


@pytest.mark.parametrize("app", [create_app, str(ROOT / "app.py")], ids=["python app.py", "panel serve app.py"])
def test_served_websocket_has_nodelay(app):
    flags = asyncio.run(_served_nodelay(app))
    assert len(flags) == 1 and flags[0] != 0


def test_bokeh_alone_leaves_nagle_on():
    # the reason transport.py exists: without it the same check reads 0
    flags = asyncio.run(_served_nodelay(_plain_page))
    assert flags == [0]


def test_not_served_is_a_no_op():
    assert session_websockets(None) == [] and set_websocket_nodelay(pn.state.curdoc) == 0


def test_sessions_run_on_the_event_loop_once_the_server_says_so():
    """server/serve.py makes Bokeh run each session's work inline instead of in worker threads."""
    import asyncio
    import threading

    from bokeh.server import session

    from server.transport import run_sessions_on_the_loop

    # the names this relies on: if Bokeh moves them, this fails before anything else does
    assert callable(session._run_in_executor) and callable(session.ServerSession._run_in_executor)
    before, before_method = session._run_in_executor, session.ServerSession._run_in_executor
    try:
        run_sessions_on_the_loop()
        threads = []
        asyncio.run(session._run_in_executor(lambda: threads.append(threading.current_thread())))
        assert threads == [threading.main_thread()]
    finally:
        session._run_in_executor, session.ServerSession._run_in_executor = before, before_method



def test_a_pages_events_are_processed_in_a_hold_once_the_server_says_so():
    """server/serve.py wraps Panel's processing of a page's events in a hold; the names it relies on are Panel's."""
    from panel.io.document import hold  # noqa: F401  (what the wrapper holds with)
    from panel.reactive import Syncable

    from server.transport import hold_page_events

    before = {name: getattr(Syncable, name) for name in ("_change_event", "_process_bokeh_event")}
    try:
        hold_page_events()
        hold_page_events()  # idempotent
        for name, original in before.items():
            now = getattr(Syncable, name)
            assert now.holds_document and now.__wrapped__ is original
    finally:
        for name, original in before.items():
            setattr(Syncable, name, original)


# --- a message's frames leave together ------------------------------------------------------------------------------

class _Frames:
    """Stands in for tornado's websocket protocol: records each frame, and lets none finish writing."""

    def __init__(self):
        self.frames, self.pending = [], []

    def is_closing(self):
        return False

    def write_message(self, message, binary=False):
        self.frames.append(message)
        future = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        return future


async def _frames_written_before_any_is_sent(handler_class) -> list:
    from bokeh.protocol import Protocol
    from tornado import locks

    handler = handler_class.__new__(handler_class)  # no tornado request: only what sending uses
    handler.ws_connection, handler.write_lock = _Frames(), locks.Lock()
    message = Protocol().create("OK", "p1")
    task = asyncio.ensure_future(handler.send_message(message))
    await asyncio.sleep(0.01)
    written = list(handler.ws_connection.frames)
    for future in handler.ws_connection.pending:
        future.set_result(None)
    while not task.done():
        for future in handler.ws_connection.pending:
            if not future.done():
                future.set_result(None)
        await asyncio.sleep(0)
    return written


def test_the_guarded_handler_writes_every_frame_of_a_message_at_once():
    from panel.io.server import WSHandler

    from server.transport import GuardedWSHandler

    # Bokeh's own send waits for each frame to be written before the next: three sends per message
    assert len(asyncio.run(_frames_written_before_any_is_sent(WSHandler))) == 1
    frames = asyncio.run(_frames_written_before_any_is_sent(GuardedWSHandler))
    assert len(frames) == 3 and '"msgtype": "OK"' in frames[0] and frames[1:] == ["{}", "{}"]


def test_writes_in_one_pass_of_the_event_loop_leave_in_one_send():
    from tornado.iostream import IOStream

    from server.transport import coalesce_writes

    async def sends(coalesce: bool) -> tuple[int, bytes]:
        a, b = socket.socketpair()
        stream = IOStream(a)
        if coalesce:
            coalesce_writes(stream)
        sent = []
        send = stream.write_to_fd
        stream.write_to_fd = lambda data: sent.append(bytes(data)) or send(data)
        futures = [stream.write(part) for part in (b"header", b"{}", b"content")]  # one message's three frames
        await asyncio.wait_for(asyncio.gather(*futures), 5)
        received = b.recv(100)
        stream.close()
        b.close()
        return len(sent), received

    assert asyncio.run(sends(False)) == (3, b"header{}content")
    assert asyncio.run(sends(True)) == (1, b"header{}content")
