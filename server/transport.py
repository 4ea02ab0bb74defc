"""How the server's websocket carries drag updates, and what it refuses to read.

Small messages go out at once (below), each message's frames together in one send (:func:`coalesce_writes`,
:meth:`GuardedWSHandler.send_message`); a connection that sends what no page would is closed after one log
line (:class:`GuardedWSHandler`).

Bokeh writes each protocol message as several websocket frames (header, metadata, content). With
Nagle's algorithm on, the second frame waits until the browser acknowledges the first, and browsers
delay that ACK (about 40 ms on Linux), so every drag update can stall for 40 ms. Bokeh's server does
not set TCP_NODELAY and offers no setting for it, so each session sets it on its own websocket as soon
as the page has loaded (``pn.state.onload``): that works the same under ``python app.py`` and
``panel serve app.py`` and needs no change to the server's routes.
"""

from __future__ import annotations

import json
import logging

import panel as pn
from bokeh.protocol.exceptions import ProtocolError
from panel.io.server import WSHandler as PanelWSHandler
from tornado.websocket import WebSocketClosedError, WebSocketHandler

log = logging.getLogger(__name__)


def session_websockets(doc) -> list:
    """The tornado ``WebSocketHandler`` of every live connection to ``doc``'s server session.

    Bokeh has no public way from a session to its websockets. Its ``ServerSession`` keeps the
    connections in ``_subscribed_connections`` and each ``ServerConnection`` holds its handler as
    ``_socket``; Panel reads the same two attributes to write patches (``panel.io.document``). This is
    the only place the app touches them, and ``tests/test_transport.py`` fails if they move.
    """
    session = getattr(getattr(doc, "session_context", None), "session", None)
    if session is None:  # not served: a test or a notebook
        return []
    return [conn._socket for conn in list(session._subscribed_connections)]


def set_websocket_nodelay(doc=None) -> int:
    """Turn off Nagle's algorithm on the websockets of ``doc``'s session (default: the current one).

    Uses tornado's public ``WebSocketHandler.set_nodelay``. Returns how many websockets were set;
    0 when the document is not served.
    """
    sockets = session_websockets(doc if doc is not None else pn.state.curdoc)
    for ws in sockets:
        ws.set_nodelay(True)
    return len(sockets)


def nodelay_on_load() -> None:
    """Arrange for the current session's websocket to get TCP_NODELAY once the page has loaded."""
    doc = pn.state.curdoc
    if doc is not None and doc.session_context is not None:
        pn.state.onload(lambda: set_websocket_nodelay(doc))


def coalesce_writes(stream) -> None:
    """Send what is written to tornado's ``stream`` in one pass of the event loop together, at the pass's end.

    Bokeh writes each message as three websocket frames (header, metadata, content), and with TCP_NODELAY
    (above) tornado sends each at once: three system calls and three TCP segments per message, which on a
    loopback or a LAN cost the server more CPU than building the message (about half of a drag update's
    server time, bench/channel_cost.py). Gathered, a message (or several written together) leaves in one or
    two sends. The frames still go in the same pass of the loop, so nothing waits. Uses tornado's
    ``IOStream._handle_write``, the step ``write`` takes at once; ``tests/test_transport.py`` fails if it moves.
    """
    send_now = stream._handle_write
    pending = False

    def flush() -> None:
        nonlocal pending
        pending = False
        if stream.closed():
            return
        send_now()
        if stream._write_buffer:  # the socket is full: tornado sends the rest once it is writable
            stream._add_io_state(stream.io_loop.WRITE)

    def send_at_the_end_of_the_pass() -> None:
        nonlocal pending
        if not pending:
            pending = True
            stream.io_loop.add_callback(flush)

    stream._handle_write = send_at_the_end_of_the_pass
    stream.flush_writes = flush


def _short(text: object, limit: int = 120) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


