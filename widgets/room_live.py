"""A room's live channel: the presenter's query, written once per move to every follower's page.

While a presenter drags, the only thing that changes in the room's view is the query. A
follower's page can compute everything else itself (``static/preview.js``), so its server
need not recompute and re-render the page for each move: that costs tens of ms per page and
left a class of 60 seconds behind. Instead each following page opens this websocket,
``room-live?room=CODE`` beside Bokeh's own, and the room writes one short JSON text to all of
them (:meth:`widgets.rooms.RoomRegistry.publish`). The page's own server sends the full view,
with its authoritative numbers, once the presenter's query rests (``widgets/follow.py``).

The channel is read-only: it carries only what every follower of the room may see, accepts the
same origins as Bokeh's websocket, and closes on any message from the page.
"""

from __future__ import annotations

from bokeh.server.views.ws import WSHandler
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from widgets.rooms import RoomError, get_registry

#: The channel's path, under the server's prefix; pages open it relative to their own address.
ROUTE = "/room-live"


class RoomLiveHandler(WebSocketHandler):
    """One follower page's live channel (``GET /room-live?room=CODE``, websocket)."""

    def check_origin(self, origin: str) -> bool:
        # the same rule, and the same settings (BOKEH_ALLOW_WS_ORIGIN), as the page's Bokeh websocket
        return WSHandler.check_origin(self, origin)

    def open(self) -> None:
        self.code = self.get_query_argument("room", "")
        try:
            get_registry().watch(self.code, self)
        except RoomError:
            self.close(4404, "no such room")
            return
        self.set_nodelay(True)  # one small text per move: send it now (see transport.py)

    def on_message(self, message) -> None:
        self.close(4400, "this channel is read-only")

    def on_close(self) -> None:
        get_registry().unwatch(self.code, self)

    def send(self, text: str) -> None:
        try:
            self.write_message(text)
        except WebSocketClosedError:
            pass


def live_patterns() -> list[tuple]:
    """The tornado routes of the live channel, for the server's ``extra_patterns``."""
    return [(ROUTE, RoomLiveHandler)]
