"""What one client can make the server do, bounded: health checks, documents pulled, a connection that leaves with its
messages unread, the log of HTTP answers, a websocket address.

The server is ``python app.py`` with its shipped settings (server/serve.py); the clients speak Bokeh's own protocol
(:class:`testing.protocol_client.Learner`) or plain HTTP over a socket.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

import psutil
import pytest
from bokeh.protocol import Protocol
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError, websocket_connect

from testing.protocol_client import Learner
from testing.server import shipped_app
from tests.ui.conftest import server_log

#: What a log may grow by for 10,000 requests of one kind from one client.
LOG_BYTES = 10_000


@pytest.fixture(scope="module")
def app_server():
    """``python app.py`` on a free loopback port: yields (port, log path, its psutil process)."""
    log = server_log("server-limits.log")
    with shipped_app(log) as (port, proc):
        yield port, log, psutil.Process(proc.pid)
    text = log.read_text()
    assert "Traceback" not in text, f"the server logged a traceback:\n{text[-5000:]}"


def ws_url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/app/ws"


def run(coro, timeout: float = 120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def _grown(log, before: int) -> str:
    time.sleep(0.5)  # the server writes its last lines
    with open(log, "rb") as f:
        f.seek(before)
        return f.read().decode(errors="replace")


def _requests(port: int, request: bytes, n: int, source: str = "127.0.0.1") -> list[bytes]:
    """Send ``request`` ``n`` times from the loopback address ``source``, pipelined on keep-alive connections (a new
    one when the server closes one); the status codes of the answers."""
    statuses: list[bytes] = []
    while len(statuses) < n:
        batch = min(n - len(statuses), 200)
        with socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0)) as s:
            try:
                s.sendall(request * batch)
            except OSError:  # the server answered and closed before reading them all
                pass
            data = b""
            # a status line each (an answer's body may end right before the next: no line break to split on)
            while len(STATUS.findall(data)) < batch:
                try:
                    chunk = s.recv(1 << 20)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
        got = STATUS.findall(data)[:batch]
        if not got:
            raise AssertionError(f"no answer to {request[:60]!r}…")
        statuses += got
    return statuses


STATUS = re.compile(rb"HTTP/1\.1 (\d{3}) ")


HTTP_KINDS = {
    "a 20 kB path": b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "a bad Host header": b"GET /app/ws HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "a health check for a 5 kB endpoint": b"GET /liveness?endpoint=" + b"b" * 5_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_ten_thousand_bad_requests_of_a_kind_from_one_client_leave_under_10_kB_of_log(app_server, kind):
    """Each answered 4xx and logged a line each time: 654 bytes for a 20 kB path (6.5 MB for 10,000), 57 for a bad
    Host header, 1,307 (two lines) for a health check of a 5 kB endpoint. Now each line is cut, and a client's lines
    back off: the first five, then the 8th, 16th, 32nd…"""
    port, log, _ = app_server
    before = log.stat().st_size
    statuses = _requests(port, HTTP_KINDS[kind], 10_000)
    assert len(statuses) == 10_000 and all(s.startswith(b"4") for s in statuses), statuses[:3]
    grown = _grown(log, before)
    assert len(grown.encode()) < LOG_BYTES, grown[:3000]
    assert grown.count("\n") >= 1  # the first are logged: the lines were kept, not thrown away


def test_two_thousand_handshakes_refused_for_their_origin_from_one_client_leave_under_10_kB_of_log(app_server):
    """Bokeh's line for a refused origin quotes the whole origin and the allowlist and names no client, so no
    per-client back-off applied: 10,000 handshakes with a 2 kB ``Origin`` wrote 6.57 MB. Now one short line names the
    client, backed off per client."""
    port, log, _ = app_server
    origin = "http://" + "e" * 2_000 + ".example"
    handshake = (f"GET /app/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                 f"Origin: {origin}\r\n\r\n").encode()
    before = log.stat().st_size
    statuses = _requests(port, handshake, 2_000, source="127.0.0.21")
    assert statuses == [b"403"] * 2_000
    grown = _grown(log, before)
    assert len(grown.encode()) < LOG_BYTES, grown[:3000]
    assert "127.0.0.21" in grown and "eeeeeeeeee" * 20 not in grown  # the client named; the origin's host cut


def test_a_health_check_builds_a_page_at_most_once_in_a_while_whoever_asks(app_server):
    """One keep-alive connection asking for ``/liveness?endpoint=/app`` built 467 pages in 30 s, outside the build gate.
    Now 200 health checks in a row cost about one build: the server's CPU for them is a fraction of 200 builds'."""
    port, _, proc = app_server
    url = f"http://127.0.0.1:{port}/liveness?endpoint=/app"
    with urllib.request.urlopen(url, timeout=60) as r:  # the first builds a page (or finds one built)
        assert json.loads(r.read()) == {"/app": True}
    cpu = proc.cpu_times()
    statuses = _requests(port, b"GET /liveness?endpoint=/app HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200)
    used = sum(proc.cpu_times()[:2]) - sum(cpu[:2])
    assert statuses == [b"200"] * 200
    # a page's build is 0.1-0.2 s of CPU: 200 of them 20 s and more; at most a build or two and the answers here
    assert used < 3.0, used
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/liveness?endpoint=" + "b" * 5000, timeout=60)
    assert refused.value.code == 400 and b"bbbb" not in refused.value.read()  # not repeated back


async def _pull_twice(port: int) -> bool:
    """A page that asks for its document a second time on its connection; True if the server closed it."""
    page = Learner(ws_url(port))
    await page.connect()
    await Protocol().create("PULL-DOC-REQ").send(page.sock)
    try:
        while True:
            fragment = await asyncio.wait_for(page.sock.read_message(), 30)
            if fragment is None:
                return True
    except asyncio.TimeoutError:
        return False


def test_a_second_document_request_on_one_connection_closes_it_with_one_line(app_server):
    """A page asks for its document once; each answer re-serialised the whole page (about 1 MB, 65 ms of the loop), and
    a page asking 20 times a second held everyone else's keys."""
    port, log, _ = app_server
    before = log.stat().st_size
    assert run(_pull_twice(port))
    grown = _grown(log, before)
    assert grown.count("PULL-DOC-REQ") == 1, grown


