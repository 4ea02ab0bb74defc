"""The websocket origin check, on every handshake that names an origin: Bokeh's allowlist, whatever else the
request says about itself.

Bokeh's ``WSHandler.check_origin`` holds a handshake's ``Origin`` against the server's allowlist
(``BOKEH_ALLOW_WS_ORIGIN``, else ``--allow-websocket-origin``, else ``localhost`` on the served port). Tornado 6.6
calls a handler's ``check_origin`` only for a handshake it takes to be cross-origin
(``RequestHandler._check_cross_origin``): not for one that says ``Sec-Fetch-Site: same-origin`` or ``none``, nor
for one without that header whose ``Origin`` names the host of its own ``Host`` header. A client writes both
headers itself, and a browser sends both that way for a page whose host name an attacker has pointed at the server
(DNS rebinding): the allowlist was never asked, and a foreign origin opened the page's websocket and a room's live
channel. So both handlers hold the origin against the allowlist themselves, in ``prepare`` (Tornado's public hook
before the handshake), for every handshake that names an origin. A handshake without ``Origin`` comes from no
browser, and Tornado and Bokeh let it through as before: a script can write any ``Origin`` it likes anyway.

The allowlist is read as Bokeh's ``check_origin`` reads it (:func:`origin_allowed`), without its log line: that line
quotes the whole origin and the allowlist and names no client, so the log's per-client back-off
(``server/logs.py``) never applied to it, and 10,000 refused handshakes with a 2 kB ``Origin`` wrote 6.57 MB. Each
refusal is logged here instead, in one short line naming the client, backed off per client.
"""

from __future__ import annotations

import logging
from urllib.parse import urlparse

from bokeh.server.util import check_allowlist
from bokeh.settings import settings
from tornado.websocket import WebSocketHandler

log = logging.getLogger(__name__)

#: The most characters of a refused origin's host written in its log line.
ORIGIN_CHARS = 80


def origin_allowed(handler: WebSocketHandler, origin: str) -> bool:
    """Whether ``origin`` (a handshake's ``Origin`` header) is on the allowlist of the Bokeh server ``handler`` belongs
    to: Bokeh's ``WSHandler.check_origin``, without its log line (its host, port 80 if it names none, against
    ``BOKEH_ALLOW_WS_ORIGIN`` if set, else the server's ``websocket_origins``)."""
    allowed = settings.allowed_ws_origin() or handler.application.websocket_origins
    return check_allowlist(urlparse(origin).netloc.lower(), list(allowed))


def refuse_foreign_origin(handler: WebSocketHandler) -> bool:
    """Answer ``handler``'s handshake with HTTP 403, as Tornado answers a cross-origin one, if it names an
    ``Origin`` that is not on the allowlist (:func:`origin_allowed`), with one line in the log naming the client and
    the origin's host (cut to :data:`ORIGIN_CHARS`); True if it did.

    Called from the handler's ``prepare``: Tornado runs nothing more for a request answered there."""
    origin = handler.request.headers.get("Origin")
    if origin is None or origin_allowed(handler, origin):
        return False
    host = urlparse(origin).netloc
    log.warning("Refused websocket from %s: its Origin %s is not allowed (BOKEH_ALLOW_WS_ORIGIN); answered 403",
                handler.request.remote_ip, host if len(host) <= ORIGIN_CHARS else host[:ORIGIN_CHARS] + "…")
    handler.set_status(403)
    handler.finish("Cross origin websockets not allowed")
    return True
