"""Core attention: the course's numbers, softmax properties, and errors.

Expected numbers come from the course text ("I love NLP") or from an independent
pure-Python computation, never from the code under test.
"""

import math
import warnings

import numpy as np
import pytest
from scipy.special import softmax as scipy_softmax

from core import I_LOVE_NLP, scaled_dot_product_attention, softmax

K = I_LOVE_NLP.keys
V = I_LOVE_NLP.values
TOL = dict(rtol=0, atol=5e-5)  # the course prints 4 decimals


def reference_attention(q, keys, values, scale=True):
    """Independent scalar-loop attention for one query (no NumPy)."""
    d_k = len(q)
    s = [sum(a * b for a, b in zip(q, k, strict=True)) / (math.sqrt(d_k) if scale else 1.0) for k in keys]
    m = max(s)
    e = [math.exp(x - m) for x in s]
    a = [x / sum(e) for x in e]
    return s, a, sum(w * v for w, v in zip(a, values, strict=True))


@pytest.mark.parametrize(
    "row, q, scores, weights, output",
    [
        (1, (0, 1), (0, 0.7071, 0.7071), (0.1978, 0.4011, 0.4011), 4.4067),
        (0, (1, 0), (0.7071, 0, 0.7071), (0.4011, 0.1978, 0.4011), 3.5933),
        (2, (1, 1), (0.7071, 0.7071, 1.4142), (0.2483, 0.2483, 0.5035), 4.0000),
    ],
    ids=["love", "I", "NLP"],
)
def test_course_numbers(row, q, scores, weights, output):
    r = scaled_dot_product_attention(K, K, V)
    np.testing.assert_allclose(r.scores[row], scores, **TOL)
    np.testing.assert_allclose(r.weights[row], weights, **TOL)
    np.testing.assert_allclose(r.output[row], output, **TOL)
    # a single query gives the same row as the full matrix
    one = scaled_dot_product_attention([q], K, V)
    np.testing.assert_allclose(one.weights[0], r.weights[row], rtol=1e-15)


def test_love_steps_match_the_hand_computation():
    r = scaled_dot_product_attention([[0.0, 1.0]], K, V)
    np.testing.assert_array_equal(r.dots[0], [0.0, 1.0, 1.0])
    assert r.scale == pytest.approx(1 / math.sqrt(2), rel=1e-15)
    assert r.row_max[0] == pytest.approx(1 / math.sqrt(2), rel=1e-15)
    np.testing.assert_allclose(r.shifted[0], [-1 / math.sqrt(2), 0, 0], rtol=1e-15)
    np.testing.assert_allclose(r.exp[0], [math.exp(-1 / math.sqrt(2)), 1, 1], rtol=1e-15)
    assert r.exp_sum[0] == pytest.approx(2 + math.exp(-1 / math.sqrt(2)), rel=1e-15)


def test_scaling_off_love_row():
    r = scaled_dot_product_attention(K, K, V, scale=1.0)
    np.testing.assert_allclose(r.weights[1], [0.1554, 0.4223, 0.4223], **TOL)
    np.testing.assert_allclose(r.weights[0], [0.4223, 0.1554, 0.4223], **TOL)
    np.testing.assert_allclose(r.output[1], 4.5339, **TOL)
    assert r.scale == 1.0


def test_causal_mask_course_numbers():
    mask = np.tril(np.ones((3, 3), dtype=bool))
    r = scaled_dot_product_attention(K, K, V, attn_mask=mask)
    np.testing.assert_array_equal(r.weights[0], [1.0, 0.0, 0.0])
    assert r.output[0] == 2.0
    np.testing.assert_allclose(r.weights[1], [0.3302, 0.6698, 0.0], **TOL)
    np.testing.assert_allclose(r.output[1], 4.6790, **TOL)
    assert r.weights[1, 2] == 0.0 and r.exp[1, 2] == 0.0 and r.scores[1, 2] == -np.inf
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=0, atol=1e-15)


def test_vector_values_module_2():
    Vm = [[10, 0], [0, 10], [5, 5]]
    r = scaled_dot_product_attention(K, K, Vm)
    assert r.output.shape == (3, 2)
    np.testing.assert_allclose(r.weights[0], [0.4011, 0.1978, 0.4011], **TOL)
    np.testing.assert_allclose(r.output[0], [6.0167, 3.9833], **TOL)


