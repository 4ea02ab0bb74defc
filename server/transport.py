"""Small messages out at once: TCP_NODELAY on each page's websocket.

Bokeh writes each protocol message as several websocket frames (header, metadata, content). With
Nagle's algorithm on, the second frame waits until the browser acknowledges the first, and browsers
delay that ACK (about 40 ms on Linux), so every drag update can stall for 40 ms. Bokeh's server does
not set TCP_NODELAY and offers no setting for it, so each session sets it on its own websocket as soon
as the page has loaded (``pn.state.onload``), through Tornado's public ``set_nodelay``: that works the same under
``python app.py`` and ``panel serve app.py`` and needs no change to the server's routes.
"""

from __future__ import annotations

import panel as pn

from server.patches.bokeh_session_connections import session_websockets

__all__ = ["nodelay_on_load", "session_websockets", "set_websocket_nodelay"]


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
