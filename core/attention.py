"""Scaled dot-product attention, step by step, in plain NumPy.

The formula is Eq. (1) of Vaswani et al. (2017), "Attention Is All You Need"::

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Dividing by sqrt(d_k) keeps the scores at unit variance when the entries of q and
k are independent with unit variance (q.k is then a sum of d_k such products, with
variance d_k), so the softmax does not saturate into a one-hot as d_k grows.

:func:`scaled_dot_product_attention` takes the arguments of PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` (query, key, value,
attn_mask, dropout_p, is_causal, and the keyword scale), with their meanings.
Every intermediate the explorer shows is returned, not only the output, so the
views never redo any arithmetic of their own. Shapes use the paper's names:
n_q queries, n_k keys, d_k the query/key size, d_v the value size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from core.checks import is_real

__all__ = ["AttentionResult", "TemperatureSweep", "scaled_dot_product_attention", "softmax", "temperature_sweep"]


@dataclass(frozen=True)
class AttentionResult:
    """Every step of scaled dot-product attention for a batch of queries.

    Attributes
    ----------
    dots : (n_q, n_k) float64
        Raw dot products q_i . k_j.
    scores : (n_q, n_k) float64
        ``dots * scale``, plus a float ``attn_mask`` if one was given; ``-inf`` where
        the mask forbids attending.
    scale : float
        The factor applied to the dot products: 1/sqrt(d_k) by default, the ``scale``
        given (1.0 when unscaled), or 1/T for a temperature T.
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
        True where query i may attend to key j (from ``attn_mask`` or ``is_causal``;
        everywhere when neither was given).
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
    if not is_real(temperature):
        raise ValueError(f"temperature must be a number, got {temperature!r}")
    t = float(temperature)
    if not (np.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
    if not np.isfinite(1.0 / t):
        raise ValueError(f"temperature {temperature!r} is too small: 1/temperature overflows float64")
    return t


def _check_flag(name: str, value) -> bool:
    # 1 or 0.0 where a switch is meant is almost always an argument in the wrong place
    # (e.g. a float meant for dropout_p or scale), so only a real bool is taken.
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def _check_dropout(dropout_p) -> None:
    if isinstance(dropout_p, (bool, np.bool_)) or not isinstance(dropout_p, (int, float, np.integer, np.floating)):
        raise TypeError(f"dropout_p must be the number 0.0, got {dropout_p!r} ({type(dropout_p).__name__}); "
                        "the fifth argument is dropout_p, as in torch: scaling is the keyword scale=")
    if dropout_p != 0:
        raise ValueError(f"dropout_p must be 0.0, got {dropout_p!r}: this core has no dropout (a training-time "
                         "regulariser that zeroes weights at random), so every result is exact and repeatable")


def _check_scale(scale) -> float | None:
    if scale is None:
        return None
    if isinstance(scale, (bool, np.bool_)):
        raise TypeError(f"scale is the factor that multiplies the dot products, not a switch, got {scale!r}: "
                        "scale=None divides by sqrt(d_k), scale=1.0 leaves them unscaled")
    if not isinstance(scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"scale must be a number (the factor that multiplies the dot products) or None, "
                        f"got {scale!r} ({type(scale).__name__})")
    s = float(scale)
    if not (np.isfinite(s) and s > 0):
        raise ValueError(f"scale must be finite and > 0 (None means 1/sqrt(d_k)), got {scale!r}")
    return s


def _attention_bias(attn_mask, is_causal: bool, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray | None]:
    """``(allowed, bias)``: which keys each query may attend to, (n_q, n_k) bool, and what a float
    ``attn_mask`` adds to the allowed scores, (n_q, n_k) float64 or None."""
    if is_causal:
        if attn_mask is not None:
            # torch refuses the pair too: which of the two should win is not obvious
            raise ValueError("attn_mask and is_causal=True: give one of them, not both")
        # top-left aligned, as torch's ones(L, S).tril(): query i sees keys 0..i
        return np.tril(np.ones(shape, dtype=bool)), None
    if attn_mask is None:
        return np.ones(shape, dtype=bool), None
    m = np.asarray(attn_mask)
    if m.dtype != bool and m.dtype.kind != "f":
        raise TypeError(f"attn_mask must be boolean (True = takes part in attention) or floating (added to "
                        f"the scores, -inf masks a key out), got dtype {m.dtype}")
    try:
        m = np.broadcast_to(m, shape)
    except ValueError:
        raise ValueError(f"attn_mask must broadcast to (n_q, n_k) = {shape}, got shape {m.shape}") from None
    if m.dtype == bool:
        allowed, bias = m, None
    else:
        bias = m.astype(np.float64)
        if np.any(np.isnan(bias) | (bias == np.inf)):
            raise ValueError("attn_mask contains NaN or +inf: a float mask is added to the scores "
                             "(0 leaves a score as it is, -inf masks the key out)")
        allowed = bias > -np.inf
    empty = np.flatnonzero(~allowed.any(axis=-1))
    if empty.size:
        raise ValueError(f"attn_mask row {int(empty[0])} allows no key: every query must attend to at least one key")
    return allowed, bias


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 *, scale: float | None = None, temperature: float | None = None) -> AttentionResult:
    """Scaled dot-product attention with every intermediate step.

    The arguments are those of ``torch.nn.functional.scaled_dot_product_attention``,
    with the same names, order and meaning (``scale`` keyword-only there too), so a
    call ports either way; the differences are listed in the Notes.

    Parameters
    ----------
    query : (n_q, d_k) array_like
        Queries, one per row.
    key : (n_k, d_k) array_like
        Keys, one per row.
    value : (n_k,) or (n_k, d_v) array_like
        Values: a number per key, or a vector per key.
    attn_mask : array_like, broadcastable to (n_q, n_k), optional
        As in torch, either boolean, True where query i may attend to key j (a causal
        mask is ``np.tril(np.ones((n, n), bool))``), or floating, added to the scores
        (0 keeps a score, -inf masks the key out). Every row must allow one key.
    dropout_p : float, default 0.0
        Only 0.0: there is no dropout here (it is a training-time regulariser).
        Kept in torch's fifth place so that ``f(q, k, v, None, 0.0)`` means the same.
    is_causal : bool, default False
        Query i attends only to keys 0..i (torch's ``ones(n_q, n_k).tril()``, aligned
        top-left). Not with ``attn_mask``.
    scale : float > 0, optional, keyword-only
        The factor that multiplies the dot products; None means 1/sqrt(d_k), as in
        torch. ``scale=1.0`` shows what goes wrong without the division.
    temperature : float > 0, optional, keyword-only
        Divide the dot products by T, the same as ``scale=1/T``: T = sqrt(d_k) gives
        exactly the scaled scores, T = 1 the unscaled ones; T -> 0 tends to a one-hot
        on the largest score, T -> inf to uniform weights over the allowed keys. In the
        units of the dot products. Not with ``scale``.

    Returns
    -------
    AttentionResult
        dots, scores, softmax steps, weights (n_q, n_k) and ``output`` (n_q,) or
        (n_q, d_v): the ``output`` is what torch's function returns.

    Raises
    ------
    TypeError
        ``is_causal`` not a bool (1 is refused, ``np.bool_`` taken), ``scale`` or
        ``dropout_p`` not a number (a bool ``scale`` included), or an ``attn_mask``
        neither boolean nor floating.
    ValueError
        Naming the argument at fault: a wrong number of dimensions, mismatched
        sizes, an empty array, NaN or infinite entries, an ``attn_mask`` that does
        not broadcast to (n_q, n_k), holds NaN or +inf, or leaves a row no key,
        ``attn_mask`` with ``is_causal``, a ``dropout_p`` other than 0, a ``scale``
        or ``temperature`` that is not a finite number > 0, both of them, dot
        products too large for float64, or scores too large for float64.

    Notes
    -----
    Vaswani et al. (2017), "Attention Is All You Need", Eq. (1)::

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    computed as ``softmax(Q K^T * scale + bias) V``, the bias 0 where a key is
    allowed and -inf where masked (or a float ``attn_mask``), like torch's reference
    code. The softmax subtracts each row's max before ``exp`` (see :func:`softmax`).
    Unlike torch: two dimensions only (no batch or heads, so no ``enable_gqa``), and
    a row that masks every key is refused where torch returns NaN. The same formula
    runs in the browser during a drag, as a preview the server then confirms:
    ``attentionStep`` in ``link/attention.js`` mirrors this function (without the
    temperature or a float mask).

    Examples
    --------
    The "I love NLP" example, query of "love", as torch would be called:

    >>> K = [[1, 0], [0, 1], [1, 1]]
    >>> r = scaled_dot_product_attention([[0, 1]], K, [2, 6, 4], None, 0.0)
    >>> r.weights.round(4).tolist(), round(float(r.output[0]), 4)
    ([[0.1978, 0.4011, 0.4011]], 4.4067)

    Without the division by sqrt(d_k):

    >>> round(float(scaled_dot_product_attention([[0, 1]], K, [2, 6, 4], scale=1.0).output[0]), 4)
    4.5339

    A low temperature sharpens the weights:

    >>> scaled_dot_product_attention([[0, 1]], K, [2, 6, 4], temperature=0.25).weights.round(4).tolist()
    [[0.0091, 0.4955, 0.4955]]
    """
    Q = _as_finite_matrix("query", query, ndim=(2,))
    K = _as_finite_matrix("key", key, ndim=(2,))
    V = _as_finite_matrix("value", value, ndim=(1, 2))
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    if K.shape[1] != d_k:
        raise ValueError(f"key must have d_k = {d_k} columns like query, got shape {K.shape}")
    if V.shape[0] != n_k:
        raise ValueError(f"value must have one row per key (n_k = {n_k}), got shape {V.shape}")
    _check_dropout(dropout_p)
    allowed, bias = _attention_bias(attn_mask, _check_flag("is_causal", is_causal), (n_q, n_k))
    s = _check_scale(scale)
    t = None if temperature is None else _check_temperature(temperature)
    if s is not None and t is not None:
        raise ValueError("scale and temperature: give one of them (temperature T is scale = 1/T), not both")

    with np.errstate(over="ignore", invalid="ignore"):
        dots = Q @ K.T  # (n_q, d_k) x (d_k, n_k) -> (n_q, n_k)
    if not np.all(np.isfinite(dots)):
        raise ValueError("query and key: their dot products overflow float64; use smaller entries")
    # One multiplication by the factor on every path, so T = sqrt(d_k) gives the very scores of scale=None.
    factor = 1.0 / t if t is not None else s if s is not None else 1.0 / np.sqrt(d_k)
    with np.errstate(over="ignore"):
        scaled = dots * factor  # (n_q, n_k)
    # Finite dots times a factor <= 1 stay finite: only a temperature below 1 or a scale above 1 can overflow.
    if not np.all(np.isfinite(scaled[allowed])):
        if t is not None:
            raise ValueError(f"temperature {temperature!r}: the scores dots / temperature overflow float64; "
                             "use a larger temperature")
        raise ValueError(f"scale {scale!r}: the scores dots * scale overflow float64; use a smaller scale")
    if bias is not None:
        with np.errstate(over="ignore"):
            scaled = scaled + bias  # a -inf bias leaves -inf: those keys are not allowed
        if not np.all(np.isfinite(scaled[allowed])):
            raise ValueError("attn_mask: the scores plus the mask overflow float64; use smaller entries")
    scores = np.where(allowed, scaled, -np.inf)

    row_max, shifted, exp, exp_sum, weights = _softmax_steps(scores, allowed)
    return AttentionResult(
        dots=dots, scores=scores, scale=float(factor), row_max=row_max, shifted=shifted,
        exp=exp, exp_sum=exp_sum, weights=weights, mask=allowed, output=_weighted_values(weights, V),
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
