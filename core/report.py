"""One query's attention written out as text and as data, without any UI library.

The number formats of the app's page: every view, the page's readout and ``python -m core`` write numbers
with these functions (the page's script mirrors :func:`fmt` in ``link/attention.js``), so they say the same thing
for the same inputs.
"""

from __future__ import annotations

import math

import numpy as np

from core.attention import AttentionResult

__all__ = ["DECIMALS", "fmt", "fmt_entry", "fmt_short", "fmt_vec", "query_report", "query_steps", "readout_lines",
           "scores_label", "sqrt_text"]

DECIMALS = 4


def fmt(x: float, decimals: int = DECIMALS) -> str:
    """Fixed-point text of ``x``; never prints "-0.0000"."""
    s = f"{x:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def fmt_vec(v, decimals: int = 3) -> str:
    """A vector as "(a, b, ...)", each entry with ``decimals`` decimals."""
    return "(" + ", ".join(fmt(c, decimals) for c in v) + ")"


def sqrt_text(d_k: int) -> str:
    """"2" for d_k = 4, "√2" for d_k = 2: the divisor as the course writes it."""
    r = math.isqrt(d_k)
    return str(r) if r * r == d_k else f"√{d_k}"


def fmt_short(x: float, decimals: int = DECIMALS) -> str:
    """``x`` with at most ``decimals`` decimals and no trailing zeros: 1, 0.5, 0.7071."""
    s = fmt(x, decimals)
    return s.rstrip("0").rstrip(".") if "." in s else s


def fmt_entry(x, decimals: int = DECIMALS) -> str:
    """A score, a weight or a value: "masked" for the -inf of a masked score, a vector as (a, b)."""
    if hasattr(x, "__len__") and len(x) != 1:
        return fmt_vec(x, decimals)
    x = float(x[0] if hasattr(x, "__len__") else x)
    return "masked" if x == -math.inf else fmt(x, decimals)


def scores_label(d_k: int, scale: bool = True, temperature: float | None = None) -> str:
    """How the scores are made from the dot products: "q·k / √2", "q·k (unscaled)", "q·k / T (T = 0.5)"."""
    if temperature is not None:
        return f"q·k / T (T = {fmt_short(temperature)})"
    return f"q·k / {sqrt_text(d_k)}" if scale else "q·k (unscaled)"


def _per_token(tokens, row) -> str:
    return ", ".join(f"{t} {fmt_entry(x)}" for t, x in zip(tokens, row, strict=True))


def _output_text(out) -> str:
    # fmt(out, 2), not f"{out:.2f}": a tiny negative output rounds to "0.00", not "-0.00"
    if np.ndim(out) == 0:
        return f"{fmt(out)} ≈ {fmt(out, 2)}"
    return f"{fmt_vec(out, 4)} ≈ {fmt_vec(out, 2)}"


def readout_lines(tokens, query, result: AttentionResult, row: int, scale: bool = True,
                  temperature: float | None = None) -> list[str]:
    """The app's text readout for query ``row``: query, dot products, scores, weights, output.

    Parameters
    ----------
    tokens : sequence of str, length n_k
    query : (d_k,) array_like
        The query of token ``row``, ``result``'s row ``row``.
    result : AttentionResult
        From ``scaled_dot_product_attention(Q, K, V, attn_mask, is_causal=..., scale=..., temperature=...)``.
    row : int
        Which query (0-based).
    scale : bool
        Whether the dot products were divided by sqrt(d_k) (False for the core's
        ``scale=1.0``); it only chooses the scores' label.
    temperature : float, optional
        As given to the core; it only chooses the scores' label.

    Returns
    -------
    list of str, five lines (the last one "Output Σ aᵢvᵢ = 4.4067 ≈ 4.41" or its vector form).

    Examples
    --------
    >>> from core.attention import scaled_dot_product_attention
    >>> K = [[1, 0], [0, 1], [1, 1]]
    >>> r = scaled_dot_product_attention(K, K, [2, 6, 4])
    >>> print("\\n".join(readout_lines(["I", "love", "NLP"], K[1], r, 1)))
    Query of "love": q = (0.000, 1.000)
    Dot products q·k: I 0.0000, love 1.0000, NLP 1.0000
    Scores s = q·k / √2: I 0.0000, love 0.7071, NLP 0.7071
    Weights a = softmax(s): I 0.1978, love 0.4011, NLP 0.4011
    Output Σ aᵢvᵢ = 4.4067 ≈ 4.41
    """
    r, i = result, row
    return [
        f'Query of "{tokens[i]}": q = {fmt_vec(query, 3)}',
        f"Dot products q·k: {_per_token(tokens, r.dots[i])}",
        f"Scores s = {scores_label(len(query), scale, temperature)}: {_per_token(tokens, r.scores[i])}",
        f"Weights a = softmax(s): {_per_token(tokens, r.weights[i])}",
        f"Output Σ aᵢvᵢ = {_output_text(r.output[i])}",
    ]


