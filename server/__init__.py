"""What runs once per server process, apart from the views of one page (``widgets/``) and the maths (``core/``).

- :mod:`server.serve`: the settings (environment variables to ``panel serve`` flags) and start-up;
- :mod:`server.transport`: how the websocket of each page carries updates;
- :mod:`server.housekeeping`: returning the memory of closed sessions to the system;
- :mod:`server.rooms`: the rooms a presenter opens for a class, and their registry;
- :mod:`server.room_live`: a room's live channel to its followers' pages.

``python -m server`` serves the app (the container's command); ``python app.py`` does the same.
"""
