"""Why divide by sqrt(d_k): a seeded experiment with random queries and keys.

If the entries of q and k are independent with mean 0 and variance 1, then
q·k = sum_j q_j k_j is a sum of d_k independent products of variance 1, so
Var(q·k) = d_k, and Var(q·k / sqrt(d_k)) = 1 whatever d_k is (Vaswani et al., 2017,
footnote 4). Unscaled, the scores spread out as d_k grows and the softmax over
them collapses onto the largest one (near one-hot, entropy near 0): its gradients
vanish. Scaled, the softmax keeps the same spread at every d_k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from core.attention import _as_finite_matrix, softmax
from core.checks import is_whole

__all__ = ["Saturation", "ScalingExperiment", "histogram", "saturation", "scaling_experiment", "N_KEYS",
           "N_QUERIES", "MAX_D_K"]

#: Scores per softmax: one query against this many keys.
N_KEYS = 8
#: Independent queries; N_QUERIES * N_KEYS query/key pairs in all.
N_QUERIES = 512
MAX_D_K = 1024


@dataclass(frozen=True)
class ScalingExperiment:
    """Random dot products at one d_k, scaled and unscaled, and what softmax makes of them.

    Attributes
    ----------
    d_k, seed : int
    dots : (N_QUERIES, N_KEYS) float64
        q·k for each query and each of its keys.
    scaled : (N_QUERIES, N_KEYS) float64
        ``dots / sqrt(d_k)``.
    var_dots, var_scaled : float
        Sample variances over all pairs: about d_k and about 1.
    max_weight, max_weight_unscaled : float
        Mean over queries of the largest softmax weight over N_KEYS scores
        (1/8 = 0.125 for a uniform softmax, 1 for a one-hot).
    entropy, entropy_unscaled : float
        Mean entropy of those softmaxes in bits (log2(8) = 3 for uniform, 0 for one-hot).
    example, example_unscaled : (N_KEYS,) float64
        The first query's softmax weights, scaled and unscaled.
    """

    d_k: int
    seed: int
    dots: np.ndarray
    scaled: np.ndarray
    var_dots: float
    var_scaled: float
    max_weight: float
    max_weight_unscaled: float
    entropy: float
    entropy_unscaled: float
    example: np.ndarray
    example_unscaled: np.ndarray


class Saturation(NamedTuple):
    """How close each row of softmax weights is to a one-hot.

    Attributes
    ----------
    max_weight : (...,) float64
        Largest weight of each row: 1/n_k for uniform weights over n_k keys, 1 for a one-hot.
    entropy : (...,) float64
        Entropy of each row in nats (natural log): ln(n_k) for uniform weights over
        n_k keys, 0 for a one-hot. Divide by ln 2 for bits.
    """

    max_weight: np.ndarray
    entropy: np.ndarray


def saturation(weights) -> Saturation:
    """Largest weight and entropy (in nats) of each row of attention weights.

    Parameters
    ----------
    weights : (..., n_k) array_like
        Softmax weights, e.g. ``AttentionResult.weights`` : (n_q, n_k); masked keys
        (weight 0) contribute nothing.

    Returns
    -------
    Saturation
        ``max_weight`` and ``entropy``, each of shape (...,), e.g. (n_q,).

    Raises
    ------
    ValueError
        If ``weights`` is empty, not finite, or has a negative entry.

    Notes
    -----
    ``H(a) = -sum_j a_j ln a_j`` with ``0 ln 0 = 0``. A saturated softmax (what
    unscaled scores give as d_k grows, or a low temperature) has a largest weight
    near 1 and an entropy near 0; the gradients through it then vanish
    (Vaswani et al., 2017, Sec. 3.2.1).

    Examples
    --------
    >>> s = saturation([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]])
    >>> s.max_weight.tolist(), s.entropy.round(4).tolist()  # ln 4 = 1.3863
    ([0.25, 1.0], [1.3863, 0.0])
    """
    w = _as_finite_matrix("weights", weights, ndim=tuple(range(1, 33)))
    if np.any(w < 0):
        raise ValueError("weights must not be negative")
    # 0 ln 0 = 0: a weight that underflowed to 0 (or a masked key's) contributes nothing.
    logs = np.log(w, out=np.zeros_like(w), where=w > 0)
    # + 0.0: a one-hot's entropy is -(1 ln 1) = -0.0, which would print as "-0.0"
    return Saturation(max_weight=w.max(axis=-1), entropy=-(w * logs).sum(axis=-1) + 0.0)


def scaling_experiment(d_k: int, seed: int) -> ScalingExperiment:
    """Draw N_QUERIES queries and N_KEYS keys per query with i.i.d. N(0, 1) entries.

    Parameters
    ----------
    d_k : int, 1 <= d_k <= 1024
        Size of each query and key.
    seed : int >= 0
        Seed of a NumPy ``Generator`` of its own: the same (d_k, seed) always gives
        the same draws, and no global random state is touched.

    Returns
    -------
    ScalingExperiment

    Raises
    ------
    ValueError
        If d_k is not an integer in [1, 1024] or the seed is negative.

    Examples
    --------
    >>> e = scaling_experiment(256, seed=0)
    >>> 200 < e.var_dots < 310, 0.8 < e.var_scaled < 1.2
    (True, True)
    """
    if not is_whole(d_k) or not 1 <= d_k <= MAX_D_K:
        raise ValueError(f"d_k must be an integer from 1 to {MAX_D_K}, got {d_k!r}")
    if not is_whole(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((N_QUERIES, d_k))
    k = rng.standard_normal((N_QUERIES, N_KEYS, d_k))
    dots = np.einsum("qd,qkd->qk", q, k)  # (n_q, d_k) x (n_q, n_keys, d_k) -> (n_q, n_keys)
    scaled = dots / np.sqrt(d_k)
    a, a_unscaled = softmax(scaled), softmax(dots)
    sat, sat_unscaled = saturation(a), saturation(a_unscaled)
    return ScalingExperiment(
        d_k=int(d_k), seed=int(seed), dots=dots, scaled=scaled,
        var_dots=float(dots.var()), var_scaled=float(scaled.var()),
        max_weight=float(sat.max_weight.mean()), max_weight_unscaled=float(sat_unscaled.max_weight.mean()),
        entropy=float(sat.entropy.mean() / np.log(2)),
        entropy_unscaled=float(sat_unscaled.entropy.mean() / np.log(2)),
        example=a[0], example_unscaled=a_unscaled[0],
    )


def histogram(samples, half_width: float, bins: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``samples`` in ``bins`` equal bins over [-half_width, half_width].

    Returns ``(counts, edges)`` with shapes (bins,) and (bins + 1,); samples outside
    the range are not counted.
    """
    return np.histogram(np.ravel(samples), bins=bins, range=(-half_width, half_width))
