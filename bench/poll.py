"""The class poll: a presenter asks, N followers answer; how soon each page shows the question, how soon the
presenter's counts are complete, and whether they are right.

    .venv/bin/python bench/poll.py                          # 60 followers, answers spread over 4 s
    .venv/bin/python bench/poll.py --followers 10 --spread 2  # a quick run
    .venv/bin/python bench/poll.py --question two-key-softmax  # a number question: a histogram
    .venv/bin/python -m bench.poll --followers 0 --stuff 100 --within 20  # pages joining only to answer
    .venv/bin/python -m bench.poll --followers 0 --stuff 100 --within 20 --plain  # their page builds alone

With ``--stuff N``, N more pages join the room after the question is asked, started evenly over ``--within``
seconds, each doing what a page's script does to answer (its card reports it has drawn the question, then
sends an answer) and closing at once: a script stuffing the poll. Meanwhile the presenter presses a row key
every 0.3 s, as during the 5 s before the question, and the time from each key to its readout line is
measured (``presenter_key_ms_*``), with how many of the stuffing answers were counted and how the presenter's
card said so. With ``--plain`` those pages open the explorer without joining the room: the same page builds,
no room, no poll.

The server is ``python app.py`` on a free loopback port. Every page speaks Bokeh's own protocol
(``testing/protocol_client.py``, as ``bench/follow.py``): the presenter opens the page, presses Present, opens the
presenter link it is given, then presses "Class poll" (the toggle's ``active``), picks the question (the
select's ``value``, a label of ``widgets.poll.question_options``) and presses "Ask the room". Followers open the
join link in separate processes. Each follower page waits for the question to arrive (the patch that sets its
poll card's ``poll``; the card itself, hidden, came once the page had loaded), reports it drawn as the card's
script does (``{"drawn": id, "nonce": ..., "browser": ...}``), then, after a delay of its own drawn evenly from
``[0, --spread]`` seconds, sends its answer as the card's script does (a ``data_event`` of the card's model:
``{"poll": id, "answer": ...}``); its own page then says "Your answer is in".

Measured, on CLOCK_MONOTONIC (comparable across processes): ask → question on each follower page; ask → last
answer sent (the class answered within this); last answer sent → the presenter's counts complete (the patch
whose count line shows every answer); and whether the presenter's final counts are exactly the answers sent.
Results are printed as JSON and written to bench/out/poll.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.follow import FollowerProcesses, percentile  # noqa: E402
from bench.stats import publish  # noqa: E402
from testing.poll_presenter import Presenter, listen  # noqa: E402
from testing.protocol_client import Learner, _entry, _map, find_objects  # noqa: E402

# --------------------------------------------------------------------------------------------------------------
# follower processes


def run_followers(ws_url: str, code: str, count: int, first: int, spread: float, kind: str, choices: int,
                  ready_file: str, out_file: str) -> None:
    """``count`` follower pages: connect, signal readiness, answer the poll when it comes; write what they saw."""

    async def main() -> list[dict]:
        pages = [Learner(f"{ws_url}?room={code}", compress=True, clock=time.monotonic, keep_patches=False)
                 for _ in range(count)]
        gate = asyncio.Semaphore(4)  # a class does not open its pages in the same millisecond either

        async def connect(page):
            async with gate:
                await page.connect()

        await asyncio.gather(*(connect(p) for p in pages))
        records = []
        tasks = []
        for i, page in enumerate(pages):
            rng = random.Random(first + i)  # each page's own delay and answer, the same on every run
            record = {"delay": rng.uniform(0, spread), "seen": None, "sent": None, "acked": None,
                      "answer": (first + i) % choices if kind == "choice" else rng.choice(["0.731", ".731", "0.73"])}
            records.append(record)
            ids = {}

            async def answer(page=page, record=record, ids=ids, i=i):
                # as the card's script: the question drawn (with its nonce and the browser's id), then the answer
                await page._send_event(_map(model={"id": ids["card"]}, data=_map(
                    drawn=ids["poll"], nonce=ids["nonce"], browser=f"{code}-following-{first + i:07d}")),
                    name="data_event")
                await asyncio.sleep(record["delay"])
                record["sent"] = time.monotonic()
                await page._send_event(_map(model={"id": ids["card"]}, data=_map(poll=ids["poll"],
                                                                                    answer=record["answer"])),
                                       name="data_event")

            async def on_patch(events, when, record=record, ids=ids, answer=answer, page=page, i=i):
                if "card" not in ids:  # added, hidden, once the page has loaded
                    card = next((obj for obj in find_objects(events, "") if "poll-follower" in
                                 (obj.get("attributes", {}).get("css_classes") or [])), None)
                    if card is not None:
                        ids.update(card=card["id"], data=card["attributes"]["data"]["id"])
                        # as the card's script, once it has loaded: the browser it runs in
                        await page._send_event(_map(model={"id": ids["card"]}, data=_map(
                            hello=f"{code}-following-{first + i:07d}")), name="data_event")
                for ev in events:  # the question: the card's `poll`, which its page draws
                    if (record["seen"] is None and ev.get("kind") == "ModelChanged" and ev.get("attr") == "poll"
                            and ev.get("model", {}).get("id") == ids.get("data") and _entry(ev["new"], "can_answer")):
                        ids["poll"], ids["nonce"] = _entry(ev["new"], "id"), _entry(ev["new"], "nonce")
                        record["seen"] = when
                        tasks.append(asyncio.create_task(answer()))
                if record["acked"] is None and "Your answer is in" in json.dumps(events):
                    record["acked"] = when

            tasks.append(asyncio.create_task(listen(page, on_patch)))
        Path(ready_file).write_text("ready")
        while not Path(ready_file + ".stop").exists():
            await asyncio.sleep(0.1)
        for page in pages:
            page.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        return records

    Path(out_file).write_text(json.dumps(asyncio.run(main())))


def run_stuffer(ws_url: str, code: str, count: int, within: float, ready_file: str, out_file: str) -> None:
    """``count`` pages that join the room only to answer its open poll, started evenly over ``within`` seconds:
    each connects, reports its card drawn as the page's script does, answers, and closes at once."""

    async def one(i: int) -> dict:
        record = {"started": time.monotonic(), "counted": False, "refused": None}
        page = Learner(f"{ws_url}?room={code}" if code else ws_url, compress=True, clock=time.monotonic,
                       keep_patches=False)
        try:
            await page.connect()
        except Exception as exc:  # refused or overloaded: the page never joined
            record["refused"] = f"connect: {exc}"
            return record
        if not code:  # a plain page of the explorer, which joins no room: what building the page alone costs
            await asyncio.sleep(1.0)
            page.close()
            record["refused"] = "a plain page (no room)"
            return record
        ids, done = {}, asyncio.Event()

        async def on_patch(events, when):
            if "card" not in ids:
                card = next((obj for obj in find_objects(events, "") if "poll-follower" in
                             (obj.get("attributes", {}).get("css_classes") or [])), None)
                if card is not None:
                    ids.update(card=card["id"], data=card["attributes"]["data"]["id"])
            for ev in events:
                if not (ev.get("kind") == "ModelChanged" and ev.get("attr") == "poll"
                        and ev.get("model", {}).get("id") == ids.get("data")):
                    continue
                shown = ev["new"]
                if "sent" not in ids and _entry(shown, "can_answer"):
                    ids["sent"] = poll = _entry(shown, "id")
                    drawn = _map(drawn=poll, nonce=_entry(shown, "nonce"), browser=f"{code}-stuffing-{i:08d}")
                    await page._send_event(_map(model={"id": ids["card"]}, data=drawn), name="data_event")
                    await page._send_event(_map(model={"id": ids["card"]}, data=_map(poll=poll, answer=i % 4)),
                                           name="data_event")
                elif "sent" in ids:
                    lines = _entry(shown, "status") or []
                    note = next((line[1] for line in lines if line and line[0] == "poll-note"), None)
                    if any("Your answer is in" in "".join(map(str, line)) for line in lines):
                        record["counted"], record["refused"] = True, None
                        done.set()
                    elif note and record["refused"] is None:
                        # refused: but a server that took no report of a drawn card refuses the report itself
                        # first, as an answer (the code before it), and may count the answer after it
                        record["refused"] = note
                        asyncio.get_running_loop().call_later(2.0, done.set)

        listening = asyncio.create_task(listen(page, on_patch))
        try:
            await asyncio.wait_for(done.wait(), 30)
        except asyncio.TimeoutError:
            record["refused"] = record["refused"] or "no answer from the server within 30 s"
        page.close()
        await asyncio.gather(listening, return_exceptions=True)
        return record

    async def main() -> list[dict]:
        Path(ready_file).write_text("ready")
        start = time.monotonic()
        tasks = []
        for i in range(count):
            await asyncio.sleep(max(0.0, start + i * within / max(count, 1) - time.monotonic()))
            tasks.append(asyncio.create_task(one(i)))
        return await asyncio.gather(*tasks)

    Path(out_file).write_text(json.dumps(asyncio.run(main())))


