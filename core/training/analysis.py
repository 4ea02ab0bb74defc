"""What a run has learned: the loss with two roles swapped, and what each head's W_Q, W_K and W_V do at
one step (directions, angles, the tokens attended), for a page's sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.training.model import _evaluate, _Problem
from core.training.run import TrainingRun, _read_only, train  # noqa: F401 - train: the docstrings' examples
from core.training.tasks import _integer


def _step_index(run: TrainingRun, step) -> int:
    k = _integer("step", step, -(run.steps + 1), run.steps, f" (the run has steps 0 to {run.steps}; -1 is the last)")
    return k % (run.steps + 1)


def _run_problem(run: TrainingRun) -> _Problem:
    return _Problem(run.task, run.mask, run.factor, run.heads, run.W_V.shape[-1], has_W_O=run.W_O is not None)


def swapped_loss(run: TrainingRun, step: int = -1, roles: tuple[str, str] = ("W_Q", "W_K")) -> float:
    """The loss at one step of a run with two roles' projections swapped, every other number kept.

    At the random start W_Q, W_K and W_V are drawn from one distribution, so swapping two of
    them barely changes the loss: the roles are interchangeable. After training, swapping W_Q
    and W_K transposes the scores (token i now scores j as j scored i), and the loss jumps
    where the pattern needs the roles apart: "attend to the previous token" turns into "the
    next token", and "retrieve the value" loses its reads. "Attend to yourself" and "everyone
    attends to NLP" learn a W_Q W_K^T that is symmetric, or nearly: swapping changes nothing
    there, even after training (seeds 0 to 9), as with Q = K.

    Parameters
    ----------
    run : TrainingRun
    step : int
        0 to ``run.steps``, or negative from the end (-1, the last).
    roles : two of "W_Q", "W_K", "W_V"
        W_V can take part only when it has W_Q's shape (d_v = 2).

    Returns
    -------
    float
        The loss with the two swapped (compare ``run.loss[step]``).

    Raises
    ------
    ValueError
        If the step is out of the run, or the roles are not two different ones of W_Q, W_K,
        W_V of the same shape.

    Examples
    --------
    >>> run = train("attend to the previous token", seed=0, steps=300)
    >>> bool(swapped_loss(run, 0) - run.loss[0] < 0.1 < 1 < swapped_loss(run, -1) - run.loss[-1])
    True
    """
    k = _step_index(run, step)
    if (not isinstance(roles, (tuple, list)) or len(roles) != 2 or roles[0] == roles[1]
            or not all(isinstance(r, str) and r in ("W_Q", "W_K", "W_V") for r in roles)):
        raise ValueError(f"roles must be two different ones of 'W_Q', 'W_K' and 'W_V', got {roles!r}")
    W = {name: getattr(run, name)[k] for name in ("W_Q", "W_K", "W_V")}
    a, b = roles
    if W[a].shape != W[b].shape:
        raise ValueError(f"{a} {W[a].shape} and {b} {W[b].shape} cannot be swapped: their shapes differ")
    W[a], W[b] = W[b], W[a]
    W_O = None if run.W_O is None else run.W_O[k]
    return float(_evaluate(_run_problem(run), W["W_Q"], W["W_K"], W["W_V"], W_O)[0])


@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class Learned:
    """What each head's projections do at one step of a run (:func:`learned`): data for a page's sentences.

    Attributes
    ----------
    step : int
    loss, swapped_loss : float
        The loss, and the loss with W_Q and W_K swapped (:func:`swapped_loss`).
    score_matrix : (H, 2, 2) float64
        M = W_Q W_K^T s / T: head h's score of token i for token j is ``x_i M_h x_j^T``.
    rotation_deg : (H,) float64
        The angle of the scaled rotation closest to M (row-vector convention, counter-clockwise
        positive): about -45 for "attend to the previous token".
    rotation_share : (H,) float64
        How much of M that rotation is, from 0 to 1 (``|rotation part|^2 / |M|^2``, Frobenius);
        1 when M is a scaled rotation, so ``rotation_deg`` describes it fully.
    query_directions : (H, n, 2) float64
        ``x_i M``: what token i looks for, compared with the embeddings by a dot product.
    turn_deg : (H, n) float64
        The signed angle from x_i to ``x_i M``, in (-180, 180]; NaN where either is 0.
    attends_to : (H, n) int
        The token each head's row i weighs most.
    top_weight : (H, n) float64
        That weight.
    values : (H, n, d_v) float64
        Each head's values X W_V.
    """

    step: int
    loss: float
    swapped_loss: float
    score_matrix: np.ndarray
    rotation_deg: np.ndarray
    rotation_share: np.ndarray
    query_directions: np.ndarray
    turn_deg: np.ndarray
    attends_to: np.ndarray
    top_weight: np.ndarray
    values: np.ndarray


def learned(run: TrainingRun, step: int = -1) -> Learned:
    """What each head's W_Q, W_K and W_V do at one step: directions, angles and the tokens attended.

    Parameters
    ----------
    run : TrainingRun
    step : int
        0 to ``run.steps``, or negative from the end (-1, the last).

    Returns
    -------
    Learned
        Per head: M = W_Q W_K^T s / T and its closest rotation, each query's direction and
        turn, the token it attends to most, and the values.

    Raises
    ------
    ValueError
        If the step is out of the run.

    Notes
    -----
    ``q_i . k_j = x_i W_Q (x_j W_K)^T = x_i (W_Q W_K^T) x_j^T``, so one matrix M says what every
    query looks for: token i's query points along ``x_i M`` among the embeddings. The scaled
    rotation closest to M is ``a I + b J`` with ``a = (M_00 + M_11) / 2``, ``b = (M_01 - M_10) / 2``
    and J the quarter turn: its angle is ``atan2(b, a)``.

    Examples
    --------
    >>> run = train("attend to the previous token", seed=0, steps=300)
    >>> what = learned(run)
    >>> what.attends_to.tolist(), bool(-60 < what.rotation_deg[0] < -30)
    ([[0, 0, 1, 2, 3]], True)
    """
    k = _step_index(run, step)
    X = run.task.X
    M = run.factor * (run.W_Q[k] @ np.swapaxes(run.W_K[k], -1, -2))  # (H, 2, 2)
    a = (M[:, 0, 0] + M[:, 1, 1]) / 2
    b = (M[:, 0, 1] - M[:, 1, 0]) / 2
    norm2 = np.add.reduce(M * M, axis=(1, 2))
    share = np.divide(2 * (a * a + b * b), norm2, out=np.zeros_like(norm2), where=norm2 > 0)
    U = X @ M  # (H, n, 2)
    cross = X[:, 0] * U[..., 1] - X[:, 1] * U[..., 0]
    dot = np.add.reduce(X * U, axis=-1)
    zero = (np.hypot(*X.T) == 0) | (np.hypot(U[..., 0], U[..., 1]) == 0)
    turn = np.where(zero, np.nan, np.degrees(np.arctan2(cross, dot)))
    turn = np.where(turn == -180.0, 180.0, turn)
    weights = run.head_weights[k]
    return Learned(
        step=k, loss=float(run.loss[k]), swapped_loss=swapped_loss(run, k), score_matrix=_read_only(M),
        rotation_deg=_read_only(np.degrees(np.arctan2(b, a))), rotation_share=_read_only(share),
        query_directions=_read_only(U), turn_deg=_read_only(turn),
        attends_to=_read_only(weights.argmax(axis=-1)), top_weight=_read_only(weights.max(axis=-1)),
        values=_read_only(X @ run.W_V[k]),
    )
