"""The limits of a target pattern: which rows no W can give together (their embeddings make them
inseparable), and the lowest loss one head can reach, found by Newton's method on a convex problem.
"""

from __future__ import annotations

import math  # noqa: F401 - the docstrings' examples
from dataclasses import dataclass

import numpy as np

from core.training.run import _read_only
from core.training.tasks import MAX_HEADS, _integer, _mask, _task, weights_task  # noqa: F401 - weights_task: examples

#: Two target rows agree (:func:`loss_floor_reason`) when they differ by no more than this, rounding.
_TOL = 1e-9


@dataclass(frozen=True)
class RowConflict:
    """Two rows of a target that no projection can give at once (:func:`loss_floor_reason`).

    Attributes
    ----------
    rows : (int, int)
        Token indices i < j, or (i, i) for a token whose embedding is 0.
    factor : float
        c with x_j = c x_i (1 for identical embeddings; 0 for a zero embedding): every head's
        scores of row j are c times those of row i, on the keys both may attend to.
    keys : tuple of int
        Those keys.
    any_heads : bool
        True when more heads cannot help either (identical or zero embeddings give identical
        or uniform rows in every head, and so in their average); False when a second head can.
    """

    rows: tuple[int, int]
    factor: float
    keys: tuple[int, ...]
    any_heads: bool


def _powers_agree(p_i: np.ndarray, p_j: np.ndarray, c: float) -> bool:
    """Whether rows p_i, p_j (each summing to 1 on the same keys) can be softmax(s) and softmax(c s) in the limit.

    For c > 0 the two rows rank the keys alike: they need the same support and p_j proportional to p_i^c there.
    For c < 0 one row's top is the other's bottom: either their supports are disjoint (opposite ends of the same
    scores, pushed apart), or both are everywhere positive with p_j proportional to p_i^c.
    """
    on_i, on_j = p_i > 0, p_j > 0
    if c < 0 and not (on_i & on_j).any():
        return True
    if not np.array_equal(on_i, on_j) or (c < 0 and not on_i.all()):
        return False
    log_q = c * np.log(p_i[on_i])
    q = np.exp(log_q - log_q.max())
    return bool(np.allclose(q / q.sum(), p_j[on_j], rtol=0, atol=_TOL))


def loss_floor_reason(task, *, heads: int = 1, mask=None) -> tuple[RowConflict, ...]:
    """Rows of a target pattern that conflict: their embeddings make them inseparable by any W.

    Parameters
    ----------
    task : TrainingTask, str or (3, 3) array_like
        A "weights" task, a preset's name or a target pattern for "I love NLP".
    heads : int, 1 to 4
    mask : None, "causal" or (n, n) array_like of bool

    Returns
    -------
    tuple of RowConflict
        Empty when no two rows conflict this way; the loss may still have a floor above the
        target's entropy for another reason (three rows, see :func:`loss_floor`).

    Raises
    ------
    ValueError
        If the task is on the outputs, or heads or the mask are out of range.

    Notes
    -----
    Head h scores token j for token i by ``x_i M_h x_j^T``, linear in x_i. If x_j = c x_i, row
    j's scores are c times row i's for every M, on the keys both may attend to (with a mask
    they may differ): detected exactly, up to rounding of 1e-12 in the embeddings and 1e-9 in
    the targets. With c = 1 (identical embeddings) the rows are identical in every head, so in
    the heads' average too; a zero embedding gives a uniform row. Other c bind one head only:
    the average of two heads is no longer a power of the other row.

    Examples
    --------
    Two tokens at the same place that should attend to different tokens:

    >>> t = weights_task([[1, 0, 0], [0, 1, 0], [0, 0, 1]], X=[[1, 0], [0, 1], [1, 0]], tokens=["a", "b", "a2"])
    >>> [(c.rows, c.factor, c.any_heads) for c in loss_floor_reason(t, heads=2)]
    [((0, 2), 1.0, True)]
    """
    task = _task(task)
    if task.kind != "weights":
        raise ValueError("a loss floor is worked out for a target on the weights, not on the outputs")
    heads = _integer("heads", heads, 1, MAX_HEADS)
    m = _mask(mask, task)
    X, P = task.X, task.target
    length = np.hypot(X[:, 0], X[:, 1])
    conflicts = []
    for i in np.flatnonzero(length == 0):
        keys = np.flatnonzero(m[i])
        if not np.allclose(P[i, keys], 1.0 / keys.size, rtol=0, atol=_TOL):
            conflicts.append(RowConflict((int(i), int(i)), 0.0, tuple(keys.tolist()), any_heads=True))
    for i in range(len(X)):
        for j in range(i + 1, len(X)):
            if length[i] == 0 or length[j] == 0:
                continue
            if abs(X[i, 0] * X[j, 1] - X[i, 1] * X[j, 0]) > 1e-12 * length[i] * length[j]:
                continue  # not parallel
            c = float(X[i] @ X[j] / length[i] ** 2)
            c = 1.0 if abs(c - 1.0) <= 1e-12 else c
            if heads > 1 and c != 1.0:
                continue
            keys = np.flatnonzero(m[i] & m[j])
            mass_i, mass_j = P[i, keys].sum(), P[j, keys].sum()
            if mass_i == 0 or mass_j == 0:
                continue  # one row looks elsewhere: whatever the scores on these keys, it does not see them
            if not _powers_agree(P[i, keys] / mass_i, P[j, keys] / mass_j, c):
                conflicts.append(RowConflict((i, j), c, tuple(keys.tolist()), any_heads=bool(c == 1.0)))
    return tuple(conflicts)


