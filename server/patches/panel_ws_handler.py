"""Panel's websocket handler (``panel.io.server.WSHandler``): each connection it opens becomes the app's guard,
:class:`server.guard.GuardedWSHandler`, as Tornado initializes it, before it reads anything.

Bokeh 3.10.2 closes a connection after a message it cannot decode, but goes on handling every frame the client has
already sent, and logs a traceback (or an error line) for each: one socket sending small junk frames wrote megabytes
of log and slowed everyone else's page; it applies any write to any property of any model a page names, and every
event of a message in one turn of the loop (``bench/HISTORY.md``, "hostile messages"). A proxy cannot limit frames
inside an open websocket, and neither Bokeh nor Panel takes a handler class or a message filter as a setting.

Panel puts its handler class into Bokeh's route table (``per_app_patterns``) when it is imported, and a server built
before this patch keeps that class in its routes: under a bare ``panel serve app.py`` the routes are built before
app.py first runs. So the guard is not a route's: Panel's ``WSHandler.initialize`` swaps the class of each of its
own connections to the guard (a subclass with no state of its own until it opens). The guard overrides or calls the
methods of Bokeh's handler listed in :data:`PATCH` (``on_message`` is redone whole; ``_receive``, ``_handle`` and
``_schedule`` are called as Bokeh's ``on_message`` calls them; ``_async_open`` is wrapped), and reads its
``connection._session``, ``_token``, ``handler`` and ``receiver``; it writes a message's frames in the order Bokeh's
``Message.send`` does, without waiting between them. Written for Bokeh 3.10.2, Panel 1.10.0 and Tornado 6.6.1; no
upstream issue asks for a handler that stops reading at the first bad message.
"""

from __future__ import annotations

from server.patches.fit import Patch

PATCH = Patch(
    name="panel_ws_handler",
    changes="each page's websocket served by the guard (server/guard.py)",
    targets={
        "panel.io.server:WSHandler.initialize": "a07d3723437dc3bb",
        "panel.io.server:WSHandler.prepare": "0a19ee64bd91b207",
        "panel.io.server:WSHandler.open": "85e6cfbdb62e1034",
        "bokeh.server.views.ws:WSHandler.open": "6c6889f7f5bf94a9",
        # wrapped: a build the gate does not make ends the socket quietly, and one that closed during its build lets go
        "panel.io.server:WSHandler._async_open": "30c732ec3bd8c5ac",
        "bokeh.server.views.ws:WSHandler._async_open": "cbca712b13001c9a",
        # read in prepare, before the handshake, to know whether it makes a build: the token's place and its session
        "bokeh.server.views.ws:WSHandler.select_subprotocol": "d6a74469c0dc9b82",
        "bokeh.server.contexts:ApplicationContext.get_session": "6bcdfa451f0bfcd3",
        "bokeh.server.views.ws:WSHandler.on_close": "7939a5c46013353f",
        "bokeh.server.views.ws:WSHandler.send_message": "8a63594391140b6b",
        "bokeh.server.views.ws:WSHandler.write_message": "e4f9105f42afd075",
        "bokeh.server.views.ws:WSHandler.on_message": "5637bdb1ebf6015c",
        "bokeh.server.views.ws:WSHandler._receive": "ffdda86e8cdbddc1",
        "bokeh.server.views.ws:WSHandler._handle": "a84fc50c46103e35",
        "bokeh.server.views.ws:WSHandler._schedule": "2107b3b4ccdb92d8",
        "bokeh.server.views.ws:WSHandler._protocol_error": "e1e21b5642bf0b5f",
        "bokeh.server.views.ws:WSHandler._internal_error": "f84f8f47123349ba",
        # the guard writes a message's frames as these write them, all at once (GuardedWSHandler.send_message)
        "bokeh.protocol.message:Message.send": "c7b7553bcc8cb94d",
        "bokeh.protocol.message:Message.write_buffers": "e3be2131cc558b20",
    },
    written_for="Bokeh 3.10.2, Panel 1.10.0",
    upstream="none filed",
)


def install() -> None:
    """Serve every page's websocket with the guard from now on, whenever the server was made (above). Idempotent."""
    from panel.io.server import WSHandler as PanelWSHandler

    from server.guard import GuardedWSHandler

    original = PanelWSHandler.initialize
    if getattr(original, "guards", False):
        return

    def initialize(self, *args, **kwargs):
        if type(self) is PanelWSHandler:
            self.__class__ = GuardedWSHandler
        return original(self, *args, **kwargs)

    initialize.guards = True
    initialize.__wrapped__ = original
    PanelWSHandler.initialize = initialize


PATCH.apply = install
