"""Room codes under a flood of Present clicks: what the server keeps, while the rooms run and once they have ended.

    .venv/bin/python -m bench.rooms                          # 20 pages x 1,000 clicks, then the registry alone
    .venv/bin/python -m bench.rooms --pages 5 --clicks 200   # a quick run

A page that presses Present is told to load the presenter link; a script that does not, and presses again, made a
room each time (each with the page's view, kept until the room ends ``ROOM_END_AFTER`` after, and its code for
24 h after that). Each row starts ``python app.py`` on a free loopback port with sessions discarded 2 s after
their page closes, opens ``--pages`` pages over Bokeh's protocol (``testing/protocol_client.py``) and closes them
(the baseline: what pages alone leave), then opens as many again, each pressing Present ``--clicks`` times as fast
as the server answers, and closes them. It reads the server's resident memory (RSS, the median of five readings a
second apart) after each, once the server's housekeeping has trimmed its heap (every 15 s):

- ``running``: ``ROOM_END_AFTER`` as by default (300 s): the rooms still run when memory is read;
- ``ended``: ``ROOM_END_AFTER=2``: every room has ended, and only what an ended room leaves is there.

Then the registry alone (``services/rooms.py``, in this process): 20,000 rooms made and ended, and the bytes it
keeps for them (``tracemalloc``). Prints a table (and the figures as JSON to ``bench/out/rooms.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testing.protocol_client import Learner, find_objects  # noqa: E402
from testing.server import free_port, wait_for_http  # noqa: E402

MB = 1024 * 1024


def rss(pid: int) -> float:
    """The median of five readings of the process's resident memory, a second apart, in MB."""
    import psutil

    proc = psutil.Process(pid)
    readings = []
    for _ in range(5):
        readings.append(proc.memory_info().rss / MB)
        time.sleep(1.0)
    return statistics.median(readings)


async def pages(ws: str, count: int, clicks: int) -> int:
    """Open ``count`` pages; each presses Present ``clicks`` times, then all close. Returns the rooms the pages were
    sent to (the distinct codes of the presenter links they were told to load)."""
    opened = [Learner(ws, keep_patches=True) for _ in range(count)]
    for page in opened:
        await page.connect(keep_doc=True)
    listening = [asyncio.ensure_future(page.listen()) for page in opened]

    async def press(page: Learner) -> None:
        button = next(b for b in find_objects(page.doc, "Button") if b["attributes"].get("label") == "Present")
        for _ in range(clicks):
            await page.click(button["id"])
        await page.key("1")  # answered once every click before it has been handled: the page's readout changes
        deadline = time.monotonic() + 600
        while not page.lines and time.monotonic() < deadline:
            await asyncio.sleep(0.1)

    await asyncio.gather(*(press(page) for page in opened))
    codes = {ev["new"].split("room=")[1].split("&")[0] for page in opened for events in page.patches for ev in events
             if ev.get("kind") == "ModelChanged" and ev.get("attr") == "navigate" and "room=" in str(ev.get("new"))}
    for page in opened:
        page.close()
    await asyncio.gather(*listening, return_exceptions=True)
    return len(codes)


def flood(count: int, clicks: int, end_after: float | None, settle: float) -> dict:
    port = free_port()
    env = {**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1", "EXPLORER_SESSION_TOKEN_EXPIRATION_S": "2",
           "EXPLORER_UNUSED_SESSION_LIFETIME_MS": "2000", "EXPLORER_CHECK_UNUSED_SESSIONS_MS": "1000"}
    if end_after is not None:
        env["ROOM_END_AFTER"] = str(end_after)
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "rooms-server.log", "w") as log:
        server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/liveness", server, timeout=180)
            ws = f"ws://127.0.0.1:{port}/app/ws"
            asyncio.run(pages(ws, count, 0))
            time.sleep(settle)
            before = rss(server.pid)
            started = time.monotonic()
            rooms = asyncio.run(pages(ws, count, clicks))
            took = time.monotonic() - started
            time.sleep(settle)
            after = rss(server.pid)
        finally:
            server.terminate()
            server.wait(30)
    return {"rooms": rooms, "clicks_s": round(took, 1), "rss_before_mb": round(before, 1),
            "rss_after_mb": round(after, 1), "kept_mb": round(after - before, 1)}


def registry_alone(rooms: int) -> dict:
    """Bytes the registry keeps for ``rooms`` rooms made and ended (their codes kept 24 h)."""
    from services.rooms import RoomRegistry

    registry = RoomRegistry()
    snapshot = {"query": (0.0, 1.0)}
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(rooms):
        room, token = registry.create(snapshot)
        registry.end(room.code, token)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return {"rooms_ended": rooms, "kept_bytes": kept, "bytes_per_room": round(kept / rooms, 1)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--clicks", type=int, default=1000, help="Present clicks per page")
    ap.add_argument("--settle", type=float, default=20.0,
                    help="seconds to wait before reading memory: sessions discarded, rooms ended, the heap trimmed")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    result = {"pages": args.pages, "clicks": args.pages * args.clicks,
              "running": flood(args.pages, args.clicks, None, args.settle),
              "ended": flood(args.pages, args.clicks, 2.0, args.settle),
              "registry": registry_alone(20_000), "load_start": [round(x, 2) for x in load],
              "load_end": [round(x, 2) for x in os.getloadavg()]}
    (ROOT / "bench" / "out" / "rooms.json").write_text(json.dumps(result, indent=2))
    print(f"{result['clicks']:,} Present clicks from {args.pages} pages; "
          f"load {load[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| rooms | rooms made | clicks took | RSS before | RSS after | kept (target <= 5 MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in ("running", "ended"):
        r = result[name]
        print(f"| {name} | {r['rooms']:,} | {r['clicks_s']} s | {r['rss_before_mb']} MB | {r['rss_after_mb']} MB "
              f"| {r['kept_mb']} MB |")
    reg = result["registry"]
    print(f"registry alone: {reg['rooms_ended']:,} rooms made and ended keep {reg['kept_bytes'] / 1024:.0f} kB "
          f"({reg['bytes_per_room']} bytes a room)")
    return result


if __name__ == "__main__":
    main()
