"""Server CPU per drag: the query's drag against the Projections tab's (an embedding, a basis image).

Both drags reach the server through the same outbox and channel (``link/outbox.js`` → ``link/channel.py``),
one position in flight. The query's page sends a position per round trip, paced by the process's share for
mid-drag updates, and the server answers each with its numbers; the Projections page sends only the press
and the release (it computes every position between them itself, and the session's state takes only the
release's). Measured on the app as it ships (``testing/server.py``), one page over Bokeh's own protocol
(:class:`testing.protocol_client.Learner`): the page opens the Projections tab as a browser would (the tab's
``active`` index), then drags, writing into the drag's channel what the page's script writes and waiting for
the server's answer before the next, as the page does. The server process's CPU time (psutil, user +
system) is read around each drag. Each kind of handle in turn, alternating so a noisy machine hits them alike:

* **long**: a press, ``--moves`` positions, a release (the query's per position too);
* **short**: a press, 3 positions (the last one the release's), ``--short`` times, which is what a query's
  drag is on a crowded server, where the process's share lets a page only a few positions per drag.
  ``--lengths`` measures other short drags too (positions after the press, the release's included).

``--every-position`` makes the Projections drags write every position, as a page of its own making may (the
server takes them paced, as the query's).

    python -m bench.channel_cost --moves 50 --short 30 --rounds 5 --lengths 3 5 9
    python -m bench.channel_cost --moves 50 --short 30 --rounds 5 --every-position
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics

from bokeh.protocol.messages.patch_doc import patch_doc

from bench.stats import append_jsonl
from testing.protocol_client import Learner, _entry, _map, find_ids, find_objects
from testing.server import serve, ws_url

#: The handles dragged: (channel's name, confirmed's name, the plane column or None, start, circle radius).
DRAGS = {
    "query": ("drag-channel", "drag-confirmed", None, (0.0, 1.0), 0.4),  # q_love of Section 6
    "embedding": ("projection-channel", "projection-confirmed", "x", (0.0, 1.0), 0.3),  # x_love
    "basis image": ("projection-channel", "projection-confirmed", "w", (0.0, 1.0), 0.3),  # e₂W_Q
}


class Page(Learner):
    """A learner that also opens a tab and drags through any channel, waiting for each answer."""

    async def open_tab(self, title: str, names: set[str]) -> dict[str, str]:
        """Make the tab ``title`` active, as a click on its header does; the ids of ``names`` it brings."""
        tabs = next(t for t in find_objects(self.doc, "Tabs") if t["attributes"].get("tabs"))
        panels = tabs["attributes"]["tabs"]
        titles = [p.get("attributes", {}).get("title") for p in panels]
        index = titles.index(title)
        content = {"events": [{"kind": "ModelChanged", "model": {"id": tabs["id"]}, "attr": "active", "new": index}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)
        found: dict[str, str] = {}
        while not names <= found.keys():
            msg = await self._next_message("PATCH-DOC")
            found.update(find_ids(msg.content, names))
        return found

    async def write(self, channel: str, confirmed: str, row: dict) -> None:
        """Write one row into ``channel`` and wait until ``confirmed`` answers its seq."""
        content = {"events": [{"kind": "ModelChanged", "model": {"id": channel}, "attr": "data",
                               "new": _map(**{k: [v] for k, v in row.items()})}]}
        await patch_doc(patch_doc.create_header(), {}, content).send(self.sock)
        while True:
            msg = await self._next_message("PATCH-DOC")
            for ev in msg.content.get("events", []):
                if ev.get("attr") == "data" and ev.get("model", {}).get("id") == confirmed:
                    seq = _entry(ev.get("data", ev.get("new")), "seq")
                    if seq and seq[0] >= row["seq"]:
                        return


async def _drag(page: Page, ids: dict, kind: str, moves: int, proc, every_position: bool = False) -> float:
    """One drag of ``kind`` (press, ``moves`` positions around a circle, release): server CPU seconds.

    Written as the page writes it: every position for the query's drag (one in flight); the press and the
    release only for the Projections tab's (link/projections.js), unless ``every_position``."""
    channel, confirmed, plane, (cx, cy), r = DRAGS[kind]
    extra = {} if plane is None else {"plane": plane}
    path = [(cx + r * math.sin(1.5 * math.pi * k / moves), cy + r * math.cos(1.5 * math.pi * k / moves) - r)
            for k in range(moves + 1)]
    if plane is not None and not every_position:
        path = [path[0], path[-1]]
    back = path[::-1]
    before = proc.cpu_times()
    for there in (path, back):  # there and back, so the handle starts where the next drag presses
        for k, (x, y) in enumerate(there):
            page.seq += 1
            last = k == len(there) - 1
            await page.write(ids[channel], ids[confirmed], dict(x=x, y=y, seq=page.seq, start=k == 0, end=last,
                                                                **extra))
    after = proc.cpu_times()
    return (after.user + after.system) - (before.user + before.system)


