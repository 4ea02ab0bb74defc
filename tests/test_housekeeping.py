"""The server returns the memory of closed sessions to the system (server/housekeeping.py, server/serve.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert trimmed - start > 0.5 * (freed - start)  # a survivor in each arena keeps the arena: why server/serve.py switches


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
