"""Learned projections: Q = X W_Q, K = X W_K, V = X W_V, their presets, and which values a linear W_V reaches.

Expected numbers come from the course text (Section 6) or from the plain-loop
reference in tests/loop_reference.py, never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core.projections import (
    IDENTITY,
    PROJECTION_PRESETS,
    SECTION_6,
    SECTION_6_2D,
    linear_values_reachable,
    project,
    random_projections,
    self_attention,
)
from tests.loop_reference import attention as loop_attention
from tests.loop_reference import matmul, random_mask

TOL = dict(rtol=0, atol=5e-5)  # the course prints 4 decimals


@pytest.mark.parametrize("seed", range(25))
def test_projections_and_self_attention_match_the_loop_reference(seed):
    rng = np.random.default_rng(200 + seed)
    n, d_model, d_k, d_v = (int(x) for x in rng.integers(1, 7, size=4))
    X = rng.normal(size=(n, d_model)) * 2
    W_Q, W_K = rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k))
    W_V = rng.normal(size=d_model) if seed % 3 == 0 else rng.normal(size=(d_model, d_v))
    mask = random_mask(rng, n, n) if seed % 2 else None
    T = [None, 0.7, 3.0][seed % 3]
    scale = seed % 5 != 0

    p = project(X, W_Q, W_K, W_V)
    Q, K, V = matmul(X, W_Q), matmul(X, W_K), matmul(X, W_V)
    for got, want in zip(p, (Q, K, V), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert p.V.shape == ((n,) if W_V.ndim == 1 else (n, d_v))

    r = self_attention(X, W_Q, W_K, W_V, attn_mask=mask, scale=None if scale or T is not None else 1.0,
                       temperature=T)
    divide_by = T if T is not None else None if scale else 1.0
    _, weights, output = loop_attention(Q, K, V, mask, divide_by)
    np.testing.assert_allclose(r.attention.weights, weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.attention.output, output, rtol=1e-12, atol=1e-12)
    for got, want in zip(r.projections, p, strict=True):
        np.testing.assert_array_equal(got, want)


def test_scalar_values_from_a_column_W_V_of_one():
    X = [[1.0, 2.0], [3.0, -1.0]]
    column = project(X, np.eye(2), np.eye(2), [[2.0], [0.5]]).V
    flat = project(X, np.eye(2), np.eye(2), [2.0, 0.5]).V
    assert column.shape == (2, 1) and flat.shape == (2,)
    np.testing.assert_array_equal(column[:, 0], [3.0, 5.5])
    np.testing.assert_array_equal(flat, [3.0, 5.5])


def test_section_6_preset_gives_the_course_numbers():
    p = SECTION_6
    proj = project(p.X, p.W_Q, p.W_K, p.W_V)
    np.testing.assert_array_equal(proj.Q, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(proj.K, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(proj.Q[1], [0, 1])  # q_love
    np.testing.assert_array_equal(proj.V, [2, 6, 4])
    r = self_attention(p.X, p.W_Q, p.W_K, p.W_V).attention
    np.testing.assert_allclose(r.weights[1], [0.1978, 0.4011, 0.4011], **TOL)
    np.testing.assert_allclose(r.output[1], 4.4067, **TOL)
    np.testing.assert_allclose(r.weights[0], [0.4011, 0.1978, 0.4011], **TOL)
    np.testing.assert_allclose(r.output[0], 3.5933, **TOL)


def test_identity_preset_is_Q_K_V_equal_X_with_symmetric_scores():
    p = IDENTITY
    proj = project(p.X, p.W_Q, p.W_K, p.W_V)
    for a in proj:
        np.testing.assert_array_equal(a, p.X)
    r = self_attention(p.X, p.W_Q, p.W_K, p.W_V).attention
    np.testing.assert_array_equal(r.scores, r.scores.T)  # X X^T is symmetric
    np.testing.assert_allclose(r.dots, [[1, 0, 1], [0, 1, 1], [1, 1, 2]], rtol=0)  # Module 2's Q K^T
    # each output is the weighted average of the embeddings: row I = 0.4011 x_I + 0.1978 x_love + 0.4011 x_NLP
    e = math.exp(-1 / math.sqrt(2))
    a_big, a_small = 1 / (2 + e), e / (2 + e)
    np.testing.assert_allclose(r.output[0], [2 * a_big, a_small + a_big], rtol=1e-14)
    # a random W_Q != W_K breaks the symmetry
    rp = random_projections(1)
    scores = self_attention(rp.X, rp.W_Q, rp.W_K, rp.W_V).attention.scores
    assert not np.allclose(scores, scores.T)


def test_presets_are_read_only_and_named():
    assert list(PROJECTION_PRESETS) == ["Q = K = V = X", "Section 6: learned projections"]
    with pytest.raises(TypeError):
        PROJECTION_PRESETS["mine"] = IDENTITY
    for p in (*PROJECTION_PRESETS.values(), random_projections(5)):
        assert p.tokens == ("I", "love", "NLP") and p.note
        for a in (p.X, p.W_Q, p.W_K, p.W_V):
            with pytest.raises(ValueError):
                a.flat[0] = 7.0


def test_random_projections_are_a_function_of_the_seed_alone():
    before = np.random.get_state()[1].copy()
    a, b, c = random_projections(7, d_k=3, d_v=2), random_projections(7, d_k=3, d_v=2), random_projections(8, 3, 2)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # no global random state touched
    for name in ("W_Q", "W_K", "W_V"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(getattr(a, name), getattr(c, name))
    assert a.W_Q.shape == a.W_K.shape == (2, 3) and a.W_V.shape == (2, 2)
    assert not np.array_equal(a.W_Q, a.W_K)
    # entries ~ N(0, 1/d_model): over many draws the variance is close to 1/2
    big = random_projections(0, d_k=4000)
    assert abs(float(np.var(big.W_Q)) - 0.5) < 0.03 and abs(float(np.mean(big.W_Q))) < 0.03


@pytest.mark.parametrize("kwargs, match", [
    (dict(seed=-1), r"^seed"), (dict(seed=1.5), r"^seed"), (dict(seed=True), r"^seed"),
    (dict(seed=0, d_k=0), r"^d_k"), (dict(seed=0, d_v=2.0), r"^d_v"),
])
def test_random_projections_refuse_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        random_projections(**kwargs)


def test_section_6_values_are_not_reachable_with_two_dimensions():
    X = [[1, 0], [0, 1], [1, 1]]
    r = linear_values_reachable(X, [2, 6, 4], ["I", "love", "NLP"])
    assert r.reachable is False
    # the dependency the values break: x_NLP = x_I + x_love
    np.testing.assert_allclose(r.dependency, [1, 1, -1], rtol=0, atol=1e-12)
    for col in range(2):
        assert abs(sum(c * x[col] for c, x in zip(r.dependency.tolist(), X, strict=True))) < 1e-12
    assert "x_NLP = x_I + x_love" in r.reason and "v_NLP = v_I + v_love" in r.reason
    assert "2 + 6 = 8" in r.reason and "not 4" in r.reason
    # the closest reachable values keep v_NLP = v_I + v_love
    v = r.closest.tolist()
    assert v[2] == pytest.approx(v[0] + v[1], abs=1e-12)
    assert matmul(X, r.W_V.tolist()) == pytest.approx(v, abs=1e-12)


def test_a_third_embedding_dimension_makes_them_reachable():
    X = [[1, 0, 0], [0, 1, 0], [1, 1, 1]]
    r = linear_values_reachable(X, [2, 6, 4], ["I", "love", "NLP"])
    assert r.reachable and r.dependency is None
    assert matmul(X, r.W_V.tolist()) == pytest.approx([2, 6, 4], abs=1e-12)
    np.testing.assert_allclose(r.W_V, [2, 6, -4], atol=1e-12)
    assert r.reason.startswith("Reachable: W_V = (2, 6, -4)")
    # the preset uses exactly that X and W_V
    np.testing.assert_array_equal(SECTION_6.X, X)
    assert matmul(SECTION_6.X, SECTION_6.W_V) == [2, 6, 4]


def test_the_two_dimensional_section_6_preset_gives_values_2_6_and_8():
    p = SECTION_6_2D
    np.testing.assert_array_equal(p.X, [[1, 0], [0, 1], [1, 1]])  # Section 6's keys, also its queries
    assert matmul(p.X, p.W_Q) == [[1, 0], [0, 1], [1, 1]] and matmul(p.X, p.W_K) == [[1, 0], [0, 1], [1, 1]]
    assert [v[0] for v in matmul(p.X, p.W_V)] == [2, 6, 8]  # 8 = 2 + 6 where the course has 4
    r = self_attention(p.X, p.W_Q, p.W_K, p.W_V)
    np.testing.assert_allclose(r.attention.weights[1], [0.1978, 0.4011, 0.4011], atol=5e-5)  # Section 6's row
    for a in (p.X, p.W_Q, p.W_K, p.W_V):
        with pytest.raises(ValueError):
            a.flat[0] = 5.0


def test_values_that_respect_the_dependency_are_reachable_in_two_dimensions():
    r = linear_values_reachable([[1, 0], [0, 1], [1, 1]], [2, 6, 8])
    assert r.reachable and matmul([[1, 0], [0, 1], [1, 1]], r.W_V.tolist()) == pytest.approx([2, 6, 8], abs=1e-12)


def test_unreachable_reason_with_other_coefficients():
    # x_t1 = 0.5 x_t2, so v_t1 must be half of v_t2 = 3, i.e. 1.5
    r = linear_values_reachable([[1, 2], [2, 4], [0, 1]], [1, 3, 0])
    assert not r.reachable and "x_t1 = 0.5 x_t2" in r.reason and "need 1.5 there, not 1" in r.reason


@pytest.mark.parametrize("args, match", [
    (([[1, 0]], [1, 2]), r"^values must have one entry per row of X"),
    (([[1, 0], [0, 1]], [[1], [2]]), r"^values must be 1-D"),
    (([1, 0], [1]), r"^X must be 2-D"),
    (([[1, 0], [0, 1]], [1, np.nan]), r"^values contains NaN"),
    (([[1, 0], [0, 1]], [1, 2], ["a"]), r"^tokens must name"),
])
def test_reachability_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        linear_values_reachable(*args)


@pytest.mark.parametrize("args, match", [
    (([1, 0], np.eye(2), np.eye(2), np.eye(2)), r"^X must be 2-D"),
    (([[1, 0]], np.eye(3), np.eye(3), np.eye(3)), r"^W_Q must have d_model = 2 rows"),
    (([[1, 0]], np.eye(2), np.ones((2, 3)), np.eye(2)), r"^W_K must have the shape \(d_model, d_k\) = \(2, 2\)"),
    (([[1, 0]], np.eye(2), np.eye(2), np.ones((3, 1))), r"^W_V must have d_model = 2 rows"),
    (([[1, 0]], np.eye(2), np.eye(2), np.ones((2, 1, 1))), r"^W_V must be 1-D or 2-D"),
    (([[np.inf, 0]], np.eye(2), np.eye(2), np.eye(2)), r"^X contains NaN or infinite"),
    (([[1e300, 1e300]], np.eye(2) * 1e300, np.eye(2), np.eye(2)), r"^X and W_Q: .*overflow"),
    (([[1, 0]], np.eye(2), np.eye(2), [[np.nan], [0]]), r"^W_V contains NaN"),
])
def test_projection_errors_name_the_argument(args, match):
    with pytest.raises(ValueError, match=match):
        project(*args)
    with pytest.raises(ValueError, match=match):
        self_attention(*args)


def test_self_attention_errors_of_the_core_name_mask_and_temperature():
    p = SECTION_6
    with pytest.raises(ValueError, match=r"^attn_mask must broadcast to \(n_q, n_k\) = \(3, 3\)"):
        self_attention(p.X, p.W_Q, p.W_K, p.W_V, attn_mask=np.ones((2, 2), bool))
    with pytest.raises(ValueError, match=r"^temperature"):
        self_attention(p.X, p.W_Q, p.W_K, p.W_V, temperature=0.0)


# --- properties: Hypothesis -------------------------------------------------------------

@st.composite
def sentences(draw):
    n, d_model, d_k, d_v = (draw(st.integers(1, 5)) for _ in range(4))
    x = st.floats(-5, 5, allow_nan=False, allow_subnormal=False)
    X = draw(hnp.arrays(np.float64, (n, d_model), elements=x))
    W_Q, W_K = (draw(hnp.arrays(np.float64, (d_model, d_k), elements=x)) for _ in range(2))
    W_V = draw(hnp.arrays(np.float64, (d_model, d_v), elements=x))
    mask = draw(hnp.arrays(np.bool_, (n, n)))
    mask[np.arange(n), draw(hnp.arrays(np.int64, n, elements=st.integers(0, n - 1)))] = True
    return X, W_Q, W_K, W_V, draw(st.one_of(st.none(), st.just(mask))), draw(st.permutations(range(n)))


@settings(max_examples=300, deadline=None)
@given(sentences())
def test_rows_of_weights_sum_to_one_with_any_projections(s):
    X, W_Q, W_K, W_V, mask, _ = s
    r = self_attention(X, W_Q, W_K, W_V, attn_mask=mask).attention
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(r.weights >= 0)


@settings(max_examples=300, deadline=None)
@given(sentences())
def test_permuting_the_tokens_permutes_the_output_rows(s):
    X, W_Q, W_K, W_V, mask, perm = s
    perm = np.array(perm)
    r = self_attention(X, W_Q, W_K, W_V, attn_mask=mask).attention
    # token perm[i] becomes token i: its row of X, and its row and column of the mask
    mp = None if mask is None else mask[perm][:, perm]
    rp = self_attention(X[perm], W_Q, W_K, W_V, attn_mask=mp).attention
    np.testing.assert_allclose(rp.weights, r.weights[perm][:, perm], rtol=1e-10, atol=1e-13)
    scale = max(1.0, float(np.abs(r.output).max()))
    np.testing.assert_allclose(rp.output, r.output[perm], rtol=1e-10, atol=1e-10 * scale)
