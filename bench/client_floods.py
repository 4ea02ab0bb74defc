"""One client flooding a path nobody paced (issue 45's sections 2-4): how long does another learner wait?

One server (``python app.py``) per phase; another learner (:class:`bench.beside.KeyPresser`, connected from
127.0.0.2, another client to the server than the flood's 127.0.0.1) presses a row key every 0.25 s throughout, and
each phase reports its key p50 / p95 / worst:

- ``liveness``: one keep-alive connection asking ``/liveness?endpoint=/app`` back to back (each a page built, before);
- ``pulldoc``: five pages asking for their whole document again ten times a second each, on their connection
  while it lasts and on a new one to the same session when it is closed;
- ``alone``: no flood: the other learner's keys and the third page's New seed (below) on a quiet server, the reference
  the floods' figures are read against;
- ``newseed``: one client's 50 pages with the Train tab open, each pressing New seed every 0.2 s;
- ``downloads``: one client's 20 pages with two heads trained, each downloading the run (CSV or JSON, in turn) every
  0.2 s;

in ``alone``, ``newseed`` and ``downloads`` a third page (127.0.0.3, a client of its own too) with the Train tab open
presses New seed once a second and reports how long its new run took to come;
- ``logs``: no learner; 10,000 requests of each kind one client can make the server log (a 20 kB path, a bad Host
  header, a health check for a 5 kB endpoint): the log's growth for each.
- ``pages``: no learner pressing keys; one client asks for the page 150 times at once (each on a connection of its
  own) and closes every connection 2 s later; then a new learner (127.0.0.2) asks for the page: how long its page
  takes, what the 150 were answered before they closed, and the server's CPU from their close to the learner's page.
- ``ghosts``: the learner pressing keys; one client (127.0.0.5) opens 150 websockets at once for sessions the server
  does not have (session ids it made up, each a whole page for the server to build) and closes each as soon as it
  opens; for ``--duration`` seconds from then: the learner's keys, the server's CPU and its memory.

    python -m bench.client_floods --duration 20
    python -m bench.client_floods --phases pages --runs 3
    python -m bench.client_floods --phases liveness newseed --code /an/older/checkout
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import socket
import time
from pathlib import Path

import psutil
from bokeh.protocol import Protocol

from bench.beside import KeyPresser
from bench.classroom import wait_for
from bench.stats import append_jsonl, median, summary_ms
from bench.train_class import TrainLearner
from testing.protocol_client import Learner
from testing.server import ROOT, serve, ws_url

#: The other learner's key presses, seconds apart.
KEY_EVERY_S = 0.25
#: The flooding pages' presses, seconds apart.
PRESS_EVERY_S = 0.2
#: The third page's New seed, seconds apart.
SEED_EVERY_S = 1.0
#: The phases with a third page pressing New seed (the other learner's own run, beside the flood).
THIRD_PAGE = ("alone", "newseed", "downloads")

#: The page requests one client sends at once in the ``pages`` phase, and how long (s) it holds them open.
HELD_PAGES = 150
HELD_S = 2.0
#: The websockets for made-up sessions one client opens at once in the ``ghosts`` phase.
GHOSTS = 150

HTTP_KINDS = {
    "a 20 kB path": b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "a bad Host header": b"GET /app/ws HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "a health check for a 5 kB endpoint": b"GET /liveness?endpoint=" + b"b" * 5_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
}


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


# --- the floods ----------------------------------------------------------------------------------------------------

async def liveness_flood(url: str, stop: asyncio.Event, sent: dict) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(url))
    request = b"GET /liveness?endpoint=/app HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    try:
        while not stop.is_set():
            writer.write(request)
            await writer.drain()
            line = await reader.readline()  # the status line, then its headers and body
            length = 0
            while (header := await reader.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            await reader.readexactly(length)
            sent["requests"] = sent.get("requests", 0) + 1
            sent.setdefault("statuses", set()).add(line.split(b" ")[1].decode())
    finally:  # also when the phase cancels it, as it ends every flood
        writer.close()
        sent["statuses"] = sorted(sent.get("statuses", ()))


async def pulldoc_flood(url: str, stop: asyncio.Event, sent: dict, pages: int = 5, rate: float = 10.0) -> None:
    async def one(k):
        page = Learner(ws_url(url))
        while not stop.is_set():
            try:
                await page.connect(ready=False)  # a connection to the page's session (the first makes it)
                while not stop.is_set():
                    await asyncio.sleep(1 / rate)
                    await Protocol().create("PULL-DOC-REQ").send(page.sock)
                    sent["pulls"] = sent.get("pulls", 0) + 1
                    await page._next_message("PULL-DOC-REPLY")
            except Exception:  # noqa: BLE001  (the server closed it: again, on a new connection)
                sent["reconnects"] = sent.get("reconnects", 0) + 1
                page.close()
                await asyncio.sleep(1 / rate)

    await asyncio.gather(*(one(k) for k in range(pages)))


async def train_pages(url: str, n: int, heads: int = 1, source: str | None = None) -> list[TrainLearner]:
    """``n`` pages (from the address ``source``, if given) with the Train tab open and its first run come."""
    pages = [TrainLearner(ws_url(url), compress=True, source=source) for _ in range(n)]
    gate = asyncio.Semaphore(4)

    async def open_one(page):
        async with gate:
            await page.connect(keep_doc=True)
            page.listening = asyncio.create_task(page.listen())
            await page.open_train()
            # its listener makes its list of runs once it has started (open_train may not have let it yet)
            await wait_for(lambda: time.perf_counter() if getattr(page, "runs", None) else None, 120)
            page.found_train()
            if heads != 1:
                seen = len(page.runs)
                await page.message({"action": "heads", "heads": heads})
                await wait_for(lambda: time.perf_counter() if len(page.runs) > seen else None, 120)

    await asyncio.gather(*(open_one(p) for p in pages))
    return pages


async def pressing(pages: list, stop: asyncio.Event, message, sent: dict) -> None:
    async def one(k, page):
        await asyncio.sleep(PRESS_EVERY_S * k / len(pages))
        i = 0
        while not stop.is_set():
            await page.message(message(i))
            sent["presses"] = sent.get("presses", 0) + 1
            i += 1
            await asyncio.sleep(PRESS_EVERY_S)

    await asyncio.gather(*(one(k, p) for k, p in enumerate(pages)))


# --- a phase -------------------------------------------------------------------------------------------------------

async def phase(url: str, name: str, duration: float, server: psutil.Process) -> dict:
    stop, sent, extra = asyncio.Event(), {}, {}
    pages: list = []
    seeds: list = []
    if name == "newseed":
        pages = await train_pages(url, 50)
    elif name == "downloads":
        pages = await train_pages(url, 20, heads=2)
    third = (await train_pages(url, 1, source="127.0.0.3"))[0] if name in THIRD_PAGE else None
    cpu0, own0 = sum(server.cpu_times()[:2]), time.process_time()
    async with KeyPresser(ws_url(url), every=KEY_EVERY_S, source="127.0.0.2") as keys:
        await asyncio.sleep(1.0)
        started = time.monotonic()
        if name == "liveness":
            flood = asyncio.create_task(liveness_flood(url, stop, sent))
        elif name == "pulldoc":
            flood = asyncio.create_task(pulldoc_flood(url, stop, sent))
        elif name == "newseed":
            flood = asyncio.create_task(pressing(pages, stop, lambda i: {"action": "seed"}, sent))
        elif name == "downloads":
            flood = asyncio.create_task(pressing(
                pages, stop, lambda i: {"action": "download", "kind": ("csv", "json")[i % 2]}, sent))
        else:
            flood = None
        deadline = started + duration
        while time.monotonic() < deadline:
            if third is not None:
                before, clicked = len(third.runs), time.perf_counter()
                await third.message({"action": "seed"})
                got = await wait_for(lambda k=before: third.runs[k] if len(third.runs) > k else None, 30)
                seeds.append(None if got is None else got - clicked)
            await asyncio.sleep(SEED_EVERY_S)
        stop.set()
        if flood is not None:
            flood.cancel()
            await asyncio.gather(flood, return_exceptions=True)
        waits = keys.since(started)
    cpu = sum(server.cpu_times()[:2]) - cpu0
    extra["client_cpu_cores"] = round((time.process_time() - own0) / (duration + 1), 2)
    for page in pages + ([third] if third is not None else []):
        page.close()
    if third is not None:
        extra["other_new_seed_ms"] = summary_ms([s for s in seeds if s is not None])
        extra["other_new_seeds_lost"] = sum(1 for s in seeds if s is None)
    return {
        "phase": name, "duration_s": duration, "flood": sent, **extra,
        "key_ms": summary_ms([w for w in waits if w is not None]), "keys_lost": sum(1 for w in waits if w is None),
        "server_cpu_cores": round(cpu / (duration + 1), 2),
        "load_avg": [round(x, 2) for x in psutil.getloadavg()],
    }


def _requests(port: int, request: bytes, n: int) -> int:
    """Send ``request`` ``n`` times, pipelined on keep-alive connections (a new one when the server closes one); how
    many were answered."""
    answered = 0
    while answered < n:
        batch = min(n - answered, 200)
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            try:
                s.sendall(request * batch)
            except OSError:
                pass
            data = b""
            while data.count(b"HTTP/1.1 ") < batch:  # a status line each (a body may end right before the next)
                try:
                    chunk = s.recv(1 << 20)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
        got = min(batch, data.count(b"HTTP/1.1 "))
        if not got:
            raise RuntimeError(f"no answer to {request[:60]!r}…")
        answered += got
    return answered


def log_bytes(code: Path, n: int, out: Path) -> dict:
    log = out / "client-floods-server.log"
    result = {"phase": "logs", "requests_each": n}
    with serve(code / "app.py", log=log) as (url, _):
        time.sleep(1.0)
        for kind, request in HTTP_KINDS.items():
            before = log.stat().st_size
            _requests(_port(url), request, n)
            time.sleep(1.0)
            result[kind] = log.stat().st_size - before
    result["load_avg"] = [round(x, 2) for x in psutil.getloadavg()]
    return result


async def _ask_page(port: int, path: str, source: str, close: bool = False):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    closing = "Connection: close\r\n" if close else ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{closing}\r\n".encode())
    await writer.drain()
    return reader, writer


async def held_pages(url: str, server: psutil.Process, n: int = HELD_PAGES, hold: float = HELD_S) -> dict:
    """One client's ``n`` page requests, closed after ``hold`` s; then a new learner's page: how long it took, what
    the held requests were answered before they closed, and the server's CPU from their close to the learner's
    page (the builds of pages nobody would read)."""
    port, path = _port(url), "/" + url.split("/", 3)[3]
    held = [await _ask_page(port, path, "127.0.0.1") for _ in range(n)]
    answered: collections.Counter = collections.Counter()

    async def status(reader):
        line = await reader.readline()
        answered[line.split(b" ", 2)[1].decode() if line.startswith(b"HTTP/") else "closed"] += 1

    reading = [asyncio.create_task(status(reader)) for reader, _ in held]
    await asyncio.sleep(hold)
    for task in reading:
        task.cancel()
    await asyncio.gather(*reading, return_exceptions=True)
    cpu0 = sum(server.cpu_times()[:2])
    for _, writer in held:
        writer.close()
    asked = time.perf_counter()
    reader, writer = await _ask_page(port, path, "127.0.0.2", close=True)
    answer = await asyncio.wait_for(reader.read(), 600)
    took = time.perf_counter() - asked
    writer.close()
    return {"requests": n, "held_s": hold, "learner_page_s": round(took, 3),
            "learner_status": answer.split(b" ", 2)[1].decode() if answer else "none",
            "answered_while_held": dict(answered),
            "server_cpu_s_after_close": round(sum(server.cpu_times()[:2]) - cpu0, 2)}


def pages_phase(code: Path) -> dict:
    with serve(code / "app.py") as (url, proc):
        result = {"phase": "pages", **asyncio.run(held_pages(url, proc))}
    result["load_avg"] = [round(x, 2) for x in psutil.getloadavg()]
    return result


async def ghost_sockets(url: str, n: int = GHOSTS, source: str = "127.0.0.5") -> dict:
    """``n`` websockets from ``source`` at once, each for a session id made up here, each closed as soon as it opens;
    how their handshakes were answered."""
    from bokeh.util.token import generate_jwt_token, generate_session_id
    from tornado.httpclient import HTTPClientError, HTTPRequest
    from tornado.websocket import websocket_connect

    async def one() -> str:
        request = HTTPRequest(ws_url(url), network_interface=source, connect_timeout=120, request_timeout=120)
        try:
            sock = await websocket_connect(request, subprotocols=["bokeh", generate_jwt_token(generate_session_id())])
        except HTTPClientError as e:
            return str(e.code)
        except OSError as e:
            return type(e).__name__
        sock.close()
        return "101"

    return dict(collections.Counter(await asyncio.gather(*(one() for _ in range(n)))))


async def ghosts(url: str, duration: float, server: psutil.Process) -> dict:
    async with KeyPresser(ws_url(url), every=KEY_EVERY_S, source="127.0.0.2") as keys:
        await asyncio.sleep(1.0)
        rss0, cpu0 = server.memory_info().rss, sum(server.cpu_times()[:2])
        started = time.monotonic()
        answered = await ghost_sockets(url)
        closed_s = time.monotonic() - started
        await asyncio.sleep(max(0.0, started + duration - time.monotonic()))
        waits = keys.since(started)
        cpu, rss = sum(server.cpu_times()[:2]) - cpu0, server.memory_info().rss
    return {"phase": "ghosts", "duration_s": duration, "sockets": GHOSTS, "answered": answered,
            "all_closed_after_s": round(closed_s, 2),
            "key_ms": summary_ms([w for w in waits if w is not None]), "keys_lost": sum(1 for w in waits if w is None),
            "server_cpu_s": round(cpu, 1), "rss_mb": [round(rss0 / 2**20), round(rss / 2**20)]}


def _three(s: dict) -> str:
    return " / ".join("–" if s.get(k) is None else f"{s[k]:.0f}" for k in ("p50", "p95", "max"))


def table(results: list[dict]) -> str:
    rows = ["| phase | run | another learner's key p50 / p95 / worst (ms) | keys lost | flood | server cores | load |",
            "| --- | --- | ---: | ---: | --- | ---: | ---: |"]
    for r in results:
        if r["phase"] in ("logs", "pages", "ghosts"):
            continue
        flood = ", ".join(f"{k} {v}" for k, v in r["flood"].items())
        if "other_new_seed_ms" in r:
            flood += f"; the third page's New seed {_three(r['other_new_seed_ms'])} ms"
        rows.append(f"| {r['phase']} | {r['run']} | {_three(r['key_ms'])} | {r['keys_lost']} | {flood} | "
                    f"{r['server_cpu_cores']} | {r['load_avg'][0]} |")
    for name in dict.fromkeys(r["phase"] for r in results if r["phase"] not in ("logs", "pages", "ghosts")):
        runs = [r for r in results if r["phase"] == name]
        med = {s: median([r["key_ms"][s] for r in runs]) for s in ("p50", "p95", "max")}
        seed = ""
        if all("other_new_seed_ms" in r for r in runs):
            seed = "the third page's New seed " + _three(
                {s: median([r["other_new_seed_ms"][s] for r in runs]) for s in ("p50", "p95", "max")}) + " ms"
        rows.append(f"| **{name}** | median of {len(runs)} | {_three(med)} | | {seed} | | |")
    for r in results:
        if r["phase"] == "logs":
            rows.append("")
            rows.append(f"Log bytes for {r['requests_each']:,} requests from one client: " + "; ".join(
                f"{k} {r[k]:,}" for k in HTTP_KINDS))
    pages = [r for r in results if r["phase"] == "pages"]
    if pages:
        rows += ["", f"| run | {HELD_PAGES} page requests closed after {HELD_S:g} s: a new learner's page (s) | "
                 "answered while held | server CPU from their close to the learner's page (s) | load |",
                 "| --- | ---: | --- | ---: | ---: |"]
        rows += [f"| {r['run']} | {r['learner_page_s']:.2f} ({r['learner_status']}) | "
                 f"{', '.join(f'{k}: {v}' for k, v in sorted(r['answered_while_held'].items()))} | "
                 f"{r['server_cpu_s_after_close']} | {r['load_avg'][0]} |" for r in pages]
        rows.append(f"| **median of {len(pages)}** | {median([r['learner_page_s'] for r in pages]):.2f} | | "
                    f"{median([r['server_cpu_s_after_close'] for r in pages]):.2f} | |")
    ghost_runs = [r for r in results if r["phase"] == "ghosts"]
    if ghost_runs:
        rows += ["", f"| run | {GHOSTS} websockets for made-up sessions, closed at once: answered | another "
                 "learner's key p50 / p95 / worst (ms) | keys lost | server CPU (s) | server memory before → after "
                 "(MB) | load |",
                 "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        rows += [f"| {r['run']} | {', '.join(f'{k}: {v}' for k, v in sorted(r['answered'].items()))} | "
                 f"{_three(r['key_ms'])} | {r['keys_lost']} | {r['server_cpu_s']} in {r['duration_s']:g} s | "
                 f"{r['rss_mb'][0]} → {r['rss_mb'][1]} | {r['load_avg'][0]} |" for r in ghost_runs]
    return "\n".join(rows)


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per phase (default 20)")
    ap.add_argument("--runs", type=int, default=1, help="times each phase is run, a new server each (default 1)")
    ap.add_argument("--phases", nargs="+", default=["liveness", "pulldoc", "newseed", "downloads", "logs"],
                    choices=["alone", "liveness", "pulldoc", "newseed", "downloads", "logs", "pages", "ghosts"])
    ap.add_argument("--requests", type=int, default=10_000, help="requests of each kind in the logs phase")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose app.py to serve (default this one)")
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    args = ap.parse_args(argv)
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    code = args.code.resolve()
    results = []
    for run in range(1, args.runs + 1):
        for name in args.phases:
            if name == "logs":
                r = log_bytes(code, args.requests, out)
            elif name == "pages":
                r = pages_phase(code)
            elif name == "ghosts":
                with serve(code / "app.py") as (url, proc):
                    r = asyncio.run(ghosts(url, args.duration, proc))
                r["load_avg"] = [round(x, 2) for x in psutil.getloadavg()]
            else:
                with serve(code / "app.py") as (url, proc):
                    r = asyncio.run(phase(url, name, args.duration, proc))
            r.update(run=run, code=str(code))
            results.append(r)
            print(json.dumps(r), flush=True)
            if args.json:
                append_jsonl(args.json, {"bench": "client_floods", **r})
    print(table(results))
    return results


if __name__ == "__main__":
    main()
