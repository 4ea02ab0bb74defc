"""What serves the pages, once per server process: settings, start-up, the websocket transport and the routes.

- :mod:`server.serve`: the settings (environment variables to ``panel serve`` flags) and start-up;
- :mod:`server.transport`: TCP_NODELAY on each page's websocket; :mod:`server.guard`: what a page may send, and the
  handler that closes a connection at its first message no page sends; :mod:`server.page_turns`: a page's work in a
  later turn of the loop;
- :mod:`server.housekeeping`: returning the memory of closed sessions to the system;
- :mod:`server.build_gate`: the share of the loop building new pages may take;
- :mod:`server.room_live`: a room's live channel to its followers' pages (a Tornado websocket handler);
- :mod:`server.patches`: every change the app makes to Bokeh's and Panel's code, one module each, checked against the
  upstream code it was written for and installed by every entry point (``python -m server --check-patches``);
- :mod:`server.routes`: what ``python -m server`` and ``python app.py`` add to Panel's server (gzip, the link
  limit, the live channel's and KaTeX's fonts' routes).

The process's services that the pages use (rooms, polls, the queues of runs, the pacing, the sessions' sockets,
the network's addresses, the n² cost) are in ``services/``, below the views; this package imports them, never
the reverse.

``python -m server`` serves the app (the container's command); ``python app.py`` does the same;
``python -m server --check-patches`` checks every patch against the installed Bokeh and Panel.
"""
