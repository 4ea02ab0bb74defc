"""server/static_gzip.py: a static file is compressed once per process (gzip, and Brotli for a browser that accepts it),
and every page gets the same bytes."""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import brotli
import tornado.web
from tornado.testing import AsyncHTTPTestCase

import server.static_gzip as static_gzip
from server.static_gzip import StaticCompression

#: a JavaScript file of about BokehJS's shape: 300 kB, compressible, written in several of Tornado's 64 kB chunks
SCRIPT = b"".join(b"function f%d(a, b) { return a * %d + b; }\n" % (i, i) for i in range(8000))


class Counting(StaticCompression):
    """Counts the gzip streams the transform opens (one per response it compresses itself)."""

    opened = 0

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        result = super().transform_first_chunk(status_code, headers, chunk, finishing)
        if getattr(self, "_gzip_file", None) is not None and not self._sent_kept:
            Counting.opened += 1
        return result


class StaticCompressionTest(AsyncHTTPTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "app.js"), "wb") as f:
            f.write(SCRIPT)
        StaticCompression.kept.clear()
        self.store, StaticCompression.store = StaticCompression.store, None  # this process's work alone
        Counting.opened = 0
        super().setUp()

    def tearDown(self):
        super().tearDown()
        StaticCompression.store = self.store

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
        assert [(*key[:2], key[-1]) for key in StaticCompression.kept] == [("/static/app.js", bodies[0].headers["Etag"],
                                                                            "gzip")]

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
        assert StaticCompression.kept == {} and Counting.opened == 3

    def wait_for_brotli(self):
        """The worker thread's Brotli bodies, done (the test waits on their futures, not on a clock)."""
        for future in list(StaticCompression.pending.values()):
            future.result(timeout=120)

    def test_a_browser_that_accepts_brotli_gets_it_once_it_is_made_once_and_others_gzip(self):
        compress = static_gzip.brotli.compress
        calls = []
        static_gzip.brotli.compress = lambda data, **kw: calls.append(len(data)) or compress(data, **kw)
        try:
            accept = "gzip, deflate, br, zstd"  # Chromium's
            first = self.get("/static/app.js?v=1", **{"Accept-Encoding": accept})  # gzip while Brotli is made
            self.wait_for_brotli()
            later = [self.get(f"/static/app.js?v={v}", **{"Accept-Encoding": accept}) for v in (1, 2)]
            gzip_only = self.get("/static/app.js")
            refused = self.get("/static/app.js", **{"Accept-Encoding": "gzip, br;q=0"})
            brotli_only = self.fetch("/static/app.js", headers={"Accept-Encoding": "br"}, decompress_response=False)
        finally:
            static_gzip.brotli.compress = compress
        assert first.headers["Content-Encoding"] == "gzip" and gzip.decompress(first.body) == SCRIPT
        for r in [*later, brotli_only]:
            assert r.code == 200 and r.headers["Content-Encoding"] == "br" and r.headers["Vary"] == "Accept-Encoding"
            assert brotli.decompress(r.body) == SCRIPT and int(r.headers["Content-Length"]) == len(r.body)
        assert len(later[0].body) < len(first.body)  # the point of it
        for r in (gzip_only, refused):
            assert r.headers["Content-Encoding"] == "gzip" and r.body == first.body
        assert calls == [len(SCRIPT)]  # the whole file, compressed once
        assert Counting.opened == 1  # gzip once too
        assert sorted(key[-1] for key in StaticCompression.kept) == ["br", "gzip"]

    def test_a_plain_client_that_accepts_brotli_gets_the_file_then_brotli(self):
        first = self.fetch("/static/app.js", headers={"Accept-Encoding": "br"}, decompress_response=False)
        self.wait_for_brotli()
        second = self.fetch("/static/app.js", headers={"Accept-Encoding": "br"}, decompress_response=False)
        assert first.body == SCRIPT and "Content-Encoding" not in first.headers
        assert second.headers["Content-Encoding"] == "br" and brotli.decompress(second.body) == SCRIPT

    def test_no_brotli_for_what_is_not_a_whole_static_file(self):
        self.get("/static/app.js", Range="bytes=0-99", **{"Accept-Encoding": "gzip, br"})
        assert StaticCompression.pending == {} and StaticCompression.kept == {}

    def test_a_brotli_body_made_by_one_process_is_read_by_the_next_from_the_store(self):
        """A server restarted, or a second process, reads the Brotli body the first one made (the file's own bytes
        again once decompressed) instead of compressing BokehJS again; a body that is not the file's is made anew."""
        StaticCompression.store = Path(tempfile.mkdtemp())
        accept = {"Accept-Encoding": "gzip, br"}
        compress = static_gzip.brotli.compress
        calls = []
        static_gzip.brotli.compress = lambda data, **kw: calls.append(len(data)) or compress(data, **kw)
        try:
            self.get("/static/app.js", **accept)
            self.wait_for_brotli()
            made = self.get("/static/app.js", **accept).body
            (stored,) = StaticCompression.store.iterdir()
            StaticCompression.kept.clear()  # the next process
            self.get("/static/app.js", **accept)
            self.wait_for_brotli()
            read = self.get("/static/app.js", **accept).body
            stored.write_bytes(compress(b"not the file"))  # a body of another file under its name
            StaticCompression.kept.clear()
            self.get("/static/app.js", **accept)
            self.wait_for_brotli()
            again = self.get("/static/app.js", **accept).body
        finally:
            static_gzip.brotli.compress = compress
        assert brotli.decompress(made) == brotli.decompress(read) == brotli.decompress(again) == SCRIPT
        assert read == made and calls == [len(SCRIPT), len(SCRIPT)]  # made, read, made again
        assert brotli.decompress(stored.read_bytes()) == SCRIPT


def test_the_store_is_the_users_cache_or_the_named_folder_or_none(tmp_path):
    assert static_gzip.brotli_store({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "attention-explorer" / "static"
    assert static_gzip.brotli_store({"EXPLORER_STATIC_CACHE": str(tmp_path / "kept")}) == tmp_path / "kept"
    assert static_gzip.brotli_store({"EXPLORER_STATIC_CACHE": ""}) is None
    (tmp_path / "file").write_text("")
    assert static_gzip.brotli_store({"EXPLORER_STATIC_CACHE": str(tmp_path / "file" / "under")}) is None
