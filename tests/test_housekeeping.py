"""The server returns the memory of closed sessions to the system (server/housekeeping.py, server/serve.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from server import housekeeping
from server.patches import panel_garbage_collect

ROOT = Path(__file__).resolve().parents[1]

# Many small objects, a few of them kept, scattered through the heap as the long-lived objects made while
# pages are open are; the rest freed. Prints resident MB at the start, after freeing, after a trim.
FREE_MOST = """
import psutil
from server import housekeeping
rss = lambda: psutil.Process().memory_info().rss / 2**20
start = rss()
objects = [[i, i, i, i] for i in range(1_000_000)]
kept = objects[::500]
del objects
freed = rss()
housekeeping.trim()
print(start, freed, rss())
"""

# Prints the allocator the interpreter was started with, then runs server/serve.py (as far as panel serve's help)
SHOW_ALLOCATOR_THEN_SERVE = ("import os; print('PYTHONMALLOC', os.environ.get('PYTHONMALLOC'), flush=True); "
                             "from server import serve; serve.main(['--help'])")


def _free_most(allocator: str) -> tuple[float, float, float]:
    out = subprocess.run([sys.executable, "-c", FREE_MOST], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONMALLOC": allocator}, check=True).stdout
    return tuple(map(float, out.split()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_a_trim_returns_freed_memory_under_the_c_allocator_and_not_under_pymalloc():
    start, freed, trimmed = _free_most("malloc")
    assert freed - start > 50  # the freed objects' memory is still held ...
    assert trimmed - start < 0.2 * (freed - start)  # ... until the trim gives most of it back
    start, freed, trimmed = _free_most("pymalloc")
    # a survivor in each arena keeps the arena: why server/serve.py switches
    assert trimmed - start > 0.5 * (freed - start)


def test_serve_py_starts_again_with_the_c_allocator():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    result = subprocess.run([sys.executable, "-c", SHOW_ALLOCATOR_THEN_SERVE], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.stdout.splitlines()[:2] == ["PYTHONMALLOC None", "PYTHONMALLOC malloc"]
    assert result.returncode == 0 and "usage: panel serve" in result.stdout


def test_serve_py_keeps_an_allocator_chosen_by_the_operator():
    result = subprocess.run([sys.executable, "-c", SHOW_ALLOCATOR_THEN_SERVE], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env={**os.environ, "PYTHONMALLOC": "pymalloc"})
    assert result.stdout.splitlines()[0] == "PYTHONMALLOC pymalloc" and result.stdout.count("PYTHONMALLOC") == 1


def test_serve_py_keeps_the_default_allocator_where_nothing_can_trim(monkeypatch):
    from server import housekeeping, serve

    def execve(*args):
        raise AssertionError("started again")

    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.setattr(serve.os, "execve", execve)
    monkeypatch.setattr(housekeeping, "can_trim", lambda: False)  # macOS, Windows, musl
    serve._use_c_allocator()


def test_serve_py_runs_on_if_it_cannot_start_again(monkeypatch, capsys):
    from server import serve

    def execve(*args):
        raise OSError("no such file")

    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.setattr(serve.os, "execve", execve)
    serve._use_c_allocator()
    assert "could not restart with PYTHONMALLOC=malloc (no such file)" in capsys.readouterr().err


# Builds PAGES pages (the app's build and Panel's model of it, each into its own document, all kept alive as open
# sessions are), with the collector as the process starts or as server/serve.py settles it before serving;
# prints the number of full collections during the builds.
BUILD_PAGES = """
import gc, sys
from bokeh.document import Document
import app
from server import housekeeping
if sys.argv[1] == "settled":
    housekeeping.settle_collector()
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "start" and info["generation"] == 2 else None)
pages = []
for _ in range(int(sys.argv[2])):
    doc = Document()
    pages.append(app.create_app().get_root(doc))
