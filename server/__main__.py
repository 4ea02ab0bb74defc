"""``python -m server [--health] [extra panel serve flags]``: serve the app (see :mod:`server.serve`)."""

from server.serve import main

main()
