"""Hostile websocket traffic against a real server: foreign origins, oversized and malformed messages.

The server is ``python app.py`` with its shipped settings (server/serve.py); the clients speak Bokeh's own
protocol through :class:`testing.protocol_client.Learner`, so what is sent is what a browser could send.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from testing.protocol_client import Learner, ProtocolPresenter
from tests.ui.conftest import ROOT, free_port, server_log, stop, wait_for_http

#: server/serve.py's default EXPLORER_WS_MAX_MESSAGE_BYTES (1 MiB), far below Bokeh's 20 MB.
MAX_MESSAGE = 1024 * 1024


@pytest.fixture(scope="module")
def app_server():
    """``python app.py`` on a free loopback port: yields (port, log path)."""
    port = free_port()
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1"}
    env.pop("BOKEH_ALLOW_WS_ORIGIN", None)
    log = server_log("server-hostile.log")
    with open(log, "w+") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/", proc)
            yield port, log
        finally:
            stop(proc)
    text = log.read_text()
    assert "Traceback" not in text, f"the server logged a traceback:\n{text}"


def ws_url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/app/ws"


def run(coro, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def _handshake(port: int, origin: str) -> None:
    from bokeh.util.token import generate_jwt_token, generate_session_id

    token = generate_jwt_token(generate_session_id())
    sock = await websocket_connect(HTTPRequest(ws_url(port), headers={"Origin": origin}),
                                   subprotocols=["bokeh", token])
    sock.close()


def test_a_websocket_from_a_foreign_origin_is_refused(app_server):
    port, _ = app_server
    with pytest.raises(HTTPClientError) as refused:
        run(_handshake(port, "http://evil.example"))
    assert refused.value.code == 403
    # the page's own origin is let in: the refusal above is the origin check, not a broken handshake
    run(_handshake(port, f"http://localhost:{port}"))


async def _learner(port: int) -> Learner:
    learner = Learner(ws_url(port))
    await learner.connect()
    return learner


async def _drag_and_read(learner: Learner, x: float, y: float, timeout: float = 30) -> tuple[str, str]:
    """Tap at (x, y) and wait for the readout that shows it; returns the q the server wrote."""
    listener = asyncio.ensure_future(learner.listen())
    try:
        await learner.pointer("tap", x, y)
        deadline = time.monotonic() + timeout
        key = (f"{x:.3f}", f"{y:.3f}")
        while time.monotonic() < deadline:
            if any(shown == key for shown, _ in learner.shown):
                return key
            await asyncio.sleep(0.05)
        raise AssertionError(f"the readout never showed q = {key}; it showed {[s for s, _ in learner.shown]}")
    finally:
        learner.close()
        listener.cancel()


async def _oversized(port: int) -> bool:
    """Send one message just over the cap; True if the server closed the socket."""
    learner = await _learner(port)
    await learner.sock.write_message("x" * (MAX_MESSAGE + 1))
    try:
        while True:
            fragment = await asyncio.wait_for(learner.sock.read_message(), 20)
            if fragment is None:
                return True
    except asyncio.TimeoutError:
        return False


def test_an_oversized_message_closes_only_its_own_socket(app_server):
    port, _ = app_server
    assert run(_oversized(port)), "a message over the 1 MiB cap did not close the websocket"

    async def after():
        return await _drag_and_read(await _learner(port), 2.0, -1.0)

    assert run(after()) == ("2.000", "-1.000")  # the server still serves the next learner


async def _malformed(port: int) -> list[tuple[str, str]]:
    """One session sends drag positions a page never would, then a good one."""
    from bokeh.protocol.messages.patch_doc import patch_doc

    learner = await _learner(port)
    listener = asyncio.ensure_future(learner.listen())
    try:
        # BokehJS writes non-finite numbers this way (JSON has no NaN or Infinity)
        nan, inf = {"type": "number", "value": "nan"}, {"type": "number", "value": "+inf"}
        for x, y, seq, start in [(nan, 1.0, 1, True), (inf, 0.0, 2, True), (1e308, -1e308, 3, False),
                                 ("1", None, 4, True), (None, None, 5, True), ([1], {"a": 2}, 6, True),
                                 (0.5, 0.5, "7", True), (0.5, 0.5, 8, "yes"), (0.5, 0.5, True, True)]:
            new = {"type": "map", "entries": [["x", [x]], ["y", [y]], ["seq", [seq]], ["start", [start]],
                                              ["end", [True]]]}
            content = {"events": [{"kind": "ModelChanged", "model": {"id": learner.channel_id}, "attr": "data",
                                   "new": new}]}
            await patch_doc(patch_doc.create_header(), {}, content).send(learner.sock)
        # and Bokeh's own pointer events, which the server no longer listens to: ignored
        await learner._send_event({"type": "map", "entries": [["model", {"id": learner.figure_id}], ["sx", 0.0],
                                                              ["sy", 0.0], ["x", 2.0], ["y", 2.0]]}, name="tap")
        await learner.pointer("tap", 0.5, 0.25)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and ("0.500", "0.250") not in [s for s, _ in learner.shown]:
            await asyncio.sleep(0.05)
        return [s for s, _ in learner.shown]
    finally:
        learner.close()
        listener.cancel()


def test_malformed_pointer_events_change_nothing_and_the_session_lives_on(app_server):
    port, log_path = app_server
    shown = run(_malformed(port))
    # clamped to the plane (−1.5 … 2.5), never NaN or infinite; the good tap afterwards is served
    assert shown[-1] == ("0.500", "0.250"), shown
    for x, y in shown:
        assert -1.5 <= float(x) <= 2.5 and -1.5 <= float(y) <= 2.5, shown
    assert "nan" not in " ".join(x + y for x, y in shown).lower()


def live_url(port: int, code: str) -> str:
    return f"ws://127.0.0.1:{port}/room-live?room={code}"


async def _live_channel(port: int, code: str, origin: str | None = None):
    headers = {"Origin": origin} if origin else {}
    return await websocket_connect(HTTPRequest(live_url(port, code), headers=headers))


def test_a_rooms_live_channel_is_read_only_and_for_the_pages_origin_only(app_server):
    """server/room_live.py: the presenter's query reaches followers' pages, and nothing else gets in."""
    port, _ = app_server
    presenter = ProtocolPresenter(f"http://127.0.0.1:{port}/")
    try:
        code = presenter.start()  # presses Present over Bokeh's protocol, opens the presenter link

        with pytest.raises(HTTPClientError) as refused:
            run(_live_channel(port, code, "http://evil.example"))
        assert refused.value.code == 403

        async def no_such_room():
            channel = await _live_channel(port, "ZZZZZZ")
            assert await channel.read_message() is None
            return channel.close_code

        assert run(no_such_room()) == 4404

        async def follow_a_move():
            channel = await _live_channel(port, code.lower(), f"http://localhost:{port}")
            await asyncio.sleep(1.0)  # the handler has registered the channel with the room
            presenter._run(presenter.me.pointer("tap", 1.5, -0.5))
            message = json.loads(await asyncio.wait_for(channel.read_message(), 30))
            channel.write_message("a follower cannot drive the room")
            while await channel.read_message() is not None:  # texts already on their way, then the close
                pass
            return message, channel.close_code

        message, close_code = run(follow_a_move())
        assert message["query"] == [1.5, -0.5] and message["version"] >= 1
        assert close_code == 4400
    finally:
        presenter.close()


async def _junk_burst(port: int, frames: int) -> None:
    """A connection that handshakes properly, then sends ``frames`` four-byte frames no client would:
    text that is not JSON (Bokeh logs a traceback for each message of three), then binary ones."""
    learner = await _learner(port)
    for i in range(frames):
        learner.sock._socket.write_message("junk" if i < frames // 2 else b"\x00\x01\x02\x03", binary=i >= frames // 2)
    try:
        while await asyncio.wait_for(learner.sock.read_message(), 30) is not None:
            pass
    except asyncio.TimeoutError:
        pass
    learner.close()


async def _bad_handshake(port: int) -> None:
    """A websocket handshake without Bokeh's subprotocol and token."""
    sock = await websocket_connect(HTTPRequest(ws_url(port)))
    while await asyncio.wait_for(sock.read_message(), 30) is not None:
        pass


