"""The price of "every token looks at every other token": n² scores per head per layer.

Q K^T holds one score for each (query, key) pair: an (n, n) matrix for a sentence
of n tokens, quadratic in n in both time and memory (the course's Module 2: n = 100
gives 10⁴ entries, n = 10,000 gives 10⁸ per head per layer, 800 MB in float64).
This module measures it on the core itself, with seeded random queries, keys and
values, and shrinks an (n, n) weight matrix to a small image that a page can draw.
"""

from __future__ import annotations

import time
import tracemalloc
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from core.attention import _as_finite_matrix, scaled_dot_product_attention
from core.checks import is_whole
from core.projections import Projections

__all__ = ["COST_SIZES", "D_K", "FLOAT64_BYTES", "MAX_N", "MIN_N", "NN_ARRAYS", "CostMeasurement", "ScoreMatrixSize",
           "downsample", "measure_attention", "random_qkv", "score_matrix_size"]

#: Sentence lengths the measurement accepts. At n = 4096 the core keeps several (n, n) float64 arrays of 134 MB each.
MIN_N, MAX_N = 3, 4096
#: The sizes a page measures: 3, then doubling from 8 to MAX_N (eleven; a server measures each at most once).
COST_SIZES = (MIN_N, *(2 ** k for k in range(3, 13)))
assert COST_SIZES[-1] == MAX_N
#: Query/key (and value) size of the measurement, the course's suggested head size.
D_K = 64
FLOAT64_BYTES = 8
#: The (n_q, n_k) arrays an AttentionResult keeps: five float64 and one bool (1 byte an entry).
NN_ARRAYS = ("dots", "scores", "shifted", "exp", "weights", "mask")


def _int_in(name: str, x, lo: int, hi: int | None = None) -> int:
    if not is_whole(x) or x < lo or (hi is not None and x > hi):
        bounds = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be an integer {bounds}, got {x!r}")
    return int(x)


class ScoreMatrixSize(NamedTuple):
    """How big the score matrices of n tokens are (exact integers).

    Attributes
    ----------
    n : int
    entries : int
        n² per head per layer, times heads and layers.
    bytes : int
        ``entries * bytes_per_entry`` (8 for float64).
    megabytes : float
        ``bytes / 10⁶`` (decimal MB, as the course counts: 10⁸ float64 entries = 800 MB).
    """

    n: int
    entries: int
    bytes: int
    megabytes: float


def score_matrix_size(n: int, heads: int = 1, layers: int = 1, bytes_per_entry: int = FLOAT64_BYTES) -> ScoreMatrixSize:
    """Entries and bytes of the (n, n) score matrices of ``heads`` heads in ``layers`` layers.

    Parameters
    ----------
    n : int >= 1
        Tokens in the sequence.
    heads, layers : int >= 1
        Each head of each layer has its own (n, n) matrix.
    bytes_per_entry : int >= 1
        8 for float64 (the core's), 4 for float32, 2 for float16.

    Returns
    -------
    ScoreMatrixSize

    Raises
    ------
    ValueError
        If an argument is not a positive integer.

    Examples
    --------
    Module 2's figures:

    >>> score_matrix_size(100).entries, score_matrix_size(10_000).entries
    (10000, 100000000)
    >>> score_matrix_size(10_000).megabytes
    800.0
    """
    n = _int_in("n", n, 1)
    heads, layers = _int_in("heads", heads, 1), _int_in("layers", layers, 1)
    bytes_per_entry = _int_in("bytes_per_entry", bytes_per_entry, 1)
    entries = n * n * heads * layers
    return ScoreMatrixSize(n=n, entries=entries, bytes=entries * bytes_per_entry,
                           megabytes=entries * bytes_per_entry / 1e6)


def random_qkv(n: int, d_k: int = D_K, seed: int = 0) -> Projections:
    """Seeded random queries, keys and values of n tokens, entries i.i.d. N(0, 1).

    Parameters
    ----------
    n : int, MIN_N <= n <= MAX_N (3 to 4096)
    d_k : int >= 1
        Size of each query, key and value (d_v = d_k).
    seed : int >= 0
        Seed of a NumPy ``Generator`` of its own; no global random state is touched.

    Returns
    -------
    Projections
        Q, K, V, each (n, d_k) float64.

    Raises
    ------
    ValueError
        If n is outside 3 to 4096, d_k is not a positive integer or the seed is negative.
    """
    n = _int_in("n", n, MIN_N, MAX_N)
    d_k, seed = _int_in("d_k", d_k, 1), _int_in("seed", seed, 0)
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, d_k)) for _ in range(3))
    return Projections(Q=Q, K=K, V=V)


