"""The delaying proxy (a far-away server on loopback): bytes arrive intact and in order, each way ``delay`` late."""

import asyncio
import time

from testing.proxy import DelayProxy

DELAY_MS = 40


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


async def _through_proxy():
    echo = await asyncio.start_server(_echo, "127.0.0.1", 0)
    proxy = DelayProxy(echo.sockets[0].getsockname()[1], DELAY_MS)
    port = await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        t0 = time.perf_counter()
        writer.write(b"ping")
        first = await reader.readexactly(4)
        round_trip = time.perf_counter() - t0

        # many small writes in quick succession: order kept, and they do not queue behind each other's delay
        payload = b"".join(i.to_bytes(4, "big") for i in range(20_000))
        t1 = time.perf_counter()
        for k in range(0, len(payload), 800):
            writer.write(payload[k:k + 800])
            await writer.drain()
        back = await reader.readexactly(len(payload))
        bulk = time.perf_counter() - t1
        writer.write_eof()
        closed = await reader.read()
        writer.close()
        return first, round_trip, payload, back, bulk, closed
    finally:
        await proxy.stop()
        echo.close()
        await echo.wait_closed()


def test_bytes_arrive_in_order_and_a_round_trip_takes_twice_the_delay():
    first, round_trip, payload, back, bulk, closed = asyncio.run(_through_proxy())
    assert first == b"ping"
    assert back == payload
    assert closed == b""  # the end of the stream is passed on too
    assert round_trip >= 2 * DELAY_MS / 1000
    # 100 writes, each delayed 2 x 40 ms: sent one after another that would take 8 s
    assert bulk < 10 * 2 * DELAY_MS / 1000