@pytest.mark.parametrize("seed", range(20))
def test_matches_independent_reference(seed):
    rng = np.random.default_rng(seed)
    n_k, d_k = rng.integers(2, 9), rng.integers(1, 6)
    Q, Kr, Vr = rng.normal(size=(3, d_k)) * 3, rng.normal(size=(n_k, d_k)) * 3, rng.normal(size=n_k) * 10
    for scale in (True, False):
        r = scaled_dot_product_attention(Q, Kr, Vr, scale=None if scale else 1.0)
        for i, q in enumerate(Q):
            s, a, out = reference_attention(q.tolist(), Kr.tolist(), Vr.tolist(), scale)
            np.testing.assert_allclose(r.scores[i], s, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(r.weights[i], a, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(r.output[i], out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(r.weights, scipy_softmax(r.scores, axis=-1), rtol=1e-13, atol=1e-300)


def test_invariants_on_random_inputs():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n_q, n_k, d_k = rng.integers(1, 6), rng.integers(1, 9), rng.integers(1, 5)
        r = scaled_dot_product_attention(
            rng.normal(size=(n_q, d_k)) * 5, rng.normal(size=(n_k, d_k)) * 5, v := rng.normal(size=n_k)
        )
        assert np.all((r.weights >= 0) & (r.weights <= 1))
        np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert np.all((r.output >= v.min()) & (r.output <= v.max()))


def test_softmax_shift_invariance():
    s = np.array([0.3, -1.2, 2.5, 0.0])
    for c in (-1000.0, -3.0, 0.0, 7.5, 1e5):
        np.testing.assert_allclose(softmax(s + c), softmax(s), rtol=1e-10)


def test_softmax_known_values():
    np.testing.assert_allclose(softmax([0.0, math.log(3.0)]), [0.25, 0.75], rtol=1e-15)
    np.testing.assert_array_equal(softmax([1000.0, 0.0, 0.0, 0.0]), [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(softmax([[1, 1], [0, 0]]), [[0.5, 0.5], [0.5, 0.5]], rtol=0)


@pytest.mark.parametrize("big", [1e300, -1e300])
def test_huge_scores_stay_finite(big):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = softmax([big, 0.0, -big])
        r = scaled_dot_product_attention([[big]], [[1.0], [0.0], [-1.0]], [2.0, 6.0, 4.0])
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(1.0, abs=1e-15)
    assert np.all(np.isfinite(r.weights)) and np.all(np.isfinite(r.output))
    expected_winner = 0 if big > 0 else 2
    assert r.weights[0, expected_winner] == 1.0
    assert r.output[0] == [2.0, 6.0, 4.0][expected_winner]


def test_huge_values_do_not_overflow_the_output():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = scaled_dot_product_attention([[0.0]], [[0.0], [0.0]], [1.5e308, 1.7e308])
    assert r.output[0] == pytest.approx(1.6e308, rel=1e-12)


def test_mask_forbids_attention_and_rows_still_sum_to_one():
    mask = np.array([[True, False, True], [False, True, False]])
    r = scaled_dot_product_attention([[1.0, 0.0], [0.0, 1.0]], K, V, attn_mask=mask)
    np.testing.assert_array_equal(r.weights[~mask], 0.0)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, atol=1e-15)
    np.testing.assert_array_equal(r.weights[1], [0.0, 1.0, 0.0])
    assert r.output[1] == 6.0


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([[0, 1]], [[1, 0, 0]], V), {}, r"^key must have d_k = 2"),
        (([[0, 1]], K, [1, 2]), {}, r"^value must have one row per key"),
        (([0, 1], K, V), {}, r"^query must be 2-D"),
        (([[np.nan, 1]], K, V), {}, r"^query contains NaN"),
        (([[0, 1]], [[np.inf, 0], [0, 1], [1, 1]], V), {}, r"^key contains NaN or infinite"),
        (([[0, 1]], K, [2, -np.inf, 4]), {}, r"^value contains"),
        (([["a", 1]], K, V), {}, r"^query must be numeric"),
        ((np.zeros((0, 2)), K, V), {}, r"^query must not be empty"),
        (([[1e200, 1e200]], [[1e200, 1e200]], [1.0]), {}, r"^query and key: .*overflow"),
        (([[0, 1]], K, V), {"attn_mask": [[True, False]]}, r"^attn_mask must broadcast to \(n_q, n_k\) = \(1, 3\)"),
        (([[0, 1]], K, V), {"attn_mask": [[False, False, False]]}, r"^attn_mask row 0 allows no key"),
    ],
)
def test_errors_name_the_argument(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        scaled_dot_product_attention(*args, **kwargs)


def test_example_is_read_only():
    with pytest.raises(ValueError):
        I_LOVE_NLP.keys[0, 0] = 5.0
    with pytest.raises(ValueError):
        I_LOVE_NLP.values[0] = 5.0
    assert I_LOVE_NLP.tokens == ("I", "love", "NLP")


def test_core_imports_no_ui_library():
    import subprocess
    import sys

    code = "import sys, core; bad = [m for m in ('panel', 'bokeh', 'param') if m in sys.modules]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
