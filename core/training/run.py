"""One training run: W_Q, W_K, W_V (and W_O) from a seeded random start, learned by Adam on the model's
hand-written gradients (``core.training.model``), every step kept for a page to replay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.checks import is_whole
from core.training.model import _evaluate, _gradients, _Problem
from core.training.tasks import (
    D_K,
    D_MODEL,
    MAX_HEADS,
    TrainingTask,
    _factor,
    _integer,
    _mask,
    _number,
    _task,
)

ROLES = ("W_Q", "W_K", "W_V", "W_O")
#: Standard deviation of every entry of W_Q, W_K, W_V and W_O at the start. Small, so that the first
#: scores are close to 0 and every token attends almost evenly: swapping W_Q and W_K then barely
#: changes the loss, which is what "the roles are indistinguishable" means in numbers.
INIT_STD = 0.1
#: Adam moves each entry by about the learning rate a step (at most a few times it: :func:`adam_step_bound`); the
#: entries start near INIT_STD and a learned W has entries of a few units, so past 1 one step moves an entry as far
#: as all of training.
MAX_LEARNING_RATE = 1.0
#: A run keeps every step for the page to replay, so the bound on steps is the bound on what one request can
#: cost in memory and CPU (the largest run's CPU: see bench/RESULTS.md, "the largest run train accepts").
MAX_STEPS = 2000
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8  # Kingma & Ba (2015), Algorithm 1's defaults


def adam_step_bound(t: int) -> float:
    """The most one Adam update of :func:`train` can move an entry at step ``t`` (1, 2, ...), in learning rates.

    The update is ``lr_t m_t / sqrt(v_t)`` (eps aside), with ``lr_t = lr sqrt(1 - beta2**t) / (1 - beta1**t)``,
    ``m_t = (1 - beta1) sum_i beta1**(t-i) g_i`` and ``v_t = (1 - beta2) sum_i beta2**(t-i) g_i**2``. By
    Cauchy-Schwarz, ``|m_t| <= sqrt(v_t) (1 - beta1) / sqrt(1 - beta2) sqrt(sum_{k<t} (beta1**2 / beta2)**k)``,
    with equality for gradients that grow by ``beta2 / beta1`` a step; so the bound is

        sqrt(1 - beta2**t) / (1 - beta1**t) * (1 - beta1) / sqrt(1 - beta2) * sqrt((1 - r**t) / (1 - r)),

    ``r = beta1**2 / beta2``: 1 at t = 1, growing to ``(1 - beta1) / sqrt((1 - beta2) (1 - r))`` = 7.27.

    >>> [round(adam_step_bound(t), 2) for t in (1, 100, 1000, 2000)], round(adam_step_bound(10**9), 4)
    ([1.0, 2.24, 5.78, 6.76], 7.2703)
    """
    r = ADAM_BETA1 ** 2 / ADAM_BETA2
    return (math.sqrt(1.0 - ADAM_BETA2 ** t) / (1.0 - ADAM_BETA1 ** t) * (1.0 - ADAM_BETA1)
            / math.sqrt(1.0 - ADAM_BETA2) * math.sqrt((1.0 - r ** t) / (1.0 - r)))


# --- training --------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class TrainingRun:
    """Every step of one training run, read-only (:func:`train`).

    Index t runs from 0 (the random start) to ``steps`` (after the last update); the
    weights and loss at t are those of the projections at t.

    Attributes
    ----------
    task : TrainingTask
    seed, steps, heads : int
    learning_rate, temperature : float
    scale : bool
    mask : (n, n) bool
        True where token i may attend to token j.
    W_Q, W_K : (steps + 1, H, 2, 2) float64
    W_V : (steps + 1, H, 2, d_v) float64
        d_v = d_out for one head on an "outputs" task, else 2; not trained (the same at
        every step) for a "weights" task.
    W_O : (steps + 1, H * 2, d_out) float64, or None
        Only for an "outputs" task with H > 1.
    loss : (steps + 1,) float64
        Cross-entropy (weights) or mean squared distance (outputs); never below ``entropy``.
    entropy : float
        The lowest loss the target allows (``task.entropy``); ``loss - entropy`` is the KL
        divergence of a "weights" run.
    head_weights : (steps + 1, H, n, n) float64
        Each head's attention weights; masked cells are 0.
    weights : (steps + 1, n, n) float64
        The heads' average, the pattern a "weights" loss compares with the target.
    head_outputs : (steps + 1, H, n, d_v) float64
        Each head's ``weights_h @ (X W_V[h])``.
    outputs : (steps + 1, n) or (steps + 1, n, d_out) float64
        "outputs": what the loss compares with the target (the shape of the target per
        step). "weights": the heads' average output, (steps + 1, n, 2).
    """

    task: TrainingTask
    seed: int
    steps: int
    learning_rate: float
    scale: bool
    temperature: float
    heads: int
    mask: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray | None
    loss: np.ndarray
    entropy: float
    head_weights: np.ndarray
    weights: np.ndarray
    head_outputs: np.ndarray
    outputs: np.ndarray

    @property
    def factor(self) -> float:
        """s / T: what multiplies the dot products (s = 1/sqrt(d_k) with scaling on, else 1)."""
        return (1.0 / math.sqrt(D_K) if self.scale else 1.0) / self.temperature


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def train(task, *, seed: int, steps: int = 500, learning_rate: float = 0.05, scale: bool = True,
          temperature: float = 1.0, heads: int = 1, mask=None) -> TrainingRun:
    """Learn a task from a random start by Adam on the hand-written gradients; keep every step.

    Parameters
    ----------
    task : TrainingTask, str or (3, 3) array_like
        A task (:func:`weights_task`, :func:`outputs_task`), a preset's name
        (``TRAINING_PRESETS``), or a target pattern for "I love NLP".
    seed : int, 0 to 2**32 - 1
        Seed of the run's own ``numpy.random.default_rng``: W_Q, W_K, W_V (and W_O) are
        drawn from N(0, INIT_STD^2), the same distribution for every role.
    steps : int, 1 to 2000
        Updates; the run holds steps + 1 snapshots.
    learning_rate : float in (0, 1]
        Adam's step size, about how far each entry moves a step.
    scale : bool
        Scores Q K^T / sqrt(d_k) (True) or Q K^T.
    temperature : float in [0.01, 100]
        Scores divided by T as well.
    heads : int, 1 to 4
        Heads, each with its own W_Q, W_K, W_V (d_k = 2; d_v = 2, or d_out for one head on
        outputs). A "weights" loss compares the heads' average weights with the target;
        an "outputs" task with H > 1 learns W_O : (2H, d_out) as well.
    mask : None, "causal" or (n, n) array_like of bool
        True where token i may attend to token j; the target may put weight only there.

    Returns
    -------
    TrainingRun
        Projections, loss, weights and outputs at every step, all read-only.

    Raises
    ------
    ValueError
        With the argument's name and its allowed range: a seed that is not a whole number
        from 0 to 2**32 - 1; steps outside 1 to 2000; a learning rate that is not a finite
        number in (0, 1] (NaN, inf, 0, negative or 1e6); heads outside 1 to 4; a
        temperature outside [0.01, 100]; a scale that is not a bool; a mask of the wrong
        shape, with an empty row, or hiding a cell the target needs; or a malformed target
        (see :func:`weights_task`).

    Notes
    -----
    Adam (Kingma & Ba, 2015, Algorithm 1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8), the
    bias correction folded into the step size as in their Sec. 2. The update at step t moves an
    entry by at most :func:`adam_step_bound` (t) learning rates: 1 at the first step, growing with
    t towards (1 - beta1) / sqrt((1 - beta2) (1 - beta1**2 / beta2)) = 7.27 (their Sec. 2.1's
    (1 - beta1) / sqrt(1 - beta2) = 3.2 is the bound on one gradient's share of the step, not on
    the step). So 2,000 steps at the largest rate move an entry by at most about 10,600 in all,
    and every number stays far inside float64's range.

    Examples
    --------
    >>> run = train("everyone attends to NLP", seed=0, steps=100)
    >>> run.W_Q.shape, run.weights.shape, run.loss.shape
    ((101, 1, 2, 2), (101, 3, 3), (101,))
    >>> bool(run.loss[-1] < 0.1 < run.loss[0]), run.weights[-1].argmax(axis=1).tolist()
    (True, [2, 2, 2])
    """
    task = _task(task)
    if not is_whole(seed) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed must be a whole number from 0 to 2**32 - 1, got {seed!r}")
    steps = _integer("steps", steps, 1, MAX_STEPS, " (every step is kept for the page to replay)")
    lr = _number("learning_rate", learning_rate, 0.0, MAX_LEARNING_RATE,
                 ": Adam moves each entry of W by about this much a step, and a learned W has entries of a few units",
                 lo_open=True)
    heads = _integer("heads", heads, 1, MAX_HEADS)
    c = _factor(scale, temperature)
    m = _mask(mask, task)

    outputs_kind = task.kind == "outputs"
    d_out = (1 if task.target.ndim == 1 else task.target.shape[1]) if outputs_kind else D_MODEL
    d_v = d_out if outputs_kind and heads == 1 else D_MODEL
    p = _Problem(task, m, c, heads, d_v, has_W_O=outputs_kind and heads > 1)

    rng = np.random.default_rng(seed)
    shapes = {"W_Q": (heads, D_MODEL, D_K), "W_K": (heads, D_MODEL, D_K), "W_V": (heads, D_MODEL, d_v)}
    if p.has_W_O:
        shapes["W_O"] = (heads * d_v, d_out)
    start = {name: rng.normal(0.0, INIT_STD, size=shape) for name, shape in shapes.items()}
    trained = [name for name in shapes if outputs_kind or name != "W_V"]  # a "weights" loss ignores W_V

    # Every trained entry in one flat row per step, so that Adam's update is a few whole-array operations.
    edges = np.cumsum([0, *(math.prod(shapes[name]) for name in trained)]).tolist()
    cuts = {name: (a, b) for name, a, b in zip(trained, edges[:-1], edges[1:], strict=True)}
    history = np.empty((steps + 1, edges[-1]))
    history[0] = np.concatenate([start[name].ravel() for name in trained])
    first_moment = np.zeros(edges[-1])
    second_moment = np.zeros(edges[-1])
    t = np.arange(1, steps + 1)
    step_size = lr * np.sqrt(1.0 - ADAM_BETA2 ** t) / (1.0 - ADAM_BETA1 ** t)
    eps = ADAM_EPS * np.sqrt(1.0 - ADAM_BETA2 ** t)

    def views(rows):
        """Each role's projections in ``rows`` (..., entries) as views; W_V as drawn when it is not trained."""
        lead = rows.shape[:-1]
        out = []
        for name in ROLES:
            if name in cuts:
                out.append(rows[..., cuts[name][0]:cuts[name][1]].reshape(*lead, *shapes[name]))
            elif name in start:
                out.append(np.broadcast_to(start[name], (*lead, *shapes[name])) if lead else start[name])
            else:
                out.append(None)
        return out

    every_step = views(history)
    gradient = np.empty(edges[-1])
    into = [None if W is None or name not in cuts else W[0]
            for name, W in zip(ROLES, views(gradient[None]), strict=True)]
    for k in range(steps):
        _gradients(p, *(None if W is None else W[k] for W in every_step), out=into)
        first_moment *= ADAM_BETA1
        first_moment += (1.0 - ADAM_BETA1) * gradient
        second_moment *= ADAM_BETA2
        second_moment += (1.0 - ADAM_BETA2) * (gradient * gradient)
        np.subtract(history[k], step_size[k] * first_moment / (np.sqrt(second_moment) + eps[k]), out=history[k + 1])
    _read_only(history)
    W_Q, W_K, W_V, W_O = views(history)  # made anew: views made before the history was read-only stay writable
    # The loss, weights and outputs of every step in one pass over the whole history.
    loss, head_weights, head_outputs, outputs = _evaluate(p, W_Q, W_K, W_V, W_O)
    if not (np.all(np.isfinite(history)) and np.all(np.isfinite(loss))):  # pragma: no cover - see Notes
        raise ValueError("training left float64's range; use a smaller learning rate")
    if outputs_kind and task.target.ndim == 1:
        outputs = outputs[..., 0]
    return TrainingRun(
        task=task, seed=int(seed), steps=steps, learning_rate=lr, scale=bool(scale), temperature=float(temperature),
        heads=heads, mask=_read_only(m), W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O,
        loss=_read_only(loss), entropy=task.entropy, head_weights=_read_only(head_weights),
        weights=_read_only(np.add.reduce(head_weights, axis=1) / heads), head_outputs=_read_only(head_outputs),
        outputs=_read_only(np.ascontiguousarray(outputs)),
    )
