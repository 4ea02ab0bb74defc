"""The class poll's presenter page over Bokeh's protocol: it presses Present, opens the presenter link, asks the
room a question and records its counts (``bench/poll.py`` measures with it, ``tests/test_room_abuse.py`` checks what
pages see beside it)."""

from __future__ import annotations

import asyncio
import html
import re
import time

from testing.protocol_client import Learner, changed, find_objects, presenter_link

COUNT_LINE = re.compile(r"<strong>(\d+)</strong> answers? · (\d+) pages? following")
#: The rows a key press inspects, by the readout's first line
TOKENS = ("I", "love", "NLP")
BAR = re.compile(r'<span class="poll-label">(.*?)</span><span class="poll-n">(\d+)</span>')


async def change(page: Learner, model_id: str, attr: str, new) -> None:
    """The page changes a property of one of its models, as BokehJS sends it (a ``ModelChanged`` patch)."""
    from bokeh.protocol.messages.patch_doc import patch_doc

    content = {"events": [{"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": new}]}
    await patch_doc(patch_doc.create_header(), {}, content).send(page.sock)


def texts(events):
    """Every new text of an HTML model in a patch's events (Panel sends them escaped)."""
    for ev in events:
        if ev.get("kind") == "ModelChanged" and ev.get("attr") == "text" and isinstance(ev.get("new"), str):
            yield html.unescape(ev["new"])


async def listen(page: Learner, on_patch) -> None:
    """Call ``on_patch(events, when)`` for every PATCH-DOC the page receives, until its socket closes."""
    while True:
        try:
            msg = await page._next_message()
        except ConnectionError:
            return
        if msg.msgtype == "PATCH-DOC":
            await on_patch(msg.content.get("events", []), time.monotonic())


class Presenter:
    """The presenter's page over Bokeh's protocol, on an event loop in a thread of its own."""

    def __init__(self, url: str):
        import threading

        self.page = url + "app"
        self.ws = url.replace("http://", "ws://", 1) + "app/ws"
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.counts: list[tuple[float, int, int, list[tuple[str, int]]]] = []  # (when, answers, pages, bars)
        self.found: dict[str, str] = {}
        self.lines: list[tuple[str, float]] = []  # the readout's first line, and when it came
        self.cards: list[str] = []  # every text of the presenter's counts

    def run(self, coro, timeout: float = 300):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def present(self) -> str:
        from urllib.parse import parse_qs

        search = await presenter_link(self.ws)
        self.me = Learner(self.ws + search, compress=True, clock=time.monotonic, keep_patches=False)
        await self.me.connect(keep_doc=True)
        # as a browser does once the page is drawn (link/browser.js): the room's card waits for the page's address
        # (Panel numbers the component's model: BrowserBridge1)
        for bridge in self.me.objects(""):
            if re.fullmatch(r"BrowserBridge\d*", bridge["name"]):
                await self.me.send(changed(bridge["id"], "page_address", self.page))
        self.listening = asyncio.create_task(listen(self.me, self.on_patch))
        return parse_qs(search.lstrip("?"))["room"][0]

    async def on_patch(self, events, when) -> None:
        # the room card's controls come once the page has loaded, the poll card once "Class poll" is pressed
        for name, type_suffix, label in (("toggle", "Toggle", "Class poll"), ("select", "Select", None),
                                         ("ask", "Button", "Ask the room")):
            for obj in find_objects(events, type_suffix):
                if name not in self.found and (label is None or obj["attributes"].get("label") == label):
                    self.found[name] = obj["id"]
        for ev in events:
            model = ev.get("model", {}).get("id")
            if ev.get("kind") == "ModelChanged" and ev.get("attr") == "text" and model == self.me.readout_id:
                self.lines.append((ev["new"].split("\n", 1)[0], when))
            elif ev.get("attr") == "data" and model == self.me.confirmed_id:  # a drag's next position may go
                await self.me.confirmed(ev, when)
        for text in texts(events):
            m = COUNT_LINE.search(text)
            if m:
                self.cards.append(text)
            if m:
                self.counts.append((when, int(m[1]), int(m[2]), [(html.unescape(a), int(n)) for a, n in
                                                                 BAR.findall(text)]))

    async def open_poll(self, label: str) -> float:
        """Press "Class poll", pick ``label``, press "Ask the room"; returns when the question was asked."""
        deadline = time.monotonic() + 60
        while "toggle" not in self.found:
            if time.monotonic() > deadline:
                raise RuntimeError("the presenter's room controls did not arrive")
            await asyncio.sleep(0.05)
        await change(self.me, self.found["toggle"], "active", True)
        while len(self.found) < 3:
            if time.monotonic() > deadline:
                raise RuntimeError("the presenter's poll card did not arrive")
            await asyncio.sleep(0.05)
        await change(self.me, self.found["select"], "value", label)
        await asyncio.sleep(0.5)  # the server takes the question before the click, as a person would pick first
        asked = time.monotonic()
        await self.me.click(self.found["ask"])
        return asked

    async def keys(self, seconds: float, gap: float = 0.3) -> list[float]:
        """Press a row key every ``gap`` seconds for ``seconds``; each one's time to its readout line, in seconds."""
        latencies, end = [], time.monotonic() + seconds
        # the page opens on the row of "love"; each press moves to the next row, so each changes the readout
        row = next((i for line, _ in self.lines[-1:] for i, t in enumerate(TOKENS) if f'"{t}"' in line), 1)
        while time.monotonic() < end:
            row = (row + 1) % 3
            seen = len(self.lines)
            pressed = time.monotonic()
            await self.me.key(str(row + 1))
            want = f'Query of "{TOKENS[row]}"'
            while time.monotonic() < pressed + 30:
                shown = next((t for line, t in self.lines[seen:] if line.startswith(want)), None)
                if shown is not None:
                    latencies.append(shown - pressed)
                    break
                await asyncio.sleep(0.002)
            await asyncio.sleep(max(0.0, pressed + gap - time.monotonic()))
        return latencies

    def close(self) -> None:
        if hasattr(self, "me"):
            self.loop.call_soon_threadsafe(self.me.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
