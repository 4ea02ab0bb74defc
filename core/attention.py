"""Scaled dot-product attention, step by step, in plain NumPy.

The formula is Eq. (1) of Vaswani et al. (2017), "Attention Is All You Need"::

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Dividing by sqrt(d_k) keeps the scores at unit variance when the entries of q and
k are independent with unit variance (q.k is then a sum of d_k such products, with
variance d_k), so the softmax does not saturate into a one-hot as d_k grows.

Every intermediate the explorer shows is returned, not only the output, so the
views never redo any arithmetic of their own. Shapes use the paper's names:
n_q queries, n_k keys, d_k the query/key size, d_v the value size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["AttentionResult", "TemperatureSweep", "scaled_dot_product_attention", "softmax", "temperature_sweep"]


@dataclass(frozen=True)
class AttentionResult:
    """Every step of scaled dot-product attention for a batch of queries.

    Attributes
    ----------
    dots : (n_q, n_k) float64
        Raw dot products q_i . k_j.
    scores : (n_q, n_k) float64
        ``dots * scale``; ``-inf`` where the mask forbids attending.
    scale : float
        The factor applied to the dot products: 1/sqrt(d_k), 1.0 when unscaled, or
        1/T for a temperature T.
    row_max : (n_q,) float64
        Largest allowed score of each row (subtracted before ``exp``).
    shifted : (n_q, n_k) float64
        ``scores - row_max`` (all <= 0; ``-inf`` where masked).
    exp : (n_q, n_k) float64
        ``exp(shifted)``, in (0, 1]; exactly 0 where masked.
    exp_sum : (n_q,) float64
        Row sums of ``exp`` (each >= 1, since the max contributes exp(0) = 1).
    weights : (n_q, n_k) float64
        Softmax weights ``exp / exp_sum``; each row sums to 1, masked entries are 0.
    mask : (n_q, n_k) bool
        True where query i may attend to key j.
    output : (n_q,) or (n_q, d_v) float64
        ``weights @ V``: a weighted average of the values, so it lies between the
        smallest and largest value in every dimension.
    """

    dots: np.ndarray
    scores: np.ndarray
    scale: float
    row_max: np.ndarray
    shifted: np.ndarray
    exp: np.ndarray
    exp_sum: np.ndarray
    weights: np.ndarray
    mask: np.ndarray
    output: np.ndarray


def _as_finite_matrix(name: str, x, ndim: tuple[int, ...]) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if a.ndim not in ndim:
        want = " or ".join(f"{n}-D" for n in ndim)
        raise ValueError(f"{name} must be {want}, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return a


def _softmax_steps(scores: np.ndarray, mask: np.ndarray):
    """Max-shifted softmax along the last axis, returning every step."""
    row_max = np.max(scores, axis=-1, where=mask, initial=-np.inf)
    # A score more than ~1.8e308 below the max shifts to -inf: its weight is 0,
    # which is the correctly rounded exp of so large a gap, so the overflow is benign.
    with np.errstate(over="ignore"):
        shifted = np.where(mask, scores - row_max[..., None], -np.inf)
    # exp(-inf) is exactly 0 and every other shifted score is <= 0, so nothing
    # overflows; the row max contributes exp(0) = 1, so the sum is >= 1.
    exp = np.exp(shifted)
    exp_sum = exp.sum(axis=-1)
    weights = exp / exp_sum[..., None]
    return row_max, shifted, exp, exp_sum, weights


def softmax(scores, mask=None) -> np.ndarray:
    """Numerically stable softmax along the last axis.

    Parameters
    ----------
    scores : (..., n) array_like of finite floats
    mask : (..., n) array_like of bool, optional
        True where an entry takes part; masked entries get weight exactly 0.

    Returns
    -------
    weights : (..., n) float64
        Non-negative, summing to 1 along the last axis.

    Raises
    ------
    ValueError
        If ``scores`` is empty or not finite, the mask's shape differs, or a mask
        row allows no entry.

    Notes
    -----
    ``softmax(s) = exp(s - max s) / sum(exp(s - max s))``. Subtracting the max
    changes nothing mathematically (softmax is shift invariant) but keeps every
    ``exp`` argument <= 0, so huge scores such as ``[1e300, 0]`` cannot overflow.
    Same approach as ``scipy.special.softmax``.

    Examples
    --------
    >>> softmax([0.0, np.log(3.0)]).round(4).tolist()
    [0.25, 0.75]
    """
    s = _as_finite_matrix("scores", scores, ndim=tuple(range(1, 33)))
    m = _check_mask(mask, s.shape)
    return _softmax_steps(s, m)[-1]


def _check_mask(mask, shape) -> np.ndarray:
    if mask is None:
        return np.ones(shape, dtype=bool)
    m = np.asarray(mask)
    if m.dtype != bool:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {m.dtype}")
    if m.shape != shape:
        raise ValueError(f"mask must have shape {shape}, got {m.shape}")
    empty = np.flatnonzero(~m.reshape(-1, shape[-1]).any(axis=-1))
    if empty.size:
        raise ValueError(f"mask row {int(empty[0])} allows no key: every query must attend to at least one key")
    return m


def _check_temperature(temperature) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.integer, np.floating)):
        raise ValueError(f"temperature must be a number, got {temperature!r}")
    t = float(temperature)
    if not (np.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
    if not np.isfinite(1.0 / t):
        raise ValueError(f"temperature {temperature!r} is too small: 1/temperature overflows float64")
    return t


def scaled_dot_product_attention(Q, K, V, mask=None, scale: bool = True, *,
                                 temperature: float | None = None) -> AttentionResult:
    """Scaled dot-product attention with every intermediate step.

    Parameters
    ----------
    Q : (n_q, d_k) array_like
        Queries, one per row.
    K : (n_k, d_k) array_like
        Keys, one per row.
    V : (n_k,) or (n_k, d_v) array_like
        Values: a number per key, or a vector per key.
    mask : (n_q, n_k) array_like of bool, optional
        True where query i may attend to key j (e.g. a causal mask is
        ``np.tril(np.ones((n, n), bool))``). Every row must allow at least one key.
    scale : bool, default True
        Divide the dot products by sqrt(d_k). False shows what goes wrong without it.
    temperature : float > 0, optional
        Divide the dot products by T instead of sqrt(d_k) (``scale`` is then not
        used): T = sqrt(d_k) gives exactly the scaled scores, T = 1 the unscaled
        ones; T -> 0 tends to a one-hot on the largest score, T -> inf to uniform
        weights over the allowed keys. In the units of the dot products.

    Returns
    -------
    AttentionResult
        dots, scores, softmax steps, weights (n_q, n_k) and output (n_q,) or (n_q, d_v).

    Raises
    ------
    ValueError
        Naming the argument at fault: a wrong number of dimensions, mismatched
        sizes, an empty array, NaN or infinite entries, a non-boolean or
        wrongly shaped mask, a mask row with no allowed key, dot products too
        large for float64, a temperature that is not a finite number > 0, or
        scores (dots / temperature) too large for float64.

    Notes
    -----
    Vaswani et al. (2017), Eq. (1): ``softmax(Q K^T / sqrt(d_k)) V``. The softmax
    subtracts each row's max before ``exp`` (see :func:`softmax`). The same
    formula runs in the browser during a drag, as a preview the server then
    confirms: ``attentionStep`` in ``static/attention.js`` mirrors this function
    (without the temperature). A temperature T is the usual generalisation,
    ``softmax(Q K^T / T) V``.

    Examples
    --------
    The "I love NLP" example, query of "love":

    >>> K = [[1, 0], [0, 1], [1, 1]]
    >>> r = scaled_dot_product_attention([[0, 1]], K, [2, 6, 4])
    >>> r.weights.round(4).tolist(), round(float(r.output[0]), 4)
    ([[0.1978, 0.4011, 0.4011]], 4.4067)

    A low temperature sharpens the weights:

    >>> scaled_dot_product_attention([[0, 1]], K, [2, 6, 4], temperature=0.25).weights.round(4).tolist()
    [[0.0091, 0.4955, 0.4955]]
    """
    Q = _as_finite_matrix("Q", Q, ndim=(2,))
    K = _as_finite_matrix("K", K, ndim=(2,))
    V = _as_finite_matrix("V", V, ndim=(1, 2))
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    if K.shape[1] != d_k:
        raise ValueError(f"K must have d_k = {d_k} columns like Q, got shape {K.shape}")
    if V.shape[0] != n_k:
        raise ValueError(f"V must have one row per key (n_k = {n_k}), got shape {V.shape}")
    m = _check_mask(mask, (n_q, n_k))
    t = None if temperature is None else _check_temperature(temperature)

    with np.errstate(over="ignore", invalid="ignore"):
        dots = Q @ K.T  # (n_q, d_k) x (d_k, n_k) -> (n_q, n_k)
    if not np.all(np.isfinite(dots)):
        raise ValueError("Q and K: their dot products overflow float64; use smaller entries")
    # One multiplication by the factor on every path, so T = sqrt(d_k) gives the very scores of scale=True.
    factor = 1.0 / t if t is not None else 1.0 / np.sqrt(d_k) if scale else 1.0
    with np.errstate(over="ignore"):
        scores = np.where(m, dots * factor, -np.inf)
    # Finite dots times a factor <= 1 stay finite: only a temperature below 1 can overflow the scores.
    if factor > 1.0 and not np.all(np.isfinite(scores[m])):
        raise ValueError(f"temperature {temperature!r}: the scores dots / temperature overflow float64; "
                         "use a larger temperature")

    row_max, shifted, exp, exp_sum, weights = _softmax_steps(scores, m)
    return AttentionResult(
        dots=dots, scores=scores, scale=float(factor), row_max=row_max, shifted=shifted,
        exp=exp, exp_sum=exp_sum, weights=weights, mask=m, output=_weighted_values(weights, V),
    )


def _weighted_values(weights: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``weights @ V`` : (n, n_k) x (n_k[, d_v]) -> (n[, d_v]), a convex combination of the values."""
    # Scaling V by a power of two first is exact and keeps the partial sums finite even for |v| ~ 1e308;
    # the final clip only removes rounding of the last bit past min/max.
    big = float(np.max(np.abs(V)))
    e = int(np.frexp(big)[1]) if big > 0 else 0
    output = np.ldexp(weights @ np.ldexp(V, -e), e)
    return np.clip(output, V.min(axis=0), V.max(axis=0))