def test_a_burst_of_junk_frames_logs_one_line_and_spoils_nobody_elses_page(app_server):
    port, log_path = app_server

    async def burst_beside_a_learner():
        other = await _learner(port)
        burst = asyncio.ensure_future(_junk_burst(port, 10_000))
        await asyncio.sleep(0.2)
        shown = await _drag_and_read(other, 1.25, 0.5)
        await burst
        return shown

    before = log_path.stat().st_size
    assert run(burst_beside_a_learner()) == ("1.250", "0.500")  # another session's numbers, on time
    run(_bad_handshake(port))
    time.sleep(1.0)  # the server writes its last lines
    grown = log_path.read_text()[before:]
    assert len(grown.encode()) < 10_000, f"the burst wrote {len(grown)} bytes of log:\n{grown[:3000]}"
    refusals = [line for line in grown.splitlines() if "refused" in line.lower()]
    assert len(refusals) == 2, grown  # one line for the junk connection, one for the bad handshake
    assert "Traceback" not in grown


def test_a_link_too_long_gets_a_page_that_says_so_and_a_short_log_line(app_server):
    import urllib.error
    import urllib.request

    port, log_path = app_server
    before = log_path.stat().st_size
    for length in (20_000, 70_000, 500_000):  # Tornado used to answer nothing past 64 KB
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/?q=" + "1" * length, timeout=30)
        assert answer.value.code == 414
        assert "This link is too long" in answer.value.read().decode()
    # an ordinary link is served as before
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/?q=1,1&row=NLP", timeout=30) as page:
        assert page.status == 200
    time.sleep(0.5)
    grown = log_path.read_text()[before:]
    assert len(grown) < 3_000 and "characters in all" in grown, grown[:2000]


