"""The page address as a shareable set-up: ``?q=0.1,1&row=love&mode=projector&step=2&theme=dark``.

Beyond the view it carries the example itself when it is not the default one:
``preset``, the edited ``tokens``, ``keys`` and ``values`` (rows separated by ``;``,
coordinates by ``,``) and the switches ``scale=off``, ``causal=on``, ``trap=on``.
A room's presenter link is a reload of the page (widgets/room.py), possibly on
another server process, so everything a presenter shares must survive it.

Reading is strict: each argument is checked on its own; a bad one is ignored
(its default stays) and named in a notice, so a mistyped link still opens a
working page. Writing produces the arguments that restore the current view
exactly (q is written with ``repr``, the shortest text that reads back to the
same float).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from core import I_LOVE_NLP, PRESETS
from session.heads import (
    COST_SIZES,
    DEFAULT_PROJECTIONS,
    DEFAULT_TEMPERATURE,
    DEFAULT_W_O,
    MAX_HEADS,
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    ROLES,
    default_w_o,
)
from session.i18n import LANGUAGES, N_, languages, ngettext
from session.inputs import MAX_ABS_COORD, parse_coordinate, shown
from session.lesson import HEADERS, parse_tabs
from session.model import MODEL_ARGUMENTS, model_address, parse_model_address
from session.state import (
    CUSTOM,
    DEFAULT_PRESET,
    MAX_TOKEN_CHARS,
    MAX_TOKENS,
    MIN_TOKENS,
    MODES,
    STEPS,
    THEMES,
    TOKEN_NAME,
    AttentionState,
)
from session.training import TRAIN_ARGUMENTS, parse_train_address, train_address

#: The Projections and Heads tabs' arguments: X, the heads' projections (``wq1`` is head 1's W_Q, rows
#: separated by ``;``), their number and the one shown, W_O, the temperature, the n of the n² cost and the seed
#: of the last random draw. Each is written only when it is not the page's default.
PROJECTION_ARGUMENTS = ("embeddings", "heads", "head",
                        *(f"w{role[-1].lower()}{h}" for h in range(1, MAX_HEADS + 1) for role in ROLES),
                        "wo", "temperature", "n", "seed")
#: The state params those arguments hold: the address is written again when one changes.
HEAD_ARGUMENT_PARAMS = ("embeddings", "projections", "heads", "head", "w_o", "temperature", "cost_n",
                        "projection_seed")
#: Query arguments the page understands, in the order they are written.
ARGUMENTS = ("preset", "tokens", "keys", "values", "scale", "causal", "trap", "q", "row", "step", "mode", "theme",
             "lang", "tabs", "header", *PROJECTION_ARGUMENTS, *TRAIN_ARGUMENTS, *MODEL_ARGUMENTS)
#: The largest seed the address takes (a NumPy seed can be larger; no page draws that many times).
MAX_SEED = 2 ** 31 - 1
#: The switches and the word for each of their states.
SWITCHES = {"scale": ("off", "on"), "causal": ("off", "on"), "trap": ("off", "on")}
#: Arguments that belong to a room (widgets/room.py reads them); the address leaves them alone.
ROOM_ARGUMENTS = ("room", "token")
#: The query plot's visible plane (see link.rules.PLANE): where the arrow keys move q. A q typed in the
#: editor may lie anywhere within ±MAX_ABS_COORD, and so may the address's.
Q_RANGE = (-1.5, 2.5)


def _text(raw) -> str:
    if isinstance(raw, (list, tuple)):
        raw = raw[-1] if raw else ""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return str(raw)


_quote = shown  # the value as the notice shows it: quoted, shortened, plain text (the notice never renders HTML)


def _and(names: list[str]):
    """``keys and values``, with the page's word for "and"."""
    out = names[0]
    for name in names[1:]:
        out = N_("{a} and {b}", a=out, b=name)
    return out


