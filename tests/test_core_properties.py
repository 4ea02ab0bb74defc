"""Property-based tests of the core: any input gives a correct finite result or a clear ValueError.

Inputs mix ordinary floats with the edge cases a shared server may be sent: ±0,
subnormals, ±1e300, NaN and ±inf. Warnings are errors here, so an overflow or an
invalid operation inside NumPy fails the test even when the result looks fine.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core import scaled_dot_product_attention, softmax

EDGE = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e300, -1e300, 1.3e154, -1.3e154, 1.7e308,
        np.nan, np.inf, -np.inf, 1.0, -1.0]
elements = st.one_of(
    st.sampled_from(EDGE),
    st.floats(-10, 10, allow_nan=False),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)
ARGUMENT = re.compile(r"^(query|key|value|attn_mask|query and key|scores)\b")


@st.composite
def attention_inputs(draw):
    n_q, n_k, d_k = draw(st.integers(1, 4)), draw(st.integers(1, 8)), draw(st.integers(1, 4))
    d_v = draw(st.sampled_from([None, 1, 2, 3]))
    Q = draw(hnp.arrays(np.float64, (n_q, d_k), elements=elements))
    K = draw(hnp.arrays(np.float64, (n_k, d_k), elements=elements))
    V = draw(hnp.arrays(np.float64, (n_k,) if d_v is None else (n_k, d_v), elements=elements))
    mask = draw(st.one_of(st.none(), hnp.arrays(np.bool_, (n_q, n_k))))
    return Q, K, V, mask, draw(st.booleans())


def check_result(r, V):
    assert np.all(np.isfinite(r.weights)) and np.all(np.isfinite(r.output))
    assert np.all((r.weights >= 0) & (r.weights <= 1))
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    lo, hi = V.min(axis=0), V.max(axis=0)
    assert np.all(r.output >= lo) and np.all(r.output <= hi)
    np.testing.assert_array_equal(r.weights[~r.mask], 0.0)


@settings(max_examples=600, deadline=None)
@given(attention_inputs())
def test_attention_is_finite_and_correct_or_names_the_bad_argument(inputs):
    Q, K, V, mask, scale = inputs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            r = scaled_dot_product_attention(Q, K, V, mask, scale=None if scale else 1.0)
        except ValueError as e:
            assert ARGUMENT.match(str(e)), f"error does not name its argument: {e}"
            bad_entries = not (np.all(np.isfinite(Q)) and np.all(np.isfinite(K)) and np.all(np.isfinite(V)))
            empty_row = mask is not None and not np.all(mask.any(axis=1))
            overflow = str(e).startswith("query and key")
            assert bad_entries or empty_row or overflow, f"refused valid input: {e}"
            return
    assert np.all(np.isfinite(Q)) and np.all(np.isfinite(K)) and np.all(np.isfinite(V))
    check_result(r, V)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 8)),
                  elements=st.floats(-1e308, 1e308, allow_nan=False)))
def test_softmax_of_any_finite_scores(scores):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = softmax(scores)
    assert np.all(np.isfinite(w)) and np.all((w >= 0) & (w <= 1))
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    # the largest score always gets the largest weight
    np.testing.assert_array_equal(w[np.arange(len(w)), scores.argmax(axis=-1)], w.max(axis=-1))


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.integers(2, 8), elements=st.floats(-50, 50)), st.floats(-1e3, 1e3))
def test_softmax_shift_invariance(scores, c):
    np.testing.assert_allclose(softmax(scores + c), softmax(scores), rtol=1e-9, atol=1e-15)


def test_scores_at_both_ends_of_float64():
    # max - min of the scores is beyond float64 (≈ 3.4e308): that key's weight is exactly 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = scaled_dot_product_attention([[1.0]], [[1.7e308], [-1.7e308]], [1.0, 2.0], scale=1.0)
        w = softmax([1.7e308, -1.7e308])
    np.testing.assert_array_equal(r.weights, [[1.0, 0.0]])
    np.testing.assert_array_equal(w, [1.0, 0.0])
    assert r.output[0] == 1.0