class GuardedWSHandler(PanelWSHandler):
    """Panel's websocket handler, which stops reading a connection at its first message it cannot use.

    Bokeh closes a connection after a message it cannot decode, but goes on handling every frame the
    client has already sent until the client acknowledges the close, and logs a traceback (or an error
    line) for each: one socket sending 10,000 small junk frames wrote 10 MB of log and slowed everyone
    else's page. A proxy cannot limit frames inside an open websocket. Here the first bad message, or a
    handshake without Bokeh's subprotocol and session token, logs one line, closes the connection and
    drops its stream: nothing more it sent is read. A failure inside the app's own code still logs its
    traceback, at DEBUG level, so a developer can find it.
    """

    _refused = False

    def open(self, *args, **kwargs):
        if self.selected_subprotocol != "bokeh" or self._token is None:
            self._refuse("a handshake without the bokeh subprotocol and a session token")
            return None
        try:
            opened = super().open(*args, **kwargs)
            coalesce_writes(self.ws_connection.stream)
            return opened
        except ProtocolError as e:  # Bokeh has closed it already (bad signature, expired token)
            self._refuse(str(e))
            return None

    async def send_message(self, message) -> None:
        # Every frame of the message written at once, as Panel writes its patches (panel.io.document): Bokeh's
        # own send awaits each frame before the next, so each left in a send of its own even when gathered
        # (coalesce_writes), and frames of two messages written from two places could interleave.
        frames = [(message.header_json, False), (message.metadata_json, False), (message.content_json, False)]
        for buffer in message.buffers:
            frames += [(json.dumps(buffer.ref), False), (buffer.to_bytes(), True)]
        try:
            written = [WebSocketHandler.write_message(self, frame, binary=binary) for frame, binary in frames]
            for future in written:
                await future
        except WebSocketClosedError:  # as Bokeh's: on_close() is, or will be, called anyway
            log.warning("Failed sending message as connection was closed")

    async def on_message(self, message: str | bytes) -> None:
        if self._refused:
            return
        try:
            parsed = await self._receive(message)
        except Exception as e:  # not JSON, not a Bokeh message: the client's, not the server's
            self._refuse(f"a message it cannot decode ({type(e).__name__}: {_short(e)})")
            return
        if parsed is None or self._refused:  # part of a message, or a protocol error (refused below)
            return
        try:
            work = await self._handle(parsed)
            if work:
                await self._schedule(work)
        except Exception as e:
            log.debug("handling a message failed", exc_info=True)
            self._refuse(f"a message the server could not handle ({type(e).__name__}: {_short(e)})")

    def _protocol_error(self, message: str) -> None:
        self._refuse(f"a message that breaks Bokeh's protocol ({_short(message)})")

    def _internal_error(self, message: str) -> None:
        self._refuse(_short(message))

    def _refuse(self, why: str) -> None:
        if self._refused:
            return
        self._refused = True
        log.warning("Refused websocket from %s: %s; connection closed", self.request.remote_ip, why)
        self.close(1008, "refused")  # 1008: policy violation
        stream = getattr(self.ws_connection, "stream", None)
        if stream is not None:
            getattr(stream, "flush_writes", lambda: None)()  # the close frame, before the stream goes
            stream.close()  # read nothing more the client has sent


def install_websocket_guard() -> None:
    """Serve each app's websocket with :class:`GuardedWSHandler` instead of Panel's handler.

    Panel chooses its handler by replacing the entry of Bokeh's route table (``per_app_patterns``) in place
    when it is imported; this replaces that entry again, before the server builds its routes. Idempotent.
    """
    from bokeh.server.urls import per_app_patterns

    per_app_patterns[:] = [(route, GuardedWSHandler if route == r"/ws" else handler, *rest)
                           for route, handler, *rest in per_app_patterns]


def run_sessions_on_the_loop() -> None:
    """Run every session's work (callbacks, applying and serializing patches) on the event loop, not in threads.

    Bokeh 3.10 hands each of these to a worker thread and back, to keep the loop free during a long
    callback. This app has no long callback on that path (its heavy work goes to a thread of its own), and
    on a school's 2-core server the hand-off cost more than the work: waking the loop from a thread took
    13 % of the server's time during a class's drag, and thread hops and the GIL most of the rest. Idempotent;
    ``tests/test_transport.py`` fails if Bokeh's names move.
    """
    from bokeh.server import session

    async def inline(func, *args, **kwargs):
        return func(*args, **kwargs)

    async def inline_method(self, func, *args):
        return func(*args)

    session._run_in_executor = inline
    session.ServerSession._run_in_executor = inline_method



def hold_page_events() -> None:
    """Process each of a page's events (a widget's change, a button's click) inside a Panel hold of its document.

    Panel runs a page's event that arrives while another is pending as a callback without the session's lock,
    and wraps its own widgets' updates in a hold that writes the changes itself. This app's views also write
    into Bokeh models directly (a ``Div``'s text, a data source); such a change, outside any hold and without
    the lock, reached Bokeh's session, which refused it ("_pending_writes should be non-None …"): the rest of
    the event was lost, a traceback logged, and the page stopped showing the server's numbers. A learner who
    ticked "Step through" and pressed Next at once did it. Holding the document while Panel processes the event
    (synchronous code: no other callback runs meanwhile) collects every change, and Panel writes them when it
    ends, as it does for its own widgets; inside the lock the hold changes nothing. Idempotent;
    ``tests/test_transport.py`` fails if Panel's names move.
    """
    import functools

    from panel.io.document import hold
    from panel.reactive import Syncable

    for name in ("_change_event", "_process_bokeh_event"):
        original = getattr(Syncable, name)
        if getattr(original, "holds_document", False):
            continue

        def held(self, doc, *args, _original=original):
            with hold(doc):
                return _original(self, doc, *args)

        functools.update_wrapper(held, original)
        held.holds_document = True
        setattr(Syncable, name, held)
