"""How the server's websocket carries drag updates, and what it refuses to read.

Small messages go out at once (below); a connection that sends what no page would is closed after one
log line (:class:`GuardedWSHandler`); what a page sends is applied one event at a time, each when its session's
share of the loop allows (:func:`pace_page_events`, ``server/pacing.py``).

Bokeh writes each protocol message as several websocket frames (header, metadata, content). With
Nagle's algorithm on, the second frame waits until the browser acknowledges the first, and browsers
delay that ACK (about 40 ms on Linux), so every drag update can stall for 40 ms. Bokeh's server does
not set TCP_NODELAY and offers no setting for it, so each session sets it on its own websocket as soon
as the page has loaded (``pn.state.onload``): that works the same under ``python app.py`` and
``panel serve app.py`` and needs no change to the server's routes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import time
from contextlib import contextmanager

import panel as pn
from bokeh.core.has_props import HasProps
from bokeh.core.serialization import Deserializer, UnknownReferenceError
from bokeh.events import Event
from bokeh.models import AbstractSlider, Select, Tabs
from bokeh.models.widgets.groups import AbstractGroup
from bokeh.protocol.exceptions import ProtocolError
from panel.io.document import hold
from panel.io.server import WSHandler as PanelWSHandler
from panel.io.state import set_curdoc
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

from server.build_gate import BuildGate, get_gate
from server.pages import MAX_LINK_CHARS
from services.pacing import get_event_pacer, once_a_page
from services.sessions import page_has_left

log = logging.getLogger(__name__)


def session_websockets(doc) -> list:
    """The tornado ``WebSocketHandler`` of every live connection to ``doc``'s server session.

    Bokeh has no public way from a session to its websockets. Its ``ServerSession`` keeps the
    connections in ``_subscribed_connections`` and each ``ServerConnection`` holds its handler as
    ``_socket``; Panel reads the same two attributes to write patches (``panel.io.document``). This is
    the only place the app touches them, and ``tests/test_transport.py`` fails if they move.
    """
    session = getattr(getattr(doc, "session_context", None), "session", None)
    if session is None:  # not served: a test or a notebook
        return []
    return [conn._socket for conn in list(session._subscribed_connections)]


def set_websocket_nodelay(doc=None) -> int:
    """Turn off Nagle's algorithm on the websockets of ``doc``'s session (default: the current one).

    Uses tornado's public ``WebSocketHandler.set_nodelay``. Returns how many websockets were set;
    0 when the document is not served.
    """
    sockets = session_websockets(doc if doc is not None else pn.state.curdoc)
    for ws in sockets:
        ws.set_nodelay(True)
    return len(sockets)


def nodelay_on_load() -> None:
    """Arrange for the current session's websocket to get TCP_NODELAY once the page has loaded."""
    doc = pn.state.curdoc
    if doc is not None and doc.session_context is not None:
        pn.state.onload(lambda: set_websocket_nodelay(doc))


