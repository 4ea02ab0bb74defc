"""Serve the app with a server whose outputs are deliberately off by +0.5.

Only for tests: it shows that when the server's numbers differ from the browser's
preview, the server's win. Run as ``python tests/ui/forced_server.py`` with $PORT set.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import dataclasses  # noqa: E402

import panel as pn  # noqa: E402

import session.state  # noqa: E402

OFFSET = 0.5


def main() -> None:
    os.chdir(ROOT)
    real = session.state.scaled_dot_product_attention

    def off_by_half(*args, **kwargs):
        r = real(*args, **kwargs)
        return dataclasses.replace(r, output=r.output + OFFSET)

    session.state.scaled_dot_product_attention = off_by_half
    from app import TITLE, create_app

    port = os.environ["PORT"]
    pn.serve(create_app, port=int(port), address="127.0.0.1", show=False, title=TITLE,
             websocket_origin=[f"127.0.0.1:{port}"])


if __name__ == "__main__":
    main()