class TemperatureSweep(NamedTuple):
    """One query's attention at several temperatures (:func:`temperature_sweep`).

    Attributes
    ----------
    temperatures : (n_T,) float64
    scores : (n_T, n_k) float64
        Row t: ``q·k_j / T_t``.
    weights : (n_T, n_k) float64
        Row t: ``softmax(scores[t])``.
    output : (n_T,) or (n_T, d_v) float64
        Row t: ``weights[t] @ V``.
    """

    temperatures: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray


def temperature_sweep(q, K, V, temperatures) -> TemperatureSweep:
    """The attention of one query ``q`` at each of ``temperatures``: ``softmax(q K^T / T) V`` for every T at once.

    Parameters
    ----------
    q : (d_k,) array_like
        The query.
    K : (n_k, d_k) array_like
        Keys, one per row.
    V : (n_k,) or (n_k, d_v) array_like
        Values: a number per key, or a vector per key.
    temperatures : (n_T,) sequence of float > 0
        In the units of the dot products; T = sqrt(d_k) is Eq. (1) of Vaswani et al. (2017).

    Returns
    -------
    TemperatureSweep
        Scores, weights and outputs, one row per temperature: row t has the scores and weights of
        ``scaled_dot_product_attention([q], K, V, temperature=temperatures[t])``, computed the same way
        (one multiplication of the dot products by 1/T, a max-shifted softmax), and its output to the last
        bits (one matrix product for all the rows sums in another order).

    Raises
    ------
    ValueError
        As :func:`scaled_dot_product_attention` does (shapes, non-finite entries, a temperature that is not
        a finite number > 0, scores too large for float64), and if ``temperatures`` is empty.

    Examples
    --------
    Section 6's query of "love" from nearly argmax to nearly uniform:

    >>> r = temperature_sweep([0, 1], [[1, 0], [0, 1], [1, 1]], [2, 6, 4], [0.01, 2 ** 0.5, 100])
    >>> r.weights.round(4).tolist()
    [[0.0, 0.5, 0.5], [0.1978, 0.4011, 0.4011], [0.3311, 0.3344, 0.3344]]
    >>> r.output.round(4).tolist()
    [5.0, 4.4067, 4.0067]
    """
    Q = _as_finite_matrix("q", q, ndim=(1,))[None, :]
    K = _as_finite_matrix("K", K, ndim=(2,))
    V = _as_finite_matrix("V", V, ndim=(1, 2))
    if K.shape[1] != Q.shape[1]:
        raise ValueError(f"K must have d_k = {Q.shape[1]} columns like q, got shape {K.shape}")
    if V.shape[0] != K.shape[0]:
        raise ValueError(f"V must have one row per key (n_k = {K.shape[0]}), got shape {V.shape}")
    T = np.array([_check_temperature(t) for t in temperatures], dtype=np.float64)
    if T.size == 0:
        raise ValueError("temperatures must hold at least one temperature")
    with np.errstate(over="ignore", invalid="ignore"):
        dots = Q @ K.T  # (1, n_k), as scaled_dot_product_attention computes it
    if not np.all(np.isfinite(dots)):
        raise ValueError("q and K: their dot products overflow float64; use smaller entries")
    with np.errstate(over="ignore"):
        scores = dots * (1.0 / T)[:, None]  # (n_T, n_k)
    if not np.all(np.isfinite(scores)):
        raise ValueError("temperatures: the scores dots / temperature overflow float64; use larger temperatures")
    weights = _softmax_steps(scores, np.ones(scores.shape, dtype=bool))[-1]
    return TemperatureSweep(temperatures=T, scores=scores, weights=weights, output=_weighted_values(weights, V))
