"""A room's view as text, for Redis: what one process writes and another reads back as the same values.

A view (``AttentionState.snapshot()``) holds NumPy arrays, tuples, lists, dicts, strings, numbers and booleans.
JSON keeps the last five; arrays and tuples are written tagged (``{"__nd__": [dtype, shape, values]}``,
``{"__tuple__": [...]}``) and read back as what they were, so that a follower on another process applies exactly
the presenter's values (``same_value`` finds nothing changed). Python writes a float as the shortest text that reads
back as the same float, so no number moves on its way.

>>> import numpy as np
>>> view = {"keys": np.array([[1.0, 0.0], [0.5, 1.0]]), "query": (0.0, 1.0), "tokens": ["I", "love"]}
>>> back = decode_view(encode_view(view))
>>> back["query"], back["keys"].dtype, back["keys"].tolist(), back["tokens"]
((0.0, 1.0), dtype('float64'), [[1.0, 0.0], [0.5, 1.0]], ['I', 'love'])
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

_ARRAY, _TUPLE = "__nd__", "__tuple__"


def _tagged(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {_ARRAY: [value.dtype.str, list(value.shape), value.ravel().tolist()]}
    if isinstance(value, tuple):
        return {_TUPLE: [_tagged(v) for v in value]}
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    if isinstance(value, dict):
        return {k: _tagged(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, dict):
        if _ARRAY in value and len(value) == 1:
            dtype, shape, values = value[_ARRAY]
            return np.array(values, dtype=np.dtype(dtype)).reshape(shape)
        if _TUPLE in value and len(value) == 1:
            return tuple(_untagged(v) for v in value[_TUPLE])
        return {k: _untagged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untagged(v) for v in value]
    return value


def encode_view(snapshot: dict | None) -> str:
    """``snapshot`` as JSON text ("" for none)."""
    return "" if snapshot is None else json.dumps(_tagged(snapshot), separators=(",", ":"), allow_nan=False)


def decode_view(text: str | None) -> dict | None:
    """What :func:`encode_view` wrote, as it was (None for "")."""
    return _untagged(json.loads(text)) if text else None


def message(**fields) -> str:
    """One message of a room's channel: compact JSON."""
    return json.dumps(fields, separators=(",", ":"), allow_nan=False)
