"""What a learner types, read into numbers or refused with a message the page shows in its language."""

from __future__ import annotations

import math
from collections.abc import Callable

from core.checks import is_real
from course.numbers import read_number, shown
from session.i18n import N_

__all__ = ["MAX_ABS_COORD", "parse_coordinate", "refuse", "set_typed", "shown", "why"]

#: Largest coordinate a learner may set; beyond it the numbers stop being instructive.
MAX_ABS_COORD = 1e6


def parse_coordinate(text, decimal: str = ".") -> float:
    """The number a learner typed, or ValueError saying why it cannot be a coordinate.

    Accepts ints, floats and text as :func:`course.numbers.read_number` reads it, the same in the editor, the
    page address and the Check tab: "1.5", " -2 ", "−2" (the minus sign), ".5", "5.", "3e-2", digits of any
    script or full-width ("１"), which mean the same digits, and the Arabic decimal separator ("0٫5"). Refuses
    empty text, anything else ("1_000", "1 000", "0x10", "inf", "nan"), ±inf and |x| > MAX_ABS_COORD.

    ``decimal`` is the decimal mark of the learner's language (``","``: "1,5" is 1.5 and "1.5" is refused with
    how to write it, since a German or French reader may mean 1.500 by it; ``"."``: "1,5" is refused likewise);
    the page address always uses ``"."``. The ValueError's argument is a :class:`~session.i18n.Text`, shown in
    each page's language.
    """
    if isinstance(text, str):
        x = float(read_number(text, decimal))
    elif not is_real(text):
        raise ValueError(N_("{text} is not a number", text=shown(text)))
    else:
        try:
            x = float(text)
        except OverflowError:  # a whole number past a float's range (10**400)
            x = math.inf
    if not math.isfinite(x):
        raise ValueError(N_("{text} is not a finite number", text=shown(text)))
    if abs(x) > MAX_ABS_COORD:
        raise ValueError(N_("{text} is outside ±{limit}", text=shown(text), limit=f"{MAX_ABS_COORD:g}"))
    return x


def why(exc: ValueError):
    """What a ValueError of :func:`parse_coordinate` says, still translatable (``str(exc)`` is English only)."""
    return exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)


def refuse(state, field: str, reason, shown_as=None) -> bool:
    """Say on ``state`` why an input was refused, change nothing else, and return False.

    ``field`` names the input for the views (``state.message_field``), ``shown_as`` for the learner (default:
    ``field``); ``reason`` is a translatable text.
    """
    state.param.update(message=N_("{field} refused: {why}. The last good value stays.",
                                  field=field if shown_as is None else shown_as, why=reason), message_field=field)
    return False


def set_typed(state, field: str, texts, change: Callable[..., bool]) -> bool:
    """Read each of ``texts`` as a coordinate in the page's language, then ``change(*numbers)``.

    The one shape of every setter of a typed or dragged number: parse, refuse with a message naming
    ``field`` (nothing else changes), or set. Returns ``change``'s answer, or False when refused.
    """
    try:
        numbers = [parse_coordinate(text, state.tr.decimal) for text in texts]
    except ValueError as exc:
        return refuse(state, field, why(exc))
    return change(*numbers)