async def _run(url: str, proc, moves: int, short: int, rounds: int, lengths: tuple[int, ...] = (3,),
               every_position: bool = False) -> dict:
    page = Page(ws_url(url))
    await page.connect(keep_doc=True)
    page.seq = 0
    ids = find_ids(page.doc, {"drag-channel", "drag-confirmed"})
    ids.update(await page.open_tab("Projections", {"projection-channel", "projection-confirmed"}))
    await asyncio.sleep(1.0)  # the tab's first render settles
    for kind in DRAGS:  # warm-up: the first positions of each fill caches
        await _drag(page, ids, kind, 10, proc, every_position)
    long_ = {k: [] for k in DRAGS}
    short_ = {(k, n): [] for k in DRAGS for n in lengths}
    for _ in range(rounds):
        for kind in DRAGS:
            # each drag goes there and back: 2 presses, 2 releases
            long_[kind].append(await _drag(page, ids, kind, moves, proc, every_position) / 2)
            for n in lengths:
                total = 0.0
                for _ in range(short):
                    total += await _drag(page, ids, kind, n, proc, every_position)
                short_[kind, n].append(total / (2 * short))
    page.close()
    out = {}
    for kind in DRAGS:
        out[f"{kind}: ms per drag of {moves + 1} positions"] = round(1000 * statistics.median(long_[kind]), 2)
        for n in lengths:
            out[f"{kind}: ms per drag of {n} positions"] = round(1000 * statistics.median(short_[kind, n]), 2)
    # a query's position in a long drag: what a class's drags cost per position reaching the server
    out["query: ms per position (long drag)"] = round(out[f"query: ms per drag of {moves + 1} positions"] / (moves + 1),
                                                      2)
    for kind in ("embedding", "basis image"):
        for n in (*lengths, moves + 1):
            ratio = out[f"{kind}: ms per drag of {n} positions"] / out[f"query: ms per drag of {n} positions"]
            out[f"{kind} / query, per drag of {n} positions"] = round(ratio, 2)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moves", type=int, default=200, help="positions of a long drag, each way")
    ap.add_argument("--short", type=int, default=30, help="short drags per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lengths", type=int, nargs="+", default=[3],
                    help="positions of a short drag after the press, the release's included (default 3)")
    ap.add_argument("--every-position", action="store_true",
                    help="the Projections drags write every position, not the press and the release only "
                         "(what a page of its own making may send; the page sends the two)")
    ap.add_argument("--json", help="append the result to this JSON-lines file")
    args = ap.parse_args(argv)
    with serve() as (url, proc):
        result = asyncio.run(_run(url, proc, args.moves, args.short, args.rounds, tuple(args.lengths),
                                  args.every_position))
    result.update(load_average=round(os.getloadavg()[0], 1), moves=args.moves, short=args.short, rounds=args.rounds,
                  lengths=args.lengths, every_position=args.every_position)
    print(json.dumps(result, indent=1))
    if args.json:
        append_jsonl(args.json, result)
    return result


if __name__ == "__main__":
    main()
