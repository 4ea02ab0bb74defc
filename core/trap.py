"""The common trap: scoring the query against the values instead of the keys.

Attention asks "how relevant is key k_i to my query q?" (s_i = q·k_i / sqrt(d_k))
and only then retrieves the values with those weights. Scoring q against the
values instead makes relevance depend on *what would be retrieved*: a long value
vector wins whatever the keys say. With scalar values the dot product q·v_i is not
even defined (q is a vector, v_i a number), which is the first sign something is off.
"""

from __future__ import annotations

import numpy as np

from core.attention import AttentionResult, scaled_dot_product_attention

__all__ = ["scores_against_values"]


def scores_against_values(Q, V, attn_mask=None, *, scale: float | None = None) -> AttentionResult:
    """Attention with the values standing in for the keys: softmax(Q V^T / sqrt(d_k)) V.

    Parameters
    ----------
    Q : (n_q, d_k) array_like
        Queries.
    V : (n_k, d_v) array_like
        Values, one vector per token; used both as keys and as values.
    attn_mask, scale
        As in :func:`core.attention.scaled_dot_product_attention` (``scale`` keyword-only).

    Returns
    -------
    AttentionResult
        ``scaled_dot_product_attention(Q, V, V, attn_mask, scale=scale)``: its ``dots`` are q·v_j.

    Raises
    ------
    ValueError
        If the values are scalars (``V`` is 1-D: q·v_i is undefined), if their size
        d_v differs from the query's d_k, or for any error of the attention core.

    Examples
    --------
    >>> r = scores_against_values([[0, 1]], [[10, 0], [0, 10], [5, 5]])
    >>> r.dots.tolist()
    [[0.0, 10.0, 5.0]]
    """
    Q = np.asarray(Q, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    d_k = Q.shape[-1] if Q.ndim else 0
    if V.ndim == 1:
        raise ValueError(
            f"q·v_i is not defined: each value v_i is a single number, while q is a vector of d_k = {d_k} "
            "numbers. A dot product needs two vectors of the same size."
        )
    if V.ndim == 2 and Q.ndim == 2 and V.shape[1] != d_k:
        raise ValueError(
            f"q·v_i is not defined: the values have d_v = {V.shape[1]} entries, the query has d_k = {d_k}. "
            "A dot product needs two vectors of the same size."
        )
    return scaled_dot_product_attention(Q, V, V, attn_mask, scale=scale)