def _products(result: AttentionResult, values, row: int) -> np.ndarray:
    # the terms a_j v_j of the output's sum: (n_k,) for scalar values, (n_k, d_v) for vectors
    V = np.asarray(values, dtype=np.float64)
    w = result.weights[row]
    return w[:, None] * V if V.ndim == 2 else w * V


def query_steps(tokens, query, values, result: AttentionResult, row: int, scale: bool = True,
                temperature: float | None = None) -> list[str]:
    """Every step of query ``row``'s attention as text: the readout's lines with the softmax's inside.

    The five lines of :func:`readout_lines` in their order, each step between them
    on an indented line: the max shift, exp, the sum, the products a_i v_i.
    Masked keys read "masked" in every step after the dot products, and weight 0.
    """
    r, i = result, row
    lines = readout_lines(tokens, query, r, i, scale, temperature)
    allowed = r.mask[i]

    def steps(xs):
        return ", ".join(f"{t} {fmt_entry(x) if ok else 'masked'}"
                         for t, x, ok in zip(tokens, xs, allowed, strict=True))

    softmax_steps = [
        f"  max of s: {fmt(r.row_max[i])}",
        f"  s − max: {steps(r.shifted[i])}",
        f"  exp(s − max): {steps(r.exp[i])}",
        f"  Σ exp: {fmt(r.exp_sum[i])}; a = exp / Σ",
    ]
    products = [f"  aᵢvᵢ: {steps(_products(r, values, i))}"]
    return lines[:3] + softmax_steps + lines[3:4] + products + lines[4:]


def query_report(tokens, query, keys, values, result: AttentionResult, row: int, scale: bool = True,
                 temperature: float | None = None) -> dict:
    """Every intermediate of query ``row``'s attention as JSON-ready data, in full float64 precision.

    Masked entries of the scores, shifted scores, exp and products are ``None``
    (JSON null: -inf is not JSON); ``allowed`` says which keys the mask lets the
    query see. Python floats print as their shortest round-trip text, so
    ``json.dumps`` of this loses no bit.
    """
    r, i = result, row
    allowed = r.mask[i].tolist()

    def masked(xs):
        return [x.tolist() if ok else None for x, ok in zip(np.asarray(xs), allowed, strict=True)]

    return {
        "tokens": list(tokens),
        "row": int(i),
        "token": tokens[i],
        "query": np.asarray(query, dtype=np.float64).tolist(),
        "keys": np.asarray(keys, dtype=np.float64).tolist(),
        "values": np.asarray(values, dtype=np.float64).tolist(),
        "d_k": len(query),
        "scaling": "temperature" if temperature is not None else "sqrt_d_k" if scale else "none",
        "temperature": None if temperature is None else float(temperature),
        "scale": r.scale,
        "allowed": allowed,
        "dot_products": r.dots[i].tolist(),
        "scores": masked(r.scores[i]),
        "max_score": float(r.row_max[i]),
        "shifted_scores": masked(r.shifted[i]),
        "exp": masked(r.exp[i]),
        "exp_sum": float(r.exp_sum[i]),
        "weights": r.weights[i].tolist(),
        "weighted_values": masked(_products(r, values, i)),
        "output": r.output[i].tolist(),
    }
