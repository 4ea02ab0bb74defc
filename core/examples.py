"""The course's running example, the three-token sentence "I love NLP", and its presets.

Each token's query equals its key (self-attention with identity projections), so
the 3x3 attention matrix has one row per token. Arrays are read-only: the app
copies them into each session's state and never changes them in place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Example", "I_LOVE_NLP", "MODULE_2", "PRESETS", "D_K"]


def _frozen(rows) -> np.ndarray:
    a = np.array(rows, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Example:
    """A sentence with its keys and values.

    Attributes
    ----------
    tokens : tuple of str, length n
    keys : (n, d_k) float64, read-only; also the tokens' queries
    values : (n,) or (n, d_v) float64, read-only
    """

    tokens: tuple[str, ...]
    keys: np.ndarray
    values: np.ndarray


#: "I love NLP" with scalar values (course text, Section 6).
I_LOVE_NLP = Example(
    tokens=("I", "love", "NLP"),
    keys=_frozen([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
    values=_frozen([2.0, 6.0, 4.0]),
)

D_K = I_LOVE_NLP.keys.shape[1]

#: "I love NLP" with vector values (course text, Module 2): Q = K, V : (3, 2), d_v = 2.
#: Its weights equal the scalar preset's; row "I" gives output (6.0167, 3.9833).
MODULE_2 = Example(
    tokens=("I", "love", "NLP"),
    keys=_frozen([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
    values=_frozen([[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]]),
)

#: The explorer's presets by the name the learner picks; the first is the default.
PRESETS: dict[str, Example] = {
    "Section 6: scalar values": I_LOVE_NLP,
    "Module 2: vector values": MODULE_2,
}
