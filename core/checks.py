"""What the core and the session take as a number: Python's or NumPy's, never a bool.

``True`` is 1 to Python (``bool`` is a subclass of ``int``), so ``isinstance(True, int)`` holds; a bool is never a
count, a seed, an index or a coordinate here, and every check below refuses it. NumPy's scalars are taken (a row
index read from an array is an ``np.int64``); ``np.bool_`` is neither.
"""

from __future__ import annotations

import numpy as np


def is_whole(x) -> bool:
    """Whether ``x`` is a whole number: an ``int`` or a NumPy integer, not a bool.

    >>> is_whole(3), is_whole(np.int64(3)), is_whole(True), is_whole(3.0)
    (True, True, False, False)
    """
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def is_real(x) -> bool:
    """Whether ``x`` is a real number: an ``int``, ``float`` or NumPy integer or floating scalar, not a bool (NaN
    and infinities are numbers here; the caller checks the range).

    >>> is_real(0.5), is_real(np.float32(0.5)), is_real(2), is_real(False), is_real("0.5")
    (True, True, True, False, False)
    """
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
