"""A light learner: one session driven over Bokeh's own websocket protocol, without a browser.

It speaks Bokeh's protocol with Bokeh's classes (``Protocol``, ``Receiver``, the message classes and the
websocket wrapper of ``bokeh.client``), like ``bokeh.client.pull_session`` does, but does not rebuild the
document in Python: it reads the JSON of each patch the server sends. That keeps the cost of a hundred
simulated learners small enough to share a machine with the server they measure.

A drag is what the browser sends: a ``pan`` UI event on the query plot, inside a ``PATCH-DOC`` message
(Bokeh's ``MessageSent`` patch event).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable

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


def _map(**entries) -> dict:
    return {"type": "map", "entries": [[k, v] for k, v in entries.items()]}


@dataclass
class Learner:
    """One session: connect, pull the document, then send pointer events and time what comes back."""

    ws_url: str
    figure: str = "query-plot"
    readout: str = "readout"
    protocol: Protocol = field(default_factory=Protocol)
    sent: dict[tuple[str, str], float] = field(default_factory=dict)  # position text -> send time
    order: list[tuple[str, str]] = field(default_factory=list)  # positions in the order they were sent
    shown: list[tuple[tuple[str, str], float]] = field(default_factory=list)  # (position, time it came back)
    patches: list[list[dict]] = field(default_factory=list)  # the events of every PATCH-DOC received
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

    async def connect(self, keep_doc: bool = False) -> None:
        session_id = generate_session_id()
        token = generate_jwt_token(session_id)
        sock = await websocket_connect(HTTPRequest(self.ws_url), subprotocols=["bokeh", token],
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
        ids = find_ids(reply.content["doc"], {self.figure, self.readout})
        self.figure_id, self.readout_id = ids[self.figure], ids[self.readout]
        if keep_doc:
            self.doc = reply.content["doc"]
        # the browser announces it has rendered; Panel runs the page's onload callbacks on it
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
        """Send a ``pan``/``panstart``/``tap`` event at data point (x, y) and note when it left."""
        key = (f"{x:.3f}", f"{y:.3f}")
        self.sent[key] = self.clock()
        self.order.append(key)
        model = {"id": self.figure_id}
        values = dict(model=model, sx=0.0, sy=0.0, x=x, y=y, modifiers=_map(shift=False, ctrl=False, alt=False))
        if name == "pan":
            values.update(delta_x=0.0, delta_y=0.0)
        await self._send_event(_map(**values), name=name)

    async def click(self, model_id: str) -> None:
        """Press a button, as BokehJS reports a click: a ``button_click`` event on the button's model."""
        await self._send_event(_map(model={"id": model_id}), name="button_click")

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
            for ev in msg.content.get("events", []):
                if ev.get("kind") == "ModelChanged" and ev.get("attr") == "text" \
                        and ev.get("model", {}).get("id") == self.readout_id:
                    m = QUERY_RE.search(ev["new"])
                    if m:
                        self.shown.append(((m[1], m[2]), now))

    def close(self) -> None:
        self.sock.close()
