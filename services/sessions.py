"""What the server knows of a page's session beyond what Bokeh shows: the one websocket it is served on.

Bokeh lets any number of websockets attach to one session (each with a token for the session's id). A page's
own script opens exactly one, for as long as the page is open. So "the same page" is one session *and* the one
connection it had: what a page reported on it (a class poll's question drawn, ``widgets/poll.py``) holds only
for later messages on that connection, not for a second socket someone opened onto the session. And how long that
websocket may leave a write untaken before the page counts as gone (:data:`DEFAULT_WRITE_WAIT_S`; the guard,
``server/guard.py``, closes it).
"""

from __future__ import annotations

import weakref

from server.patches.bokeh_session_connections import session_connections
from services.rooms import seconds_from_env

#: In every log line of what a page sent and the server dropped or refused (server/guard.py, the drag channel:
#: link/channel.py); the browser tests look for it in the server's log, as what the app's own page must never send.
SCREENED = "screened out"


def page_connection(doc) -> object | None:
    """The one websocket connection (Bokeh's ``ServerConnection``) serving ``doc``'s session, or None.

    None when the session has no connection, or more than one (a second socket opened on the page's session id),
    or ``doc`` is not a served page's (a test's document). Bokeh shows only their number (``connection_count``);
    ``server/patches/bokeh_session_connections.py`` reads them.
    """
    connections = session_connections(doc)
    return connections[0] if len(connections) == 1 else None


def connection_count(doc) -> int | None:
    """How many websockets serve ``doc``'s session now (Bokeh's ``ServerSession.connection_count``); None when
    ``doc`` is not a served page's. Zero once the page's socket has closed: a page's script never opens another
    (the app leaves Panel's ``reconnect`` off), so the page has gone, though Bokeh keeps its session for
    15-30 s more."""
    return getattr(_server_session(doc), "connection_count", None)


def _server_session(doc) -> object | None:
    """Bokeh's ``ServerSession`` of ``doc`` (its session context's public ``session``), or None."""
    return getattr(getattr(doc, "session_context", None), "session", None)


#: Where the process keeps the documents of pages whose websocket has closed.
LEFT_KEY = "explorer-left-pages"


def _left() -> weakref.WeakSet:
    import panel as pn

    left = pn.state.cache.get(LEFT_KEY)
    if left is None:
        left = pn.state.cache.setdefault(LEFT_KEY, weakref.WeakSet())
    return left


def page_has_left(doc) -> None:
    """``doc``'s page has left: its websocket closed (the guard says so, ``server/guard.py``). Bokeh keeps the
    session for a minute more (its unused lifetime); what the page queued meanwhile is of use to nobody."""
    if doc is not None:
        _left().add(doc)


def page_left(doc) -> bool:
    """Whether ``doc``'s page has left (:func:`page_has_left`): a page not yet connected has not."""
    return doc is not None and doc in _left()


#: Seconds a write to a page may wait for its socket to take it before the connection is let go, unless
#: ``EXPLORER_WRITE_WAIT_S`` says otherwise. A write waits only once the socket's buffers are full (the kernel's on
#: both ends, hundreds of kilobytes at least): its page has read nothing of what the server sent for a long while. A
#: page that stops reading but keeps its socket open (a client that sends and never reads, a machine that vanished
#: without a word) would otherwise hold its session, and every message of its page waiting its turn to be written,
#: for as long as the socket stays open.
DEFAULT_WRITE_WAIT_S = 30.0


def write_wait_from_env(environ=None) -> float:
    """``EXPLORER_WRITE_WAIT_S`` of ``environ`` (default ``os.environ``) in seconds, or :data:`DEFAULT_WRITE_WAIT_S`
    when unset. Raises ValueError for anything but a positive number."""
    return seconds_from_env("EXPLORER_WRITE_WAIT_S", DEFAULT_WRITE_WAIT_S, environ)