print(len(full))
"""


def _full_collections(collector: str, pages: int) -> int:
    out = subprocess.run([sys.executable, "-c", BUILD_PAGES, collector, str(pages)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    return int(out.split()[-1])


def test_a_class_arriving_is_built_without_a_full_collection():
    # Python's own collector passes over every object several times while twenty pages are built ...
    assert _full_collections("default", 20) >= 1
    # ... the settled one not once (its full passes are the round's, made when they are short)
    assert _full_collections("settled", 20) == 0


class _Node:
    pass


def _garbage_cycle():
    """A weak reference to an object cycle (as what is left of a closed page is), now garbage, in the collector's
    oldest generation (where the objects of a page open for a while are)."""
    import gc
    import weakref

    page = _Node()
    page.view = _Node()
    page.view.page = page
    gc.collect(1)
    gc.collect(1)
    return weakref.ref(page)


@pytest.fixture
def rounds(monkeypatch):
    """Housekeeping rounds with only these tests' collections: the collector off, the trims counted, a collector of
    the round's own."""
    import gc

    trims = []
    monkeypatch.setattr(housekeeping, "trim", lambda: trims.append(1))
    gc.disable()
    try:
        yield trims
    finally:
        gc.enable()


def _keeper(settled: bool = True, per_object: float = 1e-9):
    collector = housekeeping.Collector()
    collector.settled, collector.per_object = settled, per_object
    keeper = housekeeping.Housekeeping(collector=collector, later=lambda fn: fn())
    # the objects counted before a pass: the pages' as estimated (this test process's own are not a server's)
    collector.count = lambda: collector.objects(keeper.open, keeper.closed)
    return keeper


def test_a_settled_round_collects_closed_pages_leftovers_when_the_pass_is_short(rounds):
    keeper = _keeper()
    for _ in range(3):
        keeper.session_opened()
    gone = _garbage_cycle()
    keeper()
    assert gone() is not None and rounds == [1]  # no page closed: no full pass, the trim in a turn of its own
    keeper.session_closed(None)
    keeper()
    assert gone() is None and rounds == [1, 1] and keeper.collector.passes == 1 and keeper.closed == 0


def test_a_settled_round_puts_off_a_long_pass_until_few_pages_are_open_or_many_wait(rounds):
    # a machine where a pass over 3 open pages and 58 closed pages' leftovers is just within the budget: with 60 pages
    # open it would be several times over
    collector = housekeeping.Collector()
    per_object = 0.9 * housekeeping.FULL_PASS_BUDGET / collector.objects(3, 58)
    assert per_object * collector.objects(61, 1) > 3 * housekeeping.FULL_PASS_BUDGET
    keeper = _keeper(per_object=per_object)
    for _ in range(61):
        keeper.session_opened()
    gone = _garbage_cycle()
    keeper.session_closed(None)
    keeper()
    assert gone() is not None and keeper.skipped == 1 and keeper.collector.passes == 0
    for _ in range(57):  # the class leaves: 3 pages open and 58 pages' leftovers
        keeper.session_closed(None)
    keeper()
    assert gone() is None and keeper.collector.passes == 1
    # however long the pass, it is made once WAIT_AT_MOST closed pages wait
    keeper = _keeper(per_object=1e-3)
    keeper.session_opened()
    keeper.closed = housekeeping.WAIT_AT_MOST - 1
    keeper()
    assert keeper.collector.passes == 0
    keeper.closed += 1
    keeper()
    assert keeper.collector.passes == 1 and keeper.closed == 0


def test_a_pass_the_pages_call_short_is_counted_first_and_put_off_if_the_count_says_long(rounds):
    # a class has come and gone: 2 pages open, the process's own objects many more than the pages' estimate has
    collector = housekeeping.Collector()
    per_object = 0.5 * housekeeping.FULL_PASS_BUDGET / collector.objects(2, 1)
    keeper = _keeper(per_object=per_object)
    keeper.session_opened()
    keeper.session_opened()
    gone = _garbage_cycle()
    keeper.session_closed(None)
    counted = [10 * collector.objects(1, 1)]
    keeper.collector.count = lambda: counted[0]
    keeper()
    assert gone() is not None and keeper.skipped == 1 and keeper.collector.passes == 0
    counted[0] = collector.objects(1, 1)  # as many as estimated: short, made
    keeper()
    assert gone() is None and keeper.collector.passes == 1
    assert keeper.collector.per_object * counted[0] == pytest.approx(keeper.collector.longest)  # learnt per object


