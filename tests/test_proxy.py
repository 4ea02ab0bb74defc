"""The delaying proxy (a far-away server on loopback): bytes arrive intact and in order, each way ``delay`` late."""

import asyncio
import time

from testing.proxy import DelayProxy, _pipe

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

        # many small writes in quick succession: every byte back, in order
        payload = b"".join(i.to_bytes(4, "big") for i in range(20_000))
        for k in range(0, len(payload), 800):
            writer.write(payload[k:k + 800])
            await writer.drain()
        back = await reader.readexactly(len(payload))
        writer.write_eof()
        closed = await reader.read()
        writer.close()
        return first, round_trip, payload, back, closed
    finally:
        await proxy.stop()
        echo.close()
        await echo.wait_closed()


def test_bytes_arrive_in_order_and_a_round_trip_takes_at_least_twice_the_delay():
    first, round_trip, payload, back, closed = asyncio.run(_through_proxy())
    assert first == b"ping"
    assert back == payload
    assert closed == b""  # the end of the stream is passed on too
    assert round_trip >= 2 * DELAY_MS / 1000  # a lower bound: a loaded machine only adds to it


class _Writer:
    """What a pipe writes, with the (virtual) time it wrote it."""

    def __init__(self, clock):
        self.clock, self.written = clock, []

    def write(self, data):
        self.written.append((round(self.clock(), 6), data))

    async def drain(self):
        pass

    def can_write_eof(self):
        return True

    def write_eof(self):
        self.written.append((round(self.clock(), 6), b""))


def test_each_chunk_is_delayed_from_its_own_arrival_not_queued_behind_the_one_before():
    """On a clock of the test's own, so that a loaded machine cannot blur it: chunks arriving 10 ms apart leave
    40 ms after each arrived (a pipe that waited the delay after each write would send the second at 80 ms)."""

    async def scenario():
        now, timers = [0.0], []

        async def sleep(seconds):
            timers.append((now[0] + seconds, done := asyncio.get_running_loop().create_future()))
            await done

        async def settle():  # every task runs until it waits
            for _ in range(20):
                await asyncio.sleep(0)

        async def at(t):  # the clock moves to t: timers due by then fire
            now[0] = t
            for due, done in timers:
                if due <= t + 1e-9 and not done.done():
                    done.set_result(None)
            await settle()

        reader, writer = asyncio.StreamReader(), _Writer(lambda: now[0])
        pipe = asyncio.create_task(_pipe(reader, writer, DELAY_MS / 1000, clock=lambda: now[0], sleep=sleep))
        for t, chunk in [(0.0, b"a"), (0.01, b"b"), (0.02, b"c")]:
            await at(t)
            reader.feed_data(chunk)
            await settle()
        await at(0.03)
        reader.feed_eof()
        await settle()
        for t in (0.04, 0.05, 0.06, 0.07):
            await at(t)
        await asyncio.wait_for(pipe, 5)
        return writer.written

    assert asyncio.run(scenario()) == [(0.04, b"a"), (0.05, b"b"), (0.06, b"c"), (0.07, b"")]
