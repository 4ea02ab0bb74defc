"""The core's attention takes PyTorch's arguments, with PyTorch's meanings.

``torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=None,
dropout_p=0.0, is_causal=False, *, scale=None)``: a call written for one runs on the
other and gives the same numbers. Expected values come from the course text
(Section 6: love's weights 0.1978, 0.4011, 0.4011, output 4.41; the causal row of
love 0.3302, 0.6698, 0, output 4.6790), from hand computation, or from PyTorch
itself (``tests/data/torch_sdpa.json``, written by ``tests/torch_reference.py``).
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from core import I_LOVE_NLP, multi_head_attention, scaled_dot_product_attention, scores_against_values, self_attention

sdpa = scaled_dot_product_attention
K, V = I_LOVE_NLP.keys, I_LOVE_NLP.values
LOVE = [[0.0, 1.0]]
TOL = dict(rtol=0, atol=5e-5)  # the course prints 4 decimals
CAUSAL = np.tril(np.ones((3, 3), dtype=bool))
TORCH_CASES = json.loads((Path(__file__).with_name("data") / "torch_sdpa.json").read_text())["cases"]


def test_a_literal_port_of_a_torch_call_keeps_the_scaling():
    # torch's fifth argument is dropout_p: sdpa(q, k, v, None, 0.0) is scaled attention without dropout
    r = sdpa(LOVE, K, V, None, 0.0)
    np.testing.assert_allclose(r.weights[0], [0.1978, 0.4011, 0.4011], **TOL)
    np.testing.assert_allclose(r.output[0], 4.4067, **TOL)
    assert r.scale == pytest.approx(1 / math.sqrt(2), rel=1e-15)


def test_scale_is_the_factor_and_none_means_one_over_sqrt_d_k():
    unscaled = sdpa(LOVE, K, V, scale=1.0)
    np.testing.assert_allclose(unscaled.weights[0], [0.1554, 0.4223, 0.4223], **TOL)
    np.testing.assert_allclose(unscaled.output[0], 4.5339, **TOL)
    np.testing.assert_allclose(sdpa(LOVE, K, V, scale=None).output[0], 4.4067, **TOL)
    # love's dot products (0, 1, 1) times 3: weights 1 : e^3 : e^3, by hand
    z = 1 + 2 * math.exp(3)
    r = sdpa(LOVE, K, V, scale=3)
    np.testing.assert_allclose(r.weights[0], [1 / z, math.exp(3) / z, math.exp(3) / z], rtol=1e-14)
    assert r.scale == 3.0


@pytest.mark.parametrize("call", [
    lambda: sdpa(K, K, V, CAUSAL),  # a bool mask: True takes part, as in torch
    lambda: sdpa(K, K, V, attn_mask=np.where(CAUSAL, 0.0, -np.inf)),  # a float mask, added to the scores
    lambda: sdpa(K, K, V, None, 0.0, True),  # torch's positional is_causal
    lambda: sdpa(K, K, V, is_causal=np.bool_(True)),
], ids=["bool mask", "float mask", "positional is_causal", "numpy bool"])
def test_masks_and_is_causal_give_the_course_causal_numbers(call):
    r = call()
    np.testing.assert_array_equal(r.weights[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(r.weights[1], [0.3302, 0.6698, 0.0], **TOL)
    np.testing.assert_allclose(r.output[1], 4.6790, **TOL)
    assert r.weights[1, 2] == 0.0 and r.scores[1, 2] == -np.inf
    np.testing.assert_array_equal(r.mask, CAUSAL)


def test_a_float_mask_is_added_to_the_scores():
    # love's scores (0, s, s), s = 1/sqrt(2), plus (0, 0, ln 2): weights 1 : e^s : 2 e^s
    r = sdpa(LOVE, K, V, [[0.0, 0.0, math.log(2)]])
    s = 1 / math.sqrt(2)
    z = 1 + 3 * math.exp(s)
    np.testing.assert_allclose(r.scores[0], [0.0, s, s + math.log(2)], rtol=1e-15)
    np.testing.assert_allclose(r.weights[0], [1 / z, math.exp(s) / z, 2 * math.exp(s) / z], rtol=1e-14)
    np.testing.assert_allclose(r.output[0], (2 + 6 * math.exp(s) + 8 * math.exp(s)) / z, rtol=1e-14)


def test_a_mask_broadcasts_and_is_causal_aligns_top_left_as_in_torch():
    # a key mask (n_k,) applies to every query; without NLP, love sees I and love as in the causal row
    r = sdpa(K, K, V, [True, True, False])
    np.testing.assert_allclose(r.weights[1], [0.3302, 0.6698, 0.0], **TOL)
    np.testing.assert_array_equal(r.weights[:, 2], 0.0)
    # two queries over three keys: query 0 sees key 0, query 1 keys 0 and 1 (torch's ones(2, 3).tril())
    r = sdpa(K[:2], K, V, is_causal=True)
    np.testing.assert_array_equal(r.mask, [[True, False, False], [True, True, False]])
    np.testing.assert_allclose(r.output, [2.0, 4.6790], **TOL)


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: f"{len(c['query'])}x{len(c['key'])}"
                         f"{'-causal' if c['is_causal'] else ''}{'-mask' if c['attn_mask'] is not None else ''}")
def test_agrees_with_pytorch(case):
    mask = case["attn_mask"]
    if mask is not None:
        mask = np.array(mask, dtype=object)
        mask = mask.astype(bool) if all(isinstance(x, bool) for x in mask.ravel()) else \
            np.where(mask == None, -np.inf, mask).astype(np.float64)  # noqa: E711 (null is a masked -inf)
    r = sdpa(case["query"], case["key"], case["value"], mask, 0.0, case["is_causal"], scale=case["scale"])
    np.testing.assert_allclose(r.output, case["output"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("is_causal", [1, 0, 1.0, "yes", None, np.int64(1)])
def test_is_causal_must_be_a_bool(is_causal):
    with pytest.raises(TypeError, match=r"^is_causal must be True or False"):
        sdpa(K, K, V, is_causal=is_causal)


@pytest.mark.parametrize("scale, error, match", [
    (True, TypeError, r"^scale is the factor that multiplies the dot products, not a switch"),
    (False, TypeError, r"^scale is the factor that multiplies the dot products, not a switch"),
    (np.bool_(True), TypeError, r"not a switch"),
    ("2", TypeError, r"^scale must be a number"),
    ([1.0], TypeError, r"^scale must be a number"),
    (1j, TypeError, r"^scale must be a number"),
    (float("nan"), ValueError, r"^scale must be finite and > 0"),
    (float("inf"), ValueError, r"^scale must be finite and > 0"),
    (-1.0, ValueError, r"^scale must be finite and > 0"),
    (0.0, ValueError, r"^scale must be finite and > 0"),
    (0, ValueError, r"^scale must be finite and > 0"),
])
def test_bad_scales_are_refused(scale, error, match):
    with pytest.raises(error, match=match):
        sdpa(K, K, V, scale=scale)


def test_a_scale_that_overflows_the_scores_is_refused():
    with pytest.raises(ValueError, match=r"^scale 1e\+300: the scores dots \* scale overflow float64"):
        sdpa([[1e10]], [[1e10], [0.0]], [1.0, 2.0], scale=1e300)


@pytest.mark.parametrize("dropout_p, error, match", [
    (0.1, ValueError, r"^dropout_p must be 0.0, got 0.1: this core has no dropout"),
    (float("nan"), ValueError, r"^dropout_p must be 0.0"),
    # the old fifth argument was a scale switch: sdpa(q, k, v, None, False) must not pass unnoticed
    (False, TypeError, r"^dropout_p must be the number 0.0, got False .*scaling is the keyword scale="),
    (True, TypeError, r"^dropout_p must be the number 0.0"),
    ("0", TypeError, r"^dropout_p must be the number 0.0"),
])
def test_only_a_dropout_of_zero_is_taken(dropout_p, error, match):
    with pytest.raises(error, match=match):
        sdpa(K, K, V, None, dropout_p)
    np.testing.assert_allclose(sdpa(LOVE, K, V, None, 0).output[0], 4.4067, **TOL)


def test_scale_is_keyword_only_as_in_torch():
    np.testing.assert_allclose(sdpa(LOVE, K, V, None, 0.0, False, scale=1.0).output[0], 4.5339, **TOL)
    with pytest.raises(TypeError, match=r"positional"):
        sdpa(K, K, V, None, 0.0, False, 1.0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(attn_mask=CAUSAL, is_causal=True), ValueError, r"^attn_mask and is_causal=True: give one of them"),
    (dict(attn_mask=CAUSAL.astype(int)), TypeError, r"^attn_mask must be boolean .* or floating .*got dtype int"),
    (dict(attn_mask=[["a", "b", "c"]] * 3), TypeError, r"^attn_mask must be boolean"),
    (dict(attn_mask=[[0.0, np.nan, 0.0]] * 3), ValueError, r"^attn_mask contains NaN or \+inf"),
    (dict(attn_mask=[[0.0, np.inf, 0.0]] * 3), ValueError, r"^attn_mask contains NaN or \+inf"),
    (dict(attn_mask=[[-np.inf] * 3, [0.0] * 3, [0.0] * 3]), ValueError, r"^attn_mask row 0 allows no key"),
    (dict(attn_mask=np.ones((3, 3, 3), bool)), ValueError, r"^attn_mask must broadcast to \(n_q, n_k\) = \(3, 3\)"),
])
def test_bad_masks_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        sdpa(K, K, V, **kwargs)


def test_a_float_mask_that_overflows_the_scores_is_refused():
    # the dots (1.2e308, 0, 1.2e308) are finite; 1.2e308 + 1e308 is not
    with pytest.raises(ValueError, match=r"^attn_mask: the scores plus the mask overflow float64"):
        sdpa([[1.2e308, 0.0]], K, V, [[1e308, 0.0, 0.0]], scale=1.0)


def test_the_wrappers_take_the_same_scale_and_attn_mask():
    X, W = I_LOVE_NLP.keys, np.eye(2)
    one = self_attention(X, W, W, W, CAUSAL, scale=1.0).attention
    np.testing.assert_allclose(one.output, sdpa(K, K, K, CAUSAL, scale=1.0).output, rtol=1e-15)
    heads = multi_head_attention(X, W[None], W[None], np.eye(2)[None], np.eye(2), CAUSAL)
    np.testing.assert_allclose(heads.heads[0].attention.weights[1], [0.3302, 0.6698, 0.0], **TOL)
    with pytest.raises(TypeError, match=r"not a switch"):
        self_attention(X, W, W, W, scale=False)
    with pytest.raises(TypeError, match=r"not a switch"):
        scores_against_values(K, np.eye(3, 2), scale=True)