@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class LossFloor:
    """The lowest loss one head can reach on a target pattern (:func:`loss_floor`).

    Attributes
    ----------
    loss : float
        The smallest cross-entropy over every W_Q, W_K (to about 1e-9; approached, for a
        one-hot row, only as W grows without bound).
    entropy : float
        The target's own: the floor when one head can learn it exactly.
    excess : float
        ``loss - entropy``, the KL divergence left at best.
    row_excess : (n,) float64
        Each row's KL divergence at best: where a head falls short.
    score_matrix : (2, 2) float64
        The best M found (scores ``x_i M x_j^T``).
    learnable : bool
        ``excess`` below 1e-6.
    conflicts : tuple of RowConflict
        :func:`loss_floor_reason` for one head.
    """

    loss: float
    entropy: float
    excess: float
    row_excess: np.ndarray
    score_matrix: np.ndarray
    learnable: bool
    conflicts: tuple[RowConflict, ...]


def loss_floor(task, *, mask=None) -> LossFloor:
    """The lowest loss one head can reach on a target pattern, and which rows it must miss.

    Parameters
    ----------
    task : TrainingTask, str or (3, 3) array_like
        A "weights" task, a preset's name or a target pattern for "I love NLP".
    mask : None, "causal" or (n, n) array_like of bool

    Returns
    -------
    LossFloor

    Raises
    ------
    ValueError
        If the task is on the outputs, or the mask is malformed or hides a cell the target needs.

    Notes
    -----
    One head's scores are ``S = X M X^T`` with M = W_Q W_K^T s / T, and with d_k = d_model = 2
    every 2 x 2 matrix M is some W_Q W_K^T (take W_K = I), whatever the scaling and the
    temperature. The cross-entropy is a log-sum-exp of linear functions of M minus a linear
    function, so it is convex in M's four entries: Newton's method with a backtracking line
    search (Boyd & Vandenberghe, 2004, Sec. 9.5) finds its floor, where training may stop
    in a valley of W_Q and W_K. With several heads the loss is not convex in anything so
    simple; :func:`loss_floor_reason` says which rows stay out of reach for any number.

    Examples
    --------
    Four tokens around a circle, each to attend half to each neighbour: one head's row peaks in
    one direction, so its best is to attend evenly to all four, log 4, against the target's log 2.

    >>> X = [[1, 0], [0, 1], [-1, 0], [0, -1]]
    >>> both = weights_task([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]], X)
    >>> f = loss_floor(both)
    >>> round(f.loss, 6) == round(math.log(4), 6), round(f.entropy, 6) == round(math.log(2), 6), f.learnable
    (True, True, False)
    """
    task = _task(task)
    if task.kind != "weights":
        raise ValueError("a loss floor is worked out for a target on the weights, not on the outputs")
    m = _mask(mask, task)
    X, P = task.X, task.target
    n = X.shape[0]
    F = (X[:, None, :, None] * X[None, :, None, :]).reshape(n, n, 4)  # s_ij = x_i M x_j^T = F_ij . vec(M)
    neg = np.where(m, 0.0, -np.inf)

    def value(theta):
        scores = F @ theta
        S = scores + neg
        top = S.max(axis=1, keepdims=True)
        E = np.exp(S - top)
        Z = E.sum(axis=1, keepdims=True)
        rows = (top + np.log(Z))[:, 0] - (P * scores).sum(axis=1)  # each row's cross-entropy; P = 0 where masked
        return rows, E / Z

    theta = np.zeros(4)
    rows, A = value(theta)
    for _ in range(200):
        grad = np.einsum("ij,ijk->k", A - P, F) / n
        mean_F = np.einsum("ij,ijk->ik", A, F)  # (n, 4): each row's expected F
        hess = (np.einsum("ij,ijk,ijl->kl", A, F, F) - mean_F.T @ mean_F) / n
        # a little damping: along a direction the loss keeps falling forever, hess tends to 0 there
        direction = -np.linalg.solve(hess + 1e-12 * (1 + np.trace(hess)) * np.eye(4), grad)
        decrement = -float(grad @ direction)
        if decrement < 1e-15:
            break
        f, t = rows.mean(), 1.0
        while t > 1e-12:
            new_rows, new_A = value(theta + t * direction)
            if new_rows.mean() <= f - 1e-4 * t * decrement:
                break
            t /= 2
        else:
            break
        theta, rows, A = theta + t * direction, new_rows, new_A
    entropy_rows = -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0), axis=1)
    loss, entropy = float(rows.mean()), task.entropy
    excess = max(0.0, loss - entropy)
    return LossFloor(loss=loss, entropy=entropy, excess=excess,
                     row_excess=_read_only(np.maximum(rows - entropy_rows, 0.0)),
                     score_matrix=_read_only(theta.reshape(2, 2)), learnable=excess < 1e-6,
                     conflicts=loss_floor_reason(task, heads=1, mask=mask))