#: What a page writes into the server's models (a ``ModelChanged`` event), by property name: widgets' values
#: and choices, the tabs' ``active``, the channels' ``data`` (``link/row.py``), the sizes BokehJS lays the
#: figures out at, a panel's scroll position, the page's address (``link/browser.py``), what Panel's
#: browser information reports, and Panel's location. Bokeh itself applies a page's write to any property of
#: any model: one page wrote a large text into the ``name`` of each of its models, and the server held it all
#: until the session ended. A write to any other property is dropped (and logged once).
PAGE_WRITABLE = frozenset({
    "value", "value_input", "value_throttled", "active", "clicks", "visible", "data", "indices",
    "inner_width", "inner_height", "outer_width", "outer_height", "scroll_position", "start", "end",
    "page_address",
    "dark_mode", "device_pixel_ratio", "language", "timezone", "timezone_offset", "webdriver", "webgl",
    "href", "hostname", "pathname", "protocol", "port", "search", "hash", "reload",
})
#: The patch events a page sends: a property's change and an event (a click, the document ready, a message).
#: A page that sends another (a new root, a title, rows streamed into a data source) is refused.
PAGE_EVENT_KINDS = frozenset({"ModelChanged", "MessageSent"})
#: Encodings of a value no page sends, refused: an array's bytes (Bokeh inflates gzip-compressed bytes before
#: anything reads them, to many times their size). A model written out in full (``"object"``) is
#: refused too unless it is one of the document's: a click's event names its button so when the page made the
#: button after the document, and Bokeh makes any other such model anew on the server, of any type.
PAGE_REFUSED_TYPES = frozenset({"ndarray", "bytes"})
#: The largest message a page sends, its every fragment counted: the progress the browser kept (at most
#: 50,000 characters, ``course/questions.py``) in a message; everything else a page sends is far smaller.
PAGE_MESSAGE_BYTES = 256 * 1024
#: The largest property value a page writes (as JSON), with room to spare: the browser tests fail if it refuses theirs.
PAGE_WRITE_BYTES = 16 * 1024
#: The most events one page message carries. BokehJS sends a page's changes as they come, in one message each, except
#: a figure's four sizes once it is laid out (``inner_width``, ``inner_height``, ``outer_width``, ``outer_height``):
#: 4 in every page the browser tests drive (one event in all the others). Bokeh applies every event of a message in
#: one turn of the loop: one message of 300 clicks of "New random draw" at d_k = 1024 froze every other page.
PAGE_MESSAGE_EVENTS = 8
#: The messages a page sends (BokehJS's own): the document once, then its changes, and the server's version. A
#: ``PUSH-DOC`` would replace the session's whole document with whatever models it names.
PAGE_MESSAGE_TYPES = frozenset({"PULL-DOC-REQ", "PATCH-DOC", "SERVER-INFO-REQ"})
#: How often (s) a connection whose session waits for its turn looks again (its queue drains one event a turn).
TURN = 0.002
#: The longest websocket address taken, in characters: the page's own link limit (``server/pages.py``). A page's
#: websocket address is its page's address plus ``/ws``; one of 1 MB cost its session 6 MB, kept for its life.
WS_LINK_CHARS = MAX_LINK_CHARS
#: In every log line of what :func:`screen_page_patch` drops or refuses (the browser tests look for it).
SCREENED = "screened out"


def _encodings(value, types: set, models: set) -> None:
    # every "type" a value's JSON names ({"type": "map", ...}: how Bokeh's serializer marks what is not plain
    # JSON), and the ids of the models it writes out in full
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str):
            types.add(kind)
            if kind == "object":
                models.add(str(value.get("id")))
        for v in value.values():
            _encodings(v, types, models)
    elif isinstance(value, list):
        for v in value:
            _encodings(v, types, models)


def screen_page_patch(content, size: int, known=lambda model_id: False) -> tuple[str | None, set[str]]:
    """Check a page's ``PATCH-DOC`` content (its JSON, before Bokeh decodes it) of ``size`` bytes.

    ``known(id)`` tells whether a model id is one of the session document's. Returns why the connection is
    refused (None if it is not) and the properties whose writes were dropped from ``content["events"]`` (not
    in :data:`PAGE_WRITABLE`). Refused: more than :data:`PAGE_MESSAGE_EVENTS` events, an event kind not in
    :data:`PAGE_EVENT_KINDS`, a value encoded as one of :data:`PAGE_REFUSED_TYPES`, a model written out in full that
    is not the document's, a write larger than :data:`PAGE_WRITE_BYTES`. A model of the document's written out in
    full is replaced by its reference. What the events say is checked next, by :func:`check_page_events`.
    """
    events = content.get("events") if isinstance(content, dict) else None
    if not isinstance(events, list):
        return "a patch without a list of events", set()
    if len(events) > PAGE_MESSAGE_EVENTS:
        return f"a message of {len(events)} events (a page sends at most {PAGE_MESSAGE_EVENTS})", set()
    kept, dropped = [], set()
    for event in events:
        kind = event.get("kind") if isinstance(event, dict) else None
        if not isinstance(kind, str) or kind not in PAGE_EVENT_KINDS:
            return f"a patch event no page sends ({_short(kind, 40)})", set()
        types, models = set(), set()
        _encodings(event, types, models)
        refused = types & PAGE_REFUSED_TYPES
        if refused:
            return f"a value encoded as {', '.join(sorted(refused))}, which no page sends", set()
        if not all(known(m) for m in models):
            return "a new model, which no page sends", set()
        if models:  # the document's own, written out in full: Bokeh reads it as a reference and warns each time
            event = _as_references(event)
        if kind == "ModelChanged":
            attr = event.get("attr")
            if size > PAGE_WRITE_BYTES and len(json.dumps(event)) > PAGE_WRITE_BYTES:
                return f"a write of more than {PAGE_WRITE_BYTES} bytes ({_short(attr, 40)})", set()
            if not isinstance(attr, str) or attr not in PAGE_WRITABLE:
                dropped.add(str(attr)[:40])
                continue
        kept.append(event)
    content["events"] = kept
    return None, dropped


