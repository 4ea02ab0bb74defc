"""What the server writes to its log: never a room's code or presenter token, never a line someone made huge.

Tornado's access log writes every request's address, and a room's join and presenter links carry the
room's code and token; a link can also be made a megabyte long (the page answers it with "too long",
``server/pages.py``, but the log line would hold the whole link). And Bokeh logs what a page sent when it
cannot apply it: a 15 kB value written into a widget, three times over, with its traceback.

So every log record of the process, whichever logger makes it (Bokeh's, Tornado's, Panel's, asyncio's, the
app's), is bounded as it is made: the room arguments blanked, its message cut to :data:`MAX_LOG_CHARS` (its start
and its end kept: a traceback that a library writes into the message itself ends with its error), its traceback to
:data:`MAX_TRACEBACK_CHARS`. This is done by the log record factory (the standard library's one
hook that sees every record, :func:`logging.setLogRecordFactory`), not by a filter: a filter on a logger does
not see the records of its child loggers (``bokeh.server.protocol_handler`` is one), and a filter on a handler
misses the handlers added after it.

And what a client can make the server log again and again with HTTP requests (an answer of 400 or more, a request
Tornado cannot read, a websocket handshake refused) is logged per client with a back-off (:class:`PerClientLines`):
the first :data:`FIRST_LINES` of a kind in full, then only the 8th, 16th, 32nd… each saying how many were left out,
until the client has been quiet for :data:`QUIET_S`; an address in such a line is cut to :data:`MAX_URI_CHARS`. 10,000
requests for a 20 kB path wrote 6.5 MB of log (654 bytes each), and a health check with a 5 kB endpoint two lines
of 650 bytes each; now 10,000 requests of one kind from one client write a few kB however fast or slowly they come.
"""

from __future__ import annotations

import collections
import ipaddress
import logging
import re
import time

#: Longest log message kept whole; longer ones keep their start and their end (:data:`TAIL_CHARS` of it) and say how
#: long they were.
MAX_LOG_CHARS = 600
#: Of a message cut to :data:`MAX_LOG_CHARS`, the characters at most kept from its end: its last lines, whole where
#: they fit. A traceback written into a message (Bokeh's "Error thrown from callback") ends with the error.
TAIL_CHARS = MAX_LOG_CHARS // 2
#: Longest traceback kept whole (each of its lines cut like a message too); a longer one keeps its end, where the
#: innermost frames and the error are.
MAX_TRACEBACK_CHARS = 4000
#: Lines of one kind logged in full for a client before its back-off; then the 8th, 16th, 32nd…
FIRST_LINES = 5
#: Seconds without such a line from a client after which it is logged in full again.
QUIET_S = 600.0
#: Longest request address in a line of :class:`PerClientLines` (characters).
MAX_URI_CHARS = 160
#: The loggers whose lines a client can make again and again with HTTP requests: Tornado's access log (each answer)
#: and its general log (a request it cannot read, an error's reason), Bokeh's websocket handshake's (a bad token).
#: (The websocket guard, ``server/guard.py``, logs one line for a connection, which a handshake costs.) And the build
#: gate's line for a page refused to a client with too many waiting (``server/build_gate.py``), and the line for a
#: websocket handshake refused for its origin (``server/ws_origin.py``).
CLIENT_LOGGERS = ("tornado.access", "tornado.general", "bokeh.server.views.ws", "server.build_gate",
                  "server.ws_origin")


def _cut_lines(text: str) -> str:
    return "\n".join(line if len(line) <= MAX_LOG_CHARS else f"{line[:MAX_LOG_CHARS]}… ({len(line)} characters)"
                     for line in text.split("\n"))