async def _keys_then_leave(port: int, seconds: float, most: int = 40_000) -> None:
    """Press row keys as fast as the socket takes them for ``seconds`` (at most ``most`` of them), then close: as a
    tab closed, the messages the server has not read yet are left behind."""
    page = Learner(ws_url(port))
    await page.connect()

    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    for i in range(most):
        if loop.time() > deadline:
            break
        await page.key(str(i % 3 + 1))
        # a write the socket takes at once never yields to the loop: without this the loop would not see its time
        # run out while the socket takes every write (a worker once grew to 24 GB); and no write is cancelled
        await asyncio.sleep(0)
    page.leave()


def test_what_a_connection_sent_and_left_behind_is_dropped_without_a_word(app_server):
    """A client that sent 10 s of row keys and left had its 73,000 allowed messages applied for 15 s more, with a
    warning for each answer that could not be sent, an unretrieved WebSocketClosedError and Bokeh's AssertionError.
    Now the server stops at the first sign the connection has gone, and the log says nothing of the dropped messages
    (the server's CPU once the client has gone is a benchmark's, not this test's)."""
    port, log, _ = app_server
    before = log.stat().st_size
    run(_keys_then_leave(port, 2.0))
    closed = "WebSocket connection closed"
    deadline = time.monotonic() + 300  # a loaded machine's server reads what was left at a fraction of a core
    while closed not in _grown(log, before) and time.monotonic() < deadline:  # the server has seen it go
        time.sleep(0.1)  # a look at the log ten times a second: a loop of looks took a core from the server
    grown = _grown(log, before)
    assert closed in grown, grown[-3000:]
    for said in ("Failed sending message", "WebSocketClosedError", "AssertionError", "Traceback",
                 "never retrieved"):
        assert said not in grown, grown[:3000]