def parse_address(args: Mapping[str, Iterable], tokens: list[str], tab_names: Sequence[str] = ()
                  ) -> tuple[dict, list[str]]:
    """Settings for :class:`AttentionState` from the page's query arguments.

    Parameters
    ----------
    args : mapping of str to list of bytes or str
        Query arguments as the server receives them (``pn.state.session_args``);
        when an argument is repeated, the last value counts.
    tokens : list of str
        The sentence's tokens; ``row`` must name one of them (case-insensitive).
    tab_names : sequence of str
        The page's tabs by name, in order (``app.TABS``); ``tabs`` chooses among them (session/lesson.py).

    Returns
    -------
    settings : dict
        Only the valid settings, as state parameter names: ``preset``, ``tokens``,
        ``keys`` and ``values`` (arrays), ``scale``, ``causal``, ``trap``, ``query``
        (x, y), ``selected`` (row index), ``guided`` and ``step``, ``mode``, ``theme``, ``tabs``, ``header``.
    problems : list of str
        One sentence per ignored argument; empty when all were valid.

    Examples
    --------
    >>> parse_address({"q": [b"0.1,1"], "row": [b"NLP"], "step": [b"2"]}, ["I", "love", "NLP"])
    ({'query': (0.1, 1.0), 'selected': 2, 'guided': True, 'step': 2}, [])
    >>> parse_address({"q": [b"nan,1"], "zoom": [b"3"]}, ["I", "love", "NLP"])[1]
    ["q = 'nan,1' ignored: two numbers separated by ',', each within ±1e+06.", "unknown argument 'zoom' ignored."]
    """
    settings: dict = {}
    problems: list[str] = []
    values_of = {name: _text(raw).strip() for name, raw in args.items()}
    data, data_problems = _parse_data(values_of, tokens)
    settings.update(data)
    problems += data_problems
    heads, heads_problems = _parse_heads(values_of)
    settings.update(heads)
    problems += heads_problems
    training, training_problems = parse_train_address(values_of)
    if training:
        settings["training"] = training  # the Train tab's settings and step (session/training.py)
    problems += training_problems
    model, model_problems = parse_model_address(values_of)  # the Model tab's (session/model.py)
    settings.update(model)
    problems += model_problems
    tokens = settings.get("tokens", tokens)
    for name, value in values_of.items():
        if name in ("preset", "tokens", "keys", "values", *PROJECTION_ARGUMENTS, *TRAIN_ARGUMENTS, *MODEL_ARGUMENTS):
            continue  # read above, together
        if name in SWITCHES:
            words = SWITCHES[name]
            if value in words:
                settings[name] = value == words[1]
            else:
                problems.append(N_("{name} = {value} ignored: choose {a} or {b}.", name=name, value=_quote(value),
                                   a=words[0], b=words[1]))
        elif name == "q":
            try:
                parts = [parse_coordinate(c) for c in value.split(",")]
            except ValueError:
                parts = []
            if len(parts) == 2:
                settings["query"] = (parts[0], parts[1])
            else:
                problems.append(N_("q = {value} ignored: two numbers separated by ',', each within ±{limit}.",
                                   value=_quote(value), limit=f"{MAX_ABS_COORD:g}"))
        elif name == "row":
            # the name as written first (tokens "love" and "LOVE" may both exist), then any case if only one fits
            matches = [i for i, t in enumerate(tokens) if t == value] or [
                i for i, t in enumerate(tokens) if t.casefold() == value.casefold()]
            if len(matches) == 1:
                settings["selected"] = matches[0]
            else:
                problems.append(N_("row = {value} ignored: choose one of {tokens}.", value=_quote(value),
                                   tokens=", ".join(tokens)))
        elif name == "step":
            if value in {str(i) for i in range(1, len(STEPS) + 1)}:
                settings.update(guided=True, step=int(value))
            else:
                problems.append(N_("step = {value} ignored: choose 1, 2 or 3.", value=_quote(value)))
        elif name in ("mode", "theme"):
            allowed = MODES if name == "mode" else THEMES
            if value in allowed:
                settings[name] = value
            else:
                problems.append(N_("{name} = {value} ignored: choose {a} or {b}.", name=name, value=_quote(value),
                                   a=allowed[0], b=allowed[1]))
        elif name == "lang":
            if value.lower() in languages():  # a language tag is case-insensitive (BCP 47): ?lang=FR is French
                settings["lang"] = value.lower()
            else:
                problems.append(N_("lang = {value} ignored: choose one of {choices}.", value=_quote(value),
                                   choices=", ".join(LANGUAGES)))
        elif name == "tabs":
            tabs, tabs_problems = parse_tabs(value, tab_names)
            settings["tabs"] = tabs
            problems += tabs_problems
        elif name == "header":
            if value.casefold() in HEADERS:
                settings["header"] = value.casefold()
            else:
                problems.append(N_("{name} = {value} ignored: choose {a} or {b}.", name=name, value=_quote(value),
                                   a=HEADERS[0], b=HEADERS[1]))
        elif name not in ROOM_ARGUMENTS:
            problems.append(N_("unknown argument {name} ignored.", name=_quote(name)))
    return settings, problems


