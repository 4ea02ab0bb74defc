"""Multi-head attention: h heads, each with its own projections, side by side.

Vaswani et al. (2017), Sec. 3.2.2::

    MultiHead(X) = Concat(head_1, ..., head_h) W_O,
    head_i = Attention(X W_Q[i], X W_K[i], X W_V[i])

Each head compares its own queries with its own keys, so different heads can
attend to different patterns of the same sentence (one to the previous token,
another to the token itself); W_O mixes what they read into one output per token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.attention import _as_finite_matrix
from core.examples import _frozen
from core.projections import SelfAttention, self_attention

__all__ = ["MultiHeadPreset", "MultiHeadResult", "PREVIOUS_AND_SELF", "PREVIOUS_AND_SELF_2D", "multi_head_attention"]


@dataclass(frozen=True)
class MultiHeadResult:
    """Every head's steps, their concatenation and the output.

    Attributes
    ----------
    heads : tuple of h SelfAttention
        Head i's projections Q, K : (n, d_k), V : (n, d_v) and its AttentionResult
        (weights (n, n), output (n, d_v)).
    concat : (n, h * d_v) float64
        The heads' outputs side by side: columns i*d_v to (i+1)*d_v are head i's.
    output : (n, d_model_out) float64
        ``concat @ W_O``.
    """

    heads: tuple[SelfAttention, ...]
    concat: np.ndarray
    output: np.ndarray


def multi_head_attention(X, W_Q, W_K, W_V, W_O, attn_mask=None, *, scale: float | None = None,
                         temperature: float | None = None) -> MultiHeadResult:
    """Multi-head self-attention: Concat(head_1, ..., head_h) W_O, every step of every head kept.

    Parameters
    ----------
    X : (n, d_model) array_like
        One embedding per token.
    W_Q, W_K : (h, d_model, d_k) array_like
        Each head's query and key projection.
    W_V : (h, d_model, d_v) array_like
        Each head's value projection.
    W_O : (h * d_v, d_model_out) array_like
        The output projection of the concatenated heads.
    attn_mask : array_like, broadcastable to (n, n), optional
        The same for every head, as in :func:`core.attention.scaled_dot_product_attention`:
        boolean, True where token i may attend to token j, or floating, added to the scores.
        (Not the convention of ``torch.nn.MultiheadAttention``, where True masks out.)
    scale, temperature : float > 0, optional, keyword-only
        As in :func:`core.attention.scaled_dot_product_attention`; by default each head
        divides by the sqrt(d_k) of its own query/key size.

    Returns
    -------
    MultiHeadResult
        ``heads`` (h of them), ``concat`` : (n, h * d_v), ``output`` : (n, d_model_out).

    Raises
    ------
    ValueError
        Naming the argument at fault: W_Q, W_K or W_V not 3-D or of different
        numbers of heads, or rows not d_model; W_K shaped unlike W_Q; W_O not
        (h * d_v, d_model_out); NaN or infinite entries; products too large for
        float64; or any error of the attention core (attn_mask, scale, temperature).
    TypeError
        As the attention core raises it (``scale`` not a number, ``attn_mask`` neither
        boolean nor floating).

    Notes
    -----
    Vaswani et al. (2017), Sec. 3.2.2, in self-attention (queries, keys and values
    all from X). The paper takes d_k = d_v = d_model / h so that the cost is close
    to one head's of full size; nothing here requires it. Any number of heads.

    Examples
    --------
    >>> p = PREVIOUS_AND_SELF
    >>> r = multi_head_attention(p.X, p.W_Q, p.W_K, p.W_V, p.W_O)
    >>> [h.attention.weights.argmax(axis=1).tolist() for h in r.heads]
    [[0, 0, 1, 2], [0, 1, 2, 3]]
    """
    W_Q = _as_finite_matrix("W_Q", W_Q, ndim=(3,))
    W_K = _as_finite_matrix("W_K", W_K, ndim=(3,))
    W_V = _as_finite_matrix("W_V", W_V, ndim=(3,))
    W_O = _as_finite_matrix("W_O", W_O, ndim=(2,))
    h, _, d_v = W_V.shape
    if W_Q.shape[0] != h or W_K.shape[0] != h:
        raise ValueError(f"W_Q, W_K and W_V must have the same number of heads h, got {W_Q.shape[0]}, "
                         f"{W_K.shape[0]} and {h}")
    if W_O.shape[0] != h * d_v:
        raise ValueError(f"W_O must have h * d_v = {h} * {d_v} = {h * d_v} rows (the concatenated heads), "
                         f"got shape {W_O.shape}")
    # project() checks X and each head's d_model and W_K against W_Q, naming the argument
    heads = tuple(self_attention(X, W_Q[i], W_K[i], W_V[i], attn_mask, scale=scale, temperature=temperature)
                  for i in range(h))
    concat = np.concatenate([head.attention.output for head in heads], axis=1)  # h x (n, d_v) -> (n, h*d_v)
    with np.errstate(over="ignore", invalid="ignore"):
        output = concat @ W_O  # (n, h*d_v) x (h*d_v, d_model_out) -> (n, d_model_out)
    if not np.all(np.isfinite(output)):
        raise ValueError("W_O: the output concat @ W_O overflows float64; use smaller entries")
    return MultiHeadResult(heads=heads, concat=concat, output=output)


@dataclass(frozen=True)
class MultiHeadPreset:
    """A sentence with the projections of h heads, read-only.

    Attributes
    ----------
    tokens : tuple of str, length n
    X : (n, d_model) float64
    W_Q, W_K : (h, d_model, d_k) float64
    W_V : (h, d_model, d_v) float64
    W_O : (h * d_v, d_model_out) float64
    head_names : tuple of h str
        What each head attends to, for the page's labels.
    note : str
    """

    tokens: tuple[str, ...]
    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    head_names: tuple[str, ...]
    note: str


def _previous_and_self(n: int = 4, strength: float = 3.0) -> MultiHeadPreset:
    # X = I: each embedding is its position, one-hot, so a projection's rows are per-token choices.
    # Keys are strength * x_j in both heads; head 0's query of token i is strength * x_{i-1} (token 0 has
    # no previous token and looks at itself), head 1's is strength * x_i. A match scores strength^2 / sqrt(n)
    # = 4.5, any other key 0: weight e^4.5 / (e^4.5 + 3) = 0.97 on the chosen token.
    eye = np.eye(n)
    previous = np.roll(eye, -1, axis=1)  # row i has its 1 in column i - 1
    previous[0] = eye[0]
    position = np.arange(1.0, n + 1)[:, None]  # (n, 1): each token's value is its position 1..n
    return MultiHeadPreset(
        tokens=("the", "cat", "sat", "down")[:n],
        X=_frozen(eye),
        W_Q=_frozen([strength * previous, strength * eye]),
        W_K=_frozen([strength * eye, strength * eye]),
        W_V=_frozen([position, position]),
        W_O=_frozen(np.eye(2)),
        head_names=("previous token", "itself"),
        note="Two heads on one sentence: head 1 attends to the previous token (the first token to itself), "
             "head 2 to the token itself. Each value is the token's position 1 to 4, so the output's first "
             "column reads about the previous position, the second about the token's own.",
    )


#: Two heads with different patterns on "the cat sat down": previous token, and itself.
PREVIOUS_AND_SELF = _previous_and_self()


def _previous_and_self_in_the_plane(key_strength: float = 2.0, query_strength: float = 2.5) -> MultiHeadPreset:
    # "I love NLP" with d_model = d_k = d_v = 2, so every embedding, query, key and value is a point of a plane
    # a learner can drag. The embeddings are unit vectors 60 degrees apart (0, 60, 120 degrees): x_i . x_j is
    # 1 for the token itself, 1/2 for a neighbour, -1/2 two apart. Both heads' keys are 2 x_j. Head 1's query
    # turns x_i back by 60 degrees, onto the previous token's direction (row-vector convention: x R turns x
    # by -60 degrees); "I" has no previous token, and its turned x_I (at -60 degrees) lies nearest to x_I
    # itself. Head 2's query asks for the token itself. A match scores 2 * 2.5 / sqrt(2) = 3.54, a neighbour
    # half of it: weights 0.75 to 0.97 on the chosen token. The strengths keep every key, and every query but
    # head 1's q_I, inside the explorer's query plane (-1.5 to 2.5), where a head can be shown.
    c, s = 0.5, np.sqrt(3.0) / 2
    X = np.array([[1.0, 0.0], [c, s], [-c, s]])
    back = np.array([[c, -s], [s, c]])  # x @ back turns x by -60 degrees
    eye = np.eye(2)
    return MultiHeadPreset(
        tokens=("I", "love", "NLP"),
        X=_frozen(X),
        W_Q=_frozen([query_strength * back, query_strength * eye]),
        W_K=_frozen([key_strength * eye, key_strength * eye]),
        W_V=_frozen([eye, eye]),
        W_O=_frozen(np.vstack([eye / 2, eye / 2])),
        head_names=("previous token", "itself"),
        note="Two heads on \"I love NLP\", embeddings 60° apart. Head 1 turns each query back by 60°, onto the "
             "previous token (I, which has none, stays nearest to itself); head 2 asks for the token itself. Both "
             "read V = X, and W_O averages them: each output lies between the previous token's embedding and "
             "the token's own.",
    )


#: The same two patterns with 2-D embeddings and d_k = 2 per head, for the page's planes (see
#: :data:`PREVIOUS_AND_SELF` for one-hot embeddings): "I love NLP" with embeddings at 0°, 60° and 120°.
PREVIOUS_AND_SELF_2D = _previous_and_self_in_the_plane()