def _start_and_end(text: str) -> str:
    """``text`` cut to :data:`MAX_LOG_CHARS` characters and a note of its length: its start, and its end of up to
    :data:`TAIL_CHARS`. The end of a text of several lines is its last lines that fit whole, or else the start of its
    last line (a traceback's error: its type and what it says first).

    >>> cut = _start_and_end("x" * 700 + "\\n  raise ValueError(...)\\nValueError: " + "y" * 100)
    >>> cut.splitlines()[1:3], cut.endswith("\\nValueError: " + "y" * 100), len(cut)
    (['… (837 characters in all) …', '  raise ValueError(...)'], True, 630)
    """
    note = f"({len(text)} characters in all)"
    lines = text.rstrip("\n").split("\n")
    if len(lines) == 1:
        return f"{text[:MAX_LOG_CHARS - TAIL_CHARS]}… {note} …{text[-TAIL_CHARS:]}"
    tail = lines[-1] if len(lines[-1]) <= TAIL_CHARS else lines[-1][:TAIL_CHARS - 1] + "…"
    for line in reversed(lines[1:-1]):
        if len(tail) + 1 + len(line) > TAIL_CHARS:
            break
        tail = f"{line}\n{tail}"
    return f"{text[:MAX_LOG_CHARS - len(tail)]}…\n… {note} …\n{tail}"


def _spelled(name: str) -> str:
    """A pattern for ``name`` (letters) with any of its letters percent-encoded, upper or lower case: as a server reads
    an argument's name once it has decoded it (case left to the pattern's flags)."""
    return "".join(f"(?:{re.escape(c)}|%{ord(c.lower()):02x}|%{ord(c.upper()):02x})" for c in name)


