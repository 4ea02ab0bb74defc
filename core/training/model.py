"""The model's forward pass, its loss and its gradients written out by hand (no autograd): one head or
several, a target on the weights or on the outputs. The formulas and why the softmax's backward pass has
its form: the package's docstring (``core/training/__init__.py``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from core.attention import _as_finite_matrix
from core.training.tasks import D_K, D_MODEL, MAX_HEADS, TrainingTask, _factor, _mask, _task


class _Problem:
    """One task's constants, prepared once for the many steps of a run."""

    def __init__(self, task: TrainingTask, mask: np.ndarray, factor: float, heads: int, d_v: int, has_W_O: bool):
        self.task, self.mask, self.H, self.d_v, self.has_W_O = task, mask, heads, d_v, has_W_O
        self.n = task.X.shape[0]
        self.X = np.ascontiguousarray(task.X)
        self.XT = np.ascontiguousarray(task.X.T)
        # (sqrt(c) X W_Q)(sqrt(c) X W_K)^T = c Q K^T: the factor s/T is taken into the embeddings once, so
        # no step multiplies by it, going forward or back
        self.Xs = np.sqrt(factor) * self.X
        self.XsT = np.ascontiguousarray(self.Xs.T)
        self.neg = None if mask.all() else np.where(mask, 0.0, -np.inf)  # a masked cell's exp is exactly 0
        self.weights_kind = task.kind == "weights"
        if self.weights_kind:
            self.P = np.asarray(task.target)
            self.P_n = self.P / self.n  # the loss's mean over rows taken into the target
            self.needed = self.P > 0
        else:
            Y = np.asarray(task.target)
            self.Y = Y[:, None] if Y.ndim == 1 else Y  # (n, d_out)


def _forward(p: _Problem, W_Q, W_K):
    """Queries, keys, scores and softmax of every head, for any leading axes.

    W_Q, W_K : (..., H, 2, 2) -> Q, K : (..., H, n, 2), S : (..., H, n, n) (c Q K^T, -inf where
    masked), each row's max ``top`` and sum of exponentials ``Z`` : (..., H, n, 1), weights A : (..., H, n, n).
    """
    Q = p.Xs @ W_Q  # (n, 2) x (..., H, 2, d_k) -> (..., H, n, d_k)
    K = p.Xs @ W_K
    S = Q @ np.swapaxes(K, -1, -2)  # (..., H, n, d_k) x (..., H, d_k, n) -> (..., H, n, n)
    if p.neg is not None:
        S = S + p.neg
    # the ufuncs' own reductions: on 8 x 8 arrays the methods' Python wrappers cost as much as the sums
    top = np.maximum.reduce(S, axis=-1, keepdims=True)
    E = np.exp(S - top)
    Z = np.add.reduce(E, axis=-1, keepdims=True)
    return Q, K, S, top, Z, E / Z


def _log_mean_weights(p: _Problem, S, top, Z):
    """log Abar : (..., n, n), Abar the heads' mean weights, and each head's share A_h / (H Abar) : (..., H, n, n).

    A log-sum-exp over the heads, so that a tiny Abar cannot underflow to log 0. Masked cells (log A = -inf,
    P = 0) are set to 0 first and then count for nothing.
    """
    log_A = np.where(p.mask, S - top - np.log(Z), 0.0)
    best = np.maximum.reduce(log_A, axis=-3, keepdims=True)
    w = np.exp(log_A - best)
    total = np.add.reduce(w, axis=-3, keepdims=True)
    return (best + np.log(total / p.H))[..., 0, :, :], w / total


def _outputs(p: _Problem, A, W_V, W_O):
    """Each head's values V and outputs, both (..., H, n, d_v), their concatenation and the output Y (..., n, d_out)."""
    V = p.X @ W_V  # (n, 2) x (..., H, 2, d_v) -> (..., H, n, d_v)
    outputs = A @ V
    if not p.has_W_O:
        return V, outputs, None, outputs[..., 0, :, :]
    concat = np.swapaxes(outputs, -3, -2)  # (..., n, H, d_v): head h in columns h*d_v to (h+1)*d_v once flattened
    concat = concat.reshape(*concat.shape[:-2], p.H * p.d_v)
    return V, outputs, concat, concat @ W_O  # (..., n, H*d_v) x (..., H*d_v, d_out) -> (..., n, d_out)


def _loss(p: _Problem, S, top, Z, Y):
    """The loss for any leading axes: cross-entropy with the target pattern, or mean squared distance."""
    if p.weights_kind:
        return -np.add.reduce(p.P_n * _log_mean_weights(p, S, top, Z)[0], axis=(-2, -1))
    R = Y - p.Y
    return np.add.reduce(R * R, axis=(-2, -1)) / p.n