def _rows(value: str, width: tuple[int, ...]) -> np.ndarray:
    """Rows of numbers, ``1,0;0,1``: each row ``width`` long (one of them, the same for all); ValueError if not."""
    rows = [[parse_coordinate(c) for c in row.split(",")] for row in value.split(";")]
    lengths = {len(r) for r in rows}
    if len(lengths) != 1 or lengths.pop() not in width:
        raise ValueError("rows of different or wrong lengths")
    return np.array(rows, dtype=np.float64)


def _pairs(value: str, n: int) -> np.ndarray | None:
    """``n`` rows of two numbers (``x,y;x,y``), or None for anything else."""
    try:
        rows = _rows(value, (2,))
    except ValueError:
        return None
    return rows if len(rows) == n else None


def preset_slug(name: str) -> str:
    """The short name of a preset for an address: ``module-2`` for "Module 2: vector values"."""
    return "-".join(name.split(":")[0].casefold().split())


def _parse_data(values_of: dict[str, str], tokens: list[str]) -> tuple[dict, list[str]]:
    """``preset``, ``tokens``, ``keys``, ``values``: settings and problems, checked against each other.

    Missing data comes from the preset (the address's, else the default one); keys and values need one
    row per token. Without ``tokens`` the rows are counted against ``tokens``, the page's own. The three
    describe one example together: if any of them is bad, none is applied (keys meant for other tokens
    would give numbers that belong to no view).
    """
    settings: dict = {}
    problems: list[str] = []
    base = None
    if "preset" in values_of:
        value = values_of["preset"]
        names = [n for n in PRESETS if value.casefold() in (n.casefold(), preset_slug(n))]
        if names:
            settings["preset"] = names[0]
            base = PRESETS[names[0]]
        else:
            problems.append(N_("preset = {value} ignored: choose one of {choices}.", value=_quote(value),
                               choices="; ".join(PRESETS)))
    n_before = n = len(base.tokens) if base is not None else len(tokens)
    data: dict = {}
    bad: list[str] = []
    if "tokens" in values_of:
        value = values_of["tokens"]
        names = [t.strip() for t in value.split(";")]
        if (MIN_TOKENS <= len(names) <= MAX_TOKENS and len(set(names)) == len(names)
                and all(t and len(t) <= MAX_TOKEN_CHARS and TOKEN_NAME.match(t) for t in names)):
            data["tokens"] = names
            n = len(names)
        else:
            bad.append(N_("tokens = {value} is not {low} to {high} different names separated by ';', each up to "
                          "{chars} letters, digits, spaces or . , ! ? ' -.", value=_quote(value), low=MIN_TOKENS,
                          high=MAX_TOKENS, chars=MAX_TOKEN_CHARS))
    for name, width, what in (("keys", (2,), N_("two numbers")), ("values", (1, 2), N_("one or two numbers"))):
        if name not in values_of:
            continue
        value = values_of[name]
        try:
            rows = _rows(value, width)
        except ValueError:
            rows = None
        if rows is not None and len(rows) == n:
            data[name] = rows[:, 0] if name == "values" and rows.shape[1] == 1 else rows
        else:
            bad.append(N_("{name} = {value} is not {n} rows separated by ';', each {what} separated by ',', within "
                          "±{limit}.", name=name, value=_quote(value), n=n, what=what, limit=f"{MAX_ABS_COORD:g}"))
    missing = [name for name in ("keys", "values") if name not in values_of]
    if "tokens" in data and missing and n != n_before:
        # the rows not given come from the preset or the page, which have another number of tokens
        bad.append(N_("tokens = {value}: {n} tokens need {missing} with one row each.",
                      value=_quote(values_of["tokens"]), n=n, missing=_and(missing)))
    given = [name for name in ("tokens", "keys", "values") if name in values_of]
    if bad:
        problems.append(N_("{given} ignored, the example's own used instead: {why}", given=_and(given), why=bad))
    else:
        settings.update(data)
    return settings, problems


