"""The server process's services that a page uses: one of each per process, below the views.

- :mod:`services.rooms` (with ``room_*.py``, ``rooms_redis*.py`` and :mod:`services.polls`): the rooms a
  presenter opens for a class, their registry (in this process or shared through Redis) and their polls;
- :mod:`services.train_queue`: one queue of training runs and downloads per process, shared fairly by client;
- :mod:`services.pacing`: each session's events and the loop's share for drags;
- :mod:`services.pace`: "newest wins, paced by the last cost", the one rule every scheduler here uses;
- :mod:`services.sessions`: the one websocket a page is served on, and whether it has closed;
- :mod:`services.network`: this machine's addresses, where a class can reach a room;
- :mod:`services.cost`: the n² cost, measured once per process;
- :mod:`services.katex_fonts`: where KaTeX's fonts are kept, which the server serves and a notebook inlines.

Imports run ``core ← course ← session ← services ← link ← widgets ← app``: a service never imports a view or
``server/`` (what serves the pages: transport, routes, patches), which imports it.
"""
