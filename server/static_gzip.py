"""Brotli or gzip for HTTP responses, with each static file compressed once per process instead of once per page.

A page loads megabytes of BokehJS and Panel JavaScript from the server's ``static/`` routes; Tornado's gzip
(``compress_response``) compresses them again for every page, a long turn of the server's loop each time, to the
same bytes every time (``python -m bench.static_gzip``; its figures in ``bench/RESULTS.md``).
:class:`StaticCompression` is Tornado's ``GZipContentEncoding`` that keeps the compressed body of a whole
``static/`` file it has compressed, keyed by the file's path, ``Etag`` (a hash of its content), modification time,
length (a changed file is a new key) and the encoding, and sends the kept body to the next page that asks.

Brotli (RFC 7932, the ``brotli`` package) at its densest setting makes the scripts smaller than gzip does, but takes
far longer for BokehJS: never on the server's loop. The first response of a file to a browser that accepts ``br``
goes out gzip-compressed (or plain) as before, and hands the file's bytes to one worker thread (Brotli releases the
GIL while it compresses) that keeps their Brotli body; from then on every browser that accepts ``br`` gets that
body, the others gzip.

A Brotli body made is also written to a folder of this user's (:func:`brotli_store`: ``EXPLORER_STATIC_CACHE``, or
``~/.cache/attention-explorer/static``), named by the file's ``Etag`` and length, and the next process that needs it
reads it there instead of compressing again, once it has checked that it decompresses to the file's own bytes: a
server restarted, several processes on one machine, or a test suite's many servers compress BokehJS once, not each
(its CPU in ``bench/RESULTS.md``). A folder that cannot be made or written leaves each process compressing as before.

A path's query string is not part of the key (``?v=`` names a version, the ``Etag`` tells it), so requests for one
file with ever new query strings keep one body, and what is kept is bounded: bodies of whole, successful
(200) GET responses only, each under :data:`MAX_BODY` bytes, all under :data:`MAX_KEPT`.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import tempfile
import threading
from pathlib import Path

import brotli
from tornado import httputil
from tornado.web import GZipContentEncoding

__all__ = ["BROTLI_QUALITY", "MAX_BODY", "MAX_KEPT", "StaticCompression", "accepts_brotli", "brotli_body",
           "brotli_store"]

#: The largest compressed body kept: several times BokehJS's, the largest a page loads.
MAX_BODY = 4 * 1024 * 1024
#: All kept bodies together stay under this: many times a page's files, compressed.
MAX_KEPT = 32 * 1024 * 1024
#: Brotli's densest setting (0-11): compressed once per process, on a worker thread, so its cost is paid once.
BROTLI_QUALITY = 11


def brotli_store(environ=os.environ) -> Path | None:
    """The folder Brotli bodies are kept in across processes: ``EXPLORER_STATIC_CACHE`` (empty: none), or this user's
    cache folder's ``attention-explorer/static``; None where it cannot be made."""
    given = environ.get("EXPLORER_STATIC_CACHE")
    if given is not None and not given.strip():
        return None
    if given:
        folder = Path(given)
    else:
        base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = Path(base) / "attention-explorer" / "static"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def brotli_body(raw: bytes, name: str, store: Path | None) -> bytes:
    """``raw``'s Brotli body, read from ``store`` under ``name`` if a process made it before (and it decompresses to
    ``raw``), else made now and written there for the next. Run on the worker thread."""
    path = store / name if store is not None else None
    if path is not None:
        try:
            body = path.read_bytes()
            if brotli.decompress(body) == raw:
                return body
        except (OSError, brotli.error):
            pass
    body = brotli.compress(raw, quality=BROTLI_QUALITY)
    if path is not None:
        try:  # whole or not at all: another process may read it meanwhile
            with tempfile.NamedTemporaryFile(dir=store, prefix=".", delete=False) as out:
                out.write(body)
            os.replace(out.name, path)
        except OSError:
            pass
    return body


