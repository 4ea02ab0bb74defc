"""Training W_Q, W_K, W_V (and W_O) on a tiny attention task, in plain NumPy.

Module 2 of the course: "At initialisation they are random and the three roles are
indistinguishable; after training, each has learned its specialty." A task says what
attention should do on a short sentence with 2-D embeddings X : (n, 2) (d_model = 2,
d_k = 2 per head); :func:`train` starts W_Q, W_K, W_V from the same random
distribution and learns the task in one call, every step kept for a page to replay.

The model, head h of H (Vaswani et al., 2017, Eq. (1) and Sec. 3.2.2)::

    Q_h = X W_Q[h],  K_h = X W_K[h],  V_h = X W_V[h]
    scores_h = Q_h K_h^T * s / T        s = 1/sqrt(d_k) with scaling on, 1 with it off; T the temperature
    weights_h = softmax(scores_h)       row by row; a masked cell has weight 0
    output = Concat(weights_h V_h) W_O  (one head: weights_0 V_0, no W_O)

Two kinds of target, two losses, both averaged over the n rows:

* **weights** (an attention pattern P : (n, n), rows summing to 1): the cross-entropy
  ``-(1/n) sum_ij P_ij log Abar_ij`` where ``Abar = (1/H) sum_h weights_h``, the heads'
  average. It equals ``KL(P || Abar) + H(P)``: the KL divergence plus the target's own
  entropy H(P), a constant, so the loss can reach H(P) (0 for a one-hot target) and no
  lower (``TrainingRun.entropy``). Only W_Q and W_K are trained; W_V is drawn and kept.
  Why the average: when every head reads the same values and W_O averages the heads,
  the layer's output is ``Abar V``, so Abar is the attention the layer really pays. A
  mixture of heads meets rows no single head can: a head's row is a softmax of a linear
  function of the keys' embeddings, one peak on the circle of directions; two heads can
  put half a row on each of two opposite tokens (see :func:`loss_floor`).
* **outputs** (a target per token, Y : (n,) or (n, d_out)): the mean squared distance
  ``(1/n) sum_i |output_i - Y_i|^2``; W_Q, W_K, W_V and W_O are trained.

Gradients are written out by hand (no autograd): through the softmax row by row,
``dS_ij = A_ij sum_k A_ik (dA_ij - dA_ik)`` (:func:`_softmax_backward`), then ``dQ = dS K``,
``dK = dS^T Q`` (times s/T) and ``dW_Q = X^T dQ``, ``dW_K = X^T dK``, ``dW_V = X^T (A^T dO)``. They
match central finite differences to 1e-6 (``tests/test_core_training.py``). The softmax's Jacobian is
more often written ``A * (dA - rowsum(dA * A))``, the same sum with ``sum_k A_ik = 1`` taken out; but
where a row saturates (one weight within rounding of 1, as a low temperature makes them) that form takes
``dA_ij - rowsum`` of two nearly equal numbers and keeps none of the small difference the other weights
make, which is all the gradient there is; Adam then scales what is left up to a full step. Each
difference ``dA_ij - dA_ik`` is taken before it is weighted, so every entry keeps its relative precision.

The optimiser is Adam (Kingma & Ba, 2015; the one Vaswani et al. trained with, Sec. 5.3): it moves
each entry by about the learning rate a step, whatever the size of its gradient, so one rate learns
both losses. Plain gradient descent was tried on the four presets below, one and two heads, seeds 0 to
9, 500 steps: no single rate served them all. At 0.1 the attention targets ended as high as 0.63; at
0.3 the previous token with two heads ended at 0.198 and the outputs with two heads at 0.223; at 1
every attention target ended under 0.01, but the outputs' gradient, about 20 times larger, made them
oscillate (0.11 with one head, 3.1 with two). Adam at 0.05 ended every one under 0.003.

The presets (``TRAINING_PRESETS``), each learnable by one head. With the defaults
(``learning_rate=0.05``, one head, scaling on, T = 1, no mask) every seed from 0 to 9 brings
the loss under the goal by the step stated (``tests/test_core_training.py``):

============================ =========================== =========================================== ===== =====
preset                       sentence, X                 target                                      goal  step
============================ =========================== =========================================== ===== =====
attend to the previous token "attention is all you       token p attends to p - 1, the first to      0.01  300
                             need", x_p at 45° x p       itself
attend to yourself           "I love NLP", Section 6     each token attends to itself                0.01  200
everyone attends to NLP      "I love NLP", Section 6     every token attends to NLP                  0.01  150
retrieve the value           "I love NLP", Section 6     outputs 2, 6, 4 (Section 6's values)        0.05  400
============================ =========================== =========================================== ===== =====

Section 6's embeddings are x_I = (1, 0), x_love = (0, 1), x_NLP = (1, 1). Why one head can learn
each: its scores are ``x_i M x_j^T`` with M = W_Q W_K^T s / T, and with d_k = 2 every 2 x 2 matrix
M is reachable (W_Q = M T / s, W_K = I), so a target is learnable when some M puts each row's
target on top:

* previous token: each embedding is its position p on a half circle, x_p = (cos 45°p, sin 45°p),
  as the sinusoidal positional encodings (Vaswani et al., 2017, Sec. 3.5) let a linear map
  reach a fixed offset: the rotation by -45° turns x_p onto x_{p-1}, and M = c R(-45°) points
  every query at the previous token. The five tokens span 180°, not a whole circle, so the
  first token's turned query (at -45°) lies nearest to itself; on a whole circle it would
  reach the last token. With "I love NLP"'s embeddings one head cannot learn it:
  x_NLP = x_I + x_love makes NLP's scores the sum of I's and love's (:func:`loss_floor`: log 2).
* yourself: M = [[2, -1], [-1, 2]] gives each token's own key the top score, by 1.
* everyone attends to NLP: every embedding lies in the quadrant x, y >= 0, so
  M = c (1, 1)^T (1, 1) gives every query the direction (1, 1), along which x_NLP is the longest.
* retrieve the value: no W_V gives the values 2, 6, 4 (v_NLP = v_I + v_love, see
  :func:`core.projections.linear_values_reachable`), but an output is a weighted average of
  values, so the values need only reach from 2 to 6: W_V and the attention learn together
  which token each output reads (seed 0: values 4, 2, 6; I reads love's 2, love reads NLP's 6,
  NLP mixes them into 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from core.attention import _as_finite_matrix
from core.examples import I_LOVE_NLP, _frozen

__all__ = ["INIT_STD", "MAX_HEADS", "MAX_LEARNING_RATE", "MAX_STEPS", "TRAINING_PRESETS", "Gradients", "Learned",
           "LossFloor", "RowConflict", "TrainingRun", "TrainingTask", "learned", "loss_and_gradients", "loss_floor",
           "loss_floor_reason", "outputs_task", "swapped_loss", "train", "weights_task"]

ROLES = ("W_Q", "W_K", "W_V", "W_O")
D_MODEL = 2  # every embedding is a point of the plane
D_K = 2  # each head's query/key size
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
#: As many heads as the Heads tab shows.
MAX_HEADS = 4
MIN_TOKENS, MAX_TOKENS = 2, 8
#: Temperatures from a near one-hot softmax (scores 100 times the dot products) to a near uniform one.
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0
#: Embeddings and output targets within ±100: some 40 times the page's plane and 10 times the course's
#: largest value, and far from where 2,000 steps could overflow float64.
MAX_ABS_ENTRY = 100.0
#: A non-zero embedding entry is at least this large, so that the ratio of two embeddings
#: (:func:`loss_floor_reason`) and their squared lengths stay far inside float64's range.
MIN_ABS_ENTRY = 1e-100
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8  # Kingma & Ba (2015), Algorithm 1's defaults
#: Two target rows agree (:func:`loss_floor_reason`) when they differ by no more than this, rounding.
_TOL = 1e-9


# --- tasks ---------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class TrainingTask:
    """What attention should learn on one sentence, read-only.

    Attributes
    ----------
    name : str
    tokens : tuple of n str
    X : (n, 2) float64
        One embedding per token.
    kind : {"weights", "outputs"}
        What the target constrains: the attention weights, or the outputs.
    target : (n, n) float64 for "weights", (n,) or (n, d_out) float64 for "outputs"
        Weights: each row non-negative and summing to 1 (row i: how much token i should
        attend to each token). Outputs: token i's output.
    goal_loss, goal_steps : float and int, or None
        A preset's promise: with the defaults every seed from 0 to 9 brings the loss under
        ``goal_loss`` by step ``goal_steps``. None for a caller's own target.
    note : str
        The sentence, what the target asks and why one head can learn it.
    """

    name: str
    tokens: tuple[str, ...]
    X: np.ndarray
    kind: str
    target: np.ndarray
    goal_loss: float | None = None
    goal_steps: int | None = None
    note: str = ""

    @property
    def entropy(self) -> float:
        """The lowest loss the target allows: the mean entropy of its rows (nats) for "weights", 0 for "outputs"."""
        if self.kind != "weights":
            return 0.0
        P = self.target
        return max(0.0, float(-np.sum(P[P > 0] * np.log(P[P > 0])) / P.shape[0]))  # not -0.0


def _sentence(X, tokens, n_hint: int | None) -> tuple[np.ndarray, tuple[str, ...]]:
    if X is None:
        if n_hint is not None and n_hint != I_LOVE_NLP.keys.shape[0]:
            raise ValueError(f"a target for {n_hint} tokens needs its sentence: give X, one 2-D embedding per token "
                             f"(without X the sentence is \"I love NLP\", 3 tokens)")
        X = I_LOVE_NLP.keys
        tokens = I_LOVE_NLP.tokens if tokens is None else tokens
    X = _as_finite_matrix("X", X, ndim=(2,))
    n = X.shape[0]
    if X.shape[1] != D_MODEL:
        raise ValueError(f"X must have 2 columns (d_model = 2: each embedding is a point of the plane), "
                         f"got shape {X.shape}")
    if not MIN_TOKENS <= n <= MAX_TOKENS:
        raise ValueError(f"X must have from {MIN_TOKENS} to {MAX_TOKENS} rows (one per token), got {n}")
    size = np.abs(X)
    bad = (size > MAX_ABS_ENTRY) | ((size > 0) & (size < MIN_ABS_ENTRY))
    if bad.any():
        raise ValueError(f"X must have entries that are 0 or from {MIN_ABS_ENTRY:g} to {MAX_ABS_ENTRY:g} in size, "
                         f"got {float(X.flat[np.argmax(bad)]):g}")
    if tokens is None:
        tokens = tuple(f"t{i}" for i in range(1, n + 1))
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a sequence of strings, one per row of X")
    tokens = tuple(tokens)
    if len(tokens) != n:
        raise ValueError(f"tokens must name the n = {n} rows of X, got {len(tokens)}")
    return _frozen(X), tokens


def weights_task(target, X=None, tokens=None, *, name: str = "your own pattern") -> TrainingTask:
    """A task on the attention weights: paint your own pattern.

    Parameters
    ----------
    target : (n, n) array_like of non-negative finite numbers
        Row i: how much token i should attend to each token, in any units; each row is
        divided by its sum.
    X : (n, 2) array_like, optional
        The sentence's embeddings, 2 to 8 tokens, each entry 0 or from 1e-100 to 100 in size;
        default "I love NLP"'s Section 6 embeddings (then n must be 3).
    tokens : sequence of n str, optional
        Default "I", "love", "NLP" with the default X, else "t1", "t2", ...
    name : str

    Returns
    -------
    TrainingTask
        ``kind="weights"``, ``target`` with rows summing to 1.

    Raises
    ------
    ValueError
        If the target is not square with one row per token, has a NaN, an infinite or a
        negative entry, or a row of zeros (a token must attend somewhere); or X or tokens
        are malformed (2 to 8 tokens, 2 columns).

    Examples
    --------
    >>> task = weights_task([[1, 0, 0], [1, 1, 0], [0, 2, 2]])
    >>> task.tokens, task.target.tolist()
    (('I', 'love', 'NLP'), [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    """
    P = _as_finite_matrix("target", target, ndim=(2,))
    X, tokens = _sentence(X, tokens, P.shape[0] if P.shape[0] == P.shape[1] else None)
    n = X.shape[0]
    if P.shape != (n, n):
        raise ValueError(f"target must be (n, n) = ({n}, {n}), one row and one column per token, got {P.shape}")
    if np.any(P < 0):
        i, j = np.argwhere(P < 0)[0]
        raise ValueError(f"target row {tokens[i]!r} has a negative weight on {tokens[j]!r}: weights are >= 0")
    # Dividing by the row's largest entry first keeps the sum finite for entries near 1e308.
    top = P.max(axis=1)
    for i in np.flatnonzero(top == 0):
        raise ValueError(f"target row {tokens[i]!r} is all zeros: every token must attend somewhere")
    P = P / top[:, None]
    P = P / P.sum(axis=1, keepdims=True)
    return TrainingTask(name=str(name), tokens=tokens, X=X, kind="weights", target=_frozen(P))


def outputs_task(targets, X=None, tokens=None, *, name: str = "your own outputs") -> TrainingTask:
    """A task on the outputs: each token's output should equal its target.

    Parameters
    ----------
    targets : (n,) or (n, d_out) array_like, d_out 1 or 2, entries within ±100
        Token i's output: a number (scalar values, as in Section 6) or a point of the plane.
    X, tokens, name
        As in :func:`weights_task`.

    Returns
    -------
    TrainingTask
        ``kind="outputs"``.

    Raises
    ------
    ValueError
        If the targets are not one per token, have NaN or infinite entries, more than 2
        columns or entries past ±100; or X or tokens are malformed.

    Examples
    --------
    >>> outputs_task([2, 6, 4]).target.tolist()
    [2.0, 6.0, 4.0]
    """
    Y = _as_finite_matrix("targets", targets, ndim=(1, 2))
    X, tokens = _sentence(X, tokens, Y.shape[0])
    n = X.shape[0]
    if Y.shape[0] != n or (Y.ndim == 2 and not 1 <= Y.shape[1] <= D_MODEL):
        raise ValueError(f"targets must be (n,) or (n, d_out) with n = {n} tokens and d_out 1 or 2, got {Y.shape}")
    if np.max(np.abs(Y)) > MAX_ABS_ENTRY:
        raise ValueError(f"targets must have entries within ±{MAX_ABS_ENTRY:g}, got {float(np.max(np.abs(Y))):g}")
    return TrainingTask(name=str(name), tokens=tokens, X=X, kind="outputs", target=_frozen(Y))


def _presets() -> MappingProxyType:
    r = math.sqrt(0.5)
    half_circle = [[1, 0], [r, r], [0, 1], [-r, r], [-1, 0]]  # position p at 45° x p, written exactly
    previous = weights_task(np.eye(5)[[0, 0, 1, 2, 3]], half_circle, ("attention", "is", "all", "you", "need"),
                            name="attend to the previous token")
    yourself = weights_task(np.eye(3), name="attend to yourself")
    nlp = weights_task([[0, 0, 1]] * 3, name="everyone attends to NLP")
    retrieve = outputs_task(I_LOVE_NLP.values, name="retrieve the value")
    goals = [
        (previous, 0.01, 300,
         "\"attention is all you need\", each embedding its position on a half circle, 45° apart. Each token "
         "should attend to the previous one, the first to itself. A rotation by -45° turns each position onto the "
         "one before; the first token's turned query lies nearest to itself."),
        (yourself, 0.01, 200,
         "\"I love NLP\" with Section 6's embeddings; each token should attend to itself. "
         "M = W_Q W_K^T = [[2, -1], [-1, 2]] gives each token's own key the top score."),
        (nlp, 0.01, 150,
         "\"I love NLP\"; every token should attend to NLP. Every embedding lies in the quadrant x, y >= 0, so one "
         "query direction, (1, 1), serves every token, and along it x_NLP is the longest."),
        (retrieve, 0.05, 400,
         "\"I love NLP\"; the outputs should be Section 6's values 2, 6 and 4. No W_V gives those values "
         "(x_NLP = x_I + x_love, so v_NLP = v_I + v_love), but an output is a weighted average, so the values need "
         "only reach from 2 to 6: W_V and the attention learn together which token each output reads."),
    ]
    return MappingProxyType({task.name: replace(task, goal_loss=goal, goal_steps=steps, note=note)
                             for task, goal, steps, note in goals})


#: The presets by name, in the order a page lists them (see the module's table).
TRAINING_PRESETS = _presets()


# --- arguments -----------------------------------------------------------------------------

def _integer(name: str, x, lo: int, hi: int, why: str = "") -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number from {lo} to {hi}, got {x!r}")
    if not lo <= x <= hi:
        raise ValueError(f"{name} must be from {lo} to {hi}{why}, got {x!r}")
    return int(x)


def _number(name: str, x, lo: float, hi: float, why: str, lo_open: bool = False) -> float:
    interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number in {interval}, got {x!r}")
    v = float(x)
    if not (math.isfinite(v) and (lo < v if lo_open else lo <= v) and v <= hi):
        raise ValueError(f"{name} must be a finite number in {interval}{why}, got {x!r}")
    return v


def _task(task) -> TrainingTask:
    if isinstance(task, TrainingTask):
        return task
    if isinstance(task, str):
        if task not in TRAINING_PRESETS:
            raise ValueError(f"no preset named {task!r}; the presets are {', '.join(map(repr, TRAINING_PRESETS))}")
        return TRAINING_PRESETS[task]
    return weights_task(task)


def _mask(mask, task: TrainingTask) -> np.ndarray:
    n = task.X.shape[0]
    if mask is None:
        return np.ones((n, n), dtype=bool)
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"mask must be None, \"causal\" or an (n, n) boolean array, got {mask!r}")
        m = np.tril(np.ones((n, n), dtype=bool))
    else:
        m = np.array(mask)
        if m.dtype != bool or m.shape != (n, n):
            raise ValueError(f"mask must be an ({n}, {n}) boolean array (True = may attend), got {m.dtype} {m.shape}")
        for i in np.flatnonzero(~m.any(axis=1)):
            raise ValueError(f"mask row {task.tokens[i]!r} allows no token: every token must attend somewhere")
    if task.kind == "weights":
        hidden = (task.target > 0) & ~m
        if hidden.any():
            i, j = np.argwhere(hidden)[0]
            raise ValueError(f"target row {task.tokens[i]!r} puts weight on {task.tokens[j]!r}, which the mask "
                             "hides from it: a masked cell's weight is always 0")
    return m


def _factor(scale, temperature) -> float:
    if not isinstance(scale, (bool, np.bool_)):
        raise ValueError(f"scale must be True or False, got {scale!r}")
    t = _number("temperature", temperature, MIN_TEMPERATURE, MAX_TEMPERATURE,
                ": below it the softmax is a one-hot from the start, above it uniform", lo_open=False)
    return (1.0 / math.sqrt(D_K) if scale else 1.0) / t


# --- forward pass and gradients ----------------------------------------------------------

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
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 32:
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


# --- what was learned, and the limits --------------------------------------------------------

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