def _evaluate(p: _Problem, W_Q, W_K, W_V, W_O):
    """Loss (...), each head's weights (..., H, n, n) and outputs (..., H, n, d_v), and the output (..., n, d_out).

    For any leading axes (a whole run's steps at once). A "weights" task's output is the heads' mean output.
    """
    _, _, S, top, Z, A = _forward(p, W_Q, W_K)
    _, outputs, _, Y = _outputs(p, A, W_V, W_O)
    if p.weights_kind:
        Y = np.add.reduce(outputs, axis=-3) / p.H
    return _loss(p, S, top, Z, Y), A, outputs, Y


def _softmax_backward(A, dA):
    """dS : (..., n, n), the gradient of the scores, from the weights A and the gradient of the weights dA, row by row
    through the softmax's Jacobian: ``dS_ij = A_ij sum_k A_ik (dA_ij - dA_ik)``.

    The usual ``A * (dA - rowsum(dA * A))`` is the same sum with ``sum_k A_ik = 1`` taken out, and loses what
    the small weights of a saturated row make (the module's notes); here each difference is taken before it is
    weighted. An (n, n, n) array a head: at most 8 tokens, a few thousand numbers.

    >>> A, dA = np.array([[1.0, 1e-20]]), np.array([[1.0, 2.0]])  # a saturated row
    >>> _softmax_backward(A, dA).tolist(), (A * (dA - (dA * A).sum(axis=-1, keepdims=True))).tolist()  # the usual form
    ([[-1e-20, 1e-20]], [[0.0, 1e-20]])
    """
    return A * np.add.reduce(A[..., None, :] * (dA[..., :, None] - dA[..., None, :]), axis=-1)


def _gradients(p: _Problem, W_Q, W_K, W_V, W_O, out=None):
    """dloss/dW_Q, dW_K, dW_V, dW_O for one step (None where the loss does not depend on it).

    ``out``: arrays of those shapes to write them into (None where not used), as a run does.
    """
    dW_Q, dW_K, dW_V, dW_O = out or (None, None, None, None)
    Q, K, S, top, Z, A = _forward(p, W_Q, W_K)
    if p.weights_kind:
        if p.H == 1:
            dS = A - p.P
            dS *= 1.0 / p.n  # d(-(1/n) sum P log A)/dS = (A - P)/n, the rows of P summing to 1
        else:
            # dL/dlog A_h = dL/dlog Abar * A_h / (H Abar), each head's share of the cell; then through the
            # log-softmax, dS = g - A rowsum(g). The share straight from the weights, unless some cell the
            # target needs has underflowed in every head: then from their logarithms.
            total = np.add.reduce(A, axis=0)
            if np.minimum.reduce(total, axis=None, where=p.needed, initial=np.inf) > 1e-280:
                share = A / np.maximum(total, 1e-300)  # 0 / 1e-300 where no head attends, masked cells too
            else:
                share = _log_mean_weights(p, S, top, Z)[1]
            g = share * -p.P_n
            dS = g - A * np.add.reduce(g, axis=-1, keepdims=True)
    else:
        V, _, concat, Y = _outputs(p, A, W_V, W_O)
        dY = (2.0 / p.n) * (Y - p.Y)  # (n, d_out)
        if p.has_W_O:
            dW_O = np.matmul(concat.T, dY, out=dW_O)
            dO = np.swapaxes((dY @ W_O.T).reshape(p.n, p.H, p.d_v), 0, 1)  # (H, n, d_v)
        else:
            dO = dY[None]
        dW_V = np.matmul(p.XT, np.swapaxes(A, -1, -2) @ dO, out=dW_V)  # dV = A^T dO
        dA = dO @ np.swapaxes(V, -1, -2)  # (H, n, n)
        dS = _softmax_backward(A, dA)
    # S = Q K^T with Q = Xs W_Q, K = Xs W_K: dQ = dS K, dK = dS^T Q
    dW_Q = np.matmul(p.XsT, dS @ K, out=dW_Q)
    dW_K = np.matmul(p.XsT, np.swapaxes(dS, -1, -2) @ Q, out=dW_K)
    return dW_Q, dW_K, dW_V, dW_O


class Gradients(NamedTuple):
    """The loss and its gradient with respect to each projection (:func:`loss_and_gradients`).

    Attributes
    ----------
    loss : float
    W_Q, W_K : (H, 2, 2) float64
    W_V : (H, 2, d_v) float64, or None for a "weights" task (the loss does not depend on it)
    W_O : (H * d_v, d_out) float64, or None when there is no W_O
    weights : (H, n, n) float64
        Each head's attention weights.
    """

    loss: float
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray | None
    W_O: np.ndarray | None
    weights: np.ndarray


