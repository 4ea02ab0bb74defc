"""Serve an app with every turn of its server's event loop timed: ``python testing/loop_watch.py APP.py [args]``.

A turn is one pass of asyncio's loop over the callbacks ready at its start (``BaseEventLoop._run_once``: each
page's messages, timers, the housekeeping round, Bokeh's sweep of unused sessions); while it runs, no page is
answered. This wrapper times the callbacks of every turn (not the wait for the network between turns) and writes,
to the file named by ``EXPLORER_LOOP_WATCH``, one JSON line per turn that kept the loop longer than
``EXPLORER_LOOP_WATCH_MS`` (default 20): ``{"t": CLOCK_MONOTONIC seconds at its end, "ms": the turn's callbacks,
"longest": the one that took longest, "what": its name}``. With ``EXPLORER_LOOP_WATCH_STACKS=1`` a callback
running past 30 ms gets the main thread's stack sampled from a thread every 5 ms (``"stacks"``: the frames seen most).

It wraps the code under test from outside (asyncio's own classes, nothing of the app's), so the same measurement
runs against any checkout (``testing.server.serve(..., watch=path)``), the code before a change included. Only the
standard library: it is run as a script beside another checkout's ``app.py``.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import runpy
import sys
import threading
import time
import traceback

#: Turns longer than this (ms) are written down.
DEFAULT_MS = 20.0


def _name(handle) -> str:
    callback = getattr(handle, "_callback", None)
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):  # a coroutine's step: name the coroutine
        coro = owner.get_coro()
        return getattr(coro, "__qualname__", repr(coro))[:160]
    return getattr(callback, "__qualname__", repr(callback))[:160]


def install(path: str, threshold_ms: float = DEFAULT_MS, stacks: bool = False) -> None:
    """Time every turn of every asyncio loop in this process from now on; write the long ones to ``path``."""
    from asyncio import base_events, events

    out = open(path, "a", buffering=1)  # noqa: SIM115  (open for the process's life)
    lock = threading.Lock()
    state = {"busy": 0.0, "longest": 0.0, "what": "", "running": None, "since": 0.0}
    seen = collections.Counter()
    main = threading.main_thread().ident
    original_run, original_once = events.Handle._run, base_events.BaseEventLoop._run_once

    def run(self):
        start = time.perf_counter()
        if stacks:
            state["running"], state["since"] = self, start
        try:
            return original_run(self)
        finally:
            took = time.perf_counter() - start
            state["running"] = None
            state["busy"] += took
            if took > state["longest"]:
                state["longest"], state["what"] = took, self

    def run_once(self):
        state["busy"], state["longest"], state["what"] = 0.0, 0.0, ""
        seen.clear()
        try:
            return original_once(self)
        finally:
            ms = state["busy"] * 1e3
            if ms > threshold_ms:
                line = {"t": round(time.monotonic(), 4), "ms": round(ms, 1),
                        "longest": round(state["longest"] * 1e3, 1), "what": _name(state["what"])}
                if seen:
                    line["stacks"] = [f"{n}× {frame}" for frame, n in seen.most_common(6)]
                with lock:
                    out.write(json.dumps(line) + "\n")

    def sample():
        while True:
            time.sleep(0.005)
            handle, since = state["running"], state["since"]
            if handle is None or time.perf_counter() - since < 0.03:
                continue
            frame = sys._current_frames().get(main)
            if frame is not None:
                frames = traceback.extract_stack(frame)[-12:]
                inner = [f for f in frames if "asyncio" not in f.filename] or frames
                seen[" < ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in inner[-4:][::-1])] += 1

    events.Handle._run = run
    base_events.BaseEventLoop._run_once = run_once
    if stacks:
        threading.Thread(target=sample, daemon=True, name="loop-watch").start()


def main() -> None:
    app, *args = sys.argv[1:]
    path = os.environ.get("EXPLORER_LOOP_WATCH")
    if path:
        install(path, float(os.environ.get("EXPLORER_LOOP_WATCH_MS", DEFAULT_MS)),
                os.environ.get("EXPLORER_LOOP_WATCH_STACKS") == "1")
    app = os.path.abspath(app)
    sys.path[0] = os.path.dirname(app)  # as `python app.py` would have it
    sys.argv = [app, *args]
    runpy.run_path(app, run_name="__main__")


def read(path) -> list[dict]:
    """The turns written to ``path`` so far (a line being written is left out)."""
    turns = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    turns.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    except FileNotFoundError:
        pass
    return turns


if __name__ == "__main__":
    main()
