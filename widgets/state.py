"""One browser session's state: the single source of truth every view renders."""

from __future__ import annotations

import math

import numpy as np
import param

from core import I_LOVE_NLP, AttentionResult, scaled_dot_product_attention

#: Largest coordinate a learner may set; beyond it the numbers stop being instructive.
MAX_ABS_COORD = 1e6

#: Presentation choices; the first of each is the default.
MODES = ("normal", "projector")
THEMES = ("light", "dark")
#: The recipe's steps, in the order a guided walk-through reveals them.
STEPS = ("score", "normalise", "combine")


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

    # -- Classroom presentation: how the page shows the numbers, not what they are. --
    mode = param.Selector(default="normal", objects=list(MODES), doc="'projector': large text, thick marks.")
    theme = param.Selector(default="light", objects=list(THEMES), doc="Page and figure colours.")
    guided = param.Boolean(default=False, doc="Step-through: hide the numbers of steps not yet reached.")
    step = param.Integer(default=1, bounds=(1, len(STEPS)), doc="Guided step: 1 score, 2 normalise, 3 combine.")
    notice = param.String(default="", doc="Which parts of the page address were ignored, and why.")

    result = param.ClassSelector(class_=AttentionResult, constant=True, doc="Core output for `queries`.")

    def __init__(self, **params):
        super().__init__(**params)
        self._recompute()

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

    def revealed(self, step: int) -> bool:
        """Whether the numbers of recipe step ``step`` (1 score, 2 normalise, 3 combine) are shown.

        Outside guided mode everything is; in guided mode, steps up to the current one.
        """
        return not self.guided or step <= self.step

    def next_step(self) -> None:
        """Reveal the next step; the first call starts guided mode at step 1."""
        if not self.guided:
            self.param.update(guided=True, step=1)
        elif self.step < len(STEPS):
            self.step += 1

    def previous_step(self) -> None:
        """Hide the current step again (no-op at step 1 or outside guided mode)."""
        if self.guided and self.step > 1:
            self.step -= 1

    @param.depends("selected", watch=True)
    def _restart_steps(self):
        # A new query is a new prediction: the class starts again from its scores.
        if self.guided:
            self.step = 1

    def reset(self) -> None:
        """Restore the course example: query of "love", scaling on (mode and theme are kept)."""
        self.param.update(
            step=1,
            tokens=list(I_LOVE_NLP.tokens),
            keys=I_LOVE_NLP.keys.copy(),
            values=I_LOVE_NLP.values.copy(),
            selected=1,
            query=(0.0, 1.0),
            scale=True,
            message="",
        )


def show_step(shown, placeholders, revealed: bool) -> None:
    """Step-through in a figure: show the renderers ``shown`` and hide their ``placeholders`` once revealed.

    Only ``visible`` flags change; the data sources stay as they are.
    """
    for r in shown:
        r.visible = revealed
    for r in placeholders:
        r.visible = not revealed