async def _switch_and_click(port: int) -> tuple[list[str], tuple[str, str]]:
    """Tick "Step through" and press Next and Back at once, six times over; then tap q to (1, 1)."""
    from bokeh.protocol.messages.patch_doc import patch_doc

    from testing.protocol_client import find_objects

    learner = Learner(ws_url(port))
    await learner.connect(keep_doc=True)
    buttons = {o["attributes"].get("label"): o["id"] for o in find_objects(learner.doc, "Button")}
    step = next(o["id"] for o in find_objects(learner.doc, "CheckboxGroup")
                if o["attributes"].get("labels") == ["Step through"])
    listener = asyncio.ensure_future(learner.listen())
    try:
        for i in range(6):
            change = {"kind": "ModelChanged", "model": {"id": step}, "attr": "active", "new": [0] if i % 2 == 0 else []}
            await patch_doc(patch_doc.create_header(), {}, {"events": [change]}).send(learner.sock)
            await learner.click(buttons["Next ▶"])
            await learner.click(buttons["◀ Back"])
        await asyncio.sleep(2)
        lines = [line for line, _ in learner.lines]
    finally:
        listener.cancel()
        learner.close()
    return lines, await _drag_and_read(await _learner(port), 1.0, 1.0)


def test_a_switch_and_buttons_pressed_at_once_are_all_taken_and_the_page_lives_on(app_server):
    """A page's events that arrive while another is pending run without the session's lock (Panel's design);
    every change they make to the page must still reach it (server/transport.py hold_page_events).
    Without that, Bokeh refused the first such change, logged a traceback per event and the page froze."""
    port, log_path = app_server
    lines, shown = run(_switch_and_click(port))
    # the step-through's readout for each Next and Back: the query of "love", q = (0, 1) (Section 6)
    assert lines and all(line == 'Query of "love": q = (0.000, 1.000)' for line in lines), lines
    assert shown == ("1.000", "1.000")
    assert "_pending_writes" not in log_path.read_text()


