"""Another learner beside a load: a page that presses a row key every so often and times each answer.

What the benchmarks of loads no person makes (a class leaving, a flood of requests, one client's many pages) measure
on the honest page: how long its key waits for the server's answer (key to the readout naming that row).
"""

from __future__ import annotations

import asyncio
import time

from bench.classroom import line_after, wait_for
from testing.protocol_client import Learner

#: The rows' names, in the order the keys 1, 2, 3 select them.
TOKENS = ("I", "love", "NLP")
#: An answer that has not come after this long counts as lost (seconds).
LOST_AFTER_S = 30.0


class KeyPresser:
    """``async with KeyPresser(ws_url, every=0.5) as keys:`` a page pressing a row key every ``every`` seconds (each
    answer awaited first) while the block runs, connected from ``source`` (a local address) if given;
    ``keys.waits`` holds each key's wait in seconds (None: lost), and ``keys.pressed`` when each was pressed
    (``time.monotonic()``)."""

    def __init__(self, ws_url: str, every: float = 0.5, source: str | None = None):
        self.ws_url, self.every, self.source = ws_url, every, source
        self.waits: list[float | None] = []
        self.pressed: list[float] = []
        self._stop = asyncio.Event()

    async def __aenter__(self):
        self.page = Learner(self.ws_url, compress=True, source=self.source)
        await self.page.connect()
        self._listening = asyncio.create_task(self.page.listen())
        self._pressing = asyncio.create_task(self._press())
        return self

    async def _press(self) -> None:
        k = 0
        while not self._stop.is_set():
            row = (k + 2) % 3  # NLP, I, love, …: never the row shown (the page opens on "love")
            seen = len(self.page.lines)
            pressed = time.perf_counter()
            self.pressed.append(time.monotonic())
            await self.page.key(str(row + 1))
            answered = await wait_for(line_after(self.page, seen, f'Query of "{TOKENS[row]}"'), LOST_AFTER_S)
            self.waits.append(None if answered is None else answered - pressed)
            k += 1
            try:
                await asyncio.wait_for(self._stop.wait(), self.every)
            except asyncio.TimeoutError:
                pass

    async def __aexit__(self, *exc) -> None:
        self._stop.set()
        await asyncio.gather(self._pressing, return_exceptions=True)
        self.page.close()
        await asyncio.gather(self._listening, return_exceptions=True)

    def since(self, start: float) -> list[float | None]:
        """The waits of the keys pressed from ``start`` on (``time.monotonic()``)."""
        return [w for w, t in zip(self.waits, self.pressed, strict=False) if t >= start]
