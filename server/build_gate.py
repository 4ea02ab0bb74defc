"""How much of this server process's event loop building new pages may take.

A page's build (its document, made when its address is first opened: a long turn of the loop) runs on the
process's one event loop, and nothing else runs meanwhile. A hundred pages opened within seconds, by a
class or by one student's script, kept the loop busy most of the time, and a key pressed on a page already open
waited behind several builds (``bench/RESULTS.md``, ``bench/HISTORY.md``). Panel and Bokeh offer nothing to space
them: Panel's ``--num-threads`` runs a page's callbacks in threads, not its build; Bokeh builds an app made from a
script on the loop's own thread, and a build is Python holding the GIL, so a thread would not free the loop.

So every build waits its turn at one gate per process (:class:`BuildGate`): a leaky bucket of loop time. A build
may start when the bucket holds at most :attr:`BuildGate.BURST` seconds; it adds the seconds it took, and the
bucket empties at :attr:`BuildGate.SHARE` seconds a second. After a build of ``c`` seconds the next starts about
``c * (1 / SHARE - 1)`` seconds later, and in that gap the loop serves every page already open: their keys, drags,
websocket connections and the first messages of pages just built. Builds therefore take at most ``SHARE`` of the
loop however many are asked for, one at a time and in the order asked; when they are few, the first starts at
once. Pacing only bites when builds would take more than their share.

The gaps are for pages in use. While no page open for more than a few seconds has sent a message for half a minute,
and no page's message is being handled, a build starts as soon as the loop is idle (work-conserving): a class
opening the page together, before anyone drags, otherwise left the loop idle in most gaps (a class connected
markedly slower than with its pages built back to back: ``bench/HISTORY.md``). The websocket guard
(server/guard.py) tells the gate which messages it is handling and which are a person's.

The gate is installed on Bokeh's session creation (``server/patches/bokeh_create_session.py``), the one place every
page's document is made: an HTTP GET of the page, a websocket whose session had been discarded, the liveness check.

A page's work once it has loaded (Panel's ``onload`` callbacks: a joining page's room, its header and its poll
card, about a tenth of a second each) is charged to the same bucket (``server/patches/panel_on_load.py``): it cannot
wait, the page is open, but the next build waits for it. A hundred pages joining a room within 20 s otherwise did
their room work in the gaps the gate keeps for the open pages, and the presenter's key waited again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import time

from services.pace import Pace

#: Where the process keeps its gate.
CACHE_KEY = "explorer-build-gate"


class BuildGate(Pace):
    """The share of the event loop page builds may use, one build at a time.

    Its bucket is :class:`services.pace.Pace`'s, charged with each build as it ran (the bucket leaks during the
    build). Unlike a drag's positions, where the newest wins and owes only its own cost, every page asked for is
    built, in the order asked, and a page's onload work is charged to the same bucket: their costs add up.

    ``async with gate.turn():`` waits until a build may start, then holds the gate while the build runs and
    charges the seconds it took (the wall time on the loop, which a build holds). ``clock`` gives the time in
    seconds; ``sleep`` waits that many seconds (both a test's own).

    >>> t = [0.0]
    >>> gate = BuildGate(clock=lambda: t[0])
    >>> gate.charge(0.1, start=0.0); t[0] = 0.1; round(gate.wait(), 4)  # a 0.1 s build: the next waits ~0.067 s
    0.0667
    >>> t[0] = 0.1667; gate.wait()
    0.0
    """

    #: At most this fraction of the loop goes to building pages: a key pressed on an open page during a build waits at
    #: most that build, and the loop has ``1 - SHARE`` of its time for everything else (a joining page's connection,
    #: serialization and room work included, about a third of its build again).
    SHARE = 0.6
    #: Seconds of build time the bucket may hold when a build starts. Zero: two builds never run back to back while
    #: the loop owes the other pages their share, so a key waits behind at most one build.
    BURST = 0.0

    #: A page's messages count as a person's (the page is in use) this long (seconds) after its first message:
    #: before that they are its script's, loading the page (Panel's onload, the page's address, its channels).
    IN_USE_AFTER = 3.0
    #: Builds keep to their share until no page in use has sent a message for this long (seconds): a learner
    #: reading between two keys still uses the page (a quiet time shorter than a learner's pause between keys let
    #: builds run back to back ahead of the next key).
    QUIET = 30.0
    #: A turn of the loop shorter than this (seconds) had nothing else to run: the loop is idle.
    IDLE = 0.0005
    #: While the loop is busy, how often (seconds) a waiting build looks again whether it has become idle.
    RECHECK = 0.01

    def __init__(self, clock=time.perf_counter, sleep=asyncio.sleep, idle=None):
        super().__init__(clock)
        self._sleep = sleep
        self._idle = idle if idle is not None else self._loop_idle
        self.messages = 0  # pages' messages being handled now (their handling awaits, over several turns)
        self.used_at = -math.inf  # when a page in use last sent a message
        self._busy = False
        self._waiting: collections.deque = collections.deque()  # futures of builds waiting for the gate, in order
        self.builds = 0
        self.waited = 0.0  # seconds builds spent waiting in all

    @contextlib.contextmanager
    def page_message(self, in_use: bool = True):
        """``with gate.page_message(in_use):`` around the handling of one page's message; ``in_use``: the page
        has been open a while (:attr:`IN_USE_AFTER`), so a person is using it, not its script loading it."""
        self.messages += 1
        try:
            yield
        finally:
            self.messages -= 1
            if in_use:
                self.used_at = self.clock()

    async def _nobody_waits(self) -> bool:
        """Whether a build may start before its share allows: no page is in use and the loop is idle.

        The share's gaps keep the loop free for a key pressed on a page in use; when nobody uses one (a class
        opening the page together, before anyone drags), they only left the loop idle: a class took markedly longer
        to connect than with the same pages built back to back (``bench/HISTORY.md``). A key pressed on a page in
        use after :attr:`QUIET` seconds without one may wait one build; the next builds keep their share again.
        """
        if self.messages or self.clock() - self.used_at < self.QUIET:
            return False
        return await self._idle()

    async def _loop_idle(self) -> bool:
        """Whether the loop has nothing else to run now: one turn of it (every callback ready and every message
        already arrived) took under :attr:`IDLE`. A key pressed meanwhile is handled in that turn, before the
        next build starts."""
        start = self.clock()
        await asyncio.sleep(0)
        return self.clock() - start < self.IDLE

    def charge(self, seconds: float, start: float) -> None:
        """A build that started at ``start`` (the clock's time) took ``seconds`` of the loop.

        The bucket leaks during the build too, so a build of ``c`` leaves ``c * (1 - SHARE)`` in it and the next
        waits ``c * (1 - SHARE) / SHARE`` (:meth:`wait`): builds and gaps in the ratio ``SHARE : 1 - SHARE``.
        Negative or absurd values (a clock that jumped) are ignored.
        """
        super().charge(seconds, start)

    @property
    def queued(self) -> int:
        """How many builds wait for the gate."""
        return len(self._waiting)

    def turn(self) -> _Turn:
        """``async with gate.turn():`` around one page's build."""
        return _Turn(self)

    async def _enter(self) -> float:
        asked = self.clock()
        if self._busy or self._waiting:
            future = asyncio.get_running_loop().create_future()
            self._waiting.append(future)
            try:
                await future  # handed the gate by the build before
            except BaseException:
                if future in self._waiting:
                    self._waiting.remove(future)
                elif future.done() and not future.cancelled():
                    self._release()  # it had been handed the gate: pass it on
                raise
        self._busy = True
        try:
            while (seconds := self.wait()) > 0 and not await self._nobody_waits():
                await self._sleep(min(seconds, self.RECHECK))
        except BaseException:
            self._release()
            raise
        start = self.clock()
        self.waited += start - asked
        return start

    def _release(self) -> None:
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(None)  # stays busy: the gate passes straight to it
                return
        self._busy = False


class _Turn:
    def __init__(self, gate: BuildGate):
        self._gate = gate
        self._start = 0.0

    async def __aenter__(self) -> None:
        self._start = await self._gate._enter()

    async def __aexit__(self, *exc) -> None:
        gate = self._gate
        gate.charge(gate.clock() - self._start, self._start)
        gate.builds += 1
        gate._release()


def get_gate() -> BuildGate:
    """This server process's gate, created on first use."""
    import panel as pn

    gate = pn.state.cache.get(CACHE_KEY)
    if gate is None:
        gate = pn.state.cache.setdefault(CACHE_KEY, BuildGate())
    return gate
