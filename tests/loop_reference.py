"""An independent float64 reference for the core's tests: plain Python loops over lists.

Written apart from ``core/`` and without NumPy matrix products, so a test comparing
the core with it compares two separate computations of Vaswani et al. (2017),
Eq. (1) (attention) and Sec. 3.2.2 (multi-head).
"""

from __future__ import annotations

import math


def random_mask(rng, n_q, n_k):
    """A random (n_q, n_k) bool mask, from a NumPy Generator, in which every row allows at least one key."""
    mask = rng.random((n_q, n_k)) < 0.5
    mask[range(n_q), rng.integers(0, n_k, n_q)] = True
    return mask


def tolist(a):
    """Nested Python floats from an array or nested sequence."""
    return a.tolist() if hasattr(a, "tolist") else a


def matmul(A, B):
    """(n, m) x (m, p) -> (n, p) by three loops; a 1-D B (m,) gives a 1-D result (n,)."""
    A, B = tolist(A), tolist(B)
    if not isinstance(B[0], list):
        return [sum(a * b for a, b in zip(row, B, strict=True)) for row in A]
    return [[sum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


def attention(Q, K, V, mask=None, divide_by=None):
    """softmax(Q K^T / divide_by) V row by row; ``divide_by`` None means sqrt(d_k).

    Returns ``(scores, weights, output)`` as lists; masked scores are None and their weights 0.0.
    """
    Q, K, V = tolist(Q), tolist(K), tolist(V)
    mask = tolist(mask)
    d_k = len(Q[0])
    t = math.sqrt(d_k) if divide_by is None else divide_by
    scores, weights, output = [], [], []
    for i, q in enumerate(Q):
        allowed = [mask is None or bool(mask[i][j]) for j in range(len(K))]
        s = [sum(a * b for a, b in zip(q, k, strict=True)) / t if ok else None
             for k, ok in zip(K, allowed, strict=True)]
        top = max(x for x in s if x is not None)
        e = [math.exp(x - top) if x is not None else 0.0 for x in s]
        total = sum(e)
        a = [x / total for x in e]
        if isinstance(V[0], list):
            out = [sum(a[j] * V[j][c] for j in range(len(V))) for c in range(len(V[0]))]
        else:
            out = sum(a[j] * V[j] for j in range(len(V)))
        scores.append(s)
        weights.append(a)
        output.append(out)
    return scores, weights, output


def multi_head(X, W_Q, W_K, W_V, W_O, mask=None, divide_by=None):
    """Concat(head_1, ..., head_h) W_O with head_i = attention(X W_Q[i], X W_K[i], X W_V[i]).

    Returns ``(heads, concat, output)``: heads as ``(Q, K, V, weights, head_output)`` lists.
    """
    heads, concat = [], [[] for _ in tolist(X)]
    for wq, wk, wv in zip(tolist(W_Q), tolist(W_K), tolist(W_V), strict=True):
        Q, K, V = matmul(X, wq), matmul(X, wk), matmul(X, wv)
        _, a, out = attention(Q, K, V, mask, divide_by)
        heads.append((Q, K, V, a, out))
        for row, o in zip(concat, out, strict=True):
            row.extend(o)
    return heads, concat, matmul(concat, W_O)
