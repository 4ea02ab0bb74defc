"""Room codes and the secret that signs presenter links.

A room has a short code anyone may know (the join link carries only ``?room=CODE``) and a presenter token only
the presenter's page knows. A presenter token is not stored anywhere: it is an HMAC-SHA256 of the room's code under
the server's secret (:class:`RoomSecret`), the way Bokeh signs session ids with ``BOKEH_SECRET_KEY``. Only a server
that holds the secret can make one, and every process that holds it can check one, also after a restart. A code
someone chose, or the code of a class's room, is therefore worth nothing without its token.

The codes of ended rooms are kept a day (:class:`EndedCodes` in one process; a key with that expiry in Redis,
``services/rooms_redis.py``) so that no new room gets one while its old presenter's link would still drive it.
"""

from __future__ import annotations

import base64
import bisect
import collections
import hashlib
import hmac
import os
import secrets
from array import array
from dataclasses import dataclass, field

#: Letters and digits a class can read off a projector: no 0/O or 1/I/L to confuse.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
#: Ended codes are not given to a new room for this long (their presenter's link would still drive it).
TOMBSTONE_SECONDS = 24 * 3600.0
#: Ended codes are kept in batches of this many seconds, each dropped whole once all of it is old enough.
TOMBSTONE_BATCH_SECONDS = 3600.0
#: The environment variable holding the server's secret for presenter tokens (see :class:`RoomSecret`).
SECRET_ENV = "EXPLORER_ROOM_SECRET"
#: Shortest secret accepted, in characters; Bokeh asks the same of ``BOKEH_SECRET_KEY``.
MIN_SECRET_CHARS = 32


def normalize_code(text: str | None) -> str | None:
    """The room code in ``text`` (case, spaces and dashes ignored), or None if it cannot be one.

    >>> normalize_code(" k7m-4qx ")
    'K7M4QX'
    >>> normalize_code("K7M4Q0") is None  # 0 is not in the alphabet
    True
    """
    if not text:
        return None
    code = "".join(c for c in text.upper() if c not in " -")
    if len(code) != CODE_LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def draw_code() -> str:
    """A random code of :data:`CODE_LENGTH` letters of :data:`ALPHABET` (31⁶, about 887 million of them)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def code_number(code: str) -> int:
    """A room code as the number it writes in base 31 (:data:`ALPHABET`): under 31⁶ < 2³², so 4 bytes.

    >>> code_number("222222"), code_number("222223")
    (0, 1)
    """
    n = 0
    for c in code:
        n = n * len(ALPHABET) + ALPHABET.index(c)
    return n


class EndedCodes:
    """The codes of ended rooms, each kept at least ``keep`` seconds: 4 bytes a code.

    Kept as numbers (:func:`code_number`) in sorted arrays, one per :data:`TOMBSTONE_BATCH_SECONDS` of endings,
    and an array is dropped whole once its newest code is ``keep`` seconds old. A dict of code strings to times
    kept far more a code (``bench/rooms.py``; see bench/RESULTS.md, "20,000 Present clicks"), and was rebuilt every
    second.
    Not thread-safe: the registry holds its lock.
    """

    def __init__(self, keep: float = TOMBSTONE_SECONDS):
        self.keep = keep
        self._batches: collections.deque[tuple[float, array]] = collections.deque()  # (first ending's time, codes)

    def add(self, code: str, now: float) -> None:
        if not self._batches or now - self._batches[-1][0] >= TOMBSTONE_BATCH_SECONDS:
            self._batches.append((now, array("I")))
        bisect.insort(self._batches[-1][1], code_number(code))

    def expire(self, now: float) -> None:
        """Drop every batch whose codes have all been kept ``keep`` seconds."""
        while self._batches and self._batches[0][0] + TOMBSTONE_BATCH_SECONDS + self.keep <= now:
            self._batches.popleft()

    def __contains__(self, code: str) -> bool:
        n = code_number(code)
        for _, codes in self._batches:
            i = bisect.bisect_left(codes, n)
            if i < len(codes) and codes[i] == n:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(codes) for _, codes in self._batches)


@dataclass(frozen=True)
class RoomSecret:
    """The key that makes and checks presenter tokens: ``token = HMAC-SHA256(key, code)``, base64url.

    ``persistent``: the key came from :data:`SECRET_ENV`, so tokens stay valid across restarts and in
    every process started with the same value. Otherwise it was drawn when the process started, and
    presenter links stop working when the server restarts.
    """

    key: bytes = field(repr=False)
    persistent: bool

    @classmethod
    def from_env(cls, environ=None) -> RoomSecret:
        """The secret in ``EXPLORER_ROOM_SECRET``, or a random one for this process when it is unset.

        Raises ValueError if it is set but shorter than :data:`MIN_SECRET_CHARS` characters.
        """
        raw = (os.environ if environ is None else environ).get(SECRET_ENV, "")
        if not raw:
            return cls(secrets.token_bytes(32), persistent=False)
        if len(raw) < MIN_SECRET_CHARS:
            raise ValueError(f"{SECRET_ENV} must be at least {MIN_SECRET_CHARS} characters long "
                             f"(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
        return cls(raw.encode(), persistent=True)

    def token(self, code: str) -> str:
        """The presenter token of room ``code`` (43 characters of base64url)."""
        mac = hmac.new(self.key, b"attention-explorer presenter\0" + code.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def matches(self, code: str, token: str | None) -> bool:
        """Whether ``token`` is room ``code``'s presenter token (compared in constant time)."""
        return isinstance(token, str) and hmac.compare_digest(self.token(code).encode(), token.encode())