class RedactLogLines(logging.Filter):
    """Blank the values of ``room`` and ``token`` in logged URLs, shorten messages past :data:`MAX_LOG_CHARS` (their
    start and end kept) and tracebacks past :data:`MAX_TRACEBACK_CHARS` (their end kept).

    >>> RedactLogLines.redact("101 GET /app/ws?room=K7M4QX&token=abc-_1 (127.0.0.1) 2.1ms")
    '101 GET /app/ws?room=…&token=… (127.0.0.1) 2.1ms'

    A name is found however the address spells it: any of its letters percent-encoded, in either case (the server
    decodes ``%72oom`` as ``room``), and an address written into another's argument, encoded whole:

    >>> RedactLogLines.redact("404 GET /nope?%72oom=K7M4QX&%54%4fKEN=abc (127.0.0.1) 0.5ms")
    '404 GET /nope?%72oom=…&%54%4fKEN=… (127.0.0.1) 0.5ms'
    >>> RedactLogLines.redact("200 GET /app?next=%2Fapp%3Froom%3DK7M4QX%26tok%65n%3Dabc%26q%3D1 (127.0.0.1) 9ms")
    '200 GET /app?next=%2Fapp%3Froom=…%26tok%65n=…%26q%3D1 (127.0.0.1) 9ms'
    >>> cut = RedactLogLines.redact("414 GET /?q=" + "x" * 70000 + " (127.0.0.1) 0.97ms")
    >>> cut[:12], cut[298:332], cut[-22:], len(cut)
    ('414 GET /?q=', 'xx… (70031 characters in all) …xxx', 'xxx (127.0.0.1) 0.97ms', 629)
    """

    _ARG = re.compile(
        r"(?:(?<=[?&;])|(?<=%26)|(?<=%3f)|(?<=%3b))"  # after an argument's separator, itself perhaps encoded
        rf"(?P<name>{_spelled('room')}|{_spelled('token')})(?:=|%3d)(?:(?!%26|%3b)[^&;\s\"'])*",
        re.IGNORECASE)

    @classmethod
    def _blank(cls, text: str) -> str:
        return cls._ARG.sub(lambda m: f"{m['name']}=…", text)

    @classmethod
    def redact(cls, text: str) -> str:
        text = cls._blank(text)
        return text if len(text) <= MAX_LOG_CHARS else _start_and_end(text)

    @classmethod
    def bound(cls, record: logging.LogRecord) -> logging.LogRecord:
        """``record`` with its message redacted and cut, and its traceback and stack cut (in place). A request's
        address in Tornado's summary of it (``GET /path (ip)``) is cut to :data:`MAX_URI_CHARS` first, so the line
        keeps the client's address at its end."""
        if isinstance(record.args, tuple) and any(isinstance(a, str) and len(a) > MAX_URI_CHARS for a in record.args):
            record.args = tuple(_cut_summary(a) if isinstance(a, str) else a for a in record.args)
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: the handler reports it, with the message's start
            message = f"{str(record.msg)[:MAX_LOG_CHARS]} % {str(record.args)[:MAX_LOG_CHARS]}"
        redacted = cls.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            # formatted now, as the handler's formatter would (it uses exc_text when it is set)
            record.exc_text = cls._cut_traceback(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = cls._cut_traceback(record.stack_info)
        return record

    @classmethod
    def _cut_traceback(cls, text: str) -> str:
        text = _cut_lines(cls._blank(text))
        if len(text) <= MAX_TRACEBACK_CHARS:
            return text
        return f"… ({len(text)} characters of traceback in all; its end:)\n{text[-MAX_TRACEBACK_CHARS:]}"

    def filter(self, record: logging.LogRecord) -> bool:
        self.bound(record)
        return True


def install_log_redaction() -> None:
    """Bound every log record the process makes from now on (:meth:`RedactLogLines.bound`), whichever logger
    makes it and whichever handler writes it, and the lines a client can make again and again
    (:func:`install_client_limits`), and Panel's line for each write to a page that has left
    (:func:`install_page_left_filter`), and Bokeh's for a page the build gate did not build
    (:func:`install_unbuilt_pages_filter`). Idempotent; the factory in place before is kept and called first."""
    install_client_limits()
    install_page_left_filter()
    install_unbuilt_pages_filter()
    factory = logging.getLogRecordFactory()
    if getattr(factory, "bounds_records", False):
        return

    def bounded(*args, **kwargs) -> logging.LogRecord:
        return RedactLogLines.bound(factory(*args, **kwargs))

    bounded.bounds_records = True
    logging.setLogRecordFactory(bounded)


_SUMMARY = re.compile(r"^(?P<method>\S+) (?P<uri>.*) \((?P<ip>[^()\s]*)\)$", re.DOTALL)


def _cut_summary(text: str) -> str:
    """Tornado's summary of a request (``GET /path (ip)``) with its address cut to :data:`MAX_URI_CHARS`."""
    m = _SUMMARY.match(text) if " (" in text else None
    if m is None or len(m["uri"]) <= MAX_URI_CHARS:
        return text
    return f"{m['method']} {m['uri'][:MAX_URI_CHARS]}… ({len(m['uri']):,} characters in all) ({m['ip']})"


class PerClientLines(logging.Filter):
    """Let a client's repeated lines through with a back-off: per client and kind of line (its logger, its format, an
    answer's status), the first :data:`FIRST_LINES`, then the 8th, 16th, 32nd… (saying how many were left out), until
    the client has made none of that kind for :data:`QUIET_S`.

    A line is a client's when one of its arguments is an IP address or Tornado's request summary (``GET /path
    (ip)``); the access log's lines under 400 are left alone. At most
    ``clients`` clients are remembered (the oldest forgotten first). ``clock`` gives seconds.

    >>> f = PerClientLines(clock=lambda: 0.0)
    >>> kept = [n for n in range(1, 101) if f.filter(logging.makeLogRecord(
    ...     {"name": "tornado.access", "msg": "%d %s %.2fms", "args": (404, "GET /x (10.0.0.7)", 1.0)}))]
    >>> kept
    [1, 2, 3, 4, 5, 8, 16, 32, 64]
    """

    def __init__(self, clock=time.monotonic, clients: int = 10_000):
        super().__init__()
        self._clock = clock
        self._clients: collections.OrderedDict = collections.OrderedDict()  # (kind, client) -> [count, last time]
        self._max = clients

    _ACCESS = re.compile(r"^(?P<status>\d{3}) .* \((?P<ip>[^()\s]*)\) [\d.]+ms", re.DOTALL)

    def _client(self, record: logging.LogRecord) -> tuple[str | None, object]:
        """The client a line is about (None: none), and its answer's status for an access line."""
        args = record.args if isinstance(record.args, tuple) else ()
        if record.name == "tornado.access":
            if args:
                status = args[0]
            else:  # the line was written out as it was made (a room's code blanked in it)
                m = self._ACCESS.match(record.getMessage())
                if m is None:
                    return None, None
                status, args = int(m["status"]), (m["ip"],)
            if not isinstance(status, int) or status < 400:
                return None, None
        else:
            status = None
        for arg in args:
            text = str(arg)
            m = _SUMMARY.match(text) if " (" in text else None
            if m:
                return m["ip"], status
            try:
                return str(ipaddress.ip_address(text)), status
            except ValueError:
                continue
        return None, None

    def filter(self, record: logging.LogRecord) -> bool:
        client, status = self._client(record)
        if client is None:
            return True
        # a kind of line: its logger, its format and, for an answer, its status (a 414 does not use up a 404's lines)
        kind = "%d %s %.2fms" if record.name == "tornado.access" else str(record.msg)[:80]
        key, now = (record.name, kind, status, client), self._clock()
        seen = self._clients.pop(key, None)
        if seen is None or now - seen[1] >= QUIET_S:
            seen = [0, now]
        seen[0] += 1
        seen[1] = now
        self._clients[key] = seen
        while len(self._clients) > self._max:
            self._clients.popitem(last=False)
        n = seen[0]
        if n <= FIRST_LINES:
            if n == FIRST_LINES:
                record.msg, record.args = f"{record.getMessage()} (the next such lines from {client}: only the 8th, " \
                                          "16th, 32nd…)", ()
            return True
        if n & (n - 1):  # not a power of two
            return False
        record.msg, record.args = f"{record.getMessage()} ({n:,} such lines from {client}; {n // 2 - 1:,} left out " \
                                  "before this one)", ()
        return True


def panel_records_only_when_written() -> None:
    """Have Panel's loggers make a record only at a level one of their handlers writes.

    Panel sets its ``panel`` logger to DEBUG at import and filters at its handler (``config.log_level``, WARNING by
    default), so each click, key and widget change a page sends made two debug records ("received bokeh event",
    "finished processing"), each formatted, bounded (:func:`install_log_redaction`) and then dropped by the handler.
    The logger's level becomes the lowest of its handlers' levels (DEBUG again if one of them writes everything): the
    same lines are written, the others never made. Set once, as the server starts.
    """
    logger = logging.getLogger("panel")
    levels = [handler.level for handler in logger.handlers]
    logger.setLevel(min(levels) if levels and min(levels) > logging.NOTSET else logging.DEBUG)


def install_client_limits() -> None:
    """Add one :class:`PerClientLines` to each of :data:`CLIENT_LOGGERS` (a filter on a logger sees the records that
    logger makes: these loggers make their own). Idempotent."""
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, PerClientLines) for f in logger.filters):
            logger.addFilter(PerClientLines())


