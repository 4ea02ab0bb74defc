"""server/static_gzip.py: a static file is gzip-compressed once per process, and every page gets the same bytes."""

from __future__ import annotations

import gzip
import os
import tempfile

import tornado.web
from tornado.testing import AsyncHTTPTestCase

import server.static_gzip as static_gzip
from server.static_gzip import StaticGZip

#: a JavaScript file of about BokehJS's shape: 300 kB, compressible, written in several of Tornado's 64 kB chunks
SCRIPT = b"".join(b"function f%d(a, b) { return a * %d + b; }\n" % (i, i) for i in range(8000))


class Counting(StaticGZip):
    """Counts the gzip streams the transform opens (one per response it compresses itself)."""

    opened = 0

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        result = super().transform_first_chunk(status_code, headers, chunk, finishing)
        if getattr(self, "_gzip_file", None) is not None and not self._sent_kept:
            Counting.opened += 1
        return result


class StaticGZipTest(AsyncHTTPTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "app.js"), "wb") as f:
            f.write(SCRIPT)
        StaticGZip.kept.clear()
        Counting.opened = 0
        super().setUp()

    def get_app(self):
        return tornado.web.Application([(r"/static/(.*)", tornado.web.StaticFileHandler, {"path": self.dir})],
                                       transforms=[Counting])

    def get(self, path, **headers):
        return self.fetch(path, headers={"Accept-Encoding": "gzip", **headers}, decompress_response=False)

    def test_a_file_is_compressed_once_and_sent_whole_to_every_page(self):
        bodies = [self.get(f"/static/app.js?v={v}") for v in ("1", "1", "2")]  # a new query string: the same file
        for r in bodies:
            assert r.code == 200 and r.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(r.body) == SCRIPT
        assert bodies[0].body == bodies[1].body == bodies[2].body
        assert {r.headers["Vary"] for r in bodies} == {"Accept-Encoding"}
        assert [int(r.headers["Content-Length"]) for r in bodies[1:]] == [len(bodies[0].body)] * 2
        assert Counting.opened == 1
        assert [key[:2] for key in StaticGZip.kept] == [("/static/app.js", bodies[0].headers["Etag"])]

    def test_a_changed_file_is_compressed_again(self):
        first = self.get("/static/app.js")
        with open(os.path.join(self.dir, "app.js"), "wb") as f:
            f.write(SCRIPT[::-1] + b"\n")
        os.utime(os.path.join(self.dir, "app.js"), (1e9, 1e9))
        second = self.get("/static/app.js")
        assert gzip.decompress(first.body) == SCRIPT and gzip.decompress(second.body) == SCRIPT[::-1] + b"\n"
        assert Counting.opened == 2

    def test_ranges_conditional_requests_and_plain_clients_get_what_tornado_gives(self):
        self.get("/static/app.js")  # kept
        part = self.get("/static/app.js", Range="bytes=0-99")
        assert part.code == 206 and gzip.decompress(part.body) == SCRIPT[:100]  # Tornado gzips a part too
        etag = self.get("/static/app.js").headers["Etag"]
        assert self.get("/static/app.js", **{"If-None-Match": etag}).code == 304
        plain = self.fetch("/static/app.js", headers={"Accept-Encoding": "identity"}, decompress_response=False)
        assert plain.body == SCRIPT and "Content-Encoding" not in plain.headers

    def test_what_is_kept_is_bounded(self):
        old = static_gzip.MAX_KEPT
        static_gzip.MAX_KEPT = 100  # smaller than the file's compressed body
        try:
            for _ in range(3):
                assert gzip.decompress(self.get("/static/app.js").body) == SCRIPT
        finally:
            static_gzip.MAX_KEPT = old
        assert StaticGZip.kept == {} and Counting.opened == 3
