"""What the server writes to its log: never a room's code or presenter token, never a line someone made huge.

Tornado's access log writes every request's address, and a room's join and presenter links carry the
room's code and token; a link can also be made a megabyte long (the page answers it with "too long",
``server/pages.py``, but the log line would hold the whole link). One filter on the loggers that write
request addresses blanks the room arguments and shortens any line past :data:`MAX_LOG_CHARS`.
"""

from __future__ import annotations

import logging
import re

#: Longest log line kept whole; longer ones keep their start and say how long they were.
MAX_LOG_CHARS = 600
#: The loggers that write request addresses or what a client sent.
LOGGERS = ("tornado.access", "tornado.application", "tornado.general", "bokeh.server", "panel")


class RedactLogLines(logging.Filter):
    """Blank the values of ``room`` and ``token`` in logged URLs, and shorten lines past :data:`MAX_LOG_CHARS`.

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

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


def install_log_redaction() -> None:
    """Put :class:`RedactLogLines` on every logger of :data:`LOGGERS` (idempotent)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactLogLines) for f in logger.filters):
            logger.addFilter(RedactLogLines())
