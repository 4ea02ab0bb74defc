"""Multi-head attention (Vaswani et al., 2017, Sec. 3.2.2) against plain loops, and the two-head preset.

Expected numbers come from closed forms written here or from the plain-loop
reference in tests/loop_reference.py, never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.multihead import PREVIOUS_AND_SELF, PREVIOUS_AND_SELF_2D, multi_head_attention
from core.projections import self_attention
from tests.loop_reference import matmul, random_mask
from tests.loop_reference import multi_head as loop_multi_head


@pytest.mark.parametrize("seed", range(25))
def test_multi_head_matches_the_loop_reference(seed):
    rng = np.random.default_rng(300 + seed)
    h = int(rng.integers(1, 5))
    n, d_model, d_k, d_v, d_out = (int(x) for x in rng.integers(1, 6, size=5))
    X = rng.normal(size=(n, d_model)) * 2
    W_Q, W_K = rng.normal(size=(h, d_model, d_k)), rng.normal(size=(h, d_model, d_k))
    W_V, W_O = rng.normal(size=(h, d_model, d_v)), rng.normal(size=(h * d_v, d_out))
    mask = random_mask(rng, n, n) if seed % 2 else None
    T = [None, 0.5, 4.0][seed % 3]

    r = multi_head_attention(X, W_Q, W_K, W_V, W_O, attn_mask=mask, temperature=T)
    heads, concat, output = loop_multi_head(X, W_Q, W_K, W_V, W_O, mask, divide_by=T)
    assert len(r.heads) == h
    for got, (Q, K, V, weights, out) in zip(r.heads, heads, strict=True):
        for a, b in zip(got.projections, (Q, K, V), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.attention.weights, weights, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.attention.output, out, rtol=1e-12, atol=1e-12)
    assert r.concat.shape == (n, h * d_v) and r.output.shape == (n, d_out)
    np.testing.assert_allclose(r.concat, concat, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.output, output, rtol=1e-12, atol=1e-11)


def test_each_head_scales_by_its_own_d_k_unless_unscaled():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4))
    W_Q = W_K = rng.normal(size=(2, 4, 4))
    W_V, W_O = rng.normal(size=(2, 4, 1)), np.eye(2)
    assert [hd.attention.scale for hd in multi_head_attention(X, W_Q, W_K, W_V, W_O).heads] == [0.5, 0.5]
    unscaled = multi_head_attention(X, W_Q, W_K, W_V, W_O, scale=1.0)
    _, _, out = loop_multi_head(X, W_Q, W_K, W_V, W_O, divide_by=1.0)
    np.testing.assert_allclose(unscaled.output, out, rtol=1e-12, atol=1e-12)


def test_one_head_with_an_identity_W_O_is_self_attention():
    rng = np.random.default_rng(1)
    X, W_V = rng.normal(size=(5, 3)), rng.normal(size=(3, 3))
    W_Q, W_K = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    mask = np.tril(np.ones((5, 5), bool))
    one = multi_head_attention(X, W_Q[None], W_K[None], W_V[None], np.eye(3), attn_mask=mask)
    single = self_attention(X, W_Q, W_K, W_V, attn_mask=mask)
    np.testing.assert_array_equal(one.heads[0].attention.weights, single.attention.weights)
    np.testing.assert_array_equal(one.concat, single.attention.output)
    np.testing.assert_allclose(one.output, single.attention.output, rtol=1e-15)


def test_heads_are_not_limited_to_four():
    rng = np.random.default_rng(2)
    h = 12
    r = multi_head_attention(rng.normal(size=(3, 8)), rng.normal(size=(h, 8, 2)), rng.normal(size=(h, 8, 2)),
                             rng.normal(size=(h, 8, 2)), rng.normal(size=(2 * h, 8)))
    assert len(r.heads) == h and r.concat.shape == (3, 2 * h) and r.output.shape == (3, 8)


def test_preset_heads_attend_to_the_previous_token_and_to_themselves():
    p = PREVIOUS_AND_SELF
    assert p.tokens == ("the", "cat", "sat", "down") and p.head_names == ("previous token", "itself")
    r = multi_head_attention(p.X, p.W_Q, p.W_K, p.W_V, p.W_O)
    previous, itself = (hd.attention.weights for hd in r.heads)
    assert previous.argmax(axis=1).tolist() == [0, 0, 1, 2]  # "the" has no previous token: itself
    assert itself.argmax(axis=1).tolist() == [0, 1, 2, 3]
    # a match scores 3 * 3 / sqrt(4) = 4.5, every other key 0
    top = math.exp(4.5) / (math.exp(4.5) + 3)
    rest = 1 / (math.exp(4.5) + 3)
    for weights, chosen in ((previous, [0, 0, 1, 2]), (itself, [0, 1, 2, 3])):
        want = [[top if j == c else rest for j in range(4)] for c in chosen]
        np.testing.assert_allclose(weights, want, rtol=1e-14)
    assert top > 0.96
    # the values are the positions 1..4: the output reads (about) the previous position and the own one
    for i, (prev_pos, own_pos) in enumerate(r.output.tolist()):
        assert round(prev_pos) == max(i, 1) and round(own_pos) == i + 1
    np.testing.assert_allclose(r.output[2], [top * 2 + rest * (1 + 3 + 4), top * 3 + rest * (1 + 2 + 4)], rtol=1e-14)


def test_preset_concat_and_output_by_loops():
    p = PREVIOUS_AND_SELF
    r = multi_head_attention(p.X, p.W_Q, p.W_K, p.W_V, p.W_O)
    concat = [[*r.heads[0].attention.output[i], *r.heads[1].attention.output[i]] for i in range(4)]
    np.testing.assert_array_equal(r.concat, concat)
    np.testing.assert_allclose(r.output, matmul(concat, p.W_O), rtol=1e-15)


def test_preset_is_read_only():
    p = PREVIOUS_AND_SELF
    for a in (p.X, p.W_Q, p.W_K, p.W_V, p.W_O):
        with pytest.raises(ValueError):
            a.flat[0] = 5.0


def test_planar_preset_has_the_same_two_patterns_with_points_of_a_plane():
    """Embeddings 60 degrees apart: a match scores 5/sqrt(2), a neighbour half of it, two apart minus half."""
    p = PREVIOUS_AND_SELF_2D
    assert p.tokens == ("I", "love", "NLP") and p.head_names == ("previous token", "itself")
    assert p.X.shape == (3, 2) and p.W_Q.shape == p.W_K.shape == p.W_V.shape == (2, 2, 2) and p.W_O.shape == (4, 2)
    # unit vectors at 0, 60 and 120 degrees
    for x, degrees in zip(p.X, (0, 60, 120), strict=True):
        np.testing.assert_allclose(x, [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))],
                                   atol=1e-15)
    r = multi_head_attention(p.X, p.W_Q, p.W_K, p.W_V, p.W_O)
    previous, itself = (hd.attention.weights for hd in r.heads)
    assert previous.argmax(axis=1).tolist() == [0, 0, 1]  # "I" has no previous token: itself
    assert itself.argmax(axis=1).tolist() == [0, 1, 2]
    # scores in units of m = 2.5 * 2 / sqrt(2) (query and key strengths): the turned query of "love" is x_I, of
    # "NLP" x_love, of "I" x_I turned by -60 deg (cosines of 0, 60, 120 and 180 deg)
    m = 5 / math.sqrt(2)

    def softmax(row):
        e = [math.exp(m * c) for c in row]
        return [x / sum(e) for x in e]
    want_previous = [softmax([0.5, -0.5, -1.0]), softmax([1.0, 0.5, -0.5]), softmax([0.5, 1.0, 0.5])]
    want_itself = [softmax([1.0, 0.5, -0.5]), softmax([0.5, 1.0, 0.5]), softmax([-0.5, 0.5, 1.0])]
    np.testing.assert_allclose(previous, want_previous, rtol=1e-12)
    np.testing.assert_allclose(itself, want_itself, rtol=1e-12)
    assert min(previous.max(axis=1).min(), itself.max(axis=1).min()) > 0.74
    # the explorer's query plane is -1.5 to 2.5: every key lies in it
    for head in r.heads:
        assert -1.5 <= head.projections.K.min() and head.projections.K.max() <= 2.5
    heads, concat, output = loop_multi_head(p.X, p.W_Q, p.W_K, p.W_V, p.W_O)
    np.testing.assert_allclose(r.concat, concat, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.output, output, rtol=1e-12, atol=1e-14)
    for a in (p.X, p.W_Q, p.W_K, p.W_V, p.W_O):
        with pytest.raises(ValueError):
            a.flat[0] = 5.0


E2, E3 = np.eye(2), np.eye(3)


@pytest.mark.parametrize("args, kwargs, match", [
    ((E2, E2, E2[None], E2[None], E2), {}, r"^W_Q must be 3-D"),
    ((E2, E2[None], E2[None], E2, E2), {}, r"^W_V must be 3-D"),
    ((E2, E2[None], np.stack([E2, E2]), np.stack([E2, E2]), np.eye(4)), {},
     r"^W_Q, W_K and W_V must have the same number of heads"),
    ((E2, E2[None], E2[None], E2[None], np.eye(3)), {}, r"^W_O must have h \* d_v = 1 \* 2 = 2 rows"),
    ((E2, E2[None], E2[None], E2[None], np.ones(2)), {}, r"^W_O must be 2-D"),
    ((E2, E3[None], E3[None], E3[None], E3), {}, r"^W_Q must have d_model = 2 rows"),
    ((E2, E2[None], np.ones((1, 2, 3)), E2[None], E2), {}, r"^W_K must have the shape"),
    ((E2, E2[None], E2[None], E2[None], [[np.nan, 0], [0, 1]]), {}, r"^W_O contains NaN"),
    ((E2, E2[None], E2[None], E2[None], E2), {"temperature": -2.0}, r"^temperature"),
    ((E2, E2[None], E2[None], E2[None] * 1e308, E2 * 1e308), {}, r"^W_O: the output .* overflows"),
    ((E2, E2[None], E2[None], E2[None], E2), {"attn_mask": [[False, False], [True, True]]}, r"^attn_mask row 0"),
    (([1, 0], E2[None], E2[None], E2[None], E2), {}, r"^X must be 2-D"),
])
def test_errors_name_the_argument(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        multi_head_attention(*args, **kwargs)