def _as_references(value):
    """``value`` with every model written out in full (``{"type": "object", "id": …}``) replaced by its reference."""
    if isinstance(value, dict):
        if value.get("type") == "object" and "id" in value:
            return {"id": value["id"]}
        return {k: _as_references(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_references(v) for v in value]
    return value


class _PageReader(Deserializer):
    """Bokeh's own reading of what a page sent, resolving references in the session's document, and changing nothing.

    Bokeh's ``Deserializer`` with the document's models as its references; a model written out in full is one of
    them (:func:`screen_page_patch` refused any other), read as its reference. ``tests/test_transport.py`` fails if
    the two methods this replaces move.
    """

    def __init__(self, doc):
        super().__init__()
        self._doc = doc

    def _decode_ref(self, obj):
        model = self._doc.get_model_by_id(obj["id"])
        if model is None:
            self.error(UnknownReferenceError(obj["id"]))
        return model

    _decode_object_ref = _decode_ref


def check_page_events(events: list, doc, unoffered: list | None = None) -> str | None:
    """Why Bokeh could not apply a page's screened ``events`` to ``doc`` (None if it can), found before any is applied.

    Into ``unoffered`` (if given) go ``(index, "Model.attr")`` of each write of a value the page's control does not
    offer (:func:`_offered`: a tab, a choice, a slider's position that does not exist), which the caller drops: a
    page sends one only if the server changed the control (fewer heads to choose from) while the page's click was
    on its way, so its connection is kept.

    Each event is read as Bokeh reads it (its ``Deserializer``, references resolved in ``doc``) and each written
    value checked against its property as Bokeh checks it when it sets it (``Property.prepare_value``). Bokeh
    itself finds a bad value only while it applies the message, after the events before it, and then logs the whole
    message three times (a 15 kB value in a choice widget's ``active``: three copies of it in the log) and keeps the
    connection; a write to a property the model does not have, it logs each time. A write to a model the server
    removed since (Bokeh drops such a message) is let through.
    """
    try:
        decoded = _PageReader(doc).decode(events)
    except UnknownReferenceError as e:
        return None if doc.models.seen(e.id) else "a model the document does not have"
    except Exception as e:  # noqa: BLE001  (anything Bokeh's reader raises on what a page sent)
        return f"a patch Bokeh cannot read ({type(e).__name__})"
    for index, event in enumerate(decoded):
        if event["kind"] == "MessageSent":
            if event.get("msg_type") != "bokeh_event" or not isinstance(event.get("msg_data"), Event):
                return "a message no page sends"
            continue
        model, attr = event.get("model"), event.get("attr")
        if not isinstance(model, HasProps):
            return "a write to no model"
        name = f"{type(model).__name__}.{_short(attr, 40)}"
        if not isinstance(attr, str) or attr not in model.properties():
            return f"a write to {name}, which it does not have"
        try:
            model.lookup(attr).property.prepare_value(model, attr, event.get("new"))
        except Exception:  # noqa: BLE001  (ValueError mostly; the value's own message would quote it whole)
            return f"a value {name} cannot hold"
        if unoffered is not None and not _offered(model, attr, event.get("new")):
            unoffered.append((index, name))
    return None


def _offered(model, attr: str, value) -> bool:
    """Whether ``value``, of the right type for ``model.attr``, is one the page's control offers: a tab, a choice or a
    slider's position that exists. Bokeh checks only the type, and Panel then looked up a tab or a choice past the
    end (an IndexError, logged with its traceback, each time: bench/RESULTS.md, "hostile messages") or took -1 as
    the last."""

    def indices(values, count):
        return all(isinstance(i, int) and 0 <= i < count for i in values)

    if isinstance(model, Tabs) and attr == "active":
        return indices([value], len(model.tabs))
    if isinstance(model, AbstractGroup) and attr == "active":
        return value is None or indices(value if isinstance(value, list) else [value], len(model.labels))
    if isinstance(model, AbstractSlider) and attr in ("value", "value_throttled"):
        ends, values = (model.start, model.end), value if isinstance(value, (list, tuple)) else [value]
        numbers = all(isinstance(x, (int, float)) for x in (*ends, *values))
        return not numbers or all(ends[0] <= x <= ends[1] for x in values)  # NaN is no position either
    if isinstance(model, Select) and attr == "value":
        options = model.options
        groups = options.values() if isinstance(options, dict) else [options]
        return value in {o if isinstance(o, str) else o[0] for group in groups for o in group}
    return True


def _short(text: object, limit: int = 120) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


class GuardedWSHandler(PanelWSHandler):
    """Panel's websocket handler, which stops reading a connection at its first message it cannot use.

    Bokeh closes a connection after a message it cannot decode, but goes on handling every frame the
    client has already sent until the client acknowledges the close, and logs a traceback (or an error
    line) for each: one socket sending small junk frames wrote megabytes of log and slowed everyone
    else's page. A proxy cannot limit frames inside an open websocket. Here the first bad message, or a
    handshake without Bokeh's subprotocol and session token, logs one line, closes the connection and
    drops its stream: nothing more it sent is read. A failure inside the app's own code still logs its
    traceback, at DEBUG level, so a developer can find it.

    A page asks for its document once (``PULL-DOC-REQ``, about 65 ms of the loop to serialise a whole page): a second
    on the same connection is refused, and each is paced as the session's events are (``server/pacing.py``), so
    connections opened onto one session cannot ask for it back to back. Once the connection has gone (closed, or a
    write to it failed), nothing it had sent and the server had not read yet is handled, and what the server would
    still send it is dropped without a word: a client that sent 10 s of keys and left had its 73,000 messages applied
    for 15 s more, with a warning for each answer that could not be sent. A handshake whose address is longer than
    :data:`WS_LINK_CHARS` gets HTTP 414, as the page's does.
    """

    _refused = False
    _gone = False  # the connection has closed, or a write to it failed
    _pulled = False  # the page has had its document
    _incoming = 0  # bytes of the message being received
    _dropped: frozenset = frozenset()  # properties whose writes were dropped, logged once each
    _first = math.inf  # when the page's first message came (perf_counter): its session was built by then

    async def prepare(self):
        if len(self.request.uri or "") > WS_LINK_CHARS:
            self.set_status(414)
            self.finish()
            return
        await super().prepare()

    def open(self, *args, **kwargs):
        if self.selected_subprotocol != "bokeh" or self._token is None:
            self._refuse("a handshake without the bokeh subprotocol and a session token")
            return None
        try:
            return super().open(*args, **kwargs)
        except ProtocolError as e:  # Bokeh has closed it already (bad signature, expired token)
            self._refuse(str(e))
            return None

    def on_close(self) -> None:
        self._gone = True
        session = getattr(self.connection, "_session", None)
        super().on_close()
        # Bokeh's connection refers to this handler, its protocol handler and its message reader to themselves (their
        # bound methods): cut, all freed at once instead of waiting for a pass of the cycle collector
        for part in (self.handler, self.receiver):
            if part is not None:
                part.__dict__.clear()
        self.connection = self.handler = self.receiver = None
        # the page has left once its session has no connection left (a second socket someone opened onto it and
        # closed is not the page leaving)
        if session is not None and not getattr(session, "connection_count", 1):
            doc = getattr(session, "_document", None)
            page_has_left(doc)
            pacing = get_event_pacer().session(doc) if doc is not None else None
            if pacing is not None:
                pacing.drop_queued()

    def _went(self) -> bool:
        """Whether the connection has gone: closed, or its stream closed under a write."""
        if not self._gone and hasattr(self, "ws_connection"):  # (a handler made without Tornado has none: a test's)
            conn = self.ws_connection  # None once Tornado has closed it
            stream = getattr(conn, "stream", None)
            self._gone = conn is None or conn.is_closing() or (stream is not None and stream.closed())
        return self._gone

    async def send_message(self, message) -> None:
        if self._went():
            return  # on_close says the connection closed, once
        try:
            await message.send(self)
        except (WebSocketClosedError, StreamClosedError):
            self._gone = True

    async def write_message(self, message, binary: bool = False, locked: bool = True) -> None:
        if self._went():
            return
        try:
            await super().write_message(message, binary, locked)
        except (WebSocketClosedError, StreamClosedError):
            self._gone = True

    async def on_message(self, message: str | bytes) -> None:
        if self._refused or self._went():
            return
        self._incoming += len(message)
        if self._incoming > PAGE_MESSAGE_BYTES:  # a message of many fragments (buffers) is held until complete
            self._refuse(f"a message of more than {PAGE_MESSAGE_BYTES} bytes")
            return
        try:
            parsed = await self._receive(message)
        except Exception as e:  # not JSON, not a Bokeh message: the client's, not the server's
            self._refuse(f"a message it cannot decode ({type(e).__name__}: {_short(e)})")
            return
        if parsed is None or self._refused:  # part of a message, or a protocol error (refused below)
            return
        size, self._incoming = self._incoming, 0
        if parsed.msgtype not in PAGE_MESSAGE_TYPES:
            self._refuse(f"a {_short(parsed.msgtype, 40)} message, which no page sends ({SCREENED})")
            return
        if parsed.msgtype == "PULL-DOC-REQ":
            if self._pulled:
                self._refuse(f"a second PULL-DOC-REQ on one connection, which no page sends ({SCREENED})")
                return
            self._pulled = True
        # a build waits while a page's message is handled (server/build_gate.py): its handling awaits, over turns
        now = time.perf_counter()
        self._first = min(self._first, now)
        with get_gate().page_message(in_use=now - self._first > BuildGate.IN_USE_AFTER):
            try:
                if parsed.msgtype == "PATCH-DOC":
                    work = await self._patch(parsed, size)
                elif parsed.msgtype == "PULL-DOC-REQ":
                    work = await self._paced(parsed)
                else:
                    work = await self._handle(parsed)
                if work is not None and work.msgtype == "ERROR":  # Bokeh has logged why (a failure in the app's code)
                    self._refuse("a message the server could not handle")
                elif work and not self._refused:
                    await self._schedule(work)
            except Exception as e:
                log.debug("handling a message failed", exc_info=True)
                self._refuse(f"a message the server could not handle ({type(e).__name__}: {_short(e)})")

    async def _patch(self, parsed, size: int):
        """Screen a ``PATCH-DOC`` and apply its events one at a time, each when the session's pacing allows it."""
        session = getattr(self.connection, "_session", None)  # Bokeh's `session` asserts there is one
        if session is None:  # the server is stopping: it has let the page's session go
            return None
        doc = getattr(session, "document", None)
        known = (lambda model_id: doc.get_model_by_id(model_id) is not None) if doc is not None else (
            lambda model_id: False)
        unoffered = []
        try:
            why, dropped = screen_page_patch(parsed.content, size, known)
            if why is None and doc is not None:
                why = check_page_events(parsed.content["events"], doc, unoffered)
        except RecursionError:  # nested as deep as JSON's own decoder allows
            why, dropped = "a patch nested too deep", set()
        if why is not None:
            self._refuse(f"{why} ({SCREENED})")
            return None
        if unoffered:
            gone = {index for index, _ in unoffered}
            parsed.content["events"] = [e for i, e in enumerate(parsed.content["events"]) if i not in gone]
            dropped = dropped | {f"{name} (a value it does not offer)" for _, name in unoffered}
        if dropped - self._dropped:
            log.warning("Ignored a page's writes to %s from %s (%s)", ", ".join(sorted(dropped - self._dropped)),
                        self.request.remote_ip, SCREENED)
            self._dropped = self._dropped | dropped
        pacing = get_event_pacer().session(doc)
        events = parsed.content["events"]
        if pacing is None or len(events) < 1:
            return await self._handle(parsed)
        # Bokeh would apply them all in one turn of the loop; one at a time, the pacing can hold back the rest,
        # and other pages' messages are read between two of them
        work = None
        for i, event in enumerate(events):
            if i:
                await asyncio.sleep(0)
            while not self._refused and not self._went() and (pacing.queued or pacing.wait() > 0):
                await asyncio.sleep(max(pacing.wait(), TURN))
            if self._refused or self._went() or getattr(self.connection, "_session", None) is None:
                return None  # the session ended while the event waited its turn (the server stopping): nothing to do
            parsed.content["events"] = [event]
            accounted, start = pacing.accounted, time.perf_counter()
            work = await self._handle(parsed)
            # what the page's events cost inside it (its clicks, run through the pacing) is accounted for already
            pacing.charge(time.perf_counter() - start - (pacing.accounted - accounted))
        return work

    async def _paced(self, parsed):
        """Handle ``parsed`` when the session's pacing allows, and charge it the time it took (a document pulled:
        the session's first is its page loading, work a page does once, not charged)."""
        session = getattr(self.connection, "_session", None)
        pacing = get_event_pacer().session(getattr(session, "document", None)) if session is not None else None
        if pacing is None:
            return await self._handle(parsed)
        while not self._refused and not self._went() and (pacing.queued or pacing.wait() > 0):
            await asyncio.sleep(max(pacing.wait(), TURN))
        if self._refused or self._went():
            return None
        start = time.perf_counter()
        work = await self._handle(parsed)
        took = time.perf_counter() - start
        if pacing.pulled:
            pacing.charge(took)
        else:
            pacing.pulled = True
            pacing.exempt(took)
        return work

    def _protocol_error(self, message: str) -> None:
        self._refuse(f"a message that breaks Bokeh's protocol ({_short(message)})")

    def _internal_error(self, message: str) -> None:
        self._refuse(_short(message))

    def _refuse(self, why: str) -> None:
        if self._refused:
            return
        self._refused = True
        log.warning("Refused websocket from %s: %s; connection closed", self.request.remote_ip, why)
        self.close(1008, "refused")  # 1008: policy violation
        stream = getattr(self.ws_connection, "stream", None)
        if stream is not None:
            stream.close()  # read nothing more the client has sent


def refuse_page(doc, why: str) -> bool:
    """Close the websockets of ``doc``'s session as the guard closes one that sends what no page would, with one log
    line; for what a page's own script (a component's messages) finds it never sends. False where the guard does not
    serve the page (a bare ``panel serve app.py``, a notebook): nothing is closed then."""
    sockets = [ws for ws in session_websockets(doc) if isinstance(ws, GuardedWSHandler)]
    for ws in sockets:
        ws._refuse(f"{why} ({SCREENED})")
    return bool(sockets)


def install_websocket_guard() -> None:
    """Serve every page's websocket with :class:`GuardedWSHandler` from now on, whenever the server was made.

    Panel serves them with its handler (it puts its class into Bokeh's route table, ``per_app_patterns``, when it
    is imported), and a server built before this call keeps that class in its routes: under a bare ``panel serve
    app.py`` the routes are built before app.py first runs. So the guard is not a route's: each connection that
    Panel's handler opens after this call becomes a :class:`GuardedWSHandler` (a subclass with no state of its
    own until it opens) as Tornado initializes it, before it reads anything. Idempotent; ``tests/test_transport.py``
    fails if Bokeh's names move.
    """
    original = PanelWSHandler.initialize
    if getattr(original, "guards", False):
        return

    def initialize(self, *args, **kwargs):
        if type(self) is PanelWSHandler:
            self.__class__ = GuardedWSHandler
        return original(self, *args, **kwargs)

    initialize.guards = True
    PanelWSHandler.initialize = initialize


def run_sessions_on_the_loop() -> None:
    """Run every session's work (callbacks, applying and serializing patches) on the event loop, not in threads.

    Bokeh 3.10 hands each of these to a worker thread and back, to keep the loop free during a long
    callback. This app has no long callback on that path (its heavy work goes to a thread of its own), and
    on a school's 2-core server the hand-off cost more than the work: waking the loop
    from a thread, thread hops and the GIL took most of the server's time during a class's drag. Idempotent;
    ``tests/test_transport.py`` fails if Bokeh's names move.
    """
    from bokeh.server import session

    async def inline(func, *args, **kwargs):
        return func(*args, **kwargs)

    async def inline_method(self, func, *args):
        return func(*args)

    session._run_in_executor = inline
    session.ServerSession._run_in_executor = inline_method



def hold_page_events() -> None:
    """Process each of a page's events (a widget's change, a button's click) inside a Panel hold of its document.

    Panel runs a page's event that arrives while another is pending as a callback without the session's lock,
    and wraps its own widgets' updates in a hold that writes the changes itself. This app's views also write
    into Bokeh models directly (a ``Div``'s text, a data source); such a change, outside any hold and without
    the lock, reached Bokeh's session, which refused it ("_pending_writes should be non-None …"): the rest of
    the event was lost, a traceback logged, and the page stopped showing the server's numbers. A learner who
    ticked "Step through" and pressed Next at once did it. Holding the document while Panel processes the event
    (synchronous code: no other callback runs meanwhile) collects every change, and Panel writes them when it
    ends, as it does for its own widgets; inside the lock the hold changes nothing. Inside the hold,
    :func:`walk_models_once`. Idempotent;
    ``tests/test_transport.py`` fails if Panel's names move.
    """

    def held(original):
        def run(self, doc, *args):
            # inside the hold: Bokeh walks the whole document at most once, when the event ends and before its
            # changes are sent, instead of once for each layout the event changes (with every tab built, the
            # walks were most of the costliest events: bench/RESULTS.md)
            with hold(doc), walk_models_once(doc):
                return original(self, doc, *args)
        return run

    _wrap_page_event_handlers("holds_document", held)


def later_turn(doc, work, after: float) -> bool:
    """Run ``work()`` (no arguments) on ``doc``'s session ``after`` seconds from now, in a turn of the loop of its own,
    as a page's event is run (the document held, walked once: :func:`hold_page_events`) and not counted against the
    session's share (:func:`server.pacing.once_a_page`: a tab's first showing, which a page does once).

    The turns between are other pages': a tab's first showing built its views and their Bokeh models in one turn
    long enough served that every other page's answer waited visibly (``bench/HISTORY.md``); built in one turn and
    put in the page in the next, each is about half, and other pages' answers come between (``widgets/tabs.py``).
    Returns False, and runs nothing, outside a served page (a test, a notebook): the caller does the work at once.
    """
    if doc is None or doc.session_context is None:
        return False

    def run():
        with set_curdoc(doc), once_a_page(doc), hold(doc), walk_models_once(doc):
            work()

    doc.add_timeout_callback(run, max(1, round(after * 1000)))
    return True


@contextmanager
def walk_models_once(doc):
    """Within the block, Bokeh walks ``doc``'s models (to find every model its roots reach) at most once, at the end,
    and only if the block changed what refers to what.

    Bokeh walks the whole document after each change of a property that holds models (a layout's children) unless
    the document is frozen, and Panel freezes it around each layout it updates; a click that replaced several
    layouts had it walked once for each, the longer the more tabs the page had built. Bokeh's own
    ``doc.models.freeze()`` walks once at its end whether or not anything changed, which would add a walk to every
    row key and drag release. Inside a block already frozen, nothing changes: the outer one walks.
    ``tests/test_transport.py`` fails if Bokeh's names move.
    """
    models = getattr(doc, "models", None)
    if models is None or getattr(models, "_freeze_count", 1) != 0:
        yield
        return
    changed = False

    def invalidate():  # a property holding models has changed: the walk is needed, at the end
        nonlocal changed
        changed = True

    def push_freeze():  # Bokeh's and Panel's own freezes, made only around changes of what refers to what
        nonlocal changed
        changed = True
        type(models)._push_freeze(models)

    models.invalidate, models._push_freeze = invalidate, push_freeze
    models._freeze_count += 1
    try:
        yield
    finally:
        del models.invalidate, models._push_freeze
        models._freeze_count -= 1
        if changed and models._freeze_count == 0:
            models.recompute()


def skip_link_walks_without_links() -> None:
    """Panel looks for its links (``jslink``, ``jscallback``) after a change of a layout only while one is registered.

    From the first link any page of the process made, Panel's hook (``panel.links.Callback._process_callbacks``)
    walked the changed page after each change of any of its layouts (every Panel object, then every Bokeh model
    under the change, the whole page for a tab shown the first time), even in a page with no link, and with the
    registry empty again. This app makes no Panel link (its discrete sliders name their option in their own title:
    ``widgets/base.py``), so the walks found nothing, and took a good part of a tab's first showing on a page with
    its other tabs built (``bench/HISTORY.md``). With a link registered, Panel's hook runs as before. Idempotent;
    ``tests/test_transport.py`` fails if Panel's names move.
    """
    from panel.links import Callback

    original = Callback._process_callbacks.__func__
    if getattr(original, "only_with_links", False):
        return

    def process_callbacks(cls, root_view, root_model, changed=None, old_models=None):
        if not any(Callback.registry.values()):  # a link unwatched leaves its source's empty list
            return None
        return original(cls, root_view, root_model, changed, old_models)

    process_callbacks.only_with_links = True
    Callback._process_callbacks = classmethod(functools.update_wrapper(process_callbacks, original))
    # Panel put its hook in the list when its first link was made, which may have been before this call
    from panel.viewable import Viewable

    Viewable._preprocessing_hooks[:] = [Callback._process_callbacks if getattr(hook, "__func__", None) is original
                                        else hook for hook in Viewable._preprocessing_hooks]


#: Panel's two methods that process a page's events in a session (``panel.reactive.Syncable``): a widget's change,
#: and an event (a click, a message).
PAGE_EVENT_HANDLERS = ("_change_event", "_process_bokeh_event")


def _wrap_page_event_handlers(flag: str, wrap) -> None:
    """Replace each of :data:`PAGE_EVENT_HANDLERS` with ``wrap(method)``, marked with the attribute ``flag``; a method
    already marked is left alone (so each wrapping is made once)."""
    from panel.reactive import Syncable

    for name in PAGE_EVENT_HANDLERS:
        original = getattr(Syncable, name)
        if getattr(original, flag, False):
            continue
        wrapper = functools.update_wrapper(wrap(original), original)
        setattr(wrapper, flag, True)
        setattr(Syncable, name, wrapper)


def pace_page_events() -> None:
    """Run each of a page's events (a widget's change, a click, a message) through its session's pacing.

    Panel processes them in ``Syncable._change_event`` and ``Syncable._process_bokeh_event`` (the methods
    :func:`hold_page_events` holds), at once or on a later turn of the loop; here each goes through the session's
    :class:`server.pacing.SessionEvents` first, which runs it at once unless the session has taken more than its
    share of the loop, and otherwise queues it for its turn. The guard (:class:`GuardedWSHandler`) reads the
    session's next message only once its queue is empty. Outside a served page nothing changes. Idempotent;
    ``tests/test_transport.py`` fails if Panel's names move.
    """

    def paced(original):
        def run(self, doc, *args):
            events = get_event_pacer().session(doc)
            if events is None:
                return original(self, doc, *args)
            events.run(functools.partial(original, self, doc, *args))
        return run

    _wrap_page_event_handlers("paced", paced)
