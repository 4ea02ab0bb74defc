"""Presets, the causal mask, the trap and the d_k experiment: the course's numbers.

Expected values are the course text's (4 decimals) or computed independently here
(scipy's softmax and entropy, plain-Python loops), never copied from the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import softmax as scipy_softmax
from scipy.stats import entropy as scipy_entropy

from core import MODULE_2, PRESETS, scaled_dot_product_attention, scaling_experiment, scores_against_values
from core.scaling import N_KEYS, N_QUERIES, histogram

TOL = dict(rtol=0, atol=5e-5)
K = PRESETS["Section 6: scalar values"].keys
V = PRESETS["Section 6: scalar values"].values
CAUSAL = np.tril(np.ones((3, 3), dtype=bool))


def test_presets_are_the_course_data_and_read_only():
    assert list(PRESETS) == ["Section 6: scalar values", "Module 2: vector values"]
    np.testing.assert_array_equal(V, [2, 6, 4])
    np.testing.assert_array_equal(MODULE_2.keys, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(MODULE_2.values, [[10, 0], [0, 10], [5, 5]])
    with pytest.raises(ValueError):
        MODULE_2.values[0, 0] = 1.0


def test_module_2_row_1_weights_and_output():
    r = scaled_dot_product_attention(MODULE_2.keys, MODULE_2.keys, MODULE_2.values)
    np.testing.assert_allclose(r.weights[0], [0.4011, 0.1978, 0.4011], **TOL)
    np.testing.assert_allclose(r.output[0], [6.0167, 3.9833], **TOL)
    # the same weights as the scalar preset, as the course says
    np.testing.assert_allclose(r.weights, scaled_dot_product_attention(K, K, V).weights, rtol=1e-15)
    # and the module's printed table (0.38/0.19/0.42, (5.9, 4.0)) is only a rounding of them
    assert abs(r.output[0, 0] - 5.9) < 0.15 and abs(r.output[0, 1] - 4.0) < 0.05


def test_unscaled_love_row():
    r = scaled_dot_product_attention(K, K, V, scale=1.0)
    # q_love·k = (0, 1, 1): softmax = (1, e, e) / (1 + 2e)
    np.testing.assert_allclose(r.weights[1], [0.1554, 0.4223, 0.4223], **TOL)
    np.testing.assert_allclose(r.output[1], 4.5339, **TOL)
    np.testing.assert_allclose(r.weights[0], [0.4223, 0.1554, 0.4223], **TOL)  # the row "I", same numbers
    e = math.e
    np.testing.assert_allclose(r.output[1], (2 + 6 * e + 4 * e) / (1 + 2 * e), rtol=1e-14)


def test_causal_mask_course_rows():
    r = scaled_dot_product_attention(K, K, V, attn_mask=CAUSAL)
    np.testing.assert_allclose(r.weights[0], [1, 0, 0], **TOL)
    np.testing.assert_allclose(r.output[0], 2.0, **TOL)
    np.testing.assert_allclose(r.weights[1], [0.3302, 0.6698, 0], **TOL)
    np.testing.assert_allclose(r.output[1], 4.6790, **TOL)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=1e-15)
    assert np.all(r.weights[~CAUSAL] == 0) and np.all(np.isneginf(r.scores[~CAUSAL]))
    # the last row sees everything: unchanged by the mask
    np.testing.assert_allclose(r.weights[2], [0.2483, 0.2483, 0.5035], **TOL)


def test_trap_with_scalar_values_is_a_shape_error():
    with pytest.raises(ValueError, match=r"q·v_i is not defined: each value v_i is a single number.*d_k = 2"):
        scores_against_values(K, V)
    with pytest.raises(ValueError, match=r"d_v = 3 .* d_k = 2"):
        scores_against_values(K, np.ones((3, 3)))


def test_trap_with_vector_values_scores_q_against_v():
    r = scores_against_values(MODULE_2.keys, MODULE_2.values)
    # q_love = (0, 1): q·v = (0, 10, 5), scaled by 1/√2
    np.testing.assert_allclose(r.dots[1], [0, 10, 5], rtol=0)
    np.testing.assert_allclose(r.weights[1], scipy_softmax(np.array([0, 10, 5]) / math.sqrt(2)), rtol=1e-12)
    assert r.weights[1, 1] > 0.97  # the long value v_love wins, whatever the keys say
    masked = scores_against_values(MODULE_2.keys, MODULE_2.values, attn_mask=CAUSAL)
    np.testing.assert_array_equal(masked.weights[0], [1, 0, 0])


@pytest.mark.parametrize("d_k", [1, 2, 16, 64, 256, 1024])
def test_dk_experiment_variances(d_k):
    e = scaling_experiment(d_k, seed=7)
    assert e.dots.shape == e.scaled.shape == (N_QUERIES, N_KEYS)
    # 4096 pairs: the sample variance's relative error is ~5 % (heavier tails at d_k = 1)
    assert e.var_dots == pytest.approx(d_k, rel=0.15)
    assert e.var_scaled == pytest.approx(1.0, rel=0.15)
    np.testing.assert_allclose(e.var_dots, np.var(e.dots), rtol=1e-12)
    np.testing.assert_allclose(e.scaled, e.dots / math.sqrt(d_k), rtol=1e-12)


def test_dk_experiment_softmax_summary_matches_scipy():
    e = scaling_experiment(64, seed=3)
    a, u = scipy_softmax(e.scaled, axis=1), scipy_softmax(e.dots, axis=1)
    assert e.max_weight == pytest.approx(a.max(axis=1).mean(), rel=1e-12)
    assert e.max_weight_unscaled == pytest.approx(u.max(axis=1).mean(), rel=1e-12)
    assert e.entropy == pytest.approx(scipy_entropy(a, base=2, axis=1).mean(), rel=1e-10)
    assert e.entropy_unscaled == pytest.approx(scipy_entropy(u, base=2, axis=1).mean(), rel=1e-10)
    np.testing.assert_allclose(e.example, a[0], rtol=1e-12)


def test_unscaled_softmax_goes_one_hot_as_d_k_grows():
    small, big = scaling_experiment(1, seed=0), scaling_experiment(1024, seed=0)
    assert small.max_weight == small.max_weight_unscaled  # √1 = 1: nothing changes
    assert big.max_weight_unscaled > 0.9 and big.entropy_unscaled < 0.3  # near one-hot (1 and 0 bits)
    # scaled, the softmax keeps its spread: well below one-hot, entropy near log2(8) = 3 bits
    assert big.max_weight < 0.5 and big.entropy > 2.0
    assert abs(big.max_weight - scaling_experiment(16, seed=0).max_weight) < 0.05


def test_dk_experiment_is_reproducible_and_seeded_per_call():
    a, b, c = scaling_experiment(32, 5), scaling_experiment(32, 5), scaling_experiment(32, 6)
    np.testing.assert_array_equal(a.dots, b.dots)
    assert not np.array_equal(a.dots, c.dots)
    state_before = np.random.get_state()[1].copy()
    scaling_experiment(8, 1)
    np.testing.assert_array_equal(np.random.get_state()[1], state_before)  # the global RNG is untouched


@pytest.mark.parametrize("d_k, seed", [(0, 0), (1025, 0), (2.5, 0), (True, 0), (4, -1)])
def test_dk_experiment_refuses_bad_arguments(d_k, seed):
    with pytest.raises(ValueError, match="d_k must be|seed must be"):
        scaling_experiment(d_k, seed)


def test_histogram_counts_in_range():
    counts, edges = histogram([-2.0, -0.1, 0.1, 0.2, 5.0], half_width=1.0, bins=4)
    assert counts.tolist() == [0, 1, 2, 0] and edges.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