@dataclass(frozen=True)
class CostMeasurement:
    """One run of the core on n random tokens: its time, its memory, and a small image of its weights.

    Attributes
    ----------
    n, d_k, seed : int
    seconds : float
        Wall time of the one ``scaled_dot_product_attention`` call (``time.perf_counter``), in seconds.
    nn_arrays : tuple of str
        The (n, n) arrays the result keeps: :data:`NN_ARRAYS`.
    nn_bytes : int
        Their bytes, read from the arrays: five float64 (8 n² each) and the bool mask
        (n²), 41 n² in all.
    peak_bytes : int or None
        Most memory the call held at once, in bytes, as traced by ``tracemalloc``
        (NumPy reports its arrays to it): the kept arrays plus temporaries. None
        when not traced.
    image : (m, m) float64, m <= image_size
        Block means of the weights (see :func:`downsample`), for drawing; the full
        (n, n) result is not kept.
    """

    n: int
    d_k: int
    seed: int
    seconds: float
    nn_arrays: tuple[str, ...]
    nn_bytes: int
    peak_bytes: int | None
    image: np.ndarray


def measure_attention(n: int, d_k: int = D_K, seed: int = 0, trace: bool = True,
                      image_size: int = 64) -> CostMeasurement:
    """Run the core once on :func:`random_qkv` (n, d_k, seed) and measure it.

    Parameters
    ----------
    n : int, 3 <= n <= 4096
    d_k : int >= 1
    seed : int >= 0
    trace : bool, default True
        Also trace the call's peak memory with ``tracemalloc``. Its overhead is
        small here (a few large NumPy allocations), but it is process-wide: another
        thread allocating meanwhile is counted too. If tracing is already on, it is
        left on and only its peak is reset.
    image_size : int >= 1
        Largest side of the returned image of the weights.

    Returns
    -------
    CostMeasurement

    Raises
    ------
    ValueError
        If n, d_k, seed or image_size is out of range.

    Notes
    -----
    One timing of one call: it varies from run to run (first touches of fresh
    memory, other work on the machine). Time and memory both grow as n².
    """
    Q, K, V = random_qkv(n, d_k, seed)
    image_size = _int_in("image_size", image_size, 1)
    was_tracing = tracemalloc.is_tracing()
    if trace:
        if not was_tracing:
            tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
    try:
        start = time.perf_counter()
        r = scaled_dot_product_attention(Q, K, V)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] - before if trace else None
    finally:
        if trace and not was_tracing:
            tracemalloc.stop()
    nn_bytes = sum(getattr(r, name).nbytes for name in NN_ARRAYS)
    return CostMeasurement(n=int(n), d_k=int(d_k), seed=int(seed), seconds=seconds, nn_arrays=NN_ARRAYS,
                           nn_bytes=int(nn_bytes), peak_bytes=peak, image=downsample(r.weights, image_size))


def _block_edges(length: int, blocks: int) -> np.ndarray:
    # blocks + 1 integer edges from 0 to length; block sizes differ by at most one
    return np.arange(blocks + 1) * length // blocks


def downsample(weights, m: int) -> np.ndarray:
    """Shrink an (n_q, n_k) matrix to at most (m, m) by block means, for drawing as an image.

    Parameters
    ----------
    weights : (n_q, n_k) array_like of finite floats
        E.g. ``AttentionResult.weights``.
    m : int >= 1
        Largest number of rows and of columns of the result.

    Returns
    -------
    (min(n_q, m), min(n_k, m)) float64
        Entry (a, b) is the mean of the block of rows ``edges_q[a]:edges_q[a+1]``
        and columns ``edges_k[b]:edges_k[b+1]``, where ``edges = arange(b + 1) * n // b``
        for b blocks: blocks of floor(n/m) or ceil(n/m) rows (columns). A matrix
        no larger than m x m comes back as a copy.

    Raises
    ------
    ValueError
        If ``weights`` is not a finite, non-empty 2-D array or m is not a positive integer.

    Examples
    --------
    >>> downsample(np.arange(16.0).reshape(4, 4), 2).tolist()
    [[2.5, 4.5], [10.5, 12.5]]
    """
    w = _as_finite_matrix("weights", weights, ndim=(2,))
    m = _int_in("m", m, 1)
    (n_q, n_k), (b_q, b_k) = w.shape, (min(w.shape[0], m), min(w.shape[1], m))
    e_q, e_k = _block_edges(n_q, b_q), _block_edges(n_k, b_k)
    sums = np.add.reduceat(np.add.reduceat(w, e_q[:-1], axis=0), e_k[:-1], axis=1)
    return sums / np.outer(np.diff(e_q), np.diff(e_k))
