"""A follower page over Bokeh's protocol, as far as the class poll goes: what its poll card was last sent, and what
the card's script sends (``widgets/poll.js``): the browser it runs in as it loads, the question drawn, the answer.
For the tests of a poll against a real server (``tests/test_room_abuse.py``, ``tests/test_lecture_hall.py``)."""

from __future__ import annotations

import asyncio
import time

from testing.poll_presenter import listen
from testing.protocol_client import Learner, _map, find_objects

WAIT = 60  # seconds: a page build on a loaded 2-core machine can take seconds


def plain(value):
    """A value as Bokeh serializes it (maps as ``{"type": "map", "entries": ...}``), as plain Python."""
    if isinstance(value, dict) and value.get("type") == "map":
        return {k: plain(v) for k, v in value["entries"]}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class Page:
    """A follower page over the protocol: what its poll card was last sent, and what it sends as its script would."""

    def __init__(self, url: str, code: str, session_id: str | None = None):
        self.learner = Learner(url.replace("http://", "ws://") + f"app/ws?room={code}", session_id=session_id)
        self.card = self.data = None
        self.poll: dict = {}

    async def open(self) -> Page:
        await self.learner.connect(keep_doc=True)
        self.on_patch(self.learner.doc, None)  # a second connection to a session finds the card in the document
        self.listening = asyncio.ensure_future(listen(self.learner, self.on_patch_async))
        return self

    def on_patch(self, events, _when) -> None:
        if self.card is None:
            card = next((o for o in find_objects(events, "") if "poll-follower" in
                         (o.get("attributes", {}).get("css_classes") or [])), None)
            if card is not None:
                self.card, self.data = card["id"], card["attributes"]["data"]["id"]
                self.poll = plain(card["attributes"]["data"]["attributes"].get("poll", {}))
        for ev in events if isinstance(events, list) else []:
            if ev.get("kind") == "ModelChanged" and ev.get("attr") == "poll" and ev["model"]["id"] == self.data:
                self.poll = plain(ev["new"])

    async def on_patch_async(self, events, when) -> None:
        self.on_patch(events, when)

    def status(self) -> str:
        return " ".join("".join(line[1:]) for line in self.poll.get("status", []))

    async def until(self, predicate, what: str) -> None:
        deadline = time.monotonic() + WAIT
        while not predicate():
            assert time.monotonic() < deadline, f"{what}; the card says {self.poll!r}"
            await asyncio.sleep(0.02)

    async def send(self, **msg) -> None:
        await self.learner._send_event(_map(model={"id": self.card}, data=_map(**msg)), name="data_event")

    async def hello(self, browser: str) -> None:
        """What the card's script sends as it loads: the browser it runs in."""
        await self.send(hello=browser)

    async def draw(self, browser: str, mine=None) -> None:
        """What the card's script sends once the question is on the screen."""
        await self.send(drawn=self.poll["id"], nonce=self.poll["nonce"], browser=browser, mine=mine)

    def close(self) -> None:
        self.learner.close()
        self.listening.cancel()


def browser(name: str) -> str:
    """A browser's id, as the card's script names one (24 characters of base64url)."""
    return name.ljust(24, "-")[:24]
