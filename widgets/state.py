"""One browser session's state: the single source of truth every view renders."""

from __future__ import annotations

import copy
import math

import numpy as np
import param

from core import I_LOVE_NLP, AttentionResult, scaled_dot_product_attention

#: Largest coordinate a learner may set; beyond it the numbers stop being instructive.
MAX_ABS_COORD = 1e6


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b


class AttentionState(param.Parameterized):
    """Everything one learner's page shows, and nothing else.

    The sentence's tokens, keys K : (n, d_k) and values V : (n,) are the data;
    ``query`` replaces the query of the ``selected`` token (every other token's
    query equals its key, as in the course's self-attention example). ``result``
    is derived from these by one call to the NumPy core whenever any of them
    changes, so views never compute anything themselves.

    Bad input never changes the state: :meth:`move_query` refuses it and sets
    ``message`` instead.
    """

    tokens = param.List(default=list(I_LOVE_NLP.tokens), item_type=str, doc="Token of each row, as text.")
    keys = param.Array(default=I_LOVE_NLP.keys.copy(), doc="K : (n, d_k); also each token's own query.")
    values = param.Array(default=I_LOVE_NLP.values.copy(), doc="V : (n,), one number per token.")
    selected = param.Integer(default=1, bounds=(0, None), doc="Row whose query the learner moves (0-based).")
    query = param.NumericTuple(default=(0.0, 1.0), length=2, doc="q : (d_k,), the selected token's query.")
    scale = param.Boolean(default=True, doc="Divide the dot products by sqrt(d_k).")

    message = param.String(default="", doc="Why the last input was refused; empty when it was accepted.")
    result = param.ClassSelector(class_=AttentionResult, constant=True, doc="Core output for `queries`.")

    #: The params that make up the view a presenter shares with a room (see widgets/follow.py). Every
    #: other param is the page's own (``LOCAL_PARAMS``); a new param must be added to exactly one list.
    SHARED_PARAMS = ("tokens", "keys", "values", "selected", "query", "scale")
    #: Params never followed: derived ones, feedback about the page's own input, the page's own display.
    LOCAL_PARAMS = ("name", "message", "result")

    def __init__(self, **params):
        super().__init__(**params)
        self._recompute()

    def snapshot(self) -> dict:
        """A deep copy of the shared view: ``{name: value}`` for each of ``SHARED_PARAMS``."""
        values = self.param.values()
        return {name: copy.deepcopy(values[name]) for name in self.SHARED_PARAMS}

    def apply_snapshot(self, snapshot: dict) -> list[str]:
        """Take the shared view from ``snapshot`` in one update; returns the names that changed.

        Only names in ``SHARED_PARAMS`` are read; values equal to the current
        ones are skipped so the views re-render only what moved.
        """
        changed = {name: copy.deepcopy(snapshot[name]) for name in self.SHARED_PARAMS
                   if name in snapshot and not _same(getattr(self, name), snapshot[name])}
        if changed:
            self.param.update(**changed, message="")
        return list(changed)

    @property
    def queries(self) -> np.ndarray:
        """Q : (n, d_k): each token's key as its query, the selected row replaced by ``query``."""
        Q = np.array(self.keys, dtype=np.float64)
        Q[self.selected] = self.query
        return Q

    @property
    def d_k(self) -> int:
        return int(np.shape(self.keys)[1])

    @param.depends("tokens", "keys", "values", "selected", "query", "scale", watch=True)
    def _recompute(self):
        r = scaled_dot_product_attention(self.queries, self.keys, self.values, scale=self.scale)
        with param.edit_constant(self):
            self.result = r

    def move_query(self, x, y) -> bool:
        """Set q = (x, y) if both are finite numbers with |x|, |y| <= 1e6.

        Returns True if accepted. Otherwise nothing changes except ``message``.
        """
        try:
            q = (float(x), float(y))
        except (TypeError, ValueError):
            self.message = f"Query refused: ({x!r}, {y!r}) are not numbers."
            return False
        if not all(math.isfinite(c) and abs(c) <= MAX_ABS_COORD for c in q):
            self.message = f"Query refused: coordinates must be finite and within ±{MAX_ABS_COORD:g}."
            return False
        self.param.update(query=q, message="")
        return True

    def select_row(self, row: int) -> None:
        """Select token ``row`` and move the query to that token's own query (its key)."""
        row = int(row)
        if not 0 <= row < len(self.tokens):
            self.message = f"Row {row} does not exist: choose 0 to {len(self.tokens) - 1}."
            return
        self.param.update(selected=row, query=tuple(float(c) for c in self.keys[row]), message="")

    def reset(self) -> None:
        """Restore the course example: query of "love", scaling on."""
        self.param.update(
            tokens=list(I_LOVE_NLP.tokens),
            keys=I_LOVE_NLP.keys.copy(),
            values=I_LOVE_NLP.values.copy(),
            selected=1,
            query=(0.0, 1.0),
            scale=True,
            message="",
        )
