"""Bokeh's ``_run_in_executor`` (``bokeh.server.session``): a session's work (callbacks, applying and serializing
patches) run on the event loop, not handed to a worker thread and back.

Bokeh 3.10.2 hands each of these to a worker thread, to keep the loop free during a long callback. This app has no
long callback on that path (its heavy work goes to a thread of its own), and on a school's 2-core server the hand-off
cost more than the work: waking the loop from a thread, thread hops and the GIL took most of the server's time during
a class's drag (``bench/HISTORY.md``). Written for Bokeh 3.10.2. Upstream: bokeh/bokeh#15294 (closed) moves more of
the server's synchronous work off the loop, the other way; no setting keeps it on the loop.
"""

from __future__ import annotations

from server.patches.fit import Patch


def install() -> None:
    """Run every session's work inline, on the loop (above). Idempotent."""
    from bokeh.server import session

    if getattr(session._run_in_executor, "inline", False):
        return
    original, original_method = session._run_in_executor, session.ServerSession._run_in_executor

    async def inline(func, *args, **kwargs):
        return func(*args, **kwargs)

    async def inline_method(self, func, *args):
        return func(*args)

    inline.inline = inline_method.inline = True
    inline.__wrapped__, inline_method.__wrapped__ = original, original_method
    session._run_in_executor = inline
    session.ServerSession._run_in_executor = inline_method


PATCH = Patch(
    name="bokeh_session_executor",
    changes="each session's work run on the event loop, not in worker threads",
    targets={
        "bokeh.server.session:_run_in_executor": "7d143d445da9628a",
        "bokeh.server.session:ServerSession._run_in_executor": "a88c4998bde4772f",
    },
    written_for="Bokeh 3.10.2",
    upstream="bokeh/bokeh#15294 (the other way: more of the server's work off the loop)",
    apply=install,
)