# --------------------------------------------------------------------------------------------------------------
# the presenter and the measurement


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--followers", type=int, default=60)
    ap.add_argument("--processes", type=int, default=2, help="follower client processes")
    ap.add_argument("--spread", type=float, default=4.0,
                    help="seconds over which the followers answer, each after the question reached its page")
    ap.add_argument("--question", default="key-role", help="a question id of course/questions/bank.py")
    ap.add_argument("--wait", type=float, default=30.0, help="seconds to wait for every answer to be counted")
    ap.add_argument("--stuff", type=int, default=0, help="pages that join after the question only to answer it")
    ap.add_argument("--within", type=float, default=20.0, help="seconds over which the --stuff pages start")
    ap.add_argument("--plain", action="store_true",
                    help="the --stuff pages open the explorer without joining the room: their builds alone")
    args = ap.parse_args()

    import psutil

    from course.questions import BY_ID
    from tests.ui.conftest import free_port, wait_for_http
    from widgets.poll import question_options

    question = BY_ID[args.question]
    label = next(lab for group in question_options().values() for lab, qid in group.items() if qid == question.id)
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    ws = url.replace("http://", "ws://", 1) + "app/ws"
    log = open(out_dir / "poll-server.log", "w")
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "PORT": str(port), "PYTHONUNBUFFERED": "1"})
    followers = FollowerProcesses(out_dir, "poll")
    presenter = None
    load_start = os.getloadavg()
    try:
        wait_for_http(url + "liveness", server, timeout=180)
        presenter = Presenter(url)
        code = presenter.run(presenter.present())
        per = [args.followers // args.processes + (i < args.followers % args.processes) for i in range(args.processes)]
        first = 0
        choices = len(question.choices) or 1
        for n in filter(None, per):
            followers.start(__file__, "--_follower", ws, code, str(n), str(first), str(args.spread), question.kind,
                            str(choices))
            first += n
        followers.wait_ready()
        time.sleep(2.0)  # the last pages' first views settle before the clock starts

        proc = psutil.Process(server.pid)
        keys_before = presenter.run(presenter.keys(5.0)) if args.stuff else []
        cpu0 = proc.cpu_times()
        asked = presenter.run(presenter.open_poll(label))
        if args.stuff:
            stuffers = FollowerProcesses(out_dir, "poll-stuff")
            stuffers.start(__file__, "--_stuffer", ws, "" if args.plain else code, str(args.stuff), str(args.within))
            keys_during = presenter.run(presenter.keys(args.within + 3.0), timeout=args.within + 120)
            stuffed = stuffers.stop(timeout=args.within + 120)[0]
        deadline = time.monotonic() + (args.wait if args.followers else 0)
        while time.monotonic() < deadline and not any(n == args.followers for _, n, _, _ in presenter.counts):
            time.sleep(0.05)
        cpu1, done = proc.cpu_times(), time.monotonic()
        time.sleep(1.0)  # acknowledgements still on their way to the last pages
        records = [r for out in followers.stop() for r in out] if args.followers else []
    finally:
        if presenter is not None:
            presenter.close()
        followers.kill()
        if args.stuff and "stuffers" in locals():
            stuffers.kill()
        # Bokeh logs an AssertionError when it is stopped while a websocket is still closing: let them close
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = (out_dir / "poll-server.log").read_text()
            if text.count("WebSocket connection opened") <= text.count("WebSocket connection closed"):
                break
            time.sleep(0.1)
        server.terminate()
        server.wait(10)
        log.close()

    seen = [r["seen"] - asked for r in records if r["seen"] is not None]
    sent = [r["sent"] for r in records if r["sent"] is not None]
    acked = [r["acked"] - r["sent"] for r in records if r["acked"] is not None and r["sent"] is not None]
    last_sent = max(sent) if sent else float("nan")
    complete = next(((t, bars) for t, n, _, bars in presenter.counts if n == len(records)), None)
    if question.kind == "choice":
        expected = [sum(r["answer"] == i for r in records if r["sent"]) for i in range(len(question.choices))]
    else:
        from services.polls import number_bin

        bins = sorted({number_bin(question, r["answer"]) for r in records if r["sent"]}, key=float)
        expected = [sum(number_bin(question, r["answer"]) == b for r in records if r["sent"]) for b in bins]
    final = presenter.counts[-1][3] if presenter.counts else []
    result = {
        "followers": len(records), "question": question.id, "kind": question.kind, "spread_s": args.spread,
        "cpu_count": os.cpu_count(),
        "question_shown": f"{len(seen)}/{len(records)}",
        "ask_to_question_shown_ms_p50": round(1000 * percentile(seen, 0.5), 1),
        "ask_to_question_shown_ms_p95": round(1000 * percentile(seen, 0.95), 1),
        "ask_to_question_shown_ms_max": round(1000 * max(seen, default=float("nan")), 1),
        "answers_sent": f"{len(sent)}/{len(records)}",
        "ask_to_last_answer_sent_s": round(last_sent - asked, 2),
        "answer_to_own_page_ack_ms_p50": round(1000 * percentile(acked, 0.5), 1),
        "answer_to_own_page_ack_ms_max": round(1000 * max(acked, default=float("nan")), 1),
        "counts_complete_after_last_answer_ms": round(1000 * (complete[0] - last_sent), 1) if complete else None,
        "presenter_count_updates": len(presenter.counts),
        "presenter_final_counts": [n for _, n in final],
        "answers_sent_per_bar": expected,
        "final_counts_match_answers": [n for _, n in final] == expected,
        "server_cpu_s_ask_to_complete": round(cpu1.user + cpu1.system - cpu0.user - cpu0.system, 2),
        "ask_to_complete_s": round(done - asked, 2),
    }
    if args.stuff:
        from collections import Counter

        from bench.stats import summary_ms

        before, during = summary_ms(keys_before), summary_ms(keys_during)
        result.update({
            "stuffing_pages": args.stuff, "stuffing_within_s": args.within, "stuffing_pages_plain": args.plain,
            "stuffing_answers_counted": sum(r["counted"] for r in stuffed),
            "stuffing_refusals": dict(Counter(r["refused"] for r in stuffed if not r["counted"])),
            "presenter_key_ms_before": {k: round(v, 1) if isinstance(v, float) else v for k, v in before.items()},
            "presenter_key_ms_during": {k: round(v, 1) if isinstance(v, float) else v for k, v in during.items()},
            "presenter_card_last": re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", presenter.cards[-1])).strip()
            if presenter.cards else None,
        })
    publish(result, load_start, out_dir / "poll.json")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_follower":
        a = sys.argv[2:]
        run_followers(a[0], a[1], int(a[2]), int(a[3]), float(a[4]), a[5], int(a[6]), a[7], a[8])
    elif len(sys.argv) > 1 and sys.argv[1] == "--_stuffer":
        a = sys.argv[2:]
        run_stuffer(a[0], a[1], int(a[2]), float(a[3]), a[4], a[5])
    else:
        main()
