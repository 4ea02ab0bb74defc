"""Give the memory of closed sessions back to the system, so a classroom server does not keep its peak.

Each open page holds a few MB of Python objects. When its session closes, the objects are freed
(``tests/test_session_cleanup.py``), but with CPython's own small-object allocator (pymalloc) the
process keeps the memory: pymalloc gets it from the system in 1 MiB arenas and returns an arena only
when every object in it is gone, and a few long-lived objects allocated while the pages were open keep
most arenas. Measured on this app, after 60 sessions opened and closed: live objects and allocated bytes
back at their start, 201 arenas held instead of 65, and resident memory 2.7 times its start.

So the server runs with ``PYTHONMALLOC=malloc`` (``server/serve.py`` sets it; CPython's documented switch to
the C library's allocator), and every :data:`TRIM_EVERY` calls glibc's ``malloc_trim(0)``, which returns
every whole free page of the heap to the system, wherever it lies. Same measurement: resident memory
back within 2 % of its start. A trim takes 1–6 ms, about 40 ms when it returns a few hundred MB.
"""

from __future__ import annotations

import contextvars
import ctypes
import sys
from functools import cache

#: How often the server returns freed memory: about as often as Bokeh checks for unused sessions.
TRIM_EVERY = "15s"


@cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where there is none (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library the interpreter already runs on
    except (OSError, AttributeError):
        return None


def can_trim() -> bool:
    """Whether this process can return freed heap pages to the system (Linux with glibc)."""
    return _malloc_trim() is not None


def trim() -> None:
    """Return the heap's free pages to the system (glibc ``malloc_trim(0)``; nothing elsewhere)."""
    malloc_trim = _malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)


def return_freed_memory() -> None:
    """In a served session, make sure the process trims its heap every :data:`TRIM_EVERY`.

    Called by every page; Panel keeps one task per name and process, so the first call schedules it.
    Does nothing outside a server (tests, a notebook) or without glibc.
    """
    import panel as pn  # here: server/serve.py asks can_trim() before it starts Python again, and Panel is slow to import

    doc = pn.state.curdoc
    if doc is None or doc.session_context is None or not can_trim():
        return
    # from an empty context: the task's timer keeps the context it was scheduled in, and this page's would
    # keep its document (Panel's curdoc) alive for as long as the server runs
    contextvars.Context().run(pn.state.schedule_task, "return-freed-memory", trim, period=TRIM_EVERY)