def accepts_brotli(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` header lists ``br`` with a weight above 0 (RFC 9110, 12.5.3).

    >>> accepts_brotli("gzip, deflate, br, zstd"), accepts_brotli("gzip"), accepts_brotli("br;q=0, gzip")
    (True, False, False)
    """
    for item in accept_encoding.split(","):
        coding, *params = (part.strip().lower() for part in item.split(";"))
        if coding == "br":
            weight = next((p[2:] for p in params if p.startswith("q=")), "1")
            try:
                return float(weight) > 0
            except ValueError:
                return False
    return False


class StaticCompression(GZipContentEncoding):
    """Tornado's gzip transform, keeping each compressed ``static/`` file once per process, and Brotli (above)."""

    #: (path, Etag, Last-Modified, Content-Length, encoding) -> the compressed body; the process's, shared by its
    #: pages (bounded: :data:`MAX_KEPT`)
    kept: dict[tuple[str, ...], bytes] = {}
    #: The keys of Brotli bodies being compressed, each once
    pending: dict[tuple[str, ...], concurrent.futures.Future] = {}
    _lock = threading.Lock()
    #: One thread for Brotli: at most one core of the machine for it, never the loop's
    _worker: concurrent.futures.ThreadPoolExecutor | None = None
    #: Where Brotli bodies are kept across processes (:func:`brotli_store`), None for nowhere
    store: Path | None = brotli_store()

    def __init__(self, request: httputil.HTTPServerRequest) -> None:
        super().__init__(request)
        # a part of a file (a Range request) comes with 206, never kept
        self._path = request.path if request.method == "GET" and "/static/" in request.path else None
        self._brotli = accepts_brotli(request.headers.get("Accept-Encoding", ""))
        self._key: tuple[str, ...] | None = None
        self._parts: list[bytes] | None = None  # the gzip body as it is made, to keep
        self._raw: list[bytes] | None = None  # the file's own bytes as they pass, for Brotli
        self._sent_kept = False
        self._in_first = False

    def transform_first_chunk(self, status_code: int, headers: httputil.HTTPHeaders, chunk: bytes,
                              finishing: bool) -> tuple[int, httputil.HTTPHeaders, bytes]:
        # Tornado's Etag of a static file is worked out once per process (its hash cache): the file's time and
        # length tell a file changed since
        etag, modified, length = (headers.get(name) for name in ("Etag", "Last-Modified", "Content-Length"))
        ctype = headers.get("Content-Type", "").split(";")[0]
        if (self._path is not None and status_code == 200 and etag and modified and length
                and "Content-Encoding" not in headers and self._compressible_type(ctype)):
            self._key = (self._path, etag, modified, length)
        if self._key is not None and self._brotli:
            body = StaticCompression.kept.get((*self._key, "br"))
            if body is not None:
                return status_code, self._send_kept(headers, body, "br"), body
            if (*self._key, "br") not in StaticCompression.pending:
                self._raw = [chunk]  # this response's file, for its Brotli body
        body = StaticCompression.kept.get((*self._key, "gzip")) if self._key is not None and self._gzipping else None
        if body is not None:
            self._send_kept(headers, body, "gzip")
            out = body
        else:
            self._in_first = True  # Tornado's gzip compresses the first chunk through transform_chunk
            status_code, headers, out = super().transform_first_chunk(status_code, headers, chunk, finishing)
            self._in_first = False
            if self._gzipping and self._key is not None:
                self._parts = [out]
        if finishing:
            self._finish()
        return status_code, headers, out

    def transform_chunk(self, chunk: bytes, finishing: bool) -> bytes:
        if self._in_first:
            return super().transform_chunk(chunk, finishing)
        if self._raw is not None:
            self._raw.append(chunk)
        out = b"" if self._sent_kept else super().transform_chunk(chunk, finishing)
        if self._parts is not None:
            self._parts.append(out)
        if finishing:
            self._finish()
        return out

    def _send_kept(self, headers: httputil.HTTPHeaders, body: bytes, encoding: str) -> httputil.HTTPHeaders:
        # the whole kept body now, with the headers a compressed body gets (the same file, so the same type), and
        # nothing of the file's later chunks: no gzip stream opened, not even for this first chunk
        headers["Vary"] = headers["Vary"] + ", Accept-Encoding" if "Vary" in headers else "Accept-Encoding"
        headers["Content-Encoding"] = encoding
        headers["Content-Length"] = str(len(body))
        self._sent_kept = True
        self._gzipping = False
        return headers

    def _finish(self) -> None:
        """The response's last chunk has passed: keep its gzip body, and have its Brotli body made."""
        if self._parts is not None:
            StaticCompression._keep((*self._key, "gzip"), b"".join(self._parts))
            self._parts = None
        if self._raw is not None:
            self._compress_later(b"".join(self._raw))
            self._raw = None

    def _compress_later(self, raw: bytes) -> None:
        """The file's Brotli body, made once on the worker thread and kept for the pages after this one."""
        key = (*self._key, "br")
        cls = StaticCompression
        with cls._lock:
            if key in cls.pending or key in cls.kept:
                return
            if cls._worker is None:
                cls._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="brotli")
            etag = self._key[1].strip('"')
            name = hashlib.sha256(f"{etag}|{self._key[3]}|{BROTLI_QUALITY}|{brotli.__version__}".encode()).hexdigest()
            future = cls.pending[key] = cls._worker.submit(brotli_body, raw, name + ".br", cls.store)

        def done(f: concurrent.futures.Future) -> None:
            try:
                if f.exception() is None:
                    cls._keep(key, f.result())
            finally:
                with cls._lock:
                    cls.pending.pop(key, None)
        future.add_done_callback(done)

    @classmethod
    def _keep(cls, key: tuple[str, ...], body: bytes) -> None:
        with cls._lock:
            if len(body) <= MAX_BODY and sum(map(len, cls.kept.values())) + len(body) <= MAX_KEPT:
                cls.kept[key] = body
