"""The n² cost measured once per server process: the NumPy core for n = 3 to 4096, kept in ``pn.state.cache``.

Every page's Heads · n² tab shows the same server's measurements (widgets/cost.py), so they are made at most
once per size of :data:`core.cost.COST_SIZES`, eleven in all (:class:`CostCache`). They run on one worker
thread of the process, which hands each to a measuring process (:class:`MeasureApart`), never on the event
loop: a page waiting for n = 4096 (about 690 MB of (n, n) arrays, a second or more) shows a progress bar, and
every other page of the server goes on being served meanwhile. One thread: two pages asking for n = 4096 at
once share one run, and the process never holds two of those at a time.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import panel as pn

from core import CostMeasurement, measure_attention
from core.cost import COST_SIZES

#: Where the process keeps its measurements (``pn.state.cache`` is shared by every session of the process).
CACHE_KEY = "attention-explorer:n2-cost"
#: Side of the weights' image: block means past what the screen can show.
IMAGE_SIZE = 64
#: Sizes up to this are timed three times and the fastest run kept (the usual way to time a short call: the
#: slower runs measure whatever else the machine did meanwhile); larger ones once, each run being seconds.
REPEAT_UP_TO = 1024


#: A measuring process: reads "n image_size" lines, answers each with its measurement, pickled, length first.
_CHILD = """
import pickle, sys
from core.cost import measure_attention
for line in sys.stdin:
    n, size = map(int, line.split())
    data = pickle.dumps(measure_attention(n, image_size=size))
    sys.stdout.buffer.write(len(data).to_bytes(8, "big") + data)
    sys.stdout.buffer.flush()
"""


class MeasureApart:
    """:func:`core.measure_attention` in a Python process of its own, started by the first call and kept.

    Its peak memory is traced with ``tracemalloc``, and stopping ``tracemalloc`` while another thread
    allocates crashes CPython 3.12 before 3.12.9 (a segmentation fault in its ``traceback_new``): a server's
    event loop always is such a thread. The measuring process has no other thread, and the peak it traces is
    that call's alone. It holds NumPy and the core only, and ends with the server (its input closes).
    """

    def __init__(self):
        self._child: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def __call__(self, n: int, image_size: int = IMAGE_SIZE) -> CostMeasurement:
        with self._lock:
            if self._child is None or self._child.poll() is not None:
                self._child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                               stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
            self._child.stdin.write(f"{int(n)} {int(image_size)}\n".encode())
            self._child.stdin.flush()
            size = int.from_bytes(self._read(8), "big")
            return pickle.loads(self._read(size))  # our own child's answer

    def _read(self, size: int) -> bytes:
        data = self._child.stdout.read(size)
        if len(data) != size:
            raise RuntimeError(f"the measuring process ended (exit code {self._child.wait()})")
        return data


class CostCache:
    """One process's measurements of the core by n, and the one worker thread that makes them.

    Bounded: only the sizes it is made with (:data:`core.cost.COST_SIZES`) are measured, each once, and a measurement
    keeps only its numbers and a (64, 64) image, not its (n, n) arrays.
    """

    def __init__(self, sizes=COST_SIZES, measure=measure_attention):
        self.sizes = tuple(sizes)
        self._measure = measure
        self._done: dict[int, CostMeasurement] = {}
        self._running: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None  # started by the first measurement

    def get(self, n: int) -> CostMeasurement | None:
        """The measurement of n, if made."""
        return self._done.get(n)

    def measured(self, up_to: int | None = None) -> list[CostMeasurement]:
        """Every measurement made, by n (only n <= ``up_to`` if given)."""
        return [self._done[n] for n in sorted(self._done) if up_to is None or n <= up_to]

    def measure(self, n: int) -> Future:
        """A future of the measurement of n: done already, running (shared), or started on the worker thread.

        Raises ValueError for an n that is not one of ``sizes``: the cache never grows past them.
        """
        if n not in self.sizes:
            raise ValueError(f"n must be one of {', '.join(map(str, self.sizes))}, got {n!r}")
        with self._lock:
            if n in self._done:
                done: Future = Future()
                done.set_result(self._done[n])
                return done
            if n not in self._running:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="n2-cost")
                self._running[n] = self._executor.submit(self._run, n)
            return self._running[n]

    def _run(self, n: int) -> CostMeasurement:
        try:
            runs = [self._measure(n, image_size=IMAGE_SIZE) for _ in range(3 if n <= REPEAT_UP_TO else 1)]
            m = min(runs, key=lambda run: run.seconds)
            with self._lock:
                self._done[n] = m
            return m
        finally:
            with self._lock:
                self._running.pop(n, None)


def cost_cache() -> CostCache:
    """This process's :class:`CostCache` (made by the first page that needs it)."""
    cache = pn.state.cache.get(CACHE_KEY)
    if not isinstance(cache, CostCache):
        cache = pn.state.cache[CACHE_KEY] = CostCache(measure=MeasureApart())
    return cache