def _parse_heads(values_of: dict[str, str]) -> tuple[dict, list[str]]:
    """The Projections and Heads tabs' arguments (:data:`PROJECTION_ARGUMENTS`): settings and problems.

    Each is checked on its own and ignored with a notice when bad; ``head`` and ``wo`` are checked against
    ``heads`` (the address's, else one). The settings are state param names: ``embeddings``, ``projections``
    (the whole (MAX_HEADS, 3, 2, 2) array, the defaults where no ``wq1`` … is given), ``heads``, ``head``
    (0-based), ``w_o``, ``temperature``, ``cost_n``, ``projection_seed``.
    """
    settings: dict = {}
    problems: list[str] = []
    if "embeddings" in values_of:
        value = values_of["embeddings"]
        rows = _pairs(value, len(I_LOVE_NLP.tokens))
        if rows is not None:
            settings["embeddings"] = rows
        else:
            problems.append(N_("embeddings = {value} ignored: 3 rows separated by ';', each two numbers separated by "
                               "',', within ±{limit}.", value=_quote(value), limit=f"{MAX_ABS_COORD:g}"))
    heads = 1
    if "heads" in values_of:
        value = values_of["heads"]
        if value in {str(h) for h in range(1, MAX_HEADS + 1)}:
            heads = settings["heads"] = int(value)
        else:
            problems.append(N_("heads = {value} ignored: choose 1 to {limit}.", value=_quote(value), limit=MAX_HEADS))
    if "head" in values_of:
        value = values_of["head"]
        if value in {str(h) for h in range(1, heads + 1)}:
            settings["head"] = int(value) - 1
        else:
            problems.append(ngettext("head = {value} ignored: there is {n} head, 1.",
                                     "head = {value} ignored: choose one of the {n} heads, 1 to {n}.", heads,
                                     value=_quote(value)))
    projections = np.array(DEFAULT_PROJECTIONS)
    for h in range(MAX_HEADS):
        for k, role in enumerate(ROLES):
            name = f"w{role[-1].lower()}{h + 1}"
            if name not in values_of:
                continue
            value = values_of[name]
            rows = _pairs(value, 2)
            if rows is not None:
                projections[h, k] = rows
                settings["projections"] = projections
            else:
                problems.append(N_("{name} = {value} ignored: head {head}'s {role} is 2 rows separated by ';', "
                                   "each two numbers separated by ',', within ±{limit}.", name=name,
                                   value=_quote(value), head=h + 1, role=role, limit=f"{MAX_ABS_COORD:g}"))
    if "wo" in values_of:
        value = values_of["wo"]
        rows = _pairs(value, 2 * heads)
        if rows is not None:
            settings["w_o"] = rows
        else:
            problems.append(ngettext("wo = {value} ignored: W_O of {n} head is {rows} rows separated by ';', each "
                                     "two numbers separated by ',', within ±{limit}.",
                                     "wo = {value} ignored: W_O of {n} heads is {rows} rows separated by ';', each "
                                     "two numbers separated by ',', within ±{limit}.", heads, value=_quote(value),
                                     rows=2 * heads, limit=f"{MAX_ABS_COORD:g}"))
    if "heads" in settings and "w_o" not in settings:
        settings["w_o"] = default_w_o(heads)
    if "temperature" in values_of:
        value = values_of["temperature"]
        try:
            t = parse_coordinate(value)
        except ValueError:
            t = None
        if t is not None and MIN_TEMPERATURE <= t <= MAX_TEMPERATURE:
            settings["temperature"] = t
        else:
            problems.append(N_("temperature = {value} ignored: a number from {low} to {high}.", value=_quote(value),
                               low=f"{MIN_TEMPERATURE:g}", high=f"{MAX_TEMPERATURE:g}"))
    if "n" in values_of:
        value = values_of["n"]
        if value in {str(n) for n in COST_SIZES}:
            settings["cost_n"] = int(value)
        else:
            problems.append(N_("n = {value} ignored: choose one of {choices}.", value=_quote(value),
                               choices=", ".join(map(str, COST_SIZES))))
    if "seed" in values_of:
        value = values_of["seed"]
        if value.isascii() and value.isdigit() and len(value) <= 10 and int(value) <= MAX_SEED:
            settings["projection_seed"] = int(value)
        else:
            problems.append(N_("seed = {value} ignored: a whole number from 0 to {limit}.", value=_quote(value),
                               limit=MAX_SEED))
    return settings, problems


