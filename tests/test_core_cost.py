"""The n² cost: Module 2's figures, the measurement's shape and sanity, and block-mean downsampling by loops.

No timing is asserted: a run's wall time depends on the machine and its load.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from core.cost import (
    D_K,
    MAX_N,
    MIN_N,
    NN_ARRAYS,
    downsample,
    measure_attention,
    random_qkv,
    score_matrix_size,
)


def test_module_2_figures():
    small, big = score_matrix_size(100), score_matrix_size(10_000)
    assert small.entries == 10**4 and big.entries == 10**8  # per head per layer
    assert small.bytes == 8 * 10**4 and big.bytes == 800_000_000
    assert big.megabytes == 800.0 and small.megabytes == 0.08
    assert isinstance(big.entries, int) and isinstance(big.bytes, int)


def test_heads_layers_and_narrower_floats_multiply():
    s = score_matrix_size(1000, heads=8, layers=6, bytes_per_entry=2)
    assert s.entries == 1000 * 1000 * 8 * 6 and s.bytes == 2 * 48_000_000 and s.megabytes == 96.0
    # exact for lengths far beyond float64's integers
    assert score_matrix_size(10**12).entries == 10**24


@pytest.mark.parametrize("kwargs", [dict(n=0), dict(n=2.0), dict(n=True), dict(n=10, heads=0), dict(n=10, layers=-1),
                                    dict(n=10, bytes_per_entry=0)])
def test_score_matrix_size_refuses_non_positive_integers(kwargs):
    with pytest.raises(ValueError, match=rf"^{next(k for k in reversed(kwargs))} must be an integer"):
        score_matrix_size(**kwargs)


def test_random_qkv_is_seeded_and_bounded():
    before = np.random.get_state()[1].copy()
    a, b, c = random_qkv(5), random_qkv(5), random_qkv(5, seed=1)
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    assert all(x.shape == (5, D_K) for x in a) and D_K == 64
    for x, y, z in zip(a, b, c, strict=True):
        np.testing.assert_array_equal(x, y)
        assert not np.array_equal(x, z)
    assert not np.array_equal(a.Q, a.K)
    assert (MIN_N, MAX_N) == (3, 4096)
    assert random_qkv(3, d_k=2).Q.shape == (3, 2)


@pytest.mark.parametrize("kwargs, match", [(dict(n=2), "^n must be an integer from 3 to 4096"),
                                           (dict(n=4097), "^n must be"), (dict(n=10, d_k=0), "^d_k"),
                                           (dict(n=10, seed=-1), "^seed")])
def test_random_qkv_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        random_qkv(**kwargs)


@pytest.mark.parametrize("n", [3, 100, 257])
def test_measurement_shape_and_sanity(n):
    m = measure_attention(n, seed=2)
    assert (m.n, m.d_k, m.seed) == (n, 64, 2)
    assert math.isfinite(m.seconds) and m.seconds > 0
    assert m.nn_arrays == NN_ARRAYS == ("dots", "scores", "shifted", "exp", "weights", "mask")
    # five float64 (n, n) arrays of 8 bytes an entry and one bool mask of 1 byte an entry
    assert m.nn_bytes == 5 * 8 * n * n + n * n == 41 * n * n
    # the call's peak holds at least what it returns, and not much beyond its temporaries
    assert m.nn_bytes <= m.peak_bytes <= 2 * m.nn_bytes + 1_000_000
    side = min(n, 64)
    assert m.image.shape == (side, side)
    assert np.all((m.image >= 0) & (m.image <= 1))
    # each block row of the image averages rows that sum to 1: its column sizes times its means sum to 1
    sizes = [(b + 1) * n // side - b * n // side for b in range(side)]
    np.testing.assert_allclose(m.image @ np.array(sizes, float), 1.0, rtol=1e-12)
    assert not tracemalloc.is_tracing()


def test_measurement_without_tracing_and_with_tracing_already_on():
    assert measure_attention(10, trace=False).peak_bytes is None
    tracemalloc.start()
    try:
        m = measure_attention(50, d_k=8)
        assert tracemalloc.is_tracing()  # someone else's tracing is left on
        assert m.peak_bytes >= m.nn_bytes == 41 * 50 * 50
    finally:
        tracemalloc.stop()


def test_measurement_image_size():
    m = measure_attention(100, d_k=4, image_size=7)
    assert m.image.shape == (7, 7)
    with pytest.raises(ValueError, match="^image_size"):
        measure_attention(10, image_size=0)


# --- downsampling ---------------------------------------------------------------------------

def loop_block_means(w, m):
    """Block means by loops: b = min(n, m) contiguous blocks along each axis whose sizes differ by at most 1."""
    w = w.tolist()

    def blocks(n):
        b = min(n, m)
        small, extra = divmod(n, b)
        # sizes from the spec: floor(n/b) or ceil(n/b), placed where i*n//b steps (checked separately)
        edges = [i * n // b for i in range(b + 1)]
        sizes = [edges[i + 1] - edges[i] for i in range(b)]
        assert sorted(set(sizes)) in ([small], [small, small + 1]) and sizes.count(small + 1) == extra
        return [range(edges[i], edges[i + 1]) for i in range(b)]

    out = []
    for rows in blocks(len(w)):
        out.append([])
        for cols in blocks(len(w[0])):
            total = 0.0
            for i in rows:
                for j in cols:
                    total += w[i][j]
            out[-1].append(total / (len(rows) * len(cols)))
    return out


@pytest.mark.parametrize("shape, m", [((8, 8), 4), ((10, 10), 3), ((7, 13), 4), ((5, 5), 5), ((3, 4), 10),
                                      ((100, 100), 64), ((1, 9), 2), ((64, 63), 8)])
def test_downsample_is_block_means(shape, m):
    w = np.random.default_rng(sum(shape) + m).random(shape)
    got = downsample(w, m)
    want = loop_block_means(w, m)
    assert got.shape == (min(shape[0], m), min(shape[1], m))
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_downsample_small_exact_case_and_copy():
    w = np.arange(16.0).reshape(4, 4)
    # blocks [[0, 1, 4, 5], [2, 3, 6, 7]], [[8, 9, 12, 13], [10, 11, 14, 15]]
    assert downsample(w, 2).tolist() == [[2.5, 4.5], [10.5, 12.5]]
    same = downsample(w, 4)
    np.testing.assert_array_equal(same, w)
    same[0, 0] = 99.0
    assert w[0, 0] == 0.0


def test_downsample_of_real_weights_keeps_a_diagonal_visible():
    # attention to itself: the identity's block means are 1/block on the diagonal, 0 elsewhere
    img = downsample(np.eye(12), 3)
    np.testing.assert_allclose(img, np.eye(3) / 4, rtol=1e-15)


@pytest.mark.parametrize("w, m, match", [(np.ones(4), 2, "^weights must be 2-D"), (np.ones((2, 2)), 0, "^m must be"),
                                         ([[1.0, -np.inf]], 2, "^weights contains NaN or infinite"),
                                         (np.ones((2, 2)), 1.5, "^m must be")])
def test_downsample_refuses(w, m, match):
    with pytest.raises(ValueError, match=match):
        downsample(w, m)