#: The server's wait for a page's socket to take a write (``EXPLORER_WRITE_WAIT_S``), short here: the test is that a
#: page that reads nothing is let go, not how long the shipped wait is.
WRITE_WAIT = 3


async def _keys_never_read(port: int) -> None:
    """Press row keys and read nothing the server sends, the socket kept open, until the server closes it."""
    page = Learner(ws_url(port))
    await page.connect()
    stream, sent = page.sock._socket.protocol.stream, 0
    try:
        while not stream.closed():
            await page.key(str(sent % 3 + 1))
            sent += 1
            # Bokeh's client does not wait for its socket to take a write: this one does, as a browser's socket does
            # (a client that kept writing into its own memory grew by gigabytes while the server held its socket)
            while stream.writing() and not stream.closed():
                await asyncio.sleep(0.01)
    except (WebSocketClosedError, StreamClosedError):
        pass


def test_a_page_that_reads_nothing_the_server_sends_is_let_go():
    """A client that pressed row keys and never read an answer, its socket kept open, held its session for as long
    as the socket stayed open: once the socket's buffers were full of answers, the server's next one waited for ever,
    and with it the key it answered and everything the client sent after. Now a write the socket has not taken for
    ``EXPLORER_WRITE_WAIT_S`` closes the connection, with one log line, and the session hears its page has left."""
    log = server_log("server-reads-nothing.log")
    with shipped_app(log, env={"EXPLORER_WRITE_WAIT_S": str(WRITE_WAIT)}) as (port, _):
        before = log.stat().st_size
        run(_keys_never_read(port), timeout=600)  # the client's write fails: the server has closed the connection
        closed = "WebSocket connection closed"
        deadline = time.monotonic() + 300
        while closed not in _grown(log, before) and time.monotonic() < deadline:
            time.sleep(0.1)
        grown = _grown(log, before)
    assert f"it took nothing the server sent for {WRITE_WAIT} s" in grown and closed in grown, grown[-3000:]
    for said in ("Failed sending message", "Traceback", "never retrieved"):
        assert said not in grown, grown[:3000]
    assert "Traceback" not in log.read_text()


async def _handshake(url: str) -> int:
    from bokeh.util.token import generate_jwt_token, generate_session_id

    token = generate_jwt_token(generate_session_id())
    try:
        sock = await websocket_connect(HTTPRequest(url), subprotocols=["bokeh", token])
    except HTTPClientError as e:
        return e.code
    sock.close()
    return 101


def test_a_websocket_address_over_16_kB_is_refused_as_a_page_address_is(app_server):
    """The page's address is limited to 16 kB (HTTP 414); its websocket's was not: a 1 MB one cost its session 6 MB,
    kept for its life."""
    port, _, _ = app_server
    assert run(_handshake(ws_url(port) + "?x=" + "y" * 100)) == 101
    assert run(_handshake(ws_url(port) + "?x=" + "y" * 20_000)) == 414


def test_a_link_that_sets_where_the_page_loads_its_scripts_from_is_refused(app_server):
    """Panel wrote ``bokeh-absolute-url`` from a page's own address, unescaped, into the page's ``<script src>``: a
    link with ``"><script>…`` in it ran its script on this site. The page and its websocket refuse the argument."""
    port, _, _ = app_server
    evil = urllib.parse.quote('x"></script><script>document.title="PWNED"</script><script src="x')
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/app?bokeh-absolute-url={evil}", timeout=60)
    assert refused.value.code == 400
    page = refused.value.read().decode()
    assert "PWNED" not in page and "not a link Attention Explorer makes" in page
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/app?q=0.5,1", timeout=60) as ok:  # a link of ours
        assert ok.status == 200
    assert run(_handshake(ws_url(port) + "?bokeh-absolute-url=" + evil)) == 400