def test_a_settled_round_makes_a_short_pass_every_so_many_rounds_anyway(rounds):
    keeper = _keeper()
    keeper.session_opened()
    gone = _garbage_cycle()
    for _ in range(housekeeping.FULL_EVERY_ROUNDS - 1):
        keeper()
    assert gone() is not None
    keeper()
    assert gone() is None and len(rounds) == housekeeping.FULL_EVERY_ROUNDS


def test_an_unsettled_process_keeps_pythons_collector_and_collects_after_a_page_closed(rounds):
    keeper = _keeper(settled=False)
    keeper.session_opened()
    gone = _garbage_cycle()
    keeper()
    assert gone() is not None and rounds == [1]
    keeper.session_closed(None)
    keeper()
    assert gone() is None and rounds == [1, 1]


def test_panels_own_full_pass_after_a_discard_is_left_to_a_settled_rounds(monkeypatch):
    from panel.io import document

    calls = []
    monkeypatch.setattr(document, "_garbage_collect", lambda: calls.append(1))
    monkeypatch.setattr(housekeeping.COLLECTOR, "settled", False)
    panel_garbage_collect.install()
    panel_garbage_collect.install()  # twice: wrapped once
    document._garbage_collect()
    assert calls == [1]  # unsettled: Panel's pass, as before
    monkeypatch.setattr(housekeeping.COLLECTOR, "settled", True)
    document._garbage_collect()
    assert calls == [1]  # settled: the round's


# server/serve.py's start-up, as far as the server's settings: the collector as it then is
SETTLED_BY_SERVE = """
import argparse, gc
from server import serve
parser = argparse.ArgumentParser(prog="panel")
command = serve._serve_command()(parser=parser.add_subparsers().add_parser("serve"))
args = parser.parse_args(serve.serve_argv({}))
command.customize_kwargs(args, {})
print(gc.get_freeze_count() > 50_000, gc.get_threshold()[2])
"""

# Small objects made and most of them freed, scattered as a closed page's are; prints how many freed chunks glibc keeps
# in its fast bins, unmerged (mallinfo2's smblks), after the server's start-up (argument "serve"), after
# merge_on_free alone ("merge") or with glibc's defaults ("default").
FAST_BINS = """
import ctypes, sys
from server import housekeeping
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
                "keepcost".split()]
mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
if sys.argv[1] == "merge":
    housekeeping.merge_on_free()
elif sys.argv[1] == "serve":
    import argparse
    from server import serve
    parser = argparse.ArgumentParser(prog="panel")
    command = serve._serve_command()(parser=parser.add_subparsers().add_parser("serve"))
    command.customize_kwargs(parser.parse_args(serve.serve_argv({})), {})
objects = [[i, i] for i in range(200_000)]
kept = objects[::3]
del objects
print(mallinfo2().smblks)
"""


@pytest.mark.skipif(not housekeeping.can_trim(), reason="glibc's fast bins")
def test_freed_small_chunks_are_merged_as_they_are_freed_not_all_at_once_in_a_trim():
    def unmerged(how: str) -> int:
        return int(subprocess.run([sys.executable, "-c", FAST_BINS, how], cwd=ROOT, capture_output=True, text=True,
                                  timeout=120, check=True, env={**os.environ, "PYTHONMALLOC": "malloc"}).stdout)

    assert unmerged("default") > 10_000  # glibc's default: each waits in a fast bin for the next trim to merge it
    assert unmerged("merge") == 0
    assert unmerged("serve") == 0  # the server's start-up asks for it


def test_the_server_settles_the_collector_before_it_serves():
    out = subprocess.run([sys.executable, "-c", SETTLED_BY_SERVE], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out[-2:] == ["True", str(housekeeping.NEVER)]
