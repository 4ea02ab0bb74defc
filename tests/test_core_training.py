"""Training W_Q, W_K, W_V (and W_O) in plain NumPy: losses, hand-written gradients, presets and limits.

Expected numbers come from the course text (Section 6's embeddings and values), from closed
forms worked out here (uniform weights, log 4 and log 2, rotations by 45°), from the attention
core and the plain-loop reference in tests/loop_reference.py, from central finite differences
(independent of the gradient code) or from SciPy's minimiser, never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

import core.training as training
from core import multi_head_attention, scaled_dot_product_attention, self_attention
from core.training import (
    INIT_STD,
    TRAINING_PRESETS,
    learned,
    loss_and_gradients,
    loss_floor,
    loss_floor_reason,
    outputs_task,
    swapped_loss,
    train,
    weights_task,
)
from core.training.model import _softmax_backward
from tests.loop_reference import attention as loop_attention
from tests.loop_reference import random_mask

SECTION_6_X = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # x_I, x_love, x_NLP (course, Section 6)
R = math.sqrt(0.5)
HALF_CIRCLE = [[math.cos(math.radians(45 * p)), math.sin(math.radians(45 * p))] for p in range(5)]
# four tokens around a circle; each should attend half to each neighbour
CIRCLE = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]
NEIGHBOURS = [[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]]


def cross_entropy(P, A):
    """-(1/n) sum_ij P_ij log A_ij over the cells with P > 0, in plain Python."""
    P, A = np.asarray(P, float), np.asarray(A, float)
    return -sum(P[i, j] * math.log(A[i, j]) for i in range(len(P)) for j in range(len(P)) if P[i, j] > 0) / len(P)


# --- the forward pass and the losses, against independent computations ---------------------

@pytest.mark.parametrize("seed", range(10))
def test_the_first_step_is_the_attention_cores_default_call(seed):
    run = train("attend to yourself", seed=seed, steps=1)
    W_Q, W_K, W_V = (getattr(run, name)[0, 0] for name in ("W_Q", "W_K", "W_V"))
    X = np.array(SECTION_6_X)
    # scaled, no mask, T = 1: Attention(X W_Q, X W_K, X W_V) as core.attention computes it
    ref = scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)
    np.testing.assert_allclose(run.head_weights[0, 0], ref.weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run.weights[0], ref.weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run.head_outputs[0, 0], ref.output, rtol=1e-12, atol=1e-14)
    assert run.loss[0] == pytest.approx(cross_entropy(np.eye(3), ref.weights), rel=1e-12)
    # the same distribution for every role at the start
    assert W_Q.shape == W_K.shape == W_V.shape == (2, 2)


@pytest.mark.parametrize("seed", range(12))
def test_masks_temperature_and_scaling_match_the_loop_reference(seed):
    rng = np.random.default_rng(700 + seed)
    n, heads = int(rng.integers(2, 9)), int(rng.integers(1, 5))
    X = rng.normal(size=(n, 2))
    mask = random_mask(rng, n, n) if seed % 2 else np.tril(np.ones((n, n), bool))
    P = rng.random((n, n)) * mask
    P[np.arange(n), np.argmax(mask, axis=1)] += 1.0  # every row some weight where it may attend
    T, scale = [0.5, 1.0, 3.0][seed % 3], seed % 4 != 0
    run = train(weights_task(P, X), seed=seed, steps=3, heads=heads, mask=mask, temperature=T, scale=scale)
    divide_by = (math.sqrt(2) if scale else 1.0) * T  # scores = Q K^T s / T
    for t in (0, 3):
        mean = np.zeros((n, n))
        for h in range(heads):
            Q, K, V = X @ run.W_Q[t, h], X @ run.W_K[t, h], X @ run.W_V[t, h]
            _, weights, output = loop_attention(Q, K, V, mask, divide_by)
            np.testing.assert_allclose(run.head_weights[t, h], weights, rtol=1e-11, atol=1e-14)
            np.testing.assert_allclose(run.head_outputs[t, h], output, rtol=1e-11, atol=1e-12)
            mean += np.array(weights) / heads
        np.testing.assert_allclose(run.weights[t], mean, rtol=1e-12, atol=1e-15)
        assert run.loss[t] == pytest.approx(cross_entropy(P / P.sum(axis=1, keepdims=True), mean), rel=1e-11)
        assert not run.head_weights[t][:, ~mask].any()  # a masked cell's weight is exactly 0


def test_zero_projections_give_uniform_weights_and_hand_computed_losses():
    zero = np.zeros((1, 2, 2))
    # one-hot targets, uniform rows: log 3 each
    assert loss_and_gradients("attend to yourself", zero, zero).loss == pytest.approx(math.log(3), rel=1e-14)
    # causal: row I has 1 key, love 2, NLP 3; the diagonal target costs log 1, log 2, log 3
    causal = loss_and_gradients("attend to yourself", zero, zero, mask="causal").loss
    assert causal == pytest.approx(math.log(6) / 3, rel=1e-14)
    # two heads with uniform rows average to uniform rows
    assert loss_and_gradients("attend to yourself", np.zeros((2, 2, 2)), np.zeros((2, 2, 2))).loss == \
        pytest.approx(math.log(3), rel=1e-14)
    # outputs: W_V = (2, 6) gives values 2, 6, 8 (x_NLP = x_I + x_love); uniform weights give each token
    # 16/3, against the targets 2, 6, 4: ((10/3)^2 + (2/3)^2 + (4/3)^2) / 3 = 40/9
    mse = loss_and_gradients("retrieve the value", zero, zero, [[[2.0], [6.0]]]).loss
    assert mse == pytest.approx(40 / 9, rel=1e-14)
    # a painted target: rows divided by their sums, (1, 1, 0) is half and half
    half = loss_and_gradients([[1, 1, 0], [0, 1, 0], [0, 0, 5]], zero, zero).loss
    assert half == pytest.approx((2 * 0.5 * math.log(3) + math.log(3) + math.log(3)) / 3, rel=1e-14)


def test_the_cross_entropy_is_the_kl_divergence_plus_the_targets_entropy():
    rng = np.random.default_rng(5)
    P = rng.random((4, 4)) + 0.1
    task = weights_task(P, CIRCLE)
    P = P / P.sum(axis=1, keepdims=True)
    entropy = -np.sum(P * np.log(P)) / 4
    assert task.entropy == pytest.approx(entropy, rel=1e-14)
    run = train(task, seed=0, steps=50)
    for t in (0, 25, 50):
        A = run.weights[t]
        kl = np.sum(P * np.log(P / A)) / 4
        assert run.loss[t] == pytest.approx(kl + entropy, rel=1e-12)
        assert run.loss[t] >= run.entropy


def test_multi_head_outputs_are_concat_times_W_O_as_the_multi_head_core_computes_them():
    run = train("retrieve the value", seed=3, steps=20, heads=3)
    assert run.W_V.shape == (21, 3, 2, 2) and run.W_O.shape == (21, 6, 1) and run.outputs.shape == (21, 3)
    for t in (0, 20):
        ref = multi_head_attention(SECTION_6_X, run.W_Q[t], run.W_K[t], run.W_V[t], run.W_O[t])
        np.testing.assert_allclose(run.outputs[t], ref.output[:, 0], rtol=1e-12, atol=1e-12)
        for h, head in enumerate(ref.heads):
            np.testing.assert_allclose(run.head_weights[t, h], head.attention.weights, rtol=1e-12, atol=1e-15)
        assert run.loss[t] == pytest.approx(np.mean((ref.output[:, 0] - [2, 6, 4]) ** 2), rel=1e-12)
    one = train(outputs_task([[1, 2], [3, 4], [5, 6]]), seed=1, steps=5)
    assert one.W_O is None and one.W_V.shape == (6, 1, 2, 2) and one.outputs.shape == (6, 3, 2)
    ref = self_attention(SECTION_6_X, one.W_Q[5, 0], one.W_K[5, 0], one.W_V[5, 0]).attention.output
    np.testing.assert_allclose(one.outputs[5], ref, rtol=1e-12, atol=1e-12)


# --- gradients against central finite differences -------------------------------------------

def finite_differences(task, Ws, kwargs, h=1e-5):
    """Central differences of the loss, entry by entry of every W given."""
    grads = []
    for k, W in enumerate(Ws):
        if W is None:
            grads.append(None)
            continue
        G = np.zeros_like(W)
        for idx in np.ndindex(W.shape):
            plus = [w if w is None else w.copy() for w in Ws]
            minus = [w if w is None else w.copy() for w in Ws]
            plus[k][idx] += h
            minus[k][idx] -= h
            G[idx] = (loss_and_gradients(task, *plus, **kwargs).loss
                      - loss_and_gradients(task, *minus, **kwargs).loss) / (2 * h)
        grads.append(G)
    return grads


def relative_error(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1e-12))


@pytest.mark.parametrize("seed", range(24))
def test_every_gradient_matches_central_finite_differences(seed):
    rng = np.random.default_rng(900 + seed)
    n, heads = int(rng.integers(2, 9)), [1, 2, 3, 4][seed % 4]
    X = rng.normal(size=(n, 2))
    mask = [None, "causal", random_mask(rng, n, n)][seed % 3]
    allowed = {0: np.ones((n, n), bool), 1: np.tril(np.ones((n, n), bool)), 2: mask}[seed % 3]
    kwargs = dict(mask=mask, scale=seed % 5 != 0, temperature=[1.0, 0.5, 2.5][seed % 3])
    if seed % 2 == 0:  # a target on the weights: W_Q and W_K only
        P = rng.random((n, n)) * (rng.random((n, n)) < 0.6) * allowed
        P[np.arange(n), np.argmax(allowed, axis=1)] += 0.3
        task = weights_task(P, X)
        Ws = [rng.normal(size=(heads, 2, 2)), rng.normal(size=(heads, 2, 2)), None, None]
    else:  # a target on the outputs: W_V and, with several heads, W_O too
        d_out = 1 + seed % 3 // 2
        task = outputs_task(rng.normal(size=(n,) if d_out == 1 else (n, 2)) * 3, X)
        d_v = 2 if heads > 1 else d_out
        Ws = [rng.normal(size=(heads, 2, 2)), rng.normal(size=(heads, 2, 2)), rng.normal(size=(heads, 2, d_v)),
              rng.normal(size=(heads * d_v, d_out)) if heads > 1 else None]
    got = loss_and_gradients(task, *Ws, **kwargs)
    want = finite_differences(task, Ws, kwargs)
    for name, g, w in zip(("W_Q", "W_K", "W_V", "W_O"), got[1:5], want, strict=True):
        assert (g is None) == (w is None), name
        if w is not None:
            assert g.shape == w.shape
            assert relative_error(g, w) <= 1e-6, name


def test_gradients_stay_right_where_every_heads_weight_on_a_target_cell_underflows():
    # scores of 40 * 40 / sqrt(2) = 1131 against 0: e^-1131 is 0 in float64, in both heads, on a cell the
    # target wants; the loss and its gradient then come from the weights' logarithms
    task = weights_task([[1, 1], [0, 1]], [[1, 0], [0, 1]])
    W = np.array([np.eye(2) * 40, np.eye(2) * 40 + 1e-3])
    got = loss_and_gradients(task, W, W)
    assert got.weights[:, 0, 1].max() == 0.0
    assert got.loss == pytest.approx(0.5 * 1600 / math.sqrt(2) / 2, rel=1e-2)  # half a row at log e^-1131
    for g, w in zip(got[1:3], finite_differences(task, [W, W, None, None], {})[:2], strict=True):
        assert relative_error(g, w) <= 1e-6


def test_gradients_of_one_head_with_a_W_O_and_of_2_d_outputs():
    rng = np.random.default_rng(11)
    task = outputs_task(rng.normal(size=(5, 2)), rng.normal(size=(5, 2)))
    Ws = [rng.normal(size=(1, 2, 2)), rng.normal(size=(1, 2, 2)), rng.normal(size=(1, 2, 3)), rng.normal(size=(3, 2))]
    got = loss_and_gradients(task, *Ws, scale=False)
    for g, w in zip(got[1:5], finite_differences(task, Ws, dict(scale=False)), strict=True):
        assert relative_error(g, w) <= 1e-6


# --- the presets ---------------------------------------------------------------------------

def _decimal_softmax_backward(S, dA, digits=60):
    """dS of the softmax at scores S (float64, read exactly) for the weights' gradient dA, in ``digits``-digit decimal
    arithmetic (the standard library's, independent of NumPy): the reference for float64's forms."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = digits
        out = []
        for s_row, g_row in zip(S, dA, strict=True):
            top = max(Decimal(float(x)) for x in s_row)
            e = [(Decimal(float(x)) - top).exp() for x in s_row]
            z = sum(e)
            a = [x / z for x in e]
            mean = sum(ai * Decimal(float(g)) for ai, g in zip(a, g_row, strict=True))
            out.append([ai * (Decimal(float(g)) - mean) for ai, g in zip(a, g_row, strict=True)])
        return out


def test_the_softmax_backward_keeps_a_saturated_rows_gradient():
    """A low temperature saturates a row: one weight within rounding of 1, the others e^-38 to e^-70. The gradient of
    the scores is then made of those small weights alone; ``A * (dA - rowsum(dA * A))`` lost it in the difference of
    two nearly equal numbers (all of it, at the largest weight), and Adam scales whatever is left to a full step.
    Every entry agrees with 60-digit decimal arithmetic to 1e-12 of itself."""
    S = np.array([[0.0, -45.0, -60.0, -40.0], [-38.0, 0.0, -0.5, -70.0], [3.0, 2.0, 1.0, 0.0]])
    dA = np.array([[1.3, -0.7, 2.1, 0.4], [0.25, 1.75, -1.0, 3.0], [0.1, -0.2, 0.3, 0.05]])
    E = np.exp(S - S.max(axis=1, keepdims=True))
    A = E / E.sum(axis=1, keepdims=True)
    want = _decimal_softmax_backward(S, dA)

    def worst(dS):  # the largest error relative to the entry itself
        return max(abs(float((got - w) / w)) for row, w_row in zip(dS.tolist(), want, strict=True)
                   for got, w in zip(map(type(w_row[0]), map(repr, row)), w_row, strict=True))

    assert worst(_softmax_backward(A, dA)) < 1e-12
    usual = A * (dA - (dA * A).sum(axis=1, keepdims=True))
    assert worst(usual) > 0.5  # the form used before: the saturated entries' gradient lost


def _adam(gradients, lr=1.0, b1=0.9, b2=0.999, eps=1e-8):
    """Each update of Kingma & Ba's (2015) Algorithm 1, written as the paper writes it: bias-corrected moments."""
    m = v = 0.0
    for t, g in enumerate(gradients, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        yield lr * (m / (1 - b1 ** t)) / (math.sqrt(v / (1 - b2 ** t)) + eps)


def test_an_adam_step_is_bounded_by_a_bound_that_grows_with_the_step_and_is_met():
    """Kingma & Ba's (1 - beta1) / sqrt(1 - beta2) = 3.2 is not a bound on a step: gradients that grow by beta2 / beta1
    a step (as a saturating softmax's can) move an entry by more, up to 7.27 learning rates; the bound at each step
    is met by exactly those gradients, and no run of train moves an entry further."""
    b1, b2 = 0.9, 0.999
    steps = list(_adam([1e6 * (b2 / b1) ** t for t in range(2000)]))  # large: eps counts for nothing
    for t in (1, 10, 100, 300, 1000, 2000):
        assert steps[t - 1] == pytest.approx(training.adam_step_bound(t), rel=1e-9), t
    assert steps[299] > 3.6 > (1 - b1) / math.sqrt(1 - b2)  # past Sec. 2.1's 3.2 from step 300 or so
    limit = (1 - b1) / math.sqrt((1 - b2) * (1 - b1 ** 2 / b2))
    assert training.adam_step_bound(10 ** 9) == pytest.approx(limit) == pytest.approx(7.2703, abs=1e-4)
    assert all(training.adam_step_bound(t) <= training.adam_step_bound(t + 1) for t in range(1, 2000))
    # a run at the largest rate, four heads, the coldest softmax: each step's largest move within its bound
    run = train(TRAINING_PRESETS["retrieve the value"], seed=3, steps=400, heads=4, learning_rate=1.0,
                temperature=0.01)
    flat = np.concatenate([W.reshape(W.shape[0], -1) for W in (run.W_Q, run.W_K, run.W_V, run.W_O)], axis=1)
    moves = np.abs(np.diff(flat, axis=0)).max(axis=1)
    assert all(move <= training.adam_step_bound(t) * (1 + 1e-12) for t, move in enumerate(moves, 1))


def test_the_presets_sentences_and_targets():
    assert list(TRAINING_PRESETS) == ["attend to the previous token", "attend to yourself",
                                      "everyone attends to NLP", "retrieve the value"]
    previous, yourself, nlp, retrieve = TRAINING_PRESETS.values()
    assert previous.tokens == ("attention", "is", "all", "you", "need")
    np.testing.assert_allclose(previous.X, HALF_CIRCLE, rtol=0, atol=1e-15)  # position p at 45° x p
    np.testing.assert_array_equal(previous.target, [[1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 0, 0, 0],
                                                    [0, 0, 1, 0, 0], [0, 0, 0, 1, 0]])
    for task in (yourself, nlp, retrieve):
        assert task.tokens == ("I", "love", "NLP")
        np.testing.assert_array_equal(task.X, SECTION_6_X)
    np.testing.assert_array_equal(yourself.target, np.eye(3))
    np.testing.assert_array_equal(nlp.target, [[0, 0, 1]] * 3)
    assert retrieve.kind == "outputs" and retrieve.target.tolist() == [2, 6, 4]  # Section 6's values
    doc = training.__doc__
    for task in TRAINING_PRESETS.values():
        assert task.note and task.goal_loss and task.goal_steps
        row = next(line for line in doc.splitlines() if line.startswith(task.name))
        assert f"{task.goal_loss:g}" in row.split() and str(task.goal_steps) in row.split(), row
        for a in (task.X, task.target):
            with pytest.raises(ValueError):
                a.flat[0] = 9.0


@pytest.mark.parametrize("name", list(TRAINING_PRESETS))
def test_each_preset_reaches_its_goal_for_seeds_0_to_9(name):
    task = TRAINING_PRESETS[name]
    for seed in range(10):
        run = train(name, seed=seed, steps=task.goal_steps)
        assert run.loss[0] > 3 * task.goal_loss, seed  # it starts far from the goal
        assert run.loss[-1] < task.goal_loss, (seed, run.loss[-1])
        if task.kind == "weights":
            np.testing.assert_array_equal(run.weights[-1].argmax(axis=1), task.target.argmax(axis=1))
        else:
            np.testing.assert_allclose(run.outputs[-1], [2, 6, 4], atol=math.sqrt(3 * task.goal_loss))


def test_previous_token_is_not_learnable_on_section_6s_embeddings_but_is_on_the_half_circle():
    previous_on_section_6 = weights_task([[1, 0, 0], [1, 0, 0], [0, 1, 0]])
    floor = loss_floor(previous_on_section_6)
    assert not floor.learnable and floor.excess > 0.5
    # x_NLP = x_I + x_love: SciPy's own minimiser over M (scores x_i M x_j^T via the attention core)
    # gets no lower than the floor
    X = np.array(SECTION_6_X)

    def loss(m):
        A = scaled_dot_product_attention(X @ m.reshape(2, 2), X, np.zeros(3), scale=1.0).weights
        return cross_entropy(previous_on_section_6.target, A)

    best = min(minimize(loss, x0, method="BFGS").fun for x0 in np.random.default_rng(0).normal(size=(5, 4)) * 3)
    assert floor.loss <= best + 1e-7 and floor.loss == pytest.approx(best, abs=1e-3)
    assert loss_floor("attend to the previous token").learnable


def test_a_causal_mask_still_learns_the_previous_token():
    run = train("attend to the previous token", seed=4, mask="causal", steps=300)
    assert run.loss[-1] < 0.01
    assert not run.weights[:, np.triu(np.ones((5, 5), bool), 1)].any()  # nothing after the token, ever


# --- swapping roles ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_swapping_W_Q_and_W_K_barely_matters_at_the_start_and_undoes_the_training(seed):
    run = train("attend to the previous token", seed=seed, steps=300)
    assert abs(swapped_loss(run, 0) - run.loss[0]) < 0.05
    # trained, W_Q W_K^T turns each query back by 45°; swapped, it turns it forward: the next token
    assert swapped_loss(run) - run.loss[-1] > 5
    # independently: swapping W_Q and W_K transposes the scores
    X = np.array(HALF_CIRCLE)
    W_Q, W_K = run.W_Q[-1, 0], run.W_K[-1, 0]
    A = scaled_dot_product_attention(X @ W_K, X @ W_Q, np.zeros(5)).weights
    assert swapped_loss(run) == pytest.approx(cross_entropy(run.task.target, A), rel=1e-9)
    assert learned(run).swapped_loss == swapped_loss(run, -1)


@pytest.mark.parametrize("name", ["attend to yourself", "everyone attends to NLP"])
def test_symmetric_patterns_do_not_need_the_roles_apart(name):
    # each token's own key on top, or one key for everyone: M and its transpose rank the keys alike
    for seed in range(10):
        run = train(name, seed=seed)
        assert abs(swapped_loss(run) - run.loss[-1]) < 0.01


def test_swapping_is_refused_for_unknown_roles_shapes_and_steps():
    run = train("retrieve the value", seed=0, steps=2)
    with pytest.raises(ValueError, match=r"^W_Q \(1, 2, 2\) and W_V \(1, 2, 1\) cannot be swapped"):
        swapped_loss(run, 0, ("W_Q", "W_V"))
    for roles in (("W_Q", "W_Q"), ("W_Q", "W_O"), "W_QW_K", ("W_Q",), (["W_Q"], "W_K")):
        with pytest.raises(ValueError, match=r"^roles must be two different ones"):
            swapped_loss(run, 0, roles)
    for step in (3, -4, 1.0, True):
        with pytest.raises(ValueError, match=r"^step must be"):
            swapped_loss(run, step)
    assert swapped_loss(run, -3) == swapped_loss(run, 0)


# --- what was learned ----------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_learned_previous_token_is_a_rotation_by_minus_45_degrees(seed):
    run = train("attend to the previous token", seed=seed, steps=300)
    what = learned(run)
    assert what.attends_to.tolist() == [[0, 0, 1, 2, 3]]
    assert -60 < what.rotation_deg[0] < -30 and what.rotation_share[0] > 0.9
    # tokens 1 to 4: the query points closer to the previous token (45° back) than to any other
    assert np.all(np.abs(what.turn_deg[0, 1:] + 45) < 22.5)
    # M is what turns the embeddings into scores: x_i M x_j^T is the attention core's q_i . k_j / sqrt(2)
    X = np.array(HALF_CIRCLE)
    ref = scaled_dot_product_attention(X @ run.W_Q[-1, 0], X @ run.W_K[-1, 0], np.zeros(5))
    np.testing.assert_allclose(X @ what.score_matrix[0] @ X.T, ref.scores, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(what.query_directions[0], X @ what.score_matrix[0], rtol=1e-12)
    np.testing.assert_allclose(what.values[0], X @ run.W_V[-1, 0], rtol=1e-12)
    assert what.step == 300 and learned(run, 0).step == 0


def test_learned_angles_of_a_known_rotation():
    # W_Q = 2 R(30°), W_K = I: M = 2 R(30°) / sqrt(2); every query turns by +30°, all of M is rotation
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    run = train("attend to yourself", seed=0, steps=1)
    fake = training.TrainingRun(**{**run.__dict__, "W_Q": np.array([[[[2 * c, 2 * s], [-2 * s, 2 * c]]]] * 2),
                                   "W_K": np.array([[np.eye(2)]] * 2)})
    what = learned(fake, 0)
    assert what.rotation_deg[0] == pytest.approx(30, abs=1e-9) and what.rotation_share[0] == pytest.approx(1)
    np.testing.assert_allclose(what.turn_deg[0], [30, 30, 30], atol=1e-9)


# --- the loss floor of one head, and two heads -------------------------------------------

def test_a_target_one_head_cannot_learn_stops_at_log_4_and_two_heads_learn_it():
    task = weights_task(NEIGHBOURS, CIRCLE)
    # one head: x_2 = -x_0, so row 2's scores are minus row 0's, and s + (-s) puts no more on both neighbours
    # than on the others: the best is uniform, log 4, against the target's log 2
    floor = loss_floor(task)
    assert floor.loss == pytest.approx(math.log(4), abs=1e-9) and floor.entropy == pytest.approx(math.log(2))
    np.testing.assert_allclose(floor.row_excess, [math.log(2)] * 4, atol=1e-9)
    assert [(c.rows, c.factor, c.any_heads) for c in floor.conflicts] == [((0, 2), -1.0, False),
                                                                          ((1, 3), -1.0, False)]
    for seed in range(10):
        one = train(task, seed=seed)
        assert np.all(one.loss >= math.log(4) - 1e-9)
        assert one.loss[-1] == pytest.approx(math.log(4), abs=1e-3)  # it stops at the floor
        two = train(task, seed=seed, heads=2)
        assert two.loss[-1] < math.log(2) + 0.01  # one head turns forward, one back: their average is the target
    assert loss_floor_reason(task, heads=2) == ()


def test_identical_embeddings_that_need_different_rows_stay_apart_for_any_number_of_heads():
    task = weights_task([[1, 0, 0], [0, 1, 0], [0, 1, 0]], [[1, 0], [0, 1], [1, 0]])
    (conflict,) = loss_floor_reason(task, heads=4)
    assert conflict.rows == (0, 2) and conflict.factor == 1.0 and conflict.any_heads and conflict.keys == (0, 1, 2)
    # rows 0 and 2 are the same row (p, q, r) in every head: -log p - log q >= 2 log 2 over those two rows
    for heads in (1, 2):
        run = train(task, seed=1, heads=heads)
        assert np.all(run.loss >= 2 * math.log(2) / 3 - 1e-9)
        np.testing.assert_allclose(run.weights[:, 0], run.weights[:, 2], rtol=1e-12)


@pytest.mark.parametrize("X, P, conflict", [
    # x_1 = 2 x_0: row 1's scores are twice row 0's, so row 1 must be row 0 squared and normalised
    ([[1, 0], [2, 0], [0, 1]], [[2, 1, 1], [4, 1, 1], [0, 0, 1]], False),
    ([[1, 0], [2, 0], [0, 1]], [[2, 1, 1], [2, 1, 1], [0, 0, 1]], True),
    ([[1, 0], [2, 0], [0, 1]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], True),  # the same ranking, other tops
    # x_1 = -x_0: opposite ends of the same scores, so disjoint supports are fine
    ([[1, 0], [-1, 0], [0, 1]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], False),
    ([[1, 0], [-1, 0], [0, 1]], [[1, 1, 0], [0, 1, 1], [0, 0, 1]], True),
    ([[1, 0], [-1, 0], [0, 1]], [[1, 2, 4], [4, 2, 1], [0, 0, 1]], False),  # (1/p) normalised
    ([[0, 0], [1, 0], [0, 1]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], True),  # a zero embedding: uniform only
])
def test_proportional_embeddings_conflict_exactly_when_the_floor_is_above_the_entropy(X, P, conflict):
    task = weights_task(P, X)
    found = loss_floor_reason(task)
    assert bool(found) is conflict
    assert loss_floor(task).learnable is not conflict


def test_the_floor_is_below_every_one_head_run_and_a_mask_can_lift_it():
    task = weights_task([[1, 0, 0], [1, 0, 0], [0, 1, 0]])  # the previous token on "I love NLP"
    floor = loss_floor(task)
    assert floor.learnable is False
    for seed in range(5):
        assert train(task, seed=seed).loss.min() >= floor.loss - 1e-9
    # causal: row I attends to itself whatever its scores, so its query is free to make row NLP's scores (the
    # sum of I's and love's) put love on top
    causal = loss_floor(task, mask="causal")
    assert causal.learnable and train(task, seed=0, mask="causal").loss[-1] < 0.01
    # identical embeddings under a causal mask are compared on the keys both may attend to: tokens 1 and 3
    # share keys 0 and 1, where row 1 wants key 0 and row 3 key 1; row 3 looking only at key 2 is no conflict
    X = [[1, 0], [0, 1], [1, 0], [0, 1]]
    (c,) = loss_floor_reason(weights_task(np.eye(4)[[0, 0, 2, 1]], X), mask="causal")
    assert c.rows == (1, 3) and c.keys == (0, 1) and c.any_heads
    assert loss_floor_reason(weights_task(np.eye(4)[[0, 0, 2, 2]], X), mask="causal") == ()


# --- runs are read-only, seeded and their own ------------------------------------------------

def test_a_run_is_read_only_and_a_function_of_its_arguments_alone():
    before = np.random.get_state()[1].copy()
    a = train("retrieve the value", seed=7, steps=10, heads=2)
    b = train("retrieve the value", seed=7, steps=10, heads=2)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # no global random state touched
    c = train("retrieve the value", seed=8, steps=10, heads=2)
    for name in ("W_Q", "W_K", "W_V", "W_O", "loss", "weights", "head_weights", "outputs", "head_outputs", "mask"):
        x = getattr(a, name)
        np.testing.assert_array_equal(x, getattr(b, name))
        with pytest.raises(ValueError):
            x.flat[0] = 1.0
        if name != "mask":
            assert not np.array_equal(x, getattr(c, name)), name
    assert a.W_Q.shape == (11, 2, 2, 2) and a.head_outputs.shape == (11, 2, 3, 2)


def test_every_role_starts_from_the_same_distribution():
    draws = {name: [] for name in ("W_Q", "W_K", "W_V")}
    for seed in range(200):
        run = train("attend to yourself", seed=seed, steps=1, heads=4)
        for name in draws:
            draws[name].append(getattr(run, name)[0].ravel())
    for name, d in draws.items():
        d = np.concatenate(d)  # 3,200 entries
        assert abs(d.mean()) < 0.01 and abs(d.std() - INIT_STD) < 0.01, name


# --- refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(learning_rate=float("nan")), r"^learning_rate must be a finite number in \(0, 1\]"),
    (dict(learning_rate=float("inf")), r"^learning_rate must be a finite number in \(0, 1\]"),
    (dict(learning_rate=0), r"^learning_rate must be a finite number in \(0, 1\]"),
    (dict(learning_rate=-0.05), r"^learning_rate must be a finite number in \(0, 1\]"),
    (dict(learning_rate=1e6), r"^learning_rate must be a finite number in \(0, 1\]: Adam moves each entry"),
    (dict(learning_rate="0.1"), r"^learning_rate must be a number"),
    (dict(learning_rate=True), r"^learning_rate must be a number"),
    (dict(steps=0), r"^steps must be from 1 to 2000"),
    (dict(steps=2001), r"^steps must be from 1 to 2000"),
    (dict(steps=10 ** 30), r"^steps must be from 1 to 2000"),
    (dict(steps=1.5), r"^steps must be a whole number"),
    (dict(steps=True), r"^steps must be a whole number"),
    (dict(seed=-1), r"^seed must be a whole number from 0 to 2\*\*32 - 1"),
    (dict(seed=2 ** 32), r"^seed must be a whole number"),
    (dict(seed=1.0), r"^seed must be a whole number"),
    (dict(seed="0"), r"^seed must be a whole number"),
    (dict(seed=None), r"^seed must be a whole number"),
    (dict(seed=False), r"^seed must be a whole number"),
    (dict(heads=0), r"^heads must be from 1 to 4"),
    (dict(heads=5), r"^heads must be from 1 to 4"),
    (dict(heads=2.0), r"^heads must be a whole number"),
    (dict(temperature=0), r"^temperature must be a finite number in \[0.01, 100\]"),
    (dict(temperature=float("nan")), r"^temperature must be a finite number"),
    (dict(temperature=1e3), r"^temperature must be a finite number"),
    (dict(scale="yes"), r"^scale must be True or False"),
    (dict(scale=1), r"^scale must be True or False"),
    (dict(mask="upper"), r"^mask must be None, \"causal\""),
    (dict(mask=np.ones((3, 3), bool)), r"^mask must be an \(5, 5\) boolean array"),
    (dict(mask=np.ones((5, 5), int)), r"^mask must be an \(5, 5\) boolean array"),
    (dict(mask=~np.eye(5, dtype=bool) & np.eye(5, k=1, dtype=bool)), r"^mask row 'need' allows no token"),
    (dict(mask=np.eye(5, dtype=bool)), r"^target row 'is' puts weight on 'attention', which the mask hides"),
])
def test_train_refuses_hostile_arguments_with_a_clear_message(kwargs, match):
    args = dict(seed=0, steps=5) | kwargs
    with pytest.raises(ValueError, match=match):
        train("attend to the previous token", **args)


@pytest.mark.parametrize("make, match", [
    (lambda: weights_task([[1, 0, 0], [0, 0, 0], [0, 0, 1]]), r"^target row 'love' is all zeros"),
    (lambda: weights_task([[1, 0, 0], [0, 1, 0]]), r"^target must be \(n, n\) = \(3, 3\)"),
    (lambda: weights_task([[1, 0], [0, 1]]), r"^a target for 2 tokens needs its sentence: give X"),
    (lambda: weights_task([1, 0, 0]), r"^target must be 2-D"),
    (lambda: weights_task([[1, 0, np.nan], [0, 1, 0], [0, 0, 1]]), r"^target contains NaN or infinite"),
    (lambda: weights_task([[1, 0, np.inf], [0, 1, 0], [0, 0, 1]]), r"^target contains NaN or infinite"),
    (lambda: weights_task([[1, -1, 0], [0, 1, 0], [0, 0, 1]]), r"^target row 'I' has a negative weight on 'love'"),
    (lambda: weights_task(np.eye(2), [[np.nan, 0], [0, 1]]), r"^X contains NaN or infinite"),
    (lambda: weights_task(np.eye(2), [[1, 0, 0], [0, 1, 0]]), r"^X must have 2 columns"),
    (lambda: weights_task(np.eye(9), np.ones((9, 2))), r"^X must have from 2 to 8 rows"),
    (lambda: weights_task(np.eye(1), np.ones((1, 2))), r"^X must have from 2 to 8 rows"),
    (lambda: weights_task(np.eye(2), [[1e3, 0], [0, 1]]), r"^X must have entries that are 0 or from 1e-100 to 100"),
    (lambda: weights_task(np.eye(2), [[5e-324, 0], [0, 1]]), r"^X must have entries that are 0 or from 1e-100"),
    (lambda: weights_task(np.eye(2), [[1, 0], [0, 1]], ["a"]), r"^tokens must name the n = 2 rows"),
    (lambda: weights_task(np.eye(2), [[1, 0], [0, 1]], "ab"), r"^tokens must be a sequence of strings"),
    (lambda: outputs_task([2, 6, np.nan]), r"^targets contains NaN or infinite"),
    (lambda: outputs_task([2, 6]), r"^a target for 2 tokens needs its sentence"),
    (lambda: outputs_task(np.ones((3, 3))),
     r"^targets must be \(n,\) or \(n, d_out\) with n = 3 tokens and d_out 1 or 2"),
    (lambda: outputs_task([2, 6, 1e3]), r"^targets must have entries within ±100"),
    (lambda: train("no such preset", seed=0), r"^no preset named 'no such preset'; the presets are"),
    (lambda: train([[1, 0, 0], [0, 0, 0], [0, 0, 1]], seed=0), r"^target row 'love' is all zeros"),
    (lambda: train("everyone attends to NLP", seed=0, mask="causal"),
     r"^target row 'I' puts weight on 'NLP', which the mask hides from it"),
    (lambda: loss_floor("retrieve the value"), r"^a loss floor is worked out for a target on the weights"),
    (lambda: loss_floor_reason("attend to yourself", heads=0), r"^heads must be from 1 to 4"),
    (lambda: learned(train("attend to yourself", seed=0, steps=2), 3), r"^step must be from -3 to 2"),
])
def test_tasks_and_the_other_functions_refuse_bad_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("args, kwargs, match", [
    ((np.zeros((2, 2)), np.zeros((1, 2, 2))), {}, r"^W_Q must be 3-D"),
    ((np.zeros((5, 2, 2)), np.zeros((5, 2, 2))), {},
     r"^W_Q must be \(H, 2, 2\), a \(2, 2\) projection for each of 1 to 4"),
    ((np.zeros((1, 2, 3)), np.zeros((1, 2, 3))), {}, r"^W_Q must be \(H, 2, 2\)"),
    ((np.zeros((1, 2, 2)), np.zeros((2, 2, 2))), {}, r"^W_K must have the shape of W_Q"),
    ((np.full((1, 2, 2), np.nan), np.zeros((1, 2, 2))), {}, r"^W_Q contains NaN or infinite"),
])
def test_loss_and_gradients_refuses_malformed_projections(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        loss_and_gradients("attend to yourself", *args, **kwargs)


def test_outputs_need_W_V_and_with_several_heads_W_O():
    z = np.zeros((2, 2, 2))
    with pytest.raises(ValueError, match=r"^W_V is required for a task on the outputs"):
        loss_and_gradients("retrieve the value", z[:1], z[:1])
    with pytest.raises(ValueError, match=r"^W_O is required with 2 heads"):
        loss_and_gradients("retrieve the value", z, z, z)
    with pytest.raises(ValueError, match=r"^W_O must be \(H \* d_v, d_out\) = \(4, 1\)"):
        loss_and_gradients("retrieve the value", z, z, z, np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"^W_V must have d_v = d_out columns"):
        loss_and_gradients("retrieve the value", z[:1], z[:1], z[:1])
    with pytest.raises(ValueError, match=r"^the projections are too large"):
        loss_and_gradients("retrieve the value", z[:1] + 1e200, z[:1] + 1e200, np.ones((1, 2, 1)) * 1e300)


def test_the_largest_allowed_run_stays_finite_and_quiet():
    # the extremes of every range at once: the numbers stay inside float64 (warnings are errors here)
    X = [[100, -100], [-100, 100], [0, 0], [100, 100], [1e-100, 0], [1, 1], [-100, 0], [0, 100]]
    for task in (weights_task(np.arange(64.0).reshape(8, 8) % 5, X), outputs_task(np.full((8, 2), 100.0), X)):
        for temperature, scale in ((0.01, False), (100.0, True)):
            run = train(task, seed=2 ** 32 - 1, steps=2000, learning_rate=1.0, heads=4, temperature=temperature,
                        scale=scale)
            assert np.all(np.isfinite(run.loss)) and np.all(np.isfinite(run.outputs))
            learned(run)
