"""A light learner: one session driven over Bokeh's own websocket protocol, without a browser.

It speaks Bokeh's protocol with Bokeh's classes (``Protocol``, ``Receiver``, the message classes and the
websocket wrapper of ``bokeh.client``), like ``bokeh.client.pull_session`` does, but does not rebuild the
document in Python: it reads the JSON of each patch the server sends. That keeps the cost of a hundred
simulated learners small enough to share a machine with the server they measure.

A drag is what the page's drag script sends (``link/drag.js``): each position as a change of the
``drag-channel`` data source (a ``ModelChanged`` patch event), at most one at a time: the next once the
server's ``drag-confirmed`` source has answered the one in flight, a move waiting to go replaced by a newer
one, the press and the release always sent. ``Learner(one_at_a_time=False)`` is a client that ignores the
rule and sends every position at once, as a hostile one could.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import parse_qs

from bokeh.client.websocket import WebSocketClientConnectionWrapper
from bokeh.protocol import Protocol
from bokeh.protocol.messages.patch_doc import patch_doc
from bokeh.protocol.receiver import Receiver
from bokeh.util.token import generate_jwt_token, generate_session_id
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

#: The readout's first line names the query: 'Query of "love": q = (0.000, 1.000)'.
QUERY_RE = re.compile(r"q = \((-?\d+\.\d{3}), (-?\d+\.\d{3})\)")


def find_ids(doc_json: dict, names: set[str]) -> dict[str, str]:
    """Model ids by Bokeh ``name`` in a serialized document (walks the nested object representation)."""
    found: dict[str, str] = {}
    stack = [doc_json]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            attrs = obj.get("attributes")
            if obj.get("type") == "object" and isinstance(attrs, dict) and attrs.get("name") in names:
                found[attrs["name"]] = obj["id"]
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)
    return found


def find_objects(doc_json: dict, type_suffix: str) -> list[dict]:
    """Every serialized model whose type name ends with ``type_suffix`` (e.g. ``"Button"``)."""
    found, stack = [], [doc_json]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            if obj.get("type") == "object" and str(obj.get("name", "")).endswith(type_suffix):
                found.append(obj)
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)
    return found


def changed(model_id: str, attr: str, new) -> dict:
    """A ``ModelChanged`` patch event: the page writes ``new`` into ``attr`` of the model ``model_id``."""
    return {"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": new}


def clicked(model_id: str) -> dict:
    """A button's click as BokehJS sends it: a ``button_click`` event on the button's model."""
    event = {"type": "event", "name": "button_click", "values": _map(model={"id": model_id})}
    return {"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}


def _map(**entries) -> dict:
    return {"type": "map", "entries": [[k, v] for k, v in entries.items()]}


def _entry(value, key: str):
    """``value[key]`` of a serialized map (``{"type": "map", "entries": [[k, v], ...]}``) or dict; None if absent."""
    if isinstance(value, dict) and value.get("type") == "map":
        return next((v for k, v in value.get("entries", []) if k == key), None)
    return value.get(key) if isinstance(value, dict) else None


@dataclass
class Learner:
    """One session: connect, pull the document, then send pointer events and time what comes back."""

    ws_url: str
    figure: str = "query-plot"
    readout: str = "readout"
    protocol: Protocol = field(default_factory=Protocol)
    sent: dict[tuple[str, str], float] = field(default_factory=dict)  # position text -> when the hand got there
    order: list[tuple[str, str]] = field(default_factory=list)  # positions in the order the hand went
    #: as the page: one position in flight at a time (False: every position at once, a flooding client)
    one_at_a_time: bool = True
    positions_sent: int = 0  # positions written to the socket
    answered: list[tuple[int, float]] = field(default_factory=list)  # (seq, when) of each answer from the server
    release_seq: int = 0  # the seq of the last release sent
    shown: list[tuple[tuple[str, str], float]] = field(default_factory=list)  # (position, time it came back)
    lines: list[tuple[str, float]] = field(default_factory=list)  # (the readout's first line, when it came)
    patches: list[list[dict]] = field(default_factory=list)  # the events of every PATCH-DOC received
    patch_times: list[float] = field(default_factory=list)  # when each of ``patches`` came
    bytes_in: int = 0
    messages_in: int = 0
    #: permessage-deflate, as browsers negotiate it; off by default so the classroom numbers stay comparable
    compress: bool = False
    #: the clock of ``sent``/``shown``; CLOCK_MONOTONIC (``time.monotonic``) compares across processes
    clock: Callable[[], float] = time.perf_counter
    #: keep every PATCH-DOC's events in ``patches``; many followers over a long run would hold gigabytes
    keep_patches: bool = True
    #: the document as pulled (JSON), when ``connect(keep_doc=True)``
    doc: dict | None = None
    #: the session to open; None for a new one (a second connection to a session names it)
    session_id: str | None = None
    #: the page's live source (``live-room``, widgets/room.py) as last sent: room, path, ticket, version
    live: dict | None = None
    #: the local address to connect from (``127.0.0.2``: another client than ``127.0.0.1`` to the server); None: any
    source: str | None = None

    async def connect(self, keep_doc: bool = False, ready: bool = True) -> None:
        """Open the websocket and pull the document; with ``ready``, announce the page drawn, as BokehJS does."""
        self.session_id = session_id = self.session_id or generate_session_id()
        token = generate_jwt_token(session_id)
        sock = await websocket_connect(HTTPRequest(self.ws_url, network_interface=self.source),
                                       subprotocols=["bokeh", token],
                                       max_message_size=20 * 1024 * 1024,
                                       compression_options={} if self.compress else None)
        # Browsers send with TCP_NODELAY; without it this client's own multi-frame messages would wait for
        # the server's delayed ACK and the benchmark would measure itself.
        sock.protocol.set_nodelay(True)
        self.sock = WebSocketClientConnectionWrapper(sock)
        self.receiver = Receiver(self.protocol)
        await self._next_message("ACK")
        await self.protocol.create("PULL-DOC-REQ").send(self.sock)
        reply = await self._next_message("PULL-DOC-REPLY")
        ids = find_ids(reply.content["doc"], {self.figure, self.readout, "drag-channel", "drag-confirmed", "live-room"})
        self.figure_id, self.readout_id = ids[self.figure], ids[self.readout]
        # the page's drag channel; None for a page without one (another app, in tests)
        self.channel_id, self.confirmed_id = ids.get("drag-channel"), ids.get("drag-confirmed")
        self.live_id = ids.get("live-room")
        self._outbox: list[dict] = []
        self._seq = self._in_flight = 0
        self._sent_at = 0.0
        # the browser bridge (link/browser.py), which takes the page's keys: a ReactiveESM whose data is its params
        self.bridge_id = next(
            (o["id"] for o in find_objects(reply.content["doc"], "ReactiveESM")
             if str(o.get("attributes", {}).get("data", {}).get("name", "")).startswith("BrowserBridge")),
            None)
        if keep_doc:
            self.doc = reply.content["doc"]
        # the browser announces it has rendered; Panel runs the page's onload callbacks on it
        if ready:
            await self._send_event(_map(), name="document_ready")

    async def _next_message(self, msgtype: str | None = None):
        while True:
            fragment = await self.sock.read_message()
            if fragment is None:
                raise ConnectionError("the server closed the websocket")
            self.bytes_in += len(fragment)
            msg = await self.receiver.consume(fragment)
            if msg is not None and (msgtype is None or msg.msgtype == msgtype):
                return msg

    async def _send_event(self, values: dict, name: str) -> None:
        event = {"type": "event", "name": name, "values": values}
        content = {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)

    async def pointer(self, name: str, x: float, y: float) -> None:
        """The hand at data point (x, y): ``panstart`` (the press), ``pan``, ``panend`` (the release) or ``tap``.

        Sent as the page sends it (see the module's docstring); ``sent`` notes when the hand got there.
        """
        key = (f"{x:.3f}", f"{y:.3f}")
        self.sent[key] = self.clock()
        self.order.append(key)
        m = dict(x=float(x), y=float(y), start=name in ("panstart", "tap"), end=name in ("panend", "tap"))
        if not self.one_at_a_time:
            await self._write_position(m)
        else:
            last = self._outbox[-1] if self._outbox else None
            if last is not None and not last["start"] and not last["end"] and not m["start"]:
                self._outbox[-1] = m  # only the newest move matters, and a release carries the last position
            else:
                self._outbox.append(m)
            if m["end"]:  # as the page: the release goes at once, with whatever still waits before it
                while self._outbox:
                    await self._write_position(self._outbox.pop(0))
            else:
                await self._pump()
        if m["end"]:
            self.release_seq = self._seq

    #: As the page: an answer that never comes holds the drag this long at most (seconds).
    ANSWER_WAIT_S = 3.0

    async def _pump(self) -> None:
        if self._in_flight and time.monotonic() - self._sent_at < self.ANSWER_WAIT_S:
            return
        if self._outbox:
            await self._write_position(self._outbox.pop(0))

    async def _write_position(self, m: dict) -> None:
        self._seq += 1
        self._in_flight, self._sent_at = self._seq, time.monotonic()
        self.positions_sent += 1
        new = _map(x=[m["x"]], y=[m["y"]], seq=[self._seq], start=[m["start"]], end=[m["end"]])
        content = {"events": [{"kind": "ModelChanged", "model": {"id": self.channel_id}, "attr": "data", "new": new}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)

    async def key(self, key: str, shift: bool = False) -> None:
        """Press a key on the page (not in a text field), as the browser bridge reports it: ``"1"`` inspects "I"."""
        data = _map(key=key, shift=shift, in_plot=False)
        event = {"type": "event", "name": "data_event", "values": _map(model={"id": self.bridge_id}, data=data)}
        content = {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)

    async def click(self, model_id: str) -> None:
        """Press a button, as BokehJS reports a click: a ``button_click`` event on the button's model."""
        await self.send(clicked(model_id))

    async def send(self, *events: dict) -> None:
        """Send one ``PATCH-DOC`` message of ``events`` (see :func:`changed`, :func:`clicked`)."""
        await patch_doc(patch_doc.create_header(), {}, {"events": list(events)}).send(self.sock)

    def objects(self, type_suffix: str, since: int = 0) -> list[dict]:
        """Every model whose type name ends with ``type_suffix``, in the pulled document (``connect(keep_doc=True)``)
        and the patches received (``keep_patches``) from the ``since``-th on, once each."""
        found = find_objects(self.doc, type_suffix) if since == 0 and self.doc is not None else []
        for events in self.patches[since:]:
            found += find_objects(events, type_suffix)
        return list({o["id"]: o for o in found}.values())

    async def listen(self) -> None:
        """Record every readout text the server sends until the socket closes."""
        while True:
            try:
                msg = await self._next_message()
            except ConnectionError:
                return
            self.messages_in += 1
            if msg.msgtype != "PATCH-DOC":
                continue
            now = self.clock()
            if self.keep_patches:
                self.patches.append(msg.content.get("events", []))
                self.patch_times.append(now)
            for ev in msg.content.get("events", []):
                if ev.get("kind") not in ("ModelChanged", "ColumnDataChanged"):
                    continue
                model = ev.get("model", {}).get("id")
                if ev.get("attr") == "text" and model == self.readout_id:
                    self.lines.append((ev["new"].split("\n", 1)[0], now))
                    m = QUERY_RE.search(ev["new"])
                    if m:
                        self.shown.append(((m[1], m[2]), now))
                elif ev.get("attr") == "data" and model == self.live_id:
                    data = ev.get("data", ev.get("new"))
                    self.live = {k: (_entry(data, k) or [None])[0] for k in ("room", "path", "ticket", "version")}
                elif ev.get("attr") == "data" and model == self.confirmed_id:
                    await self.confirmed(ev, now)

    async def confirmed(self, ev: dict, now: float) -> None:
        """The server's answer to a position (``drag-confirmed``'s new data): the next one may go."""
        # a data source's new data: a ColumnDataChanged event, or a ModelChanged one
        seq = _entry(ev.get("data", ev.get("new")), "seq")
        if seq:
            self.answered.append((int(seq[0]), now))
            if self._in_flight and seq[0] >= self._in_flight:
                self._in_flight = 0
                await self._pump()

    async def live_channel(self, timeout: float = 60.0):
        """Open the page's live channel (``server/room_live.py``) with the ticket its server sent, as its script does.

        Needs ``listen()`` running (the ticket comes in a patch once the page has loaded). Returns tornado's
        websocket connection.
        """
        import asyncio
        from urllib.parse import quote, urlsplit

        from tornado.websocket import websocket_connect as connect

        deadline = time.monotonic() + timeout
        while not (self.live and self.live.get("ticket")):
            if time.monotonic() > deadline:
                raise TimeoutError("the page's server sent no live channel ticket")
            await asyncio.sleep(0.02)
        here = urlsplit(self.ws_url)
        url = f"{here.scheme}://{here.netloc}{self.live['path']}?room={quote(self.live['room'])}"
        return await connect(url, subprotocols=["explorer-live", self.live["ticket"]])

    def close(self) -> None:
        self.sock.close()

    def leave(self) -> None:
        """The tab closes: its TCP connection goes at once, with whatever the socket still had to send.

        ``close`` sends a websocket close frame and waits up to 5 s for the server's answer; when the server is behind
        on what this client sent, the frame waits in this process's own buffer, and once the test's event loop ends
        nothing sends it nor closes the socket itself: once, beside a loaded machine's other work, it stayed open for
        minutes, and the server, waiting for more, never saw the client go."""
        self.sock._socket.protocol.stream.close()


async def presenter_link(ws_url: str) -> str:
    """Open the page at ``ws_url`` and press Present; returns the presenter link's query (``?room=…&token=…``).

    Pressing Present tells the page to load the presenter link (the browser bridge's ``navigate``).
    """
    import asyncio

    page = Learner(ws_url, compress=True, clock=time.monotonic, keep_patches=True)
    await page.connect(keep_doc=True)
    button = next(b for b in find_objects(page.doc, "Button") if b["attributes"].get("label") == "Present")
    listening = asyncio.create_task(page.listen())
    await page.click(button["id"])
    search, deadline = None, time.monotonic() + 60
    while search is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        search = next((ev["new"] for events in page.patches for ev in events if ev.get("kind") == "ModelChanged"
                       and ev.get("attr") == "navigate" and "token=" in str(ev.get("new"))), None)
    page.close()
    await asyncio.gather(listening, return_exceptions=True)
    if search is None:
        raise RuntimeError("pressing Present did not give a presenter link")
    return search


class ProtocolPresenter:
    """A presenter's page over Bokeh's protocol, in a thread of its own with its own event loop.

    ``start()`` presses Present on a new page of the app served at ``url`` (its base URL, ending in ``/``) and
    returns the room's code; ``drag(points, rate)`` drags the query along ``points`` (data units) at ``rate``
    positions a second and returns the moves as (CLOCK_MONOTONIC time, x, y); ``final_text()`` is the query the
    page last showed; ``close()`` ends the page and the thread.
    """

    def __init__(self, url: str):
        self.ws = url.replace("http://", "ws://", 1) + "app/ws"
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def _run(self, coro, timeout: float = 300):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> str:
        return self._run(self._present())

    async def _present(self) -> str:
        search = await presenter_link(self.ws)
        self.me = Learner(self.ws + search, compress=True, clock=time.monotonic, keep_patches=False)
        await self.me.connect()
        self.listening = asyncio.create_task(self.me.listen())
        return parse_qs(search.lstrip("?"))["room"][0]

    def drag(self, points: list[tuple[float, float]], rate: float,
             pause: float = 0.0) -> list[tuple[float, float, float]]:
        return self._run(self._drag(points, rate, pause), timeout=len(points) / rate + pause + 300)

    async def _drag(self, points, rate, pause):
        await self.me.pointer("panstart", *points[0])
        moves = []
        start = time.monotonic()
        for i, (x, y) in enumerate(points[1:], 1):
            if pause and i == len(points) // 2:  # the hand rests halfway, the button held
                await asyncio.sleep(pause)
                start += pause
                self.resumed = time.monotonic()
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            t = time.monotonic()
            await self.me.pointer("pan", x, y)
            moves.append((t, x, y))
        await self.me.pointer("panend", *points[-1])
        return moves

    def final_text(self) -> str | None:
        return "q = ({}, {})".format(*self.me.shown[-1][0]) if self.me.shown else None

    def close(self) -> None:
        if hasattr(self, "me"):
            self.loop.call_soon_threadsafe(self.me.close)  # on its own loop: the caller's thread may have none
        self.loop.call_soon_threadsafe(self.loop.stop)
