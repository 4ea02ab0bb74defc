"""Temperature in the attention core, and the saturation numbers of a softmax.

Expected numbers come from the course text, from closed forms written here, or from
the plain-loop reference in tests/loop_reference.py, never from the code under test.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core import I_LOVE_NLP, saturation, scaled_dot_product_attention, scaling_experiment, temperature_sweep
from tests.loop_reference import attention as loop_attention
from tests.loop_reference import random_mask

K, V = I_LOVE_NLP.keys, I_LOVE_NLP.values


def test_temperature_sqrt_d_k_is_exactly_the_scaled_case_and_one_the_unscaled():
    rng = np.random.default_rng(3)
    cases = [(K, K, V)] + [(rng.normal(size=(4, d)), rng.normal(size=(6, d)), rng.normal(size=(6, 2)))
                           for d in (1, 2, 3, 5, 64)]
    for Q, Kr, Vr in cases:
        d_k = np.shape(Q)[1]
        for T, scale in ((math.sqrt(d_k), None), (1.0, 1.0)):
            a = scaled_dot_product_attention(Q, Kr, Vr, scale=scale)
            b = scaled_dot_product_attention(Q, Kr, Vr, temperature=T)
            for name in ("dots", "scores", "shifted", "exp", "exp_sum", "weights", "output"):
                np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)
            assert b.scale == a.scale == 1 / T


def test_temperature_is_scale_one_over_T_and_not_both():
    a = scaled_dot_product_attention(K, K, V, scale=2.0)
    b = scaled_dot_product_attention(K, K, V, temperature=0.5)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.scale == b.scale == 2.0
    with pytest.raises(ValueError, match=r"^scale and temperature: give one of them"):
        scaled_dot_product_attention(K, K, V, scale=2.0, temperature=0.5)


def test_low_temperature_love_row_closed_form():
    # q_love · k = (0, 1, 1); divided by T = 0.25: (0, 4, 4)
    r = scaled_dot_product_attention([[0, 1]], K, V, temperature=0.25)
    np.testing.assert_allclose(r.scores[0], [0.0, 4.0, 4.0], rtol=1e-15)
    z = 1 + 2 * math.exp(4)
    np.testing.assert_allclose(r.weights[0], [1 / z, math.exp(4) / z, math.exp(4) / z], rtol=1e-14)
    np.testing.assert_allclose(r.output[0], (2 + (6 + 4) * math.exp(4)) / z, rtol=1e-14)
    assert r.scale == 4.0


def test_temperature_orders_the_course_rows_between_one_hot_and_uniform():
    # love's query: the ties love/NLP share the weight as T -> 0; uniform 1/3 as T grows
    cold = scaled_dot_product_attention([[0, 1]], K, V, temperature=1e-3).weights[0]
    hot = scaled_dot_product_attention([[0, 1]], K, V, temperature=1e6).weights[0]
    np.testing.assert_allclose(cold, [0.0, 0.5, 0.5], atol=1e-300)
    np.testing.assert_allclose(hot, [1 / 3] * 3, rtol=1e-6)


@pytest.mark.parametrize("seed", range(25))
def test_temperature_matches_the_loop_reference_with_random_masks(seed):
    rng = np.random.default_rng(100 + seed)
    n_q, n_k, d_k = rng.integers(1, 6), rng.integers(1, 9), rng.integers(1, 7)
    Q, Kr = rng.normal(size=(n_q, d_k)) * 2, rng.normal(size=(n_k, d_k)) * 2
    Vr = rng.normal(size=n_k) * 5 if seed % 2 else rng.normal(size=(n_k, rng.integers(1, 4))) * 5
    mask = random_mask(rng, n_q, n_k)
    T = float(np.exp(rng.uniform(-2, 3)))  # 0.14 ... 20
    r = scaled_dot_product_attention(Q, Kr, Vr, attn_mask=mask, temperature=T)
    scores, weights, output = loop_attention(Q, Kr, Vr, mask, divide_by=T)
    np.testing.assert_allclose(r.scores[mask], [s for row in scores for s in row if s is not None], rtol=1e-12)
    assert np.all(r.scores[~mask] == -np.inf)
    np.testing.assert_allclose(r.weights, weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.output, output, rtol=1e-12, atol=1e-12)
    assert r.scale == pytest.approx(1 / T, rel=1e-15)


@pytest.mark.parametrize("T", [0, -1.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, True, "2"])
def test_bad_temperature_is_refused(T):
    with pytest.raises(ValueError, match=r"^temperature"):
        scaled_dot_product_attention(K, K, V, temperature=T)


def test_scores_overflowing_at_a_tiny_temperature_are_refused_naming_temperature():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^temperature 1e-300: .*overflow"):
            scaled_dot_product_attention([[1e10]], [[1e10], [0.0]], [1.0, 2.0], temperature=1e-300)
        # a masked key's huge score is never used, so it cannot overflow anything
        r = scaled_dot_product_attention([[1e10]], [[1e-10], [1e10]], [1.0, 2.0], temperature=1e-300,
                                         attn_mask=[[True, False]])
    assert r.weights.tolist() == [[1.0, 0.0]]


# --- limits in temperature: Hypothesis ------------------------------------------------

@st.composite
def queries_keys_mask(draw):
    n_q, n_k, d_k = draw(st.integers(1, 4)), draw(st.integers(1, 8)), draw(st.integers(1, 4))
    finite = st.floats(-10, 10, allow_nan=False, allow_subnormal=False)
    Q = draw(hnp.arrays(np.float64, (n_q, d_k), elements=finite))
    Kr = draw(hnp.arrays(np.float64, (n_k, d_k), elements=finite))
    mask = draw(hnp.arrays(np.bool_, (n_q, n_k)))
    mask[np.arange(n_q), draw(hnp.arrays(np.int64, n_q, elements=st.integers(0, n_k - 1)))] = True
    return Q, Kr, mask


@settings(max_examples=300, deadline=None)
@given(queries_keys_mask(), st.floats(1e-3, 1e3))
def test_rows_of_weights_sum_to_one_at_any_temperature(qkm, T):
    Q, Kr, mask = qkm
    r = scaled_dot_product_attention(Q, Kr, np.arange(len(Kr), dtype=float), attn_mask=mask, temperature=T)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(r.weights[~mask], 0.0)


@settings(max_examples=300, deadline=None)
@given(queries_keys_mask())
def test_temperature_to_zero_gives_a_one_hot_on_the_largest_score(qkm):
    Q, Kr, mask = qkm
    dots = [[sum(a * b for a, b in zip(q, k, strict=True)) for k in Kr.tolist()] for q in Q.tolist()]
    winners = []
    for row, allowed in zip(dots, mask.tolist(), strict=True):
        ranked = sorted((s, j) for j, (s, ok) in enumerate(zip(row, allowed, strict=True)) if ok)
        # a unique largest score, clear of the runner-up by more than rounding
        assume(len(ranked) == 1 or ranked[-1][0] - ranked[-2][0] > 1e-6)
        winners.append(ranked[-1][1])
    T = 1e-9  # every gap > 1e-6 becomes > 1000 in the scores: exp(-1000) is exactly 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = scaled_dot_product_attention(Q, Kr, np.zeros(len(Kr)), attn_mask=mask, temperature=T)
    one_hot = np.zeros_like(r.weights)
    one_hot[np.arange(len(Q)), winners] = 1.0
    np.testing.assert_array_equal(r.weights, one_hot)


@settings(max_examples=300, deadline=None)
@given(queries_keys_mask(), st.sampled_from([1e12, 1e100, 1e300]))
def test_temperature_to_infinity_gives_uniform_weights_over_the_allowed_keys(qkm, T):
    Q, Kr, mask = qkm
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = scaled_dot_product_attention(Q, Kr, np.zeros(len(Kr)), attn_mask=mask, temperature=T)
    allowed = mask.sum(axis=1, keepdims=True)
    # |q·k| <= 400, so every score is within 4e-10 of the others: exp() of them differ by < 1e-9
    np.testing.assert_allclose(r.weights, np.where(mask, 1.0 / allowed, 0.0), rtol=1e-9, atol=0)


# --- saturation ------------------------------------------------------------------------

def loop_saturation(weights):
    rows = np.atleast_2d(weights).tolist()
    return [max(r) for r in rows], [-sum(a * math.log(a) for a in r if a > 0) for r in rows]


def test_saturation_uniform_one_hot_and_masked_rows():
    s = saturation([[0.25] * 4, [0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])
    np.testing.assert_array_equal(s.max_weight, [0.25, 1.0, 0.5])
    np.testing.assert_allclose(s.entropy, [math.log(4), 0.0, math.log(2)], rtol=1e-15)  # nats
    assert str(s.entropy[1]) == "0.0"  # not -0.0


def test_saturation_of_the_course_rows_matches_loops():
    r = scaled_dot_product_attention(K, K, V)
    u = scaled_dot_product_attention(K, K, V, scale=1.0)
    for w in (r.weights, u.weights):
        mx, h = loop_saturation(w)
        s = saturation(w)
        np.testing.assert_array_equal(s.max_weight, mx)
        np.testing.assert_allclose(s.entropy, h, rtol=1e-14)
    # unscaled scores are wider apart, so love's row is sharper: larger top weight, lower entropy
    assert saturation(u.weights[1]).max_weight > saturation(r.weights[1]).max_weight
    assert saturation(u.weights[1]).entropy < saturation(r.weights[1]).entropy
    np.testing.assert_allclose(saturation(r.weights[1]).max_weight, 0.4011, atol=5e-5)


@pytest.mark.parametrize("seed", range(5))
def test_saturation_matches_loops_on_random_masked_softmaxes(seed):
    rng = np.random.default_rng(seed)
    mask = random_mask(rng, 5, 7)
    r = scaled_dot_product_attention(rng.normal(size=(5, 3)) * 3, rng.normal(size=(7, 3)), np.zeros(7), attn_mask=mask)
    mx, h = loop_saturation(r.weights)
    s = saturation(r.weights)
    np.testing.assert_array_equal(s.max_weight, mx)
    np.testing.assert_allclose(s.entropy, h, rtol=1e-13, atol=1e-16)


def test_scaling_experiment_reports_the_same_saturation_in_bits():
    e = scaling_experiment(64, seed=1)
    for scores, max_weight, bits in ((e.scaled, e.max_weight, e.entropy),
                                     (e.dots, e.max_weight_unscaled, e.entropy_unscaled)):
        rows = []
        for row in scores.tolist():
            exp = [math.exp(s - max(row)) for s in row]
            rows.append([x / sum(exp) for x in exp])
        mx, h = loop_saturation(rows)
        assert max_weight == pytest.approx(sum(mx) / len(mx), rel=1e-12)
        assert bits == pytest.approx(sum(h) / len(h) / math.log(2), rel=1e-12)


@pytest.mark.parametrize("bad, match", [([[0.5, -0.5]], "^weights must not be negative"),
                                        ([[np.nan, 1.0]], "^weights contains NaN"), ([], "^weights must not be empty")])
def test_saturation_refuses_bad_weights(bad, match):
    with pytest.raises(ValueError, match=match):
        saturation(bad)


# --- one query at several temperatures: the Projections tab's table from T -> 0 to T -> inf ---------------------

@pytest.mark.parametrize("seed", range(6))
def test_a_temperature_sweep_matches_the_loop_reference_at_every_temperature(seed):
    rng = np.random.default_rng(seed)
    n_k, d_k = int(rng.integers(1, 8)), int(rng.integers(1, 6))
    q, K = rng.normal(size=d_k) * 2, rng.normal(size=(n_k, d_k))
    V = rng.normal(size=n_k) if seed % 2 else rng.normal(size=(n_k, 3))
    temperatures = [0.01, 0.3, 1.0, math.sqrt(d_k), 7.0, 1e4]
    r = temperature_sweep(q, K, V, temperatures)
    assert r.weights.shape == (6, n_k) and r.output.shape == (6,) + np.shape(V)[1:]
    for t, T in enumerate(temperatures):
        scores, weights, output = loop_attention([q], K, V, divide_by=T)
        np.testing.assert_allclose(r.scores[t], scores[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(r.weights[t], weights[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(r.output[t], output[0], rtol=1e-12, atol=1e-12)
        one = scaled_dot_product_attention([q], K, V, temperature=T)  # the same numbers as one at a time
        np.testing.assert_array_equal(r.scores[t], one.scores[0])
        np.testing.assert_array_equal(r.weights[t], one.weights[0])
        # a matrix product of another shape
        np.testing.assert_allclose(r.output[t], one.output[0], rtol=1e-13, atol=1e-15)


def test_a_temperature_sweep_of_the_course_query_of_love_by_hand():
    # q_love = (0, 1): dots 0, 1, 1. T = 1: weights 1 : e : e over 1 + 2e
    r = temperature_sweep([0, 1], K, V, [1.0])
    e = math.e
    assert r.weights[0].tolist() == pytest.approx([1 / (1 + 2 * e), e / (1 + 2 * e), e / (1 + 2 * e)], rel=1e-14)
    assert r.output[0] == pytest.approx((2 + 10 * e) / (1 + 2 * e), rel=1e-14)


@pytest.mark.parametrize("args, match", [
    (([0, 1], K, V, []), "^temperatures must hold at least one"),
    (([0, 1], K, V, [1.0, 0.0]), "^temperature must be finite and > 0"),
    (([0, 1], K, V, [1.0, "2"]), "^temperature must be a number"),
    (([0, 1, 0], K, V, [1.0]), "^K must have d_k = 3 columns"),
    (([0, 1], K, [1, 2], [1.0]), "^V must have one row per key"),
    (([[0, 1]], K, V, [1.0]), "^q "),
    (([1e200, 1e200], [[1e200, 1e200]], [1.0], [1.0]), "overflow float64"),
    (([1e150, 0], [[1e150, 0]], [1.0], [1e-200]), "^temperatures: the scores"),
])
def test_a_temperature_sweep_refuses_bad_input_naming_it(args, match):
    with pytest.raises(ValueError, match=match):
        temperature_sweep(*args)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-50, 50)),
       st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=8))
def test_a_temperature_sweeps_rows_sum_to_one_and_its_outputs_lie_among_the_values(dots, temperatures):
    K = np.eye(len(dots))  # q·k_j = dots[j]
    V = np.arange(len(dots), dtype=float)
    r = temperature_sweep(dots, K, V, temperatures)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(r.output >= V.min()) and np.all(r.output <= V.max())
