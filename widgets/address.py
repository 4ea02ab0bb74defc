"""The page address as a shareable set-up: ``?q=0.1,1&row=love&mode=projector&step=2&theme=dark``.

Reading is strict: each argument is checked on its own; a bad one is ignored
(its default stays) and named in a notice, so a mistyped link still opens a
working page. Writing produces the arguments that restore the current view
exactly (q is written with ``repr``, the shortest text that reads back to the
same float).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from widgets.state import MODES, STEPS, THEMES, AttentionState

#: Query arguments the page understands, in the order they are written.
ARGUMENTS = ("q", "row", "step", "mode", "theme")
#: Arguments that belong to a room (widgets/follow.py reads them); the address leaves them alone.
ROOM_ARGUMENTS = ("room", "token")
#: Where a shared q may lie: the query plot's visible plane (see widgets.query_plot.PLANE).
Q_RANGE = (-1.5, 2.5)
_SHOWN = 40  # characters of a bad value quoted back in the notice


def _text(raw) -> str:
    if isinstance(raw, (list, tuple)):
        raw = raw[-1] if raw else ""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return str(raw)


def _quote(value: str) -> str:
    """The value as the notice shows it: quoted, shortened, always plain text (the notice never renders HTML)."""
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "…")


def parse_address(args: Mapping[str, Iterable], tokens: list[str]) -> tuple[dict, list[str]]:
    """Settings for :class:`AttentionState` from the page's query arguments.

    Parameters
    ----------
    args : mapping of str to list of bytes or str
        Query arguments as the server receives them (``pn.state.session_args``);
        when an argument is repeated, the last value counts.
    tokens : list of str
        The sentence's tokens; ``row`` must name one of them (case-insensitive).

    Returns
    -------
    settings : dict
        Only the valid settings, as state parameter names: ``query`` (x, y),
        ``selected`` (row index), ``guided`` and ``step``, ``mode``, ``theme``.
    problems : list of str
        One sentence per ignored argument; empty when all were valid.

    Examples
    --------
    >>> parse_address({"q": [b"0.1,1"], "row": [b"NLP"], "step": [b"2"]}, ["I", "love", "NLP"])
    ({'query': (0.1, 1.0), 'selected': 2, 'guided': True, 'step': 2}, [])
    >>> parse_address({"q": [b"nan,1"], "zoom": [b"3"]}, ["I", "love", "NLP"])[1]
    ["q = 'nan,1' ignored: both coordinates must be numbers from -1.5 to 2.5.", "unknown argument 'zoom' ignored."]
    """
    settings: dict = {}
    problems: list[str] = []
    lo, hi = Q_RANGE
    for name, raw in args.items():
        value = _text(raw).strip()
        if name == "q":
            try:
                parts = [float(c) for c in value.split(",")]
            except ValueError:
                parts = []
            if len(parts) == 2 and all(math.isfinite(c) and lo <= c <= hi for c in parts):
                settings["query"] = (parts[0], parts[1])
            else:
                problems.append(f"q = {_quote(value)} ignored: both coordinates must be numbers from {lo:g} to {hi:g}.")
        elif name == "row":
            matches = [i for i, t in enumerate(tokens) if t.casefold() == value.casefold()]
            if matches:
                settings["selected"] = matches[0]
            else:
                problems.append(f"row = {_quote(value)} ignored: choose one of {', '.join(tokens)}.")
        elif name == "step":
            if value in {str(i) for i in range(1, len(STEPS) + 1)}:
                settings.update(guided=True, step=int(value))
            else:
                problems.append(f"step = {_quote(value)} ignored: choose 1, 2 or 3.")
        elif name in ("mode", "theme"):
            allowed = MODES if name == "mode" else THEMES
            if value in allowed:
                settings[name] = value
            else:
                problems.append(f"{name} = {_quote(value)} ignored: choose {' or '.join(allowed)}.")
        elif name not in ROOM_ARGUMENTS:
            problems.append(f"unknown argument {_quote(name)} ignored.")
    return settings, problems


def apply_address(state: AttentionState, args: Mapping[str, Iterable]) -> None:
    """Set ``state`` from the page's query arguments; bad ones go to ``state.notice``.

    The row is selected first (which moves q to that token's own query and
    restarts the steps), then q and the step are applied on top of it.
    """
    settings, problems = parse_address(args, list(state.tokens))
    if "selected" in settings:
        state.select_row(settings.pop("selected"))
    if "query" in settings:
        state.move_query(*settings.pop("query"))
    state.param.update(**settings)
    state.notice = ("Some of the page address was ignored, defaults are used instead: " + " ".join(problems)
                    if problems else "")


def address_of(state: AttentionState) -> dict[str, str]:
    """The query arguments that reopen ``state``'s view (``step`` only in guided mode).

    >>> address_of(AttentionState())
    {'q': '0.0,1.0', 'row': 'love', 'mode': 'normal', 'theme': 'light'}
    """
    x, y = (float(c) for c in state.query)
    out = {"q": f"{x!r},{y!r}", "row": state.tokens[state.selected]}
    if state.guided:
        out["step"] = str(state.step)
    out.update(mode=state.mode, theme=state.theme)
    return out
