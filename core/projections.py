"""Learned projections: queries, keys and values as linear maps of the token embeddings.

Self-attention takes one embedding x_i per token, the rows of X : (n, d_model),
and makes each token's query, key and value with three matrices (Vaswani et al.,
2017, Sec. 3.2.2, one head)::

    Q = X W_Q,   K = X W_K,   V = X W_V,   output = Attention(Q, K, V)

The roles differ only through W_Q, W_K and W_V. Setting all three to the identity
(Q = K = V = X) computes, but removes what is learned: the scores X X^T / sqrt(d_k)
are then symmetric, so token i attends to j exactly as much, before the softmax,
as j to i.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from core.attention import AttentionResult, _as_finite_matrix, scaled_dot_product_attention
from core.checks import is_whole
from core.examples import I_LOVE_NLP, _frozen
from core.report import fmt_short

__all__ = ["IDENTITY", "PROJECTION_PRESETS", "SECTION_6", "SECTION_6_2D", "ProjectionPreset", "Projections",
           "SelfAttention", "ValueReachability", "linear_values_reachable", "project", "random_projections",
           "self_attention"]


class Projections(NamedTuple):
    """The queries, keys and values of n tokens.

    Attributes
    ----------
    Q : (n, d_k) float64
    K : (n, d_k) float64
    V : (n, d_v) float64, or (n,) for scalar values (a 1-D W_V)
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray


@dataclass(frozen=True)
class SelfAttention:
    """Self-attention of one head: its projections and every step of its attention.

    Attributes
    ----------
    projections : Projections
        Q, K, V = X W_Q, X W_K, X W_V.
    attention : AttentionResult
        ``scaled_dot_product_attention(Q, K, V, ...)``: weights (n, n), output (n, d_v) or (n,).
    """

    projections: Projections
    attention: AttentionResult


