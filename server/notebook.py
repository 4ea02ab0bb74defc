"""Once per notebook kernel: what Panel's set-up output leaves in the saved notebook.

``pn.extension(inline=True)`` in a notebook publishes BokehJS, Panel and their extensions (about 4 MB of script)
in one display under two types, ``application/javascript`` and HoloViz's own load type
(``panel/io/notebook.py:load_notebook``, Panel 1.10), with the same text in each: a notebook saved with one
explorer cell was 8.7 MB, the bundle stored twice. :func:`bundle_once` keeps one copy, the
``application/javascript`` one, which every front end runs: the classic notebook and nbconvert's HTML by
themselves, JupyterLab and Notebook 7 through their JavaScript renderer where HoloViz's extension would have taken
the other (its load renderer only runs the same script). The kernel's own hook on what it publishes
(``ipykernel``'s ``ZMQDisplayPublisher.register_hook``) does it: nothing of Panel's is changed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: HoloViz's type for the script that loads BokehJS and Panel in a notebook (pyviz_comms's LOAD_MIME).
LOAD_MIME = "application/vnd.holoviews_load.v0+json"
JAVASCRIPT = "application/javascript"


def one_copy(msg: dict) -> dict:
    """A display message with the same script under both types, with the ``application/javascript`` one only;
    any other message as it is.

    >>> one_copy({"content": {"data": {JAVASCRIPT: "x()", LOAD_MIME: "x()"}}})
    {'content': {'data': {'application/javascript': 'x()'}}}
    >>> one_copy({"content": {"data": {JAVASCRIPT: "x()", LOAD_MIME: "y()"}}})["content"]["data"][LOAD_MIME]
    'y()'
    """
    data = msg.get("content", {}).get("data")
    if isinstance(data, dict) and LOAD_MIME in data and data[LOAD_MIME] == data.get(JAVASCRIPT):
        msg["content"]["data"] = {k: v for k, v in data.items() if k != LOAD_MIME}
    return msg


@contextmanager
def bundle_once() -> Iterator[None]:
    """While inside, the kernel publishes a script sent under both types once (:func:`one_copy`). Outside a
    kernel whose display publisher takes hooks (a served page, a test), nothing changes."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    publisher = getattr(shell, "display_pub", None)
    if not callable(getattr(publisher, "register_hook", None)):
        yield
        return
    publisher.register_hook(one_copy)
    try:
        yield
    finally:
        publisher.unregister_hook(one_copy)
