"""A teacher's lesson link: ``?tabs=weights,matrix,steps,check&header=simple``.

``tabs`` names the tabs a class sees, by names that are the same in every language (the table of tabs is
``app.TABS``: a new tab adds its row there). The tabs keep the page's own order whatever the link's order,
so every lesson reads the explorer the same way and a teacher never has to think about it; a name given
twice counts once. ``header=simple`` takes the Projector and Dark switches out of the header: a lesson link
can carry ``mode`` and ``theme`` itself, so a class has nothing to set there. The title, Full screen, the
language menu, Reset example and Present stay: every learner needs the first four, and the teacher presents
from the very link the class has (a learner who presses Present only makes a room of their own).
"""

from __future__ import annotations

from collections.abc import Sequence

from course.numbers import shown
from course.text import N_, Text

#: The header's looks: every control, or the lesson's simple one.
HEADERS = ("full", "simple")


def parse_tabs(value: str, names: Sequence[str]) -> tuple[list[str], list[Text]]:
    """The tabs ``tabs=value`` asks for, in the page's order, and a notice for names that are not tabs.

    Parameters
    ----------
    value : str
        The argument as written: names separated by ``,``, in any case, spaces around them ignored.
    names : sequence of str
        The page's tab names, in the page's order.

    Returns
    -------
    tabs : list of str
        The known names asked for, each once, in the order of ``names``; empty (every tab) when none is
        known or the value is empty.
    problems : list of Text
        One sentence naming the unknown names, or nothing.

    Examples
    --------
    >>> parse_tabs("Check, weights,weights", ["weights", "matrix", "check"])
    (['weights', 'check'], [])
    >>> parse_tabs("weights,zoom", ["weights", "check"])[1]
    ["tabs = 'weights,zoom': unknown tab names left out: 'zoom'. The tabs are weights, check."]
    """
    asked = {part.strip().casefold() for part in value.split(",")} - {""}
    unknown = sorted(asked.difference(names))
    problems = []
    if unknown:
        # quoted and cut as every notice quotes a link's text: the link can be any length
        problems.append(N_("tabs = {value}: unknown tab names left out: {unknown}. The tabs are {choices}.",
                           value=shown(value), unknown=shown(",".join(unknown)), choices=", ".join(names)))
    return [name for name in names if name in asked], problems
