"""A TCP proxy that delays every chunk by a fixed time in each direction: a far-away server on loopback.

Each direction of each connection has its own queue of (due time, bytes). A reader stamps each chunk as
it arrives; a writer sends the head of the queue once its time has come. Chunks that arrive while an
earlier one waits are not held up behind it, so a 25 ms proxy adds 25 ms one way without limiting
throughput to one chunk per 25 ms, and order is kept. Both sockets have TCP_NODELAY so that the delay is
the proxy's own and not Nagle's or a delayed ACK's.

From the command line (prints the port it listens on, then runs until interrupted)::

    python -m testing.proxy --target 5006 --delay-ms 25

From code, in a thread beside a synchronous caller (e.g. Playwright's sync API)::

    with running_proxy(target_port=5006, delay_ms=25) as port:
        ...  # open http://127.0.0.1:<port>/app

A Bokeh server checks the websocket's origin, so it has to allow ``127.0.0.1:<port>`` as well; pass
``listen_port`` to choose the port before the server starts.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
from contextlib import contextmanager

_CHUNK = 64 * 1024


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, *, clock=None,
                sleep=asyncio.sleep) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it arrived; ``clock`` (the loop's time) and
    ``sleep`` are a test's own."""
    clock = clock or asyncio.get_running_loop().time
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        try:
            while chunk := await reader.read(_CHUNK):
                queue.put_nowait((clock() + delay, chunk))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait((clock() + delay, b""))  # end of stream, delayed like the data before it

    async def write() -> None:
        try:
            while True:
                due, chunk = await queue.get()
                if (wait := due - clock()) > 0:
                    await sleep(wait)
                if not chunk:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    reading = asyncio.create_task(read())
    try:
        await write()
    finally:
        reading.cancel()


class DelayProxy:
    """Listens on 127.0.0.1 and forwards each connection to ``target_host:target_port``, ``delay_ms`` late
    each way."""

    def __init__(self, target_port: int, delay_ms: float = 25, *, target_host: str = "127.0.0.1",
                 listen_port: int = 0):
        self.target_host, self.target_port = target_host, target_port
        self.delay = delay_ms / 1000
        self.listen_port = listen_port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.listen_port)
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._tasks.add(task := asyncio.current_task())
        try:
            server_r, server_w = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            client_w.close()
            self._tasks.discard(task)
            return
        _nodelay(client_w)
        _nodelay(server_w)
        try:
            await asyncio.gather(_pipe(client_r, server_w, self.delay), _pipe(server_r, client_w, self.delay))
        finally:
            for w in (client_w, server_w):
                w.close()
            self._tasks.discard(task)


@contextmanager
def running_proxy(target_port: int, delay_ms: float = 25, *, listen_port: int = 0):
    """A :class:`DelayProxy` on its own event loop in a daemon thread; yields the port it listens on."""
    loop = asyncio.new_event_loop()
    proxy = DelayProxy(target_port, delay_ms, listen_port=listen_port)
    thread = threading.Thread(target=loop.run_forever, name="delay-proxy", daemon=True)
    thread.start()
    try:
        yield asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(10)
    finally:
        asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=int, required=True, help="port of the server on 127.0.0.1")
    ap.add_argument("--delay-ms", type=float, default=25, help="delay in each direction (default 25)")
    ap.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    args = ap.parse_args(argv)

    async def run() -> None:
        proxy = DelayProxy(args.target, args.delay_ms, listen_port=args.port)
        print(await proxy.start(), flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await proxy.stop()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
