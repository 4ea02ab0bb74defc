"""What the server writes to its log: never a room's code or presenter token, never a line someone made huge.

Tornado's access log writes every request's address, and a room's join and presenter links carry the
room's code and token; a link can also be made a megabyte long (the page answers it with "too long",
``server/pages.py``, but the log line would hold the whole link). And Bokeh logs what a page sent when it
cannot apply it: a 15 kB value written into a widget, three times over, with its traceback.

So every log record of the process, whichever logger makes it (Bokeh's, Tornado's, Panel's, asyncio's, the
app's), is bounded as it is made: the room arguments blanked, its message cut to :data:`MAX_LOG_CHARS`, its
traceback to :data:`MAX_TRACEBACK_CHARS`. This is done by the log record factory (the standard library's one
hook that sees every record, :func:`logging.setLogRecordFactory`), not by a filter: a filter on a logger does
not see the records of its child loggers (``bokeh.server.protocol_handler`` is one), and a filter on a handler
misses the handlers added after it.
"""

from __future__ import annotations

import logging
import re

#: Longest log message kept whole; longer ones keep their start and say how long they were.
MAX_LOG_CHARS = 600
#: Longest traceback kept whole (each of its lines cut like a message too); a longer one keeps its end, where the
#: innermost frames and the error are.
MAX_TRACEBACK_CHARS = 4000


def _cut_lines(text: str) -> str:
    return "\n".join(line if len(line) <= MAX_LOG_CHARS else f"{line[:MAX_LOG_CHARS]}… ({len(line)} characters)"
                     for line in text.split("\n"))


class RedactLogLines(logging.Filter):
    """Blank the values of ``room`` and ``token`` in logged URLs, shorten messages past :data:`MAX_LOG_CHARS` and
    tracebacks past :data:`MAX_TRACEBACK_CHARS`.

    >>> RedactLogLines.redact("101 GET /app/ws?room=K7M4QX&token=abc-_1 (127.0.0.1) 2.1ms")
    '101 GET /app/ws?room=…&token=… (127.0.0.1) 2.1ms'
    >>> RedactLogLines.redact("414 GET /?q=" + "x" * 70000 + " (127.0.0.1) 0.97ms")[-40:]
    'xxxxxxxxxxxxx… (70031 characters in all)'
    """

    _ARG = re.compile(r"(?<=[?&;])(room|token)=[^&;\s\"']*", re.IGNORECASE)

    @classmethod
    def redact(cls, text: str) -> str:
        text = cls._ARG.sub(r"\1=…", text)
        return text if len(text) <= MAX_LOG_CHARS else f"{text[:MAX_LOG_CHARS]}… ({len(text)} characters in all)"

    @classmethod
    def bound(cls, record: logging.LogRecord) -> logging.LogRecord:
        """``record`` with its message redacted and cut, and its traceback and stack cut (in place)."""
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
        text = _cut_lines(cls._ARG.sub(r"\1=…", text))
        if len(text) <= MAX_TRACEBACK_CHARS:
            return text
        return f"… ({len(text)} characters of traceback in all; its end:)\n{text[-MAX_TRACEBACK_CHARS:]}"

    def filter(self, record: logging.LogRecord) -> bool:
        self.bound(record)
        return True


def install_log_redaction() -> None:
    """Bound every log record the process makes from now on (:meth:`RedactLogLines.bound`), whichever logger
    makes it and whichever handler writes it. Idempotent; the factory in place before is kept and called first."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "bounds_records", False):
        return

    def bounded(*args, **kwargs) -> logging.LogRecord:
        return RedactLogLines.bound(factory(*args, **kwargs))

    bounded.bounds_records = True
    logging.setLogRecordFactory(bounded)
