"""Bokeh's ``ApplicationContext._cleanup_sessions``: the sessions of closed pages discarded one per turn of the loop,
each page taken apart as it goes (``server/teardown.py``), with a rest as long as it took before the next.

Bokeh 3.10.2 discards every session past its unused lifetime in one turn of the loop, each with Panel's clean-up: a
class of 40 leaving held every other page for its whole length (``bench/HISTORY.md``). Here each discard is a turn of
its own, its page's objects are taken apart in the next, and the sweep rests so as to take at most
:data:`server.housekeeping.SWEEP_SHARE` of the loop; every :data:`server.housekeeping.PASS_EVERY_PAGES` pages, the
round's full pass if it is short. Written for Bokeh 3.10.2; no upstream issue asks for the sweep to yield.
"""

from __future__ import annotations

import asyncio
import time

from server.patches.fit import Patch


async def cleanup_sessions(self, unused_session_linger_milliseconds: int) -> None:
    """``ApplicationContext._cleanup_sessions``, paced (above)."""
    from server import teardown
    from server.housekeeping import PASS_EVERY_PAGES, SWEEP_SHARE, collect_if_short, trim

    def unused(session) -> bool:
        return session.connection_count == 0 and (
            session.milliseconds_since_last_unsubscribe > unused_session_linger_milliseconds
            or session.expiration_requested)

    discarded = 0
    for session in [s for s in self._sessions.values() if unused(s) and not s.expiration_blocked]:
        if not unused(session) or session.expiration_blocked:  # a page came back while the sweep rested
            continue
        start = time.perf_counter()
        doc = getattr(session, "_document", None)
        await self._discard_session(session, unused)
        await asyncio.sleep(0)
        if session.destroyed and doc is not None:
            objects = teardown.get_page_objects().pop(doc)
            del doc
            teardown.take_apart(objects)  # in a turn of its own: a page's are a few hundred, freeing 9,000
            del objects
            discarded += 1
            await asyncio.sleep(0)
            trim()  # the page's heap back now, in a turn of its own: the round's trim of a class's was one turn
            if discarded % PASS_EVERY_PAGES == 0:
                await asyncio.sleep(0)
                collect_if_short()
        took = time.perf_counter() - start
        await asyncio.sleep(took * (1 - SWEEP_SHARE) / SWEEP_SHARE)
    if discarded % PASS_EVERY_PAGES:
        collect_if_short()


def install() -> None:
    """Discard closed pages' sessions paced (above). Idempotent."""
    from bokeh.server.contexts import ApplicationContext

    original = ApplicationContext._cleanup_sessions
    if getattr(original, "paced", False):
        return

    async def paced(self, unused_session_linger_milliseconds: int) -> None:
        await cleanup_sessions(self, unused_session_linger_milliseconds)

    paced.paced = True
    paced.__wrapped__ = original
    ApplicationContext._cleanup_sessions = paced


PATCH = Patch(
    name="bokeh_cleanup_sessions",
    changes="closed pages' sessions discarded one per turn, each taken apart",
    targets={
        "bokeh.server.contexts:ApplicationContext._cleanup_sessions": "49517dd70c975599",
        "bokeh.server.contexts:ApplicationContext._discard_session": "99d45e7044cd0ebd",
        # where it keeps its sessions (_sessions)
        "bokeh.server.contexts:ApplicationContext.__init__": "0556d9aa2ca86e7b",
        "bokeh.server.session:ServerSession.document": "a5b314e193c3c708",
    },
    written_for="Bokeh 3.10.2",
    upstream="none filed",
    apply=install,
)
