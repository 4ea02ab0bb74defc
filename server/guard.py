"""The websocket guard: what a page may send the server, and the handler that closes a connection at its first
message no page sends.

A connection that sends what no page would is closed after one log line (:class:`GuardedWSHandler`); what a page
sends is screened (:func:`screen_page_patch`), read as Bokeh reads it and checked against each property
(:func:`check_page_events`), and applied one event at a time, each when its session's share of the loop allows
(``services/pacing.py``). Panel serves every page's websocket with its own handler; each connection it opens becomes a
:class:`GuardedWSHandler` as it starts (``server/patches/panel_ws_handler.py``, which also checks that Bokeh's and
Panel's methods this class overrides or calls are the ones it was written for).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import weakref
from functools import partial

from bokeh.core.has_props import HasProps
from bokeh.core.serialization import UnknownReferenceError
from bokeh.events import Event
from bokeh.models import AbstractSlider, Select, Tabs
from bokeh.models.widgets.groups import AbstractGroup
from bokeh.protocol.exceptions import ProtocolError
from bokeh.util.token import get_session_id
from panel.io.server import WSHandler as PanelWSHandler
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from server.build_gate import BuildGate, PageLeft, TooManyWaiting, get_gate, watch_gone
from server.pages import MAX_LINK_CHARS, embedding_argument
from server.patches.bokeh_deserializer import PATCH as READER
from server.patches.bokeh_deserializer import PageReader
from server.transport import session_websockets
from server.ws_origin import refuse_foreign_origin
from services.direct_writes import direct_reader, hand_over
from services.pacing import client_at, get_client_shares, get_event_pacer
from services.sessions import SCREENED, page_has_left, write_wait_from_env

log = logging.getLogger(__name__)

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
#: Seconds a write to a page may wait for its socket to take it before the connection is let go
#: (``services/sessions.py``, :data:`~services.sessions.DEFAULT_WRITE_WAIT_S`; ``EXPLORER_WRITE_WAIT_S``).
WRITE_WAIT_S = write_wait_from_env()


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


def check_page_events(events: list, doc, unoffered: list | None = None, decoded: list | None = None) -> str | None:
    """Why Bokeh could not apply a page's screened ``events`` to ``doc`` (None if it can), found before any is applied.

    Into ``unoffered`` (if given) go ``(index, "Model.attr")`` of each write of a value the page's control does not
    offer (:func:`_offered`: a tab, a choice, a slider's position that does not exist), which the caller drops: a
    page sends one only if the server changed the control (fewer heads to choose from) while the page's click was
    on its way, so its connection is kept. Into ``decoded`` (if given) go the events as read, once all are checked.

    Each event is read as Bokeh reads it (its ``Deserializer``, references resolved in ``doc``) and each written
    value checked against its property as Bokeh checks it when it sets it (``Property.prepare_value``). Bokeh
    itself finds a bad value only while it applies the message, after the events before it, and then logs the whole
    message three times (a 15 kB value in a choice widget's ``active``: three copies of it in the log) and keeps the
    connection; a write to a property the model does not have, it logs each time. A write to a model the server
    removed since (Bokeh drops such a message) is let through. Where the reader does not fit the installed Bokeh
    (``server/patches/bokeh_deserializer.py``), None: Bokeh reads and checks the events itself, as it applies them.
    """
    if not READER.fits():
        return None
    try:
        read = PageReader(doc).decode(events)
    except UnknownReferenceError as e:
        return None if doc.models.seen(e.id) else "a model the document does not have"
    except Exception as e:  # noqa: BLE001  (anything Bokeh's reader raises on what a page sent)
        return f"a patch Bokeh cannot read ({type(e).__name__})"
    for index, event in enumerate(read):
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
    if decoded is not None:
        decoded.extend(read)
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


def _frames(message) -> list[tuple[str | bytes, bool]]:
    """A Bokeh message's websocket frames in the order Bokeh's ``Message.send`` writes them, each with whether it is
    binary: the header, metadata and content, then each buffer's header and its bytes."""
    frames = [(message.header_json, False), (message.metadata_json, False), (message.content_json, False)]
    for buffer in message.buffers:
        frames += [(json.dumps(buffer.ref), False), (buffer.to_bytes(), True)]
    return frames


def _closed_socket_write(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The loop's exception handler: a write to a page's socket that had closed, which nobody awaited, is the page
    having left, not an error. Panel awaits a page's writes in a callback of its document, which never runs once the
    page's session is taken apart, so each such write's failure was logged with a traceback ("Task exception was
    never retrieved"); every other exception goes to asyncio's own handler."""
    if isinstance(context.get("exception"), (WebSocketClosedError, StreamClosedError)):
        return
    loop.default_exception_handler(context)


def quiet_closed_socket_writes(loop: asyncio.AbstractEventLoop) -> None:
    """Give ``loop`` :func:`_closed_socket_write` as its exception handler (asyncio's public hook), once; a handler
    someone else set is left in place."""
    if loop.get_exception_handler() is None:
        loop.set_exception_handler(_closed_socket_write)


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
    on the same connection is refused, and each is paced as the session's events are (``services/pacing.py``), so
    connections opened onto one session cannot ask for it back to back. Once the connection has gone (closed, or a
    write to it failed), nothing it had sent and the server had not read yet is handled, and what the server would
    still send it is dropped without a word: a client that sent 10 s of keys and left had its 73,000 messages applied
    for 15 s more, with a warning for each answer that could not be sent. A handshake whose address is longer than
    :data:`WS_LINK_CHARS` gets HTTP 414, as the page's does. One from an origin outside Bokeh's allowlist gets HTTP 403,
    whatever it says of itself (``server/ws_origin.py``).

    A handshake whose token names a session the process does not have makes Bokeh build a whole page for it (a page
    served by another process sharing the port, or a session id a script made up): that build waits in its client's
    line at the build gate (``server/build_gate.py``) as a page request's does. When the client already has its most
    builds waiting, the handshake is answered 429 before it upgrades; and a build whose socket closes while it waits
    is not made (the gate asks the handler, :meth:`_went`), nor is anything logged for it. 150 sockets for made-up
    sessions, closed within a quarter of a second, were otherwise built one after another for 85 s. A socket that
    closes while its session is built lets the session go once it is made (before, the session kept it as its
    connection and was never discarded).
    """

    _refused = False
    _gone = False  # the connection has closed, or a write to it failed
    _pulled = False  # the page has had its document
    _incoming = 0  # bytes of the message being received
    _dropped: frozenset = frozenset()  # properties whose writes were dropped, logged once each
    _first = math.inf  # when the page's first message came (perf_counter): its session was built by then
    _page_session = None  # a weak reference to the session, once open (Bokeh's keep-alive may let go of it first)

    async def prepare(self):
        if len(self.request.uri or "") > WS_LINK_CHARS:
            self.set_status(414)
            self.finish()
            return
        if embedding_argument(self.request):  # a session it would make would load its scripts from elsewhere
            self.set_status(400)
            self.finish()
            return
        if refuse_foreign_origin(self):
            return
        if self._builds_a_page():
            try:
                get_gate().admit(self.request)  # (the gate logs the refusal, backed off per client)
            except TooManyWaiting as refused:
                self.set_status(refused.status_code, refused.reason)
                self.finish(refused.reason)
                return
        await super().prepare()

    def _builds_a_page(self) -> bool:
        """Whether opening this handshake's session makes Bokeh build a page: its session token (the second of the
        two subprotocols offered, as Bokeh's ``select_subprotocol`` takes it) names a session the process does not
        have. A handshake without one is refused at :meth:`open`, before any build."""
        offered = [p.strip() for p in self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if len(offered) != 2:
            return False
        try:
            self.application_context.get_session(get_session_id(offered[1]))
        except ProtocolError:  # "No such session"
            return True
        except Exception:  # noqa: BLE001  (not a token Bokeh can read: it refuses it at open, building nothing)
            return False
        return False

    def open(self, *args, **kwargs):
        if self.selected_subprotocol != "bokeh" or self._token is None:
            self._refuse("a handshake without the bokeh subprotocol and a session token")
            return None
        # a build its session needs is skipped once the socket has gone (a weak reference: the request, which the
        # build's session keeps, must not keep the handler)
        handler = weakref.ref(self)
        watch_gone(self.request, lambda: (h := handler()) is None or h._went())
        try:
            return super().open(*args, **kwargs)
        except ProtocolError as e:  # Bokeh has closed it already (bad signature, expired token)
            self._refuse(str(e))
            return None

    async def _async_open(self, token: str) -> None:
        try:
            await super()._async_open(token)
        except (PageLeft, TooManyWaiting):
            # the build gate did not build its session: the socket had gone (nothing to say), or its client's line
            # filled up during the handshake (1013: try again later)
            if not self._went():
                self.close(1013, "too many pages asked for from this address at once")
            return
        session = getattr(self.connection, "_session", None)
        if session is not None:
            self._page_session = weakref.ref(session)
        if self._went() and self.connection is not None:
            # it closed while its session was made: Bokeh's on_close found no connection to let go of then, and the
            # session would have kept this one for ever (never discarded)
            self.on_close()

    def on_close(self) -> None:
        self._gone = True
        if self.connection is None:  # its session's build may be waiting: it leaves the gate's line at once
            get_gate().left(self.request)
        session = getattr(self.connection, "_session", None)
        if self.connection is not None and session is None:
            # Bokeh's keep-alive found the stream closed before Tornado said so and let the connection go already
            # (``bokeh/server/tornado.py``, ``_keep_alive``: ``client_lost``): Bokeh's on_close would assert it still
            # has a session. The stream closes under a write while the guard holds a message back (its pacing), so
            # Tornado says so only once that message has been let go.
            self.connection = None
            session = self._page_session() if self._page_session is not None else None
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
        """Send a Bokeh message's frames (its header, metadata, content, then each buffer's header and bytes, as
        Bokeh's ``Message.send`` does) all at once, and wait for the socket to have taken them.

        Bokeh writes each frame and waits for it before the next: two turns of the loop a frame, so a run of the
        Train tab (a message of 17 frames) waited some 35 turns to leave, each as long as every other page's work
        that came meanwhile (bench/HISTORY.md, "One client's New seed and downloads floods"). Tornado writes a frame
        into the socket's buffer as it is given; waiting for the last is the flow control. A message the socket has
        not taken within :data:`WRITE_WAIT_S` lets the connection go (:meth:`_stalled`).
        """
        if self._went():
            return  # on_close says the connection closed, once
        try:
            with await self.write_lock.acquire():
                writes = [WebSocketHandler.write_message(self, frame, binary) for frame, binary in _frames(message)]
                sent = asyncio.gather(*writes)
                stalled = asyncio.get_running_loop().call_later(WRITE_WAIT_S, self._stalled, sent)
                try:
                    await sent
                finally:
                    stalled.cancel()
        except (WebSocketClosedError, StreamClosedError):
            self._gone = True

    def _stalled(self, sent: asyncio.Future) -> None:
        """The socket has taken nothing of a message for :data:`WRITE_WAIT_S`: close it, with one log line. Its
        pending writes fail, the message its page sent last is let go, and Tornado says the connection closed."""
        if sent.done() or self._gone:
            return
        self._gone = True
        log.warning("Closed the websocket of %s: it took nothing the server sent for %.0f s", self.request.remote_ip,
                    WRITE_WAIT_S)
        self._drop_stream()

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
                elif work is not None and work.msgtype == "OK" and parsed.msgtype == "PATCH-DOC":
                    # Bokeh's OK to a page's patch: BokehJS sends its patches without asking for a reply and drops
                    # this one (bokeh.js, ClientSession's _handle_ok); three compressed frames written to the socket
                    # for each drag position a page sends, for nothing
                    pass
                elif work and not self._refused:
                    await self._schedule(work)
            except Exception as e:
                log.debug("handling a message failed", exc_info=True)
                self._refuse(f"a message the server could not handle ({type(e).__name__}: {_short(e)})")

    async def _patch(self, parsed, size: int):
        """Screen a ``PATCH-DOC`` and apply its events one at a time, each when the session's pacing allows it, in
        its client's turn and share of the loop (``services/pacing.py``, ``ClientShares``)."""
        session = getattr(self.connection, "_session", None)  # Bokeh's `session` asserts there is one
        if session is None:  # the server is stopping: it has let the page's session go
            return None
        doc = getattr(session, "document", None)
        known = (lambda model_id: doc.get_model_by_id(model_id) is not None) if doc is not None else (
            lambda model_id: False)
        unoffered, decoded = [], []
        try:
            why, dropped = screen_page_patch(parsed.content, size, known)
            if why is None and doc is not None:
                why = check_page_events(parsed.content["events"], doc, unoffered, decoded)
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
        # a write whose model reads it itself (a drag's position): handed to it as read above, Bokeh's reading and
        # setting of it skipped (services/direct_writes.py)
        one = decoded[0] if len(events) == len(decoded) == 1 and decoded[0]["kind"] == "ModelChanged" else None
        reader = direct_reader(one["model"], one["attr"]) if one is not None else None
        handle = self._handle if reader is None else partial(hand_over, session, doc, reader, one["new"])
        if pacing is None or len(events) < 1:
            return await handle(parsed)
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
            # and one of the client's events at a time, each when the client's share of the loop allows
            shares, client = get_client_shares(), client_at(self.request.remote_ip)
            shares.seen(client)
            async with shares.turn(client):
                while not self._refused and not self._went() and (wait := shares.wait(client)) > 0:
                    await asyncio.sleep(wait)
                if self._refused or self._went() or getattr(self.connection, "_session", None) is None:
                    return None
                accounted, start = pacing.accounted, time.perf_counter()
                work = await handle(parsed)
                took = time.perf_counter() - start
                # what the page's events cost inside it (its clicks, run through the pacing) is the session's already;
                # the client is charged it all
                pacing.charge(took - (pacing.accounted - accounted))
                shares.charge(client, took)
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
        self._drop_stream()  # read nothing more the client has sent

    def _drop_stream(self) -> None:
        """Close the connection's TCP stream at once: nothing more is read from it, and its pending writes fail."""
        stream = getattr(self.ws_connection, "stream", None)
        if stream is not None:
            stream.close()


def refuse_page(doc, why: str) -> bool:
    """Close the websockets of ``doc``'s session as the guard closes one that sends what no page would, with one log
    line; for what a page's own script (a component's messages) finds it never sends. False where the guard does not
    serve the page (a bare ``panel serve app.py``, a notebook): nothing is closed then."""
    sockets = [ws for ws in session_websockets(doc) if isinstance(ws, GuardedWSHandler)]
    for ws in sockets:
        ws._refuse(f"{why} ({SCREENED})")
    return bool(sockets)
