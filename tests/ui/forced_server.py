"""Serve the app with a server whose outputs are deliberately off by +0.5.

Only for tests: it shows that when the server's numbers differ from the browser's
preview, the server's win. Run as ``python tests/ui/forced_server.py`` with $PORT set.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)

import dataclasses  # noqa: E402

import panel as pn  # noqa: E402

import widgets.state  # noqa: E402

OFFSET = 0.5
_real = widgets.state.scaled_dot_product_attention


def _off_by_half(*args, **kwargs):
    r = _real(*args, **kwargs)
    return dataclasses.replace(r, output=r.output + OFFSET)


widgets.state.scaled_dot_product_attention = _off_by_half

from app import TITLE, create_app  # noqa: E402

pn.serve(create_app, port=int(os.environ["PORT"]), address="127.0.0.1", show=False, title=TITLE,
         websocket_origin=[f"127.0.0.1:{os.environ['PORT']}"])
