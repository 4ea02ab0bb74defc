"""Serve the app with a server that takes ``DELAY_S`` for every drag position it takes.

Only for tests: a crowded server, as the page sees it. Run as ``python tests/ui/slow_server.py`` with $PORT set.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import panel as pn  # noqa: E402

import link.drag  # noqa: E402

DELAY_S = 0.25


def main() -> None:
    os.chdir(ROOT)
    real = link.drag.DragChannel._flush

    def slowly(self):
        time.sleep(DELAY_S)  # the time a crowded server takes to come to this position
        real(self)

    link.drag.DragChannel._flush = slowly
    from app import TITLE, create_app

    port = os.environ["PORT"]
    pn.serve(create_app, port=int(port), address="127.0.0.1", show=False, title=TITLE,
             websocket_origin=[f"127.0.0.1:{port}"])


if __name__ == "__main__":
    main()