def _server_process(port: int):
    """The app server listening on ``port`` (a child of this test process)."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            if any(c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in child.net_connections("tcp")):
                return child
        except psutil.Error:
            continue
    raise AssertionError(f"no process listens on {port}")


async def _write(learner: Learner, *events: dict) -> bool:
    """Send one patch of ``events``; True if the server then closed the socket (within 3 s)."""
    from bokeh.protocol.messages.patch_doc import patch_doc

    await patch_doc(patch_doc.create_header(), {}, {"events": list(events)}).send(learner.sock)
    try:
        while True:
            if await asyncio.wait_for(learner.sock.read_message(), 3) is None:
                return True
    except asyncio.TimeoutError:
        return False


def test_writes_no_page_makes_are_dropped_or_refused_and_hold_no_memory(app_server):
    """Bokeh applies a page's write to any property of any model: one session wrote 0.9 MB into the ``name`` of
    each of its 104 models and the server grew by 96 MB in 4 s; 254 kB of gzip-compressed array bytes, which
    Bokeh inflates before anything reads them, grew it by 520 MB. Now a write to a property no page writes is
    dropped, and a large write, a compressed array, a new model or a new root closes the socket."""
    import base64
    import gzip

    port, log_path = app_server
    proc = _server_process(port)

    async def attacks():
        rss = [proc.memory_info().rss]
        # a small write into a model's name: dropped, the session lives on and is served
        learner = await _learner(port)
        name = {"kind": "ModelChanged", "model": {"id": learner.readout_id}, "attr": "name", "new": "pwned"}
        assert not await _write(learner, name, name)
        served = await _drag_and_read(learner, 1.5, 0.5)
        # a large one, from three sessions in turn: each closes its socket at once
        closed = []
        for _ in range(3):
            learner = await _learner(port)
            big = {"kind": "ModelChanged", "model": {"id": learner.readout_id}, "attr": "name", "new": "x" * 900_000}
            closed.append(await _write(learner, big))
            learner.close()
        # 100 MB of zeros in 100 kB of gzip, as the bytes of an array written into the drag's channel
        learner = await _learner(port)
        bomb = base64.b64encode(gzip.compress(bytes(100_000_000), compresslevel=9)).decode()
        array = {"type": "ndarray", "array": {"type": "bytes", "data": bomb}, "shape": [12_500_000],
                 "dtype": "float64", "order": "little"}
        new = {"type": "map", "entries": [["x", array], ["y", [0.0]], ["seq", [1]], ["start", [True]],
                                          ["end", [True]]]}
        closed.append(await _write(learner, {"kind": "ModelChanged", "model": {"id": learner.channel_id},
                                             "attr": "data", "new": new}))
        learner.close()
        # a new root, and a new model inside a write
        learner = await _learner(port)
        closed.append(await _write(learner, {"kind": "RootAdded", "model": {"type": "object", "name": "Div",
                                                                              "id": "p-new", "attributes": {}}}))
        learner.close()
        learner = await _learner(port)
        div = {"type": "object", "name": "Div", "id": "p-new2", "attributes": {"text": "x"}}
        closed.append(await _write(learner, {"kind": "ModelChanged", "model": {"id": learner.channel_id},
                                             "attr": "data", "new": {"type": "map", "entries": [["x", [div]]]}}))
        learner.close()
        await asyncio.sleep(2.0)
        rss.append(proc.memory_info().rss)
        return served, closed, rss

    before = log_path.stat().st_size
    served, closed, (rss_before, rss_after) = run(attacks(), timeout=120)
    assert served == ("1.500", "0.500")
    assert closed == [True] * 6, closed
    assert rss_after - rss_before < 30e6, f"the server grew by {(rss_after - rss_before) / 1e6:.0f} MB"
    time.sleep(0.5)
    grown = log_path.read_text()[before:]
    assert grown.count("Ignored a page's writes to name") == 1, grown
    assert "Traceback" not in grown
