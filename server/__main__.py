"""``python -m server [--health | --check-patches] [extra panel serve flags]``: serve the app (see :mod:`server.serve`).

It runs app.py as ``python app.py`` does, so that everything a page's build imports is loaded before the server
starts; the health check needs none of it. ``--check-patches`` lists every patch to Bokeh's and Panel's code and
whether the installed upstream code is the one it was written for (:mod:`server.patches`), exit status 0 only if
all are.
"""

import runpy
import sys

from server.serve import APP, main

if sys.argv[1:2] == ["--health"]:
    main()
elif sys.argv[1:2] == ["--check-patches"]:
    from server.patches import main as check_patches

    sys.exit(check_patches())
else:
    runpy.run_path(str(APP), run_name="__main__")
