"""How the server's websocket carries drag updates: small messages go out at once.

Bokeh writes each protocol message as several websocket frames (header, metadata, content). With
Nagle's algorithm on, the second frame waits until the browser acknowledges the first, and browsers
delay that ACK (about 40 ms on Linux), so every drag update can stall for 40 ms. Bokeh's server does
not set TCP_NODELAY and offers no setting for it, so each session sets it on its own websocket as soon
as the page has loaded (``pn.state.onload``): that works the same under ``python app.py`` and
``panel serve app.py`` and needs no change to the server's routes.
"""

from __future__ import annotations

import panel as pn


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
