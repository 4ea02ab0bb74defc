"""Bokeh's ``ServerSession`` and ``ServerConnection``, read (not replaced): the websockets a session is served on.

Bokeh 3.10.2 has no public way from a session to its websockets or connections: it shows only their number
(``ServerSession.connection_count``). A ``ServerSession`` keeps its connections in ``_subscribed_connections``
(filled by ``subscribe``, emptied by ``unsubscribe``) and each ``ServerConnection`` holds its Tornado handler as
``_socket``; Panel reads the same two attributes to write patches (``panel.io.document``). This module is the only
place the app reads them: TCP_NODELAY (``server/transport.py``), the guard closing a page (``server/guard.py``) and
the one connection a page is served on (``services/sessions.py``). Where they no longer fit, a session has no websocket
the app can see: no TCP_NODELAY, and a page's own messages are judged without its connection. Written for Bokeh
3.10.2; no upstream issue asks for a public accessor.
"""

from __future__ import annotations

from server.patches.fit import Patch

PATCH = Patch(
    name="bokeh_session_connections",
    changes="a session's websockets read from Bokeh's session and connections",
    targets={
        "bokeh.server.session:ServerSession.subscribe": "daf4cca82e64bcfa",
        "bokeh.server.session:ServerSession.unsubscribe": "7939f53d19bdda6c",
        "bokeh.server.session:ServerSession.connection_count": "694b223cff504c26",
        "bokeh.server.connection:ServerConnection.__init__": "5d0f3ef388e15aae",
        "bokeh.server.contexts:BokehSessionContext.session": "25c35e7d1e406772",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
)


def session_connections(doc) -> list:
    """Bokeh's ``ServerConnection`` of every live connection to ``doc``'s server session; [] when ``doc`` is not served
    (a test, a notebook) or this does not fit the installed Bokeh."""
    session = getattr(getattr(doc, "session_context", None), "session", None)
    if session is None or not PATCH.fits():
        return []
    return list(getattr(session, "_subscribed_connections", ()))


def session_websockets(doc) -> list:
    """The Tornado ``WebSocketHandler`` of every live connection to ``doc``'s server session (as
    :func:`session_connections`)."""
    return [conn._socket for conn in session_connections(doc)]
