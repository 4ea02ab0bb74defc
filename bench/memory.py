"""Memory per idle session, and whether it comes back after the sessions close.

Starts the app with explicit unused-session settings (``testing.server``: Bokeh's defaults, 15 s lifetime,
checked every 17 s), warms it up, then opens ``--sessions`` idle sessions over Bokeh's protocol, closes
them all, waits for the server to discard them, and reads the server's resident memory (psutil) at each
step.

    python -m bench.memory --sessions 300
    python -m bench.memory --sessions 40 --open-tab Check     # each page with its Check tab opened

With ``--open-tab``, each session opens that tab as a learner's click does (the explorer's tabs' ``active``,
written by the page), and waits for the server to send the tab's contents, before memory is read.

The soak of the reliability checks: exits with status 3 when resident memory after the sessions close is
more than ``--max-after-close`` percent (10) above its start.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path

import psutil
from bokeh.protocol.messages.patch_doc import patch_doc

from testing.protocol_client import Learner, find_objects
from testing.server import CHECK_UNUSED_MS, ROOT, UNUSED_SESSION_LIFETIME_MS, serve, ws_url

MB = 2**20
#: The server's housekeeping gives freed memory back to the system every 15 s (server/housekeeping.py): a reading
#: taken sooner after the warm-up's pages are discarded still holds them, which the pages opened next reuse.
TRIM_S = 15
#: Exit status when memory did not come back (an error exits with 1).
NOT_RETURNED = 3


def tab_index(doc_json: dict, title: str) -> tuple[str, int]:
    """The id of the explorer's tabs in a pulled document, and the index of the tab called ``title``."""
    panels = {o["id"]: o for o in find_objects(doc_json, "TabPanel")}
    for tabs in find_objects(doc_json, "Tabs"):
        titles = [panels.get(p.get("id"), p).get("attributes", {}).get("title") for p in tabs["attributes"]["tabs"]]
        if title in titles:
            return tabs["id"], titles.index(title)
    raise LookupError(f"no tab called {title!r} on the page")


async def open_tab(learner: Learner, title: str) -> None:
    """Show the tab ``title`` as the page does when it is clicked, and wait until its contents have come."""
    tabs_id, index = tab_index(learner.doc, title)
    learner.doc = None  # the client's copy, no longer needed
    event = {"kind": "ModelChanged", "model": {"id": tabs_id}, "attr": "active", "new": index}
    await patch_doc(patch_doc.create_header(), {}, {"events": [event]}).send(learner.sock)
    while True:  # the server answers with the tab's panel, its contents built
        msg = await learner._next_message("PATCH-DOC")
        if any(ev.get("kind") == "ModelChanged" and ev.get("model", {}).get("id") == tabs_id
               and ev.get("attr") == "tabs"
               for ev in msg.content.get("events", [])):
            return


async def open_sessions(url: str, n: int, tab: str | None = None) -> list[Learner]:
    learners = [Learner(ws_url(url)) for _ in range(n)]
    gate = asyncio.Semaphore(4)

    async def connect(learner):
        async with gate:
            await learner.connect(keep_doc=tab is not None)
            if tab is not None:
                await open_tab(learner, tab)

    await asyncio.gather(*(connect(learner) for learner in learners))
    return learners


def settle_rss(proc: psutil.Process, seconds: float) -> float:
    """Resident memory in MB after ``seconds``, the lowest of the last few samples."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        samples.append(proc.memory_info().rss / MB)
        time.sleep(0.5)
    return min(samples[-4:]) if samples else proc.memory_info().rss / MB


def run(app: str, n: int, lifetime_ms: int, check_ms: int, tab: str | None = None) -> dict:
    cleanup_s = (lifetime_ms + check_ms) / 1000 + 5
    with serve(app, unused_lifetime_ms=lifetime_ms, check_unused_ms=check_ms) as (url, proc):
        async def cycle(k):
            learners = await open_sessions(url, k, tab)
            for learner in learners:
                learner.close()
            await asyncio.sleep(0.5)

        asyncio.run(cycle(5))  # warm-up: imports, caches, first sessions
        rss_start = settle_rss(proc, cleanup_s + TRIM_S + 5)

        async def hold_open():
            learners = await open_sessions(url, n, tab)
            rss = settle_rss(proc, 3)
            for learner in learners:
                learner.close()
            await asyncio.sleep(0.5)
            return rss

        t = time.monotonic()
        rss_open = asyncio.run(hold_open())
        open_s = time.monotonic() - t
        gc.collect()
        rss_closed = settle_rss(proc, cleanup_s)
        rss_later = settle_rss(proc, cleanup_s)
    return {
        "bench": "memory", "sessions": n, "open_tab": tab, "open_s": round(open_s, 1),
        "unused_session_lifetime_ms": lifetime_ms, "check_unused_sessions_ms": check_ms,
        "rss_start_mb": rss_start, "rss_open_mb": rss_open, "rss_closed_mb": rss_closed,
        "rss_closed_later_mb": rss_later,
        "mb_per_idle_session": (rss_open - rss_start) / n,
        "after_close_vs_start_pct": 100 * (rss_later - rss_start) / rss_start,
        "load_avg": psutil.getloadavg(),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--unused-session-lifetime", type=int, default=UNUSED_SESSION_LIFETIME_MS, help="ms")
    ap.add_argument("--check-unused-sessions", type=int, default=CHECK_UNUSED_MS, help="ms")
    ap.add_argument("--open-tab", metavar="TITLE", help="each session opens this tab first (e.g. Check)")
    ap.add_argument("--app", default=str(ROOT / "app.py"))
    ap.add_argument("--json", help="append the results to this JSON-lines file")
    ap.add_argument("--max-after-close", type=float, default=10.0, metavar="PCT",
                    help="exit with status 3 if RSS after the sessions close exceeds the start by more (default 10)")
    args = ap.parse_args(argv)
    r = run(args.app, args.sessions, args.unused_session_lifetime, args.check_unused_sessions, args.open_tab)
    r["returned_within_pct"] = args.max_after_close
    r["returned"] = r["after_close_vs_start_pct"] <= args.max_after_close
    print(json.dumps(r), flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "a") as f:
            f.write(json.dumps(r) + "\n")
    return r


if __name__ == "__main__":
    sys.exit(0 if main()["returned"] else NOT_RETURNED)