def loss_and_gradients(task, W_Q, W_K, W_V=None, W_O=None, *, mask=None, scale: bool = True,
                       temperature: float = 1.0) -> Gradients:
    """The training loss of a task at given projections, and its gradients, computed by hand.

    Parameters
    ----------
    task : TrainingTask, a preset's name, or an (n, n) target on "I love NLP"
    W_Q, W_K : (H, 2, 2) array_like
        Each head's query and key projection (d_model = 2, d_k = 2).
    W_V : (H, 2, d_v) array_like
        Each head's value projection; required for an "outputs" task, unused for "weights".
    W_O : (H * d_v, d_out) array_like, optional
        Required for an "outputs" task with H > 1; with one head and no W_O, d_v must be d_out.
    mask : None, "causal" or (n, n) array_like of bool
        True where token i may attend to token j.
    scale : bool
        Multiply the dot products by 1/sqrt(d_k) (True) or not.
    temperature : float in [0.01, 100]
        Divide the scores by T: scores = Q K^T s / T.

    Returns
    -------
    Gradients
        ``loss`` and dloss/dW for each W, the shapes of the W's.

    Raises
    ------
    ValueError
        Naming the argument at fault: wrongly shaped or non-finite projections, a missing
        W_V or W_O, a mask that hides a cell the target needs, a temperature out of range.

    Notes
    -----
    See the module's docstring for the losses. With A = softmax(S) row by row and
    dA = dL/dA, ``dS_ij = A_ij (dA_ij - sum_k dA_ik A_ik)``.

    Examples
    --------
    Zero projections give uniform weights: each row's cross-entropy with a one-hot target is log 3.

    >>> g = loss_and_gradients("attend to yourself", np.zeros((1, 2, 2)), np.zeros((1, 2, 2)))
    >>> round(g.loss, 6) == round(math.log(3), 6), g.W_Q.tolist()
    (True, [[[0.0, 0.0], [0.0, 0.0]]])
    """
    task = _task(task)
    m = _mask(mask, task)
    c = _factor(scale, temperature)
    W_Q = _as_finite_matrix("W_Q", W_Q, ndim=(3,))
    H = W_Q.shape[0]
    if W_Q.shape[1:] != (D_MODEL, D_K) or not 1 <= H <= MAX_HEADS:
        raise ValueError(f"W_Q must be (H, 2, 2), a (2, 2) projection for each of 1 to {MAX_HEADS} heads, "
                         f"got shape {W_Q.shape}")
    W_K = _as_finite_matrix("W_K", W_K, ndim=(3,))
    if W_K.shape != W_Q.shape:
        raise ValueError(f"W_K must have the shape of W_Q, {W_Q.shape}, got {W_K.shape}")
    W_V = np.zeros((H, D_MODEL, D_MODEL)) if W_V is None and task.kind == "weights" else W_V
    if W_V is None:
        raise ValueError("W_V is required for a task on the outputs")
    W_V = _as_finite_matrix("W_V", W_V, ndim=(3,))
    if W_V.shape[:2] != (H, D_MODEL):
        raise ValueError(f"W_V must be (H, 2, d_v) = ({H}, 2, d_v), a value projection per head, got {W_V.shape}")
    d_v = W_V.shape[2]
    if task.kind == "weights":
        W_O = None
    elif H > 1 or W_O is not None:
        if W_O is None:
            raise ValueError(f"W_O is required with {H} heads: it combines their concatenated outputs")
        W_O = _as_finite_matrix("W_O", W_O, ndim=(2,))
        d_out = 1 if task.target.ndim == 1 else task.target.shape[1]
        if W_O.shape != (H * d_v, d_out):
            raise ValueError(f"W_O must be (H * d_v, d_out) = ({H * d_v}, {d_out}), got {W_O.shape}")
    elif task.target.ndim == 2 and d_v != task.target.shape[1] or task.target.ndim == 1 and d_v != 1:
        raise ValueError(f"W_V must have d_v = d_out columns when one head has no W_O, got {d_v}")
    p = _Problem(task, m, c, H, d_v, has_W_O=W_O is not None)
    with np.errstate(over="ignore", invalid="ignore"):
        loss, A, _, _ = _evaluate(p, W_Q, W_K, W_V, W_O)
        grads = _gradients(p, W_Q, W_K, W_V, W_O)
    if not (math.isfinite(loss) and all(g is None or np.all(np.isfinite(g)) for g in grads)):
        raise ValueError("the projections are too large: the loss or its gradients overflow float64")
    dW_Q, dW_K, dW_V, dW_O = grads
    return Gradients(loss=float(loss), W_Q=dW_Q, W_K=dW_K, W_V=dW_V, W_O=dW_O, weights=A)
