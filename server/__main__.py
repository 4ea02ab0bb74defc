"""``python -m server [--health] [extra panel serve flags]``: serve the app (see :mod:`server.serve`).

It runs app.py as ``python app.py`` does, so that everything a page's build imports is loaded before the server
starts; the health check needs none of it.
"""

import runpy
import sys

from server.serve import APP, main

if sys.argv[1:2] == ["--health"]:
    main()
else:
    runpy.run_path(str(APP), run_name="__main__")