def _product(name: str, X: np.ndarray, W: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        P = X @ W  # (n, d_model) x (d_model[, d]) -> (n[, d])
    if not np.all(np.isfinite(P)):
        raise ValueError(f"X and {name}: their products overflow float64; use smaller entries")
    return P


def project(X, W_Q, W_K, W_V) -> Projections:
    """Queries, keys and values of the tokens: Q = X W_Q, K = X W_K, V = X W_V.

    Parameters
    ----------
    X : (n, d_model) array_like
        One embedding per token, one token per row.
    W_Q, W_K : (d_model, d_k) array_like
        Query and key projections; the same shape, so each q can be compared with each k.
    W_V : (d_model, d_v) or (d_model,) array_like
        Value projection. 2-D gives values V : (n, d_v), (n, 1) when d_v = 1;
        1-D gives scalar values V : (n,), one number per token as in the course's Section 6.

    Returns
    -------
    Projections
        ``Q : (n, d_k)``, ``K : (n, d_k)``, ``V : (n, d_v)`` or ``(n,)``, float64.

    Raises
    ------
    ValueError
        Naming the argument at fault: a wrong number of dimensions, a projection
        whose rows are not d_model, W_K shaped unlike W_Q, an empty array, NaN or
        infinite entries, or products too large for float64.

    Notes
    -----
    Vaswani et al. (2017), Sec. 3.2.2: each head projects with its own
    W_i^Q, W_i^K, W_i^V; this is one head, in self-attention (queries, keys and
    values all from the same X).

    Examples
    --------
    >>> X = [[1, 0, 0], [0, 1, 0], [1, 1, 1]]
    >>> W = [[1, 0], [0, 1], [0, 0]]
    >>> p = project(X, W, W, [2, 6, -4])
    >>> p.Q.tolist(), p.V.tolist()
    ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [2.0, 6.0, 4.0])
    """
    X = _as_finite_matrix("X", X, ndim=(2,))
    W_Q = _as_finite_matrix("W_Q", W_Q, ndim=(2,))
    W_K = _as_finite_matrix("W_K", W_K, ndim=(2,))
    W_V = _as_finite_matrix("W_V", W_V, ndim=(1, 2))
    d_model = X.shape[1]
    if W_Q.shape[0] != d_model:
        raise ValueError(f"W_Q must have d_model = {d_model} rows (X's columns), got shape {W_Q.shape}")
    if W_K.shape != W_Q.shape:
        raise ValueError(f"W_K must have the shape (d_model, d_k) = {W_Q.shape} of W_Q, got {W_K.shape}")
    if W_V.shape[0] != d_model:
        raise ValueError(f"W_V must have d_model = {d_model} rows (X's columns), got shape {W_V.shape}")
    return Projections(Q=_product("W_Q", X, W_Q), K=_product("W_K", X, W_K), V=_product("W_V", X, W_V))


def self_attention(X, W_Q, W_K, W_V, attn_mask=None, *, scale: float | None = None,
                   temperature: float | None = None) -> SelfAttention:
    """Self-attention with learned projections: Attention(X W_Q, X W_K, X W_V), every step kept.

    Parameters
    ----------
    X, W_Q, W_K, W_V
        As in :func:`project`: X : (n, d_model), W_Q, W_K : (d_model, d_k),
        W_V : (d_model, d_v) or (d_model,).
    attn_mask : array_like, broadcastable to (n, n), optional
        As in :func:`core.attention.scaled_dot_product_attention`: boolean, True
        where token i may attend to token j (every row must allow one), or
        floating, added to the scores.
    scale, temperature : float > 0, optional, keyword-only
        As in :func:`core.attention.scaled_dot_product_attention`: multiply the dot
        products by ``scale`` (None: 1/sqrt(d_k); 1.0: unscaled) or divide them by T.

    Returns
    -------
    SelfAttention
        ``projections`` (Q, K, V) and ``attention`` (weights (n, n), output
        (n, d_v) or (n,)).

    Raises
    ------
    ValueError
        Any error of :func:`project` or of the attention core, naming the argument.
    TypeError
        As the attention core raises it (a ``scale`` that is not a number, an
        ``attn_mask`` neither boolean nor floating).

    Notes
    -----
    Vaswani et al. (2017), Eq. (1) on the projections of Sec. 3.2.2 (one head).

    Examples
    --------
    Section 6's numbers from embeddings with a third dimension (see :data:`SECTION_6`):

    >>> p = SECTION_6
    >>> r = self_attention(p.X, p.W_Q, p.W_K, p.W_V)
    >>> r.attention.weights[1].round(4).tolist(), round(float(r.attention.output[1]), 4)
    ([0.1978, 0.4011, 0.4011], 4.4067)
    """
    p = project(X, W_Q, W_K, W_V)
    return SelfAttention(projections=p, attention=scaled_dot_product_attention(
        p.Q, p.K, p.V, attn_mask, scale=scale, temperature=temperature))


# --- presets -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProjectionPreset:
    """A sentence's embeddings and projections, read-only.

    Attributes
    ----------
    tokens : tuple of str, length n
    X : (n, d_model) float64
    W_Q, W_K : (d_model, d_k) float64
    W_V : (d_model, d_v) or (d_model,) float64
    note : str
        What the preset shows, in a sentence or two for the page.
    """

    tokens: tuple[str, ...]
    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    note: str


#: Q = K = V = X for "I love NLP": no projection at all.
IDENTITY = ProjectionPreset(
    tokens=I_LOVE_NLP.tokens, X=I_LOVE_NLP.keys, W_Q=_frozen(np.eye(2)), W_K=_frozen(np.eye(2)),
    W_V=_frozen(np.eye(2)),
    note="Q = K = V = X: the identity for every projection. The scores X Xᵀ / √d_k are symmetric: "
         "I scores love exactly as love scores I; the weights are not, since each row has its own softmax sum "
         "(I to NLP 0.4011, NLP to I 0.2483). Learned W_Q and W_K break the symmetry of the scores.",
)

#: Section 6's queries, keys and values from embeddings with a third dimension.
SECTION_6 = ProjectionPreset(
    tokens=I_LOVE_NLP.tokens,
    X=_frozen([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]),
    W_Q=_frozen([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    W_K=_frozen([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    W_V=_frozen([2.0, 6.0, -4.0]),
    note="Section 6's numbers: queries and keys (1, 0), (0, 1), (1, 1), q_love = (0, 1), values 2, 6, 4. "
         "With two embedding dimensions x_NLP = x_I + x_love, and a linear W_V would force v_NLP = 2 + 6 = 8; "
         "the third dimension lets v_NLP be 4.",
)

#: Section 6's queries and keys with two embedding dimensions and 2-D values (d_v = 2): the values' first
#: coordinates can only be 2, 6 and 8 = 2 + 6, never the course's 2, 6, 4 (see :func:`linear_values_reachable`).
SECTION_6_2D = ProjectionPreset(
    tokens=I_LOVE_NLP.tokens, X=I_LOVE_NLP.keys, W_Q=_frozen(np.eye(2)), W_K=_frozen(np.eye(2)),
    W_V=_frozen([[2.0, 0.0], [6.0, 0.0]]),
    note="Section 6's queries and keys: q_love = (0, 1), keys (1, 0), (0, 1), (1, 1). The values' first "
         "coordinates are 2, 6 and 8, not the course's 2, 6, 4: x_NLP = x_I + x_love, so every linear W_V gives "
         "v_NLP = v_I + v_love = 2 + 6. A third embedding dimension (SECTION_6) lets v_NLP be 4.",
)

#: The named presets, in the order a page lists them; see also :func:`random_projections`.
PROJECTION_PRESETS = MappingProxyType({"Q = K = V = X": IDENTITY, "Section 6: learned projections": SECTION_6})


def _positive_int(name: str, x) -> int:
    if not is_whole(x) or x < 1:
        raise ValueError(f"{name} must be a positive integer, got {x!r}")
    return int(x)


def random_projections(seed: int, d_k: int = 2, d_v: int = 1) -> ProjectionPreset:
    """Random W_Q, W_K, W_V for "I love NLP" (X : (3, 2)), as at the start of training.

    Parameters
    ----------
    seed : int >= 0
        Seed of a NumPy ``Generator`` of its own (``numpy.random.default_rng(seed)``):
        the same arguments always give the same projections, and no global random
        state is touched.
    d_k, d_v : int >= 1
        Sizes of each query/key and each value.

    Returns
    -------
    ProjectionPreset
        X : (3, 2), W_Q and W_K : (2, d_k), W_V : (2, d_v), entries drawn from
        N(0, 1/d_model), the usual initialisation's variance, so that each
        projected entry has about the embeddings' own spread.

    Raises
    ------
    ValueError
        If the seed is negative or not an integer, or d_k or d_v is not a positive integer.

    Examples
    --------
    >>> a, b = random_projections(0), random_projections(0)
    >>> bool((a.W_Q == b.W_Q).all()), a.W_Q.shape, a.W_V.shape
    (True, (2, 2), (2, 1))
    """
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    d_k, d_v = _positive_int("d_k", d_k), _positive_int("d_v", d_v)
    X = I_LOVE_NLP.keys
    d_model = X.shape[1]
    rng = np.random.default_rng(seed)
    std = 1 / np.sqrt(d_model)
    W_Q, W_K, W_V = (_frozen(rng.normal(0.0, std, size=(d_model, d))) for d in (d_k, d_k, d_v))
    return ProjectionPreset(tokens=I_LOVE_NLP.tokens, X=X, W_Q=W_Q, W_K=W_K, W_V=W_V,
                            note=f"Random projections (seed {seed}): before training, query, key and value "
                                 "are three arbitrary views of each token.")


# --- which values a linear W_V can give --------------------------------------------------------

@dataclass(frozen=True)
class ValueReachability:
    """Whether scalar values v = X W_V can equal given targets for some W_V : (d_model,).

    Attributes
    ----------
    reachable : bool
    W_V : (d_model,) float64
        A W_V that gives the targets when reachable (one of many when X's columns
        are dependent); otherwise the least-squares closest.
    closest : (n,) float64
        ``X @ W_V``: the targets themselves when reachable.
    dependency : (n,) float64 or None
        When not reachable: coefficients c with c_j = -1 for one token j and
        ``sum_i c_i x_i = 0``, i.e. ``x_j = sum_{i != j} c_i x_i``; every linear W_V
        then gives ``v_j = sum_{i != j} c_i v_i``, which the targets break.
    reason : str
        One or two sentences for the page, with the tokens' names.
    """

    reachable: bool
    W_V: np.ndarray
    closest: np.ndarray
    dependency: np.ndarray | None
    reason: str


def _combination(coefficients, names) -> str:
    # "x_I + x_love", "2 + 6", "0.5 x_I - x_love": terms with a coefficient of ~0 are left out
    terms = []
    for c, name in zip(coefficients, names, strict=True):
        if abs(c) < 1e-9:
            continue
        mag = fmt_short(abs(c))
        term = mag if not name else name if mag == "1" else f"{mag} {name}"
        terms.append((" - " if c < 0 else " + ") + term if terms else ("-" if c < 0 else "") + term)
    return "".join(terms) or "0"


def linear_values_reachable(X, values, tokens=None) -> ValueReachability:
    """Can a linear value projection W_V give these scalar values? If not, why not.

    With d_model = 2 and three tokens, the embeddings are linearly dependent: for
    Section 6's X, x_NLP = x_I + x_love, so any W_V : (2,) gives
    v_NLP = v_I + v_love. The course's values 2, 6, 4 break that (2 + 6 = 8, not 4),
    so no W_V reaches them; a third embedding dimension (see :data:`SECTION_6`) does.

    Parameters
    ----------
    X : (n, d_model) array_like
        The tokens' embeddings.
    values : (n,) array_like
        The scalar values wanted, one per token.
    tokens : sequence of n str, optional
        Names for the reason's text; default "t1", "t2", ...

    Returns
    -------
    ValueReachability
        ``reachable``, a ``W_V`` (exact or closest), and the ``reason`` in words.

    Raises
    ------
    ValueError
        If X is not a finite 2-D array, ``values`` not a finite 1-D array with one
        value per row of X, or ``tokens`` of another length.

    Notes
    -----
    v = X W_V is reachable exactly when v lies in the column space of X. When it
    does not, the residual r = v - X W_V of the least-squares W_V is orthogonal to
    every column of X (r^T X = 0) while r^T v = |r|^2 > 0: r is a dependency
    among the embeddings that the values do not respect.

    Examples
    --------
    >>> r = linear_values_reachable([[1, 0], [0, 1], [1, 1]], [2, 6, 4], ["I", "love", "NLP"])
    >>> r.reachable, r.dependency.round(6).tolist()
    (False, [1.0, 1.0, -1.0])
    >>> print(r.reason)  # doctest: +NORMALIZE_WHITESPACE
    Not reachable with a linear W_V: x_NLP = x_I + x_love, so every W_V gives v_NLP = v_I + v_love;
    the values need 2 + 6 = 8 there, not 4. Linearly independent embeddings (d_model ≥ 3 here) make
    any values reachable.
    """
    X = _as_finite_matrix("X", X, ndim=(2,))
    v = _as_finite_matrix("values", values, ndim=(1,))
    n = X.shape[0]
    if v.shape[0] != n:
        raise ValueError(f"values must have one entry per row of X (n = {n}), got shape {v.shape}")
    names = [f"t{i}" for i in range(1, n + 1)] if tokens is None else [str(t) for t in tokens]
    if len(names) != n:
        raise ValueError(f"tokens must name the n = {n} rows of X, got {len(names)}")

    W_V, *_ = np.linalg.lstsq(X, v, rcond=None)
    closest = X @ W_V  # (n, d_model) x (d_model,) -> (n,)
    r = v - closest
    size = max(1.0, float(np.max(np.abs(v))), float(np.max(np.abs(X))))
    if np.max(np.abs(r)) <= 1e-9 * size:
        many = " (one of many: X's columns are dependent)" if np.linalg.matrix_rank(X) < X.shape[1] else ""
        reason = (f"Reachable: W_V = ({', '.join(fmt_short(w) for w in W_V)}){many} gives the values "
                  f"{', '.join(fmt_short(x) for x in v)}.")
        return ValueReachability(True, W_V, v.copy(), None, reason)

    # r is orthogonal to X's columns: r^T X = 0 is a dependency among the rows x_i. Name it after the
    # token with the largest |r_j| (the last of near-ties, so "x_NLP = x_I + x_love", not "x_I = ...").
    mag = np.abs(r)
    j = int(np.flatnonzero(mag >= mag.max() * (1 - 1e-9))[-1])
    c = r / -r[j]
    others = [i for i in range(n) if i != j]
    x_side = _combination(c[others], [f"x_{names[i]}" for i in others])
    v_side = _combination(c[others], [f"v_{names[i]}" for i in others])
    products = c[others] * v[others]
    forced = fmt_short(float(products.sum()))
    terms = _combination(products, [""] * len(others))
    need = forced if terms in (forced, "0") else f"{terms} = {forced}"
    reason = (f"Not reachable with a linear W_V: x_{names[j]} = {x_side}, so every W_V gives "
              f"v_{names[j]} = {v_side}; the values need {need} there, "
              f"not {fmt_short(v[j])}. Linearly independent embeddings (d_model ≥ {n} here) make any "
              "values reachable.")
    return ValueReachability(False, W_V, closest, c, reason)
