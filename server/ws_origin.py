"""The websocket origin check, on every handshake that names an origin: Bokeh's allowlist, whatever else the
request says about itself.

Bokeh's ``WSHandler.check_origin`` holds a handshake's ``Origin`` against the server's allowlist
(``BOKEH_ALLOW_WS_ORIGIN``, else ``--allow-websocket-origin``, else ``localhost`` on the served port). Tornado 6.6
calls a handler's ``check_origin`` only for a handshake it takes to be cross-origin
(``RequestHandler._check_cross_origin``): not for one that says ``Sec-Fetch-Site: same-origin`` or ``none``, nor
for one without that header whose ``Origin`` names the host of its own ``Host`` header. A client writes both
headers itself, and a browser sends both that way for a page whose host name an attacker has pointed at the server
(DNS rebinding): the allowlist was never asked, and a foreign origin opened the page's websocket and a room's live
channel. So both handlers ask their ``check_origin`` themselves, in ``prepare`` (Tornado's public hook before the
handshake), for every handshake that names an origin. A handshake without ``Origin`` comes from no browser, and
Tornado and Bokeh let it through as before: a script can write any ``Origin`` it likes anyway.
"""

from __future__ import annotations

from tornado.websocket import WebSocketHandler


def refuse_foreign_origin(handler: WebSocketHandler) -> bool:
    """Answer ``handler``'s handshake with HTTP 403, as Tornado answers a cross-origin one, if it names an
    ``Origin`` that the handler's ``check_origin`` refuses (Bokeh logs one line saying so); True if it did.

    Called from the handler's ``prepare``: Tornado runs nothing more for a request answered there."""
    origin = handler.request.headers.get("Origin")
    if origin is None or handler.check_origin(origin):
        return False
    handler.set_status(403)
    handler.finish("Cross origin websockets not allowed")
    return True