def apply_address(state: AttentionState, args: Mapping[str, Iterable], tab_names: Sequence[str] = ()) -> None:
    """Set ``state`` from the page's query arguments; bad ones go to ``state.notice``.

    ``tab_names``: the page's tabs by name, for a lesson link's ``tabs`` (see :func:`parse_address`).

    The preset is loaded first, then edited data replaces its own (the preset
    becomes Custom) and the switches are set; then the row is selected (which
    moves q to that token's own query and restarts the steps), and q and the
    step are applied on top of it.
    """
    settings, problems = parse_address(args, list(state.tokens), tab_names)
    if "preset" in settings:
        state.preset = settings.pop("preset")
    data = {name: settings.pop(name) for name in ("tokens", "keys", "values") if name in settings}
    if data:
        n = len(data.get("tokens", state.tokens))
        keys = data.get("keys", state.keys)
        row = state.selected if state.selected < n else 0
        state.param.update(**data, preset=CUSTOM, selected=row, query=tuple(float(c) for c in keys[row]))
    state.param.update(**{name: settings.pop(name) for name in SWITCHES if name in settings})
    if "selected" in settings:
        state.select_row(settings.pop("selected"))
    if "query" in settings:
        state.move_query(*settings.pop("query"))
    heads = {name: settings.pop(name) for name in HEAD_ARGUMENT_PARAMS if name in settings}
    for name in ("embeddings", "projections", "w_o"):
        if name in heads:  # the state's arrays are read-only: it replaces them, never writes into them
            heads[name] = np.array(heads[name], dtype=np.float64)
            heads[name].setflags(write=False)
    state.param.update(**heads)
    if "training" in settings:
        state.training.apply_view(settings.pop("training"))
    if "lang" in settings:
        state.lang_chosen = True
    state.param.update(**settings)
    state.notice = (N_("Some of the page address was ignored, defaults are used instead: {problems}",
                       problems=problems) if problems else "")


def address_of(state: AttentionState) -> dict[str, str]:
    """The query arguments that reopen ``state``'s view (``step`` only in guided mode).

    >>> address_of(AttentionState())
    {'q': '0.0,1.0', 'row': 'love', 'mode': 'normal', 'theme': 'light'}
    """
    out = {}
    if state.origin != DEFAULT_PRESET:
        out["preset"] = state.origin
    if state.preset == CUSTOM:
        out.update(tokens=";".join(state.tokens), keys=_write_rows(state.keys), values=_write_rows(state.values))
    for name, words in SWITCHES.items():
        if getattr(state, name) != AttentionState.param[name].default:
            out[name] = words[getattr(state, name)]
    x, y = (float(c) for c in state.query)
    out.update(q=f"{x!r},{y!r}", row=state.tokens[state.selected])
    if state.guided:
        out["step"] = str(state.step)
    out.update(mode=state.mode, theme=state.theme)
    # a language the learner chose (menu or link) travels with the link; their browser's own is each reader's
    if state.lang_chosen:
        out["lang"] = state.lang
    if state.tabs:  # a lesson link's: kept through reloads, shares and Present
        out["tabs"] = ",".join(state.tabs)
    if state.header != AttentionState.param.header.default:
        out["header"] = state.header
    out.update(_heads_address(state))
    out.update(train_address(state.training))
    out.update(model_address(state))
    return out


def _heads_address(state: AttentionState) -> dict[str, str]:
    """The Projections and Heads tabs' arguments that differ from the page's defaults."""
    # identity first: until the learner edits them, the state holds the very default arrays (every address
    # written during a page's life goes through here)
    out = {}
    if state.embeddings is not I_LOVE_NLP.keys and not np.array_equal(state.embeddings, I_LOVE_NLP.keys):
        out["embeddings"] = _write_rows(state.embeddings)
    if state.heads != 1:
        out["heads"] = str(state.heads)
    if state.head != 0:
        out["head"] = str(state.head + 1)
    P = state.projections
    if P is not DEFAULT_PROJECTIONS:  # the same object until the first edit: nothing to compare
        for h in range(state.heads):
            for k, role in enumerate(ROLES):
                if not np.array_equal(P[h, k], DEFAULT_PROJECTIONS[h, k]):
                    out[f"w{role[-1].lower()}{h + 1}"] = _write_rows(P[h, k])
    w_o = DEFAULT_W_O if state.heads == 1 else default_w_o(state.heads)
    if state.w_o is not w_o and not np.array_equal(state.w_o, w_o):
        out["wo"] = _write_rows(state.w_o)
    if state.temperature != DEFAULT_TEMPERATURE:
        out["temperature"] = repr(float(state.temperature))
    if state.cost_n != AttentionState.param.cost_n.default:
        out["n"] = str(state.cost_n)
    if state.projection_seed:
        out["seed"] = str(state.projection_seed)
    return out


def _write_rows(array) -> str:
    """``1.0,0.0;0.0,1.0``: each number as ``repr`` writes it, the shortest text that reads back to the same float."""
    rows = np.asarray(array, dtype=np.float64).reshape(len(array), -1)
    return ";".join(",".join(repr(float(c)) for c in row) for row in rows)
