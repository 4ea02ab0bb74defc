"""What a training run may be asked: the tasks (a target on one sentence), the presets, and the bounds
of every argument ``train`` and ``loss_and_gradients`` take, each checked with a message naming it.

The presets' table and why one head can learn each: the package's docstring (``core/training/__init__.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from core.attention import _as_finite_matrix
from core.checks import is_real, is_whole
from core.examples import I_LOVE_NLP, _frozen

D_MODEL = 2  # every embedding is a point of the plane
D_K = 2  # each head's query/key size
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
    if not is_whole(x):
        raise ValueError(f"{name} must be a whole number from {lo} to {hi}, got {x!r}")
    if not lo <= x <= hi:
        raise ValueError(f"{name} must be from {lo} to {hi}{why}, got {x!r}")
    return int(x)


def _number(name: str, x, lo: float, hi: float, why: str, lo_open: bool = False) -> float:
    interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
    if not is_real(x):
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
