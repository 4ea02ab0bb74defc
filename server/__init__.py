"""What runs once per server process, apart from the views of one page (``widgets/``) and the maths (``core/``).

- :mod:`server.serve`: the settings (environment variables to ``panel serve`` flags) and start-up;
- :mod:`server.transport`: TCP_NODELAY on each page's websocket; :mod:`server.guard`: what a page may send, and the
  handler that closes a connection at its first message no page sends; :mod:`server.page_turns`: a page's work in a
  later turn of the loop;
- :mod:`server.housekeeping`: returning the memory of closed sessions to the system;
- :mod:`server.rooms`: the rooms a presenter opens for a class, and their registry;
- :mod:`server.room_live`: a room's live channel to its followers' pages;
- :mod:`server.patches`: every change the app makes to Bokeh's and Panel's code, one module each, checked against the
  upstream code it was written for and installed by every entry point (``python -m server --check-patches``);
- :mod:`server.routes`: what ``python -m server`` and ``python app.py`` add to Panel's server (gzip, the link
  limit, the live channel's and KaTeX's fonts' routes);
- :mod:`server.cost`: the n² cost, measured once per process.

``python -m server`` serves the app (the container's command); ``python app.py`` does the same;
``python -m server --check-patches`` checks every patch against the installed Bokeh and Panel.
"""