class PageLeftWrites(logging.Filter):
    """Drop Panel's "Failed sending message as connection was closed": a write to a page that has left, which the
    server's own "WebSocket connection closed" line already says (and a flood of events a page left behind could make
    one for each). Every other line of ``panel.io.document`` passes.

    >>> f = PageLeftWrites()
    >>> rec = lambda msg: logging.LogRecord("panel.io.document", logging.WARNING, "", 0, msg, None, None)
    >>> f.filter(rec("Failed sending message as connection was closed")), f.filter(rec("Failed sending message due to"))
    (False, True)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Failed sending message as connection was closed"


def install_page_left_filter() -> None:
    """Add one :class:`PageLeftWrites` to Panel's ``panel.io.document`` logger. Idempotent."""
    logger = logging.getLogger("panel.io.document")
    if not any(isinstance(f, PageLeftWrites) for f in logger.filters):
        logger.addFilter(PageLeftWrites())


class UnbuiltPages(logging.Filter):
    """Drop Bokeh's "Failed to create session" (with its traceback) for a page the build gate answered without
    building it (``server/build_gate.py``: its request had left, or its client had too many waiting): no failure,
    and a client could otherwise make one traceback per request. The request's own answer is in the access log.
    Every other line of ``bokeh.server.contexts`` passes, a page that failed to build among them.

    >>> from server.build_gate import PageLeft
    >>> f = UnbuiltPages()
    >>> rec = lambda e: logging.LogRecord("bokeh.server.contexts", logging.ERROR, "", 0,
    ...                                   "Failed to create session %r: %s", ("x", e), (type(e), e, None))
    >>> f.filter(rec(PageLeft())), f.filter(rec(RuntimeError("the page's code raised")))
    (False, True)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from server.build_gate import NotBuilt

        return not (record.exc_info and isinstance(record.exc_info[1], NotBuilt))


def install_unbuilt_pages_filter() -> None:
    """Add one :class:`UnbuiltPages` to Bokeh's ``bokeh.server.contexts`` logger. Idempotent."""
    logger = logging.getLogger("bokeh.server.contexts")
    if not any(isinstance(f, UnbuiltPages) for f in logger.filters):
        logger.addFilter(UnbuiltPages())
