"""gzip for HTTP responses, with each static file compressed once per process instead of once per page.

A page loads megabytes of BokehJS and Panel JavaScript from the server's ``static/`` routes; Tornado's gzip
(``compress_response``) compresses them again for every page, a long turn of the server's loop each time, to the
same bytes every time (``python -m bench.static_gzip``; its figures in ``bench/RESULTS.md``). :class:`StaticGZip`
is Tornado's ``GZipContentEncoding`` that keeps the compressed body of a whole ``static/`` file it has compressed,
keyed by the file's path, ``Etag`` (a hash of its content), modification time and length (a changed file is a new
key), and sends the kept body to the next page that asks.

A path's query string is not part of the key (``?v=`` names a version, the ``Etag`` tells it), so requests for one
file with ever new query strings keep one body, and what is kept is bounded: bodies of whole, successful
(200) GET responses only, each under :data:`MAX_BODY` bytes, all under :data:`MAX_KEPT`.
"""

from __future__ import annotations

from tornado import httputil
from tornado.web import GZipContentEncoding

__all__ = ["MAX_BODY", "MAX_KEPT", "StaticGZip"]

#: The largest compressed body kept: several times BokehJS's, the largest a page loads.
MAX_BODY = 4 * 1024 * 1024
#: All kept bodies together stay under this: many times a page's files, compressed.
MAX_KEPT = 32 * 1024 * 1024


class StaticGZip(GZipContentEncoding):
    """Tornado's gzip transform, keeping each compressed ``static/`` file once per process (above)."""

    #: (path, Etag, Last-Modified, Content-Length) -> the gzip body; the process's, shared by its pages (bounded:
    #: :data:`MAX_KEPT`)
    kept: dict[tuple[str, ...], bytes] = {}

    def __init__(self, request: httputil.HTTPServerRequest) -> None:
        super().__init__(request)
        # a part of a file (a Range request) comes with 206, never kept
        self._path = request.path if request.method == "GET" and "/static/" in request.path else None
        self._key: tuple[str, ...] | None = None
        self._parts: list[bytes] | None = None
        self._sent_kept = False

    def transform_first_chunk(self, status_code: int, headers: httputil.HTTPHeaders, chunk: bytes,
                              finishing: bool) -> tuple[int, httputil.HTTPHeaders, bytes]:
        # Tornado's Etag of a static file is worked out once per process (its hash cache): the file's time and
        # length tell a file changed since
        etag, modified, length = (headers.get(name) for name in ("Etag", "Last-Modified", "Content-Length"))
        if self._path is not None and status_code == 200 and etag and modified and length and self._gzipping:
            self._key = (self._path, etag, modified, length)
        body = StaticGZip.kept.get(self._key) if self._key else None
        if body is not None:
            # the whole kept body now, with the headers Tornado's gzip gave it (the same file, so the same type), and
            # nothing of the file's later chunks: no gzip stream opened, not even for this first chunk
            headers["Vary"] = headers["Vary"] + ", Accept-Encoding" if "Vary" in headers else "Accept-Encoding"
            headers["Content-Encoding"] = "gzip"
            headers["Content-Length"] = str(len(body))
            self._sent_kept = True
            self._gzipping = False
            return status_code, headers, body
        status_code, headers, chunk = super().transform_first_chunk(status_code, headers, chunk, finishing)
        if not self._gzipping or self._key is None:
            return status_code, headers, chunk
        self._parts = [chunk]
        if finishing:
            self._keep()
        return status_code, headers, chunk

    def transform_chunk(self, chunk: bytes, finishing: bool) -> bytes:
        if self._sent_kept:
            return b""
        chunk = super().transform_chunk(chunk, finishing)
        if self._parts is not None:
            self._parts.append(chunk)
            if finishing:
                self._keep()
        return chunk

    def _keep(self) -> None:
        body = b"".join(self._parts)
        self._parts = None
        if len(body) <= MAX_BODY and sum(map(len, StaticGZip.kept.values())) + len(body) <= MAX_KEPT:
            StaticGZip.kept[self._key] = body
