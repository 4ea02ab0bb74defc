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

import numpy as np

from core.attention import softmax

__all__ = ["ScalingExperiment", "histogram", "scaling_experiment", "N_KEYS", "N_QUERIES", "MAX_D_K"]

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


def _entropy_bits(weights: np.ndarray) -> np.ndarray:
    # 0 * log 0 = 0: a weight that underflowed to 0 contributes nothing.
    logs = np.log2(weights, out=np.zeros_like(weights), where=weights > 0)
    return -(weights * logs).sum(axis=-1)


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
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or not 1 <= d_k <= MAX_D_K:
        raise ValueError(f"d_k must be an integer from 1 to {MAX_D_K}, got {d_k!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((N_QUERIES, d_k))
    k = rng.standard_normal((N_QUERIES, N_KEYS, d_k))
    dots = np.einsum("qd,qkd->qk", q, k)  # (n_q, d_k) x (n_q, n_keys, d_k) -> (n_q, n_keys)
    scaled = dots / np.sqrt(d_k)
    a, a_unscaled = softmax(scaled), softmax(dots)
    return ScalingExperiment(
        d_k=int(d_k), seed=int(seed), dots=dots, scaled=scaled,
        var_dots=float(dots.var()), var_scaled=float(scaled.var()),
        max_weight=float(a.max(axis=-1).mean()), max_weight_unscaled=float(a_unscaled.max(axis=-1).mean()),
        entropy=float(_entropy_bits(a).mean()), entropy_unscaled=float(_entropy_bits(a_unscaled).mean()),
        example=a[0], example_unscaled=a_unscaled[0],
    )


def histogram(samples, half_width: float, bins: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``samples`` in ``bins`` equal bins over [-half_width, half_width].

    Returns ``(counts, edges)`` with shapes (bins,) and (bins + 1,); samples outside
    the range are not counted.
    """
    return np.histogram(np.ravel(samples), bins=bins, range=(-half_width, half_width))
