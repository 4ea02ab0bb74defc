"""What a server made by ``python -m server`` or ``python app.py`` adds to Panel's: Brotli or gzip (each static
file compressed once per process), the link limit, and the routes of a room's live channel and of KaTeX's fonts. A
bare ``panel serve app.py`` has none of them (the README says what it lacks); the patches every entry point installs are
:mod:`server.patches`."""

from __future__ import annotations

import asyncio

from server.guard import quiet_closed_socket_writes
from server.katex_fonts import font_patterns
from server.pages import install_link_limit
from server.room_live import live_patterns
from server.static_gzip import StaticCompression
from services.rooms import start_rooms


def add_routes(server_kwargs: dict) -> dict:
    """Add to ``server_kwargs`` (Bokeh ``Server``'s keyword arguments, as ``panel serve``'s ``customize_kwargs``
    makes them) what this app's server needs beyond Panel's; returns them."""
    # Brotli or gzip on HTTP responses (panel serve has no flag for it), as Tornado's compress_response, but each
    # static file compressed once per process, not once per page (Brotli on a worker thread)
    server_kwargs["transforms"] = [StaticCompression]
    install_link_limit(server_kwargs)
    # a room's live channel to its followers' pages (server/room_live.py); KaTeX's fonts, where Panel's bundled
    # KaTeX stylesheet looks for them (server/katex_fonts.py)
    server_kwargs["extra_patterns"] = [*server_kwargs.get("extra_patterns", []), *live_patterns(), *font_patterns()]
    from tornado.ioloop import IOLoop

    IOLoop.current().add_callback(_started)
    return server_kwargs


def _started() -> None:
    """What the process sets up on its loop as the server starts: the loop's handler of writes to pages that had
    left (server/guard.py), and the rooms (with Redis, its connection: services/rooms_redis.py)."""
    quiet_closed_socket_writes(asyncio.get_running_loop())
    start_rooms()
