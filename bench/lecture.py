"""A lecture hall: one presenter, hundreds of followers over several processes sharing the room through Redis.

    .venv/bin/python -m bench.lecture                                   # 300 followers, 3 processes, 30 Hz for 30 s
    .venv/bin/python -m bench.lecture --followers 30 --seconds 5        # a quick run

Redis (Debian's ``redis-server``) and ``--processes`` app processes run on loopback (``testing/hall.py``), as
``deploy/compose.yaml`` runs them behind nginx; each page is opened on its process directly, as nginx's cookie keeps
it there. Every page speaks Bokeh's own protocol (``testing/protocol_client.py``): the presenter, on the first
process, presses Present, opens the presenter link, and drags the query along a Lissajous path at ``--rate`` moves a
second for ``--seconds``; the followers are spread evenly over every process, opened in ``--clients`` client
processes (``bench/follow.py``'s), each with the room's live channel as the page's script opens it.

Measured, on CLOCK_MONOTONIC (comparable across processes):

- joining: from the first follower's connection until each follower's live channel is open (it follows);
- following: a shown position's lateness, from the presenter's latest move that aimed at it until the follower first
  showed it (its live channel's preview, or its server's numbers), as ``bench/follow.py``; whether each follower
  ends on the presenter's final position, and its server's numbers for it, ``--settle`` seconds after the drag;
- the poll: the presenter asks; every follower's card names its browser as it loads and answers once the question
  comes; the presenter's counts must reach exactly the number of followers and stay there.

Results are printed as JSON and written to bench/out/lecture.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.follow import FollowerProcesses, path_point, percentile  # noqa: E402
from bench.stats import publish  # noqa: E402


def run_followers(ws_urls: str, code: str, count: int, first: int, ready_file: str, out_file: str) -> None:
    """``count`` follower pages (numbered from ``first``), page i on process ``i % len(ws_urls)``: join, follow the
    live channel, record what each shows, answer the poll when it comes; write what they saw when told to stop."""
    import psutil

    from testing.poll_presenter import listen
    from testing.protocol_client import QUERY_RE, Learner, _entry, _map, find_objects

    urls = ws_urls.split(",")

    async def main() -> dict:
        pages = [Learner(f"{urls[(first + i) % len(urls)]}?room={code}", compress=True, clock=time.monotonic,
                         keep_patches=False) for i in range(count)]
        records = [{"joined": None, "live": [], "shown": [], "asked": None, "sent": None, "acked": None}
                   for _ in pages]
        gate = asyncio.Semaphore(4)  # a class does not open its pages in the same millisecond either
        tasks = []

        async def read_live(channel, record) -> None:
            while (text := await channel.read_message()) is not None:
                query = json.loads(text)["query"]
                if query is not None:
                    record["live"].append((time.monotonic(), f"{query[0]:.3f}", f"{query[1]:.3f}"))

        async def page_of(i: int, page: Learner) -> None:
            record, ids = records[i], {}
            browser = f"lecture-{first + i:08d}".ljust(24, "-")[:24]

            async def on_patch(events, when):
                if "card" not in ids:  # added, hidden, once the page has loaded: it names its browser
                    card = next((obj for obj in find_objects(events, "") if "poll-follower" in
                                 (obj.get("attributes", {}).get("css_classes") or [])), None)
                    if card is not None:
                        ids.update(card=card["id"], data=card["attributes"]["data"]["id"])
                        await page._send_event(_map(model={"id": ids["card"]}, data=_map(hello=browser)),
                                               name="data_event")
                for ev in events:
                    if ev.get("kind") != "ModelChanged":
                        continue
                    model, attr = ev.get("model", {}).get("id"), ev.get("attr")
                    if attr == "text" and model == page.readout_id:
                        m = QUERY_RE.search(ev["new"])
                        if m:
                            record["shown"].append((when, m[1], m[2]))
                    elif attr == "data" and model == page.live_id:
                        page.live = {k: (_entry(ev["new"], k) or [None])[0] for k in ("room", "path", "ticket")}
                    elif (attr == "poll" and model == ids.get("data") and record["sent"] is None
                          and _entry(ev["new"], "can_answer")):
                        record["asked"] = when
                        poll, nonce = _entry(ev["new"], "id"), _entry(ev["new"], "nonce")
                        card = {"id": ids["card"]}
                        await page._send_event(_map(model=card, data=_map(drawn=poll, nonce=nonce, browser=browser)),
                                               name="data_event")
                        record["sent"] = time.monotonic()
                        await page._send_event(_map(model=card, data=_map(poll=poll, answer=(first + i) % 4)),
                                               name="data_event")
                if record["sent"] is not None and record["acked"] is None and "Your answer is in" in json.dumps(
                        events):
                    record["acked"] = when

            async with gate:
                await page.connect()
            tasks.append(asyncio.create_task(listen(page, on_patch)))
            channel = await page.live_channel(timeout=600)
            record["joined"] = time.monotonic()
            tasks.append(asyncio.create_task(read_live(channel, record)))

        started = time.monotonic()
        await asyncio.gather(*(page_of(i, page) for i, page in enumerate(pages)))
        me = psutil.Process()
        cpu0, wall0 = sum(me.cpu_times()[:2]), time.monotonic()
        Path(ready_file).write_text("ready")
        while not Path(ready_file + ".stop").exists():
            await asyncio.sleep(0.1)
        cpu = sum(me.cpu_times()[:2]) - cpu0
        for page in pages:
            page.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {"started": started, "records": records, "client_cpu_s": cpu, "listen_s": time.monotonic() - wall0}

    Path(out_file).write_text(json.dumps(asyncio.run(main())))


async def drag(presenter, points, rate: float) -> list[tuple[float, float, float]]:
    """The presenter's hand along ``points`` at ``rate`` moves a second, as ``ProtocolPresenter.drag``."""
    me = presenter.me
    await me.pointer("panstart", *points[0])
    moves, start = [], time.monotonic()
    for i, (x, y) in enumerate(points[1:], 1):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        moves.append((time.monotonic(), x, y))
        await me.pointer("pan", x, y)
    await me.pointer("panend", *points[-1])
    return moves


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--followers", type=int, default=300)
    ap.add_argument("--processes", type=int, default=3, help="app processes sharing the room through Redis")
    ap.add_argument("--clients", type=int, default=6, help="follower client processes")
    ap.add_argument("--rate", type=float, default=30.0, help="presenter moves per second")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=15.0, help="seconds after the drag for every server's numbers")
    ap.add_argument("--wait", type=float, default=120.0, help="seconds to wait for every answer to be counted")
    args = ap.parse_args()

    import psutil

    from testing.hall import Hall
    from testing.poll_presenter import Presenter
    from widgets.poll import question_options

    label = next(lab for group in question_options().values() for lab, qid in group.items() if qid == "key-role")
    out_dir = ROOT / "bench" / "out"
    (out_dir / "lecture").mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    hall = Hall(out_dir / "lecture", processes=args.processes)
    followers = FollowerProcesses(out_dir, "lecture")
    presenter = None
    try:
        presenter = Presenter(hall.urls[0])
        code = presenter.run(presenter.present())
        ws = ",".join(hall.ws(i) for i in range(args.processes))
        procs = [psutil.Process(p.pid) for p in hall.procs]
        join0 = [p.cpu_times() for p in procs]
        per = [args.followers // args.clients + (i < args.followers % args.clients) for i in range(args.clients)]
        first = 0
        for n in filter(None, per):
            followers.start(__file__, "--_follower", ws, code, str(n), str(first))
            first += n
        followers.wait_ready(timeout=900)
        join1 = [p.cpu_times() for p in procs]
        time.sleep(2.0)  # the last pages' first views settle before the clock starts

        cpu0 = [p.cpu_times() for p in procs]
        n = int(args.rate * args.seconds)
        points = [path_point(i, n) for i in range(n + 1)]
        wall0 = time.monotonic()
        moves = presenter.run(drag(presenter, points, args.rate), timeout=args.seconds + 600)
        drag_wall = time.monotonic() - wall0
        cpu1 = [p.cpu_times() for p in procs]
        time.sleep(args.settle)

        asked = presenter.run(presenter.open_poll(label))
        deadline = time.monotonic() + args.wait
        while time.monotonic() < deadline and not any(c == args.followers for _, c, _, _ in presenter.counts):
            time.sleep(0.05)
        complete = next((t for t, c, _, _ in presenter.counts if c == args.followers), None)
        time.sleep(3.0)  # any answer counted twice would reach the presenter's card by now
        outs = followers.stop(timeout=300)
    finally:
        if presenter is not None:
            presenter.close()
        followers.kill()
        hall.close()

    records = [r for out in outs for r in out["records"]]
    started = min(out["started"] for out in outs)
    joined = [r["joined"] - started for r in records if r["joined"] is not None]
    aimed = [(t, round(x, 3), round(y, 3)) for t, x, y in moves]
    final, last_move = aimed[-1][1:], aimed[-1][0]
    latencies, finals, server_finals = [], 0, 0
    for r in records:
        seen = sorted([(t, float(x), float(y)) for t, x, y in r["live"] + r["shown"]])
        shown: dict = {}
        for t, x, y in seen:
            cands = [m for m, ax, ay in aimed if m <= t and abs(ax - x) <= 0.0015 and abs(ay - y) <= 0.0015]
            if cands and shown.get((x, y), -1e18) < max(cands):
                latencies.append((t - max(cands)) * 1000)
            if cands:
                shown[(x, y)] = t
        finals += bool(seen and (seen[-1][1], seen[-1][2]) == final)
        server = [(t, float(x), float(y)) for t, x, y in r["shown"] if t >= last_move]
        server_finals += bool(server and (server[-1][1], server[-1][2]) == final)
    counts = [c for _, c, _, _ in presenter.counts]
    join_cpu = sum(b.user + b.system - a.user - a.system for a, b in zip(join0, join1, strict=True))
    procs_cpu = [round((b.user + b.system - a.user - a.system) / drag_wall * 100, 1) for a, b in zip(cpu0, cpu1,
                                                                                                     strict=True)]
    result = {
        "followers": len(records), "processes": args.processes, "clients": args.clients, "cpu_count": os.cpu_count(),
        "joined": f"{len(joined)}/{len(records)}",
        "all_joined_within_s": round(max(joined), 1) if joined else None,
        "joined_s_p50": round(percentile(joined, 0.5), 1),
        "server_cpu_ms_per_joined_page": round(1000 * join_cpu / max(len(joined), 1), 1),
        "moves": len(moves), "rate_per_s": round(len(moves) / drag_wall, 1),
        "position_latency_ms_p50": round(percentile(latencies, 0.5), 1),
        "position_latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "position_latency_ms_max": round(max(latencies, default=float("nan")), 1),
        "positions_shown": f"{len(latencies)} of {len(moves) * len(records)}",
        "final_position_reached": f"{finals}/{len(records)}",
        "final_server_numbers": f"{server_finals}/{len(records)}",
        "server_cpu_pct_of_one_core_during_drag": procs_cpu,
        "follower_clients_cpu_pct_of_one_core": round(100 * sum(o["client_cpu_s"] / o["listen_s"] for o in outs), 1),
        "poll_answers_sent": sum(r["sent"] is not None for r in records),
        "poll_presenter_count_final": counts[-1] if counts else None,
        "poll_presenter_count_max": max(counts, default=None),
        "poll_ask_to_complete_s": round(complete - asked, 2) if complete else None,
    }
    publish(result, load_start, out_dir / "lecture.json")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_follower":
        a = sys.argv[2:]
        run_followers(a[0], a[1], int(a[2]), int(a[3]), a[4], a[5])
    else:
        main()
