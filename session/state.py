"""One browser session's state: the single source of truth every view renders."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import param

from core import (
    I_LOVE_NLP,
    PRESETS,
    PREVIOUS_AND_SELF_2D,
    SECTION_6_2D,
    AttentionResult,
    MultiHeadResult,
    ScalingExperiment,
    SelfAttention,
    multi_head_attention,
    random_projections,
    scaled_dot_product_attention,
    scaling_experiment,
    scores_against_values,
    self_attention,
)
from core.cost import MAX_N, MIN_N
from core.projections import IDENTITY as IDENTITY_PROJECTION
from core.scaling import MAX_D_K
from course.numbers import read_number, shown
from session.i18n import LANGUAGES, N_, PSEUDO, Translator, translator
from session.training import TrainingState

#: Largest coordinate a learner may set; beyond it the numbers stop being instructive.
MAX_ABS_COORD = 1e6

#: Presentation choices; the first of each is the default.
MODES = ("normal", "projector")
THEMES = ("light", "dark")
#: The recipe's steps, in the order a guided walk-through reveals them.
STEPS = ("score", "normalise", "combine")
#: Preset names in the selector: the course's presets, then whatever the learner edits.
DEFAULT_PRESET = next(iter(PRESETS))
CUSTOM = "Custom"
# the names the page shows for core's presets (PRESETS) and for an edited example
N_("Custom"), N_("Section 6: scalar values"), N_("Module 2: vector values")
MIN_TOKENS, MAX_TOKENS = 2, 8
MAX_TOKEN_CHARS = 16
#: Token names are words: letters, digits, spaces and a little punctuation. Anything
#: else (<, >, &, quotes, backslashes, braces...) could be read as markup somewhere.
TOKEN_NAME = re.compile(r"^[\w .,!?'-]+$")


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
    elif isinstance(text, bool) or not isinstance(text, (int, float, np.integer, np.floating)):
        raise ValueError(N_("{text} is not a number", text=shown(text)))
    else:
        x = float(text)
    if not math.isfinite(x):
        raise ValueError(N_("{text} is not a finite number", text=shown(text)))
    if abs(x) > MAX_ABS_COORD:
        raise ValueError(N_("{text} is outside ±{limit}", text=shown(text), limit=f"{MAX_ABS_COORD:g}"))
    return x


def why(exc: ValueError):
    """What a ValueError of :func:`parse_coordinate` says, still translatable (``str(exc)`` is English only)."""
    return exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)


def set_together(obj: param.Parameterized, **values) -> None:
    """Set several params of ``obj`` as one change (watchers called once, after all are set).

    Like ``obj.param.update(**values)``, without the snapshot of every param's value that ``update`` takes so
    it can be undone: on the path of every drag position that snapshot was a tenth of the update's cost.
    """
    with param.parameterized.batch_call_watchers(obj):
        for name, value in values.items():
            setattr(obj, name, value)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b


# --- the Projections and Heads tabs: one sentence, its embeddings X and up to four heads ------------------
#: Their sentence, "I love NLP", with 2-D embeddings (d_model = 2) and d_k = d_v = 2 per head, so every
#: embedding, query, key and value is a point of a plane.
HEAD_TOKENS = I_LOVE_NLP.tokens
D_MODEL = HEAD_D_K = 2
MAX_HEADS = 4
#: A head's three projections, in the order of ``AttentionState.projections``' second axis.
ROLES = ("W_Q", "W_K", "W_V")
#: The temperatures a learner may set. At 0.01 the weights are one-hot to 4 decimals on these numbers, at 100
#: uniform; the default divides by sqrt(d_k), the paper's scaling.
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0
DEFAULT_TEMPERATURE = math.sqrt(HEAD_D_K)
#: Sentence lengths of the n² cost, 3 to 4096 (core.cost's range), doubling from 8.
COST_SIZES = (MIN_N, *(2 ** k for k in range(3, 13)))
assert COST_SIZES[-1] == MAX_N
#: The presets of the Projections tab, by the name the page shows; each sets X and the shown head.
PROJECTION_CHOICES = ("Q = K = V = X", "Section 6", "Random")


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _head_of(preset) -> np.ndarray:
    """(3, d_model, 2): a preset's W_Q, W_K, W_V stacked (W_V as (d_model, d_v = 2))."""
    return np.stack([preset.W_Q, preset.W_K, np.asarray(preset.W_V).reshape(D_MODEL, -1)])


def random_head(seed: int) -> np.ndarray:
    """(3, d_model, 2): W_Q, W_K, W_V drawn by :func:`core.random_projections` with ``seed`` (d_k = d_v = 2)."""
    return _head_of(random_projections(seed, d_k=HEAD_D_K, d_v=HEAD_D_K))


#: Every page's heads before any edit: head 1 projects nothing (Q = K = V = X); heads 2 to 4, used once the
#: learner asks for them, are random draws with seeds 1 to 3. Read-only (the state replaces, never writes).
DEFAULT_PROJECTIONS = _frozen([_head_of(IDENTITY_PROJECTION), *(random_head(i) for i in range(1, MAX_HEADS))])


def default_w_o(heads: int) -> np.ndarray:
    """W_O : (heads * d_v, d_model) that averages the heads' outputs: ``[I; I; ...] / heads``, read-only."""
    return _frozen(np.vstack([np.eye(D_MODEL) / heads] * heads))


DEFAULT_W_O = default_w_o(1)


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

    tokens = param.List(default=list(PRESETS[DEFAULT_PRESET].tokens), item_type=str, doc="Token of each row, as text.")
    keys = param.Array(default=PRESETS[DEFAULT_PRESET].keys.copy(), doc="K : (n, d_k); also each token's own query.")
    values = param.Array(default=PRESETS[DEFAULT_PRESET].values.copy(),
                         doc="V : (n,) one number per token, or (n, d_v) one vector per token.")
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
    lang = param.Selector(default="en", objects=[*LANGUAGES, PSEUDO], doc=(
        "The page's language (session/i18n.py): its words and how it writes and reads numbers. Each page's own, "
        "also in a room: a room shares the view, not the words."))

    result = param.ClassSelector(class_=AttentionResult, constant=True, doc="Core output for `queries`.")

    # --- presets, editing, trap, masking, the d_k experiment ----------------------------
    preset = param.Selector(default=DEFAULT_PRESET, objects=[*PRESETS, CUSTOM],
                            doc="Course example loaded into tokens/keys/values; Custom once the learner edits them.")
    causal = param.Boolean(default=False, doc="Causal mask: each query attends only to itself and earlier tokens.")
    trap = param.Boolean(default=False, doc="Also score the queries against the values instead of the keys.")
    message_field = param.String(default="", doc="Which field the `message` is about, e.g. 'k_love[2]'; empty if none.")
    # Derived, like `result`, but not `constant`: param.edit_constant flips the *class's*
    # constant flags, which is not safe with many sessions in one process. Only this
    # class writes them.
    trap_result = param.ClassSelector(class_=AttentionResult, allow_None=True,
                                      doc="Derived: softmax(Q V^T / sqrt(d_k)) V when `trap` is on and defined, else None.")
    trap_error = param.String(default="", doc="Derived: why scoring against the values is undefined, if it is.")
    dk_experiment = param.Integer(default=64, bounds=(1, MAX_D_K), doc="d_k of the random-vector experiment.")
    dk_seed = param.Integer(default=0, bounds=(0, None), doc="Seed of this session's random-vector draws.")
    scaling = param.ClassSelector(class_=ScalingExperiment, allow_None=True, doc=(
        "Derived: the d_k experiment's result, once a view has asked for it (require_scaling); None before: "
        "most pages never open the √d_k tab, and drawing 4096 random pairs costs every page build."))

    # --- the Projections and Heads tabs (widgets/projections.py, widgets/heads.py) ------------------------
    # Their own sentence, HEAD_TOKENS; the explorer's tokens, keys and values change only when the learner
    # shows a head there (show_head_in_explorer). Nothing here is computed until a view asks (head_attention).
    # instantiate=False: every page starts from the same read-only arrays (the state replaces them, never writes
    # into them), so a page costs no copies and an unedited page is told apart by identity (session/address.py)
    embeddings = param.Array(default=I_LOVE_NLP.keys, instantiate=False,
                             doc="X : (3, d_model = 2), one embedding per token.")
    projections = param.Array(default=DEFAULT_PROJECTIONS, instantiate=False, doc=(
        "(MAX_HEADS, 3, d_model, 2): head h's W_Q, W_K, W_V (ROLES) at [h, 0], [h, 1], [h, 2]; each maps an "
        "embedding (a row) to its query, key or value (d_k = d_v = 2). Heads past `heads` are kept for later."))
    heads = param.Integer(default=1, bounds=(1, MAX_HEADS), doc="How many heads the Heads tab runs.")
    head = param.Integer(default=0, bounds=(0, MAX_HEADS - 1), doc="The head the Projections tab shows (0-based).")
    w_o = param.Array(default=DEFAULT_W_O, instantiate=False,
                      doc="W_O : (heads * d_v, d_model), applied to the concatenated heads.")
    temperature = param.Number(default=DEFAULT_TEMPERATURE, bounds=(MIN_TEMPERATURE, MAX_TEMPERATURE), doc=(
        "T of the Projections and Heads tabs: their scores are q·k / T (sqrt(d_k) by default; the explorer "
        "keeps its own scaling switch)."))
    projection_seed = param.Integer(default=0, bounds=(0, None), doc="Seed of the last random projections drawn.")
    cost_n = param.Selector(default=256, objects=list(COST_SIZES), doc="n of the n² cost measurement.")
    training_view = param.Dict(default={}, doc=(
        "The Train tab's shared settings and step (session.training.TrainingState.view), kept by ``training``: "
        "what a room shares of it."))
    tabs = param.List(default=[], item_type=str, doc=(
        "A lesson link's tabs by name (session/lesson.py), in the page's order; empty: every tab."))
    header = param.Selector(default="full", objects=["full", "simple"], doc=(
        "'simple': a lesson link's header, without the Projector and Dark switches."))

    #: The params that make up the view a presenter shares with a room (see widgets/room.py). Every
    #: other param is the page's own (``LOCAL_PARAMS``); a new param must be added to exactly one list.
    SHARED_PARAMS = ("preset", "tokens", "keys", "values", "selected", "query", "scale", "causal", "trap",
                     "guided", "step", "dk_experiment", "dk_seed", "embeddings", "projections", "heads", "head", "w_o",
                     "temperature", "projection_seed", "cost_n", "training_view", "tabs", "header")
    #: Params never followed: derived ones, feedback about the page's own input or address, and the page's
    #: own look (a follower chooses projector mode and theme for their own screen).
    LOCAL_PARAMS = ("name", "message", "message_field", "notice", "result", "trap_result", "trap_error",
                    "scaling", "mode", "theme", "lang")

    #: Whether ``lang`` was chosen on the page or by its link (the address then keeps it), not by the browser.
    lang_chosen = False

    def __init__(self, **params):
        super().__init__(**params)
        self._head_result = None  # (X, projections, head, T, result) of the last head_self_attention
        #: The Train tab's own state (session/training.py); its shared part is mirrored in ``training_view``.
        self.training = TrainingState()
        self.training.param.watch(self._training_changed, [*TrainingState.SETTINGS, "step", "playing", "plays"])
        self.param.watch(self._training_view_changed, "training_view")
        self._training_changed()
        # The named preset that Reset returns to, even after edits made the preset Custom.
        self._origin = self.preset if self.preset != CUSTOM else DEFAULT_PRESET
        if "preset" in params and self.preset != CUSTOM:
            self._load_preset()
        self._recompute()

    def snapshot(self) -> dict:
        """A deep copy of the shared view: ``{name: value}`` for each of ``SHARED_PARAMS``."""
        values = self.param.values()
        return {name: copy.deepcopy(values[name]) for name in self.SHARED_PARAMS}

    def apply_snapshot(self, snapshot: dict) -> list[str]:
        """Take the shared view from ``snapshot``; returns the names that changed.

        Only names in ``SHARED_PARAMS`` are read; values equal to the current
        ones are skipped so the views re-render only what moved. ``preset`` goes
        first, on its own: choosing a preset loads its data, which the rest of
        the snapshot (edited vectors, the query, the row) then overrides.
        """
        changed = []
        for names in (("preset",), tuple(n for n in self.SHARED_PARAMS if n != "preset")):
            update = {n: copy.deepcopy(snapshot[n]) for n in names
                      if n in snapshot and not _same(getattr(self, n), snapshot[n])}
            if update:
                self.param.update(**update, message="")
                changed += list(update)
        return changed

    def _training_changed(self, *_) -> None:
        self.training_view = self.training.view()

    def _training_view_changed(self, event) -> None:
        if event.new != self.training.view():  # a presenter's view, or a snapshot: the Train tab takes it
            self.training.apply_view(event.new)

    @property
    def origin(self) -> str:
        """The named preset the data came from (and Reset returns to), also after edits made it Custom."""
        return self._origin

    @property
    def queries(self) -> np.ndarray:
        """Q : (n, d_k): each token's key as its query, the selected row replaced by ``query``."""
        Q = np.array(self.keys, dtype=np.float64)
        Q[self.selected] = self.query
        return Q

    @property
    def tr(self) -> Translator:
        """The page's language: its messages and number format (shared by every page in that language)."""
        return translator(self.lang)

    def _parse(self, text) -> float:
        """A number as the learner typed it, in their language's way of writing numbers."""
        return parse_coordinate(text, self.tr.decimal)

    @property
    def d_k(self) -> int:
        return int(np.shape(self.keys)[1])

    @property
    def mask(self) -> np.ndarray | None:
        """(n, n) bool, True where query i may attend to key j; None without the causal mask."""
        return np.tril(np.ones((len(self.tokens),) * 2, dtype=bool)) if self.causal else None

    @property
    def d_v(self) -> int:
        """Size of each value: 1 for scalar values."""
        return 1 if np.ndim(self.values) == 1 else int(np.shape(self.values)[1])

    @param.depends("tokens", "keys", "values", "selected", "query", "scale", "causal", "trap", watch=True)
    def _recompute(self):
        Q, mask = self.queries, self.mask
        # the page's switch is on/off; the core takes the factor itself (None: 1/sqrt(d_k))
        factor = None if self.scale else 1.0
        r = scaled_dot_product_attention(Q, self.keys, self.values, mask, scale=factor)
        trap_result, trap_error = None, ""
        if self.trap:
            try:
                trap_result = scores_against_values(Q, self.values, mask, scale=factor)
            except ValueError as exc:
                # core/ explains in English; the page says the same in the learner's language
                trap_error = (N_("q·v_i is not defined: each value v_i is a single number, while q is a vector of "
                                 "d_k = {d_k} numbers. A dot product needs two vectors of the same size.", d_k=self.d_k)
                              if np.ndim(self.values) == 1 else
                              N_("q·v_i is not defined: the values have d_v = {d_v} entries, the query has d_k = "
                                 "{d_k}. A dot product needs two vectors of the same size.", d_v=self.d_v,
                                 d_k=self.d_k)) if str(exc).startswith("q·v_i is not defined") else str(exc)
        # the trap first: views watching `result` then read a consistent trap_result
        if trap_result is not self.trap_result or trap_error != self.trap_error:
            set_together(self, trap_result=trap_result, trap_error=trap_error)
        with param.edit_constant(self):
            set_together(self, result=r)

    @param.depends("dk_experiment", "dk_seed", watch=True)
    def _run_experiment(self):
        if self.scaling is not None:  # someone shows it: keep it current
            self.scaling = scaling_experiment(self.dk_experiment, self.dk_seed)

    def require_scaling(self) -> ScalingExperiment:
        """The d_k experiment's result (``scaling``), computed now if no view had asked for it yet."""
        if self.scaling is None:
            self.scaling = scaling_experiment(self.dk_experiment, self.dk_seed)
        return self.scaling

    def move_query(self, x, y) -> bool:
        """Set q = (x, y) if both are finite numbers with |x|, |y| <= 1e6.

        Returns True if accepted. Otherwise nothing changes except ``message``.
        """
        try:
            q = (float(x), float(y))
        except (TypeError, ValueError):
            self.param.update(message=N_("Query refused: ({x}, {y}) are not numbers.", x=shown(x), y=shown(y)),
                              message_field="q")
            return False
        if not all(math.isfinite(c) and abs(c) <= MAX_ABS_COORD for c in q):
            self.param.update(message=N_("Query refused: coordinates must be finite and within ±{limit}.",
                                         limit=f"{MAX_ABS_COORD:g}"),
                              message_field="q")
            return False
        set_together(self, query=q, message="", message_field="")
        return True

    def select_row(self, row: int) -> None:
        """Select token ``row`` and move the query to that token's own query (its key)."""
        row = int(row)
        if not 0 <= row < len(self.tokens):
            self.param.update(message=N_("Row {row} does not exist: choose 0 to {last}.", row=row,
                                         last=len(self.tokens) - 1),
                              message_field="")
            return
        self.param.update(selected=row, query=tuple(float(c) for c in self.keys[row]), message="", message_field="")

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
        """Restore the current preset (the last named one after edits): query of "love", scaling on, no mask."""
        with param.parameterized.batch_call_watchers(self):
            self.param.update(preset=self._origin, scale=True, causal=False, trap=False, step=1)
            self._load_preset()

    # --- presets and editing ----------------------------------------------------------
    @param.depends("preset", watch=True)
    def _on_preset(self):
        if self.preset != CUSTOM:
            self._origin = self.preset
            self._load_preset()

    def _load_preset(self) -> None:
        ex = PRESETS[self._origin]
        self.param.update(tokens=list(ex.tokens), keys=ex.keys.copy(), values=ex.values.copy(), selected=1,
                          query=tuple(float(c) for c in ex.keys[1]), message="", message_field="")

    def _refuse(self, field: str, why, shown_as=None) -> bool:
        """Say why an input was refused; ``field`` names it for the views, ``shown_as`` for the learner."""
        self.param.update(message=N_("{field} refused: {why}. The last good value stays.",
                                     field=field if shown_as is None else shown_as, why=why), message_field=field)
        return False

    def _edited(self, **changes) -> bool:
        self.param.update(**changes, preset=CUSTOM, message="", message_field="")
        return True

    def key_field(self, row: int, axis: int) -> str:
        """Name of key coordinate field, e.g. ``k_love[1]`` (1-based axis, as in the course)."""
        return f"k_{self.tokens[row]}[{axis + 1}]"

    def value_field(self, row: int, axis: int = 0) -> str:
        return f"v_{self.tokens[row]}" + (f"[{axis + 1}]" if np.ndim(self.values) == 2 else "")

    def set_query_coordinate(self, axis: int, text) -> bool:
        """Set coordinate ``axis`` (0-based) of q from a number or typed text; refuse bad input."""
        field = f"q[{axis + 1}]"
        try:
            x = self._parse(text)
        except ValueError as exc:
            return self._refuse(field, why(exc))
        q = list(self.query)
        q[axis] = x
        self.param.update(query=tuple(q), message="", message_field="")
        return True

    def set_key(self, row: int, axis: int, text) -> bool:
        """Set coordinate ``axis`` of key ``row``; the preset becomes Custom. Refuses bad input."""
        field = self.key_field(row, axis)
        try:
            x = self._parse(text)
        except ValueError as exc:
            return self._refuse(field, why(exc))
        if x == self.keys[row, axis]:
            return True
        K = np.array(self.keys, dtype=np.float64)
        K[row, axis] = x
        return self._edited(keys=K)

    def move_key(self, row: int, x, y) -> bool:
        """Move key ``row`` to (x, y), as a drag does; the preset becomes Custom. Refuses bad input."""
        field = f"k_{self.tokens[row]}"
        try:
            k = (self._parse(x), self._parse(y))
        except ValueError as exc:
            return self._refuse(field, why(exc))
        K = np.array(self.keys, dtype=np.float64)
        K[row] = k
        return self._edited(keys=K)

    def set_value(self, row: int, axis: int, text) -> bool:
        """Set value ``row`` (coordinate ``axis`` for vector values); the preset becomes Custom."""
        field = self.value_field(row, axis)
        try:
            x = self._parse(text)
        except ValueError as exc:
            return self._refuse(field, why(exc))
        V = np.array(self.values, dtype=np.float64)
        if V.ndim == 1:
            V[row] = x
        else:
            V[row, axis] = x
        if np.array_equal(V, self.values):
            return True
        return self._edited(values=V)

    def rename_token(self, row: int, name) -> bool:
        """Rename token ``row``. Names are short words: HTML, markup and duplicates are refused."""
        field, label = f"name of token {row + 1}", N_("name of token {row}", row=row + 1)
        name = name.strip() if isinstance(name, str) else name
        if not isinstance(name, str) or not name:
            return self._refuse(field, N_("a token needs a name"), label)
        if not TOKEN_NAME.match(name):
            return self._refuse(field, N_("{name} may only use letters, digits, spaces and . , ! ? ' - (HTML and "
                                          "other markup are never accepted)", name=shown(name)), label)
        if len(name) > MAX_TOKEN_CHARS:
            return self._refuse(field, N_("{name} is longer than {limit} characters", name=shown(name),
                                          limit=MAX_TOKEN_CHARS), label)
        if name in self.tokens[:row] + self.tokens[row + 1:]:
            return self._refuse(field, N_("{name} is already a token", name=shown(name)), label)
        if name == self.tokens[row]:
            return True
        tokens = list(self.tokens)
        tokens[row] = name
        return self._edited(tokens=tokens)

    def add_token(self) -> bool:
        """Append a token with key (0, 0) and value 0 (up to 8 tokens)."""
        n = len(self.tokens)
        if n >= MAX_TOKENS:
            return self._refuse("tokens", N_("at most {limit} tokens", limit=MAX_TOKENS), N_("tokens"))
        name = next(f"t{i}" for i in range(n + 1, n + 2 + MAX_TOKENS) if f"t{i}" not in self.tokens)
        V = np.asarray(self.values, dtype=np.float64)
        with param.parameterized.batch_call_watchers(self):
            return self._edited(tokens=[*self.tokens, name], keys=np.vstack([self.keys, np.zeros(self.d_k)]),
                                values=np.concatenate([V, np.zeros((1,) + V.shape[1:])]))

    def remove_token(self, row: int) -> bool:
        """Remove token ``row`` (at least 2 stay). The selection follows its token, or moves to row 0."""
        n = len(self.tokens)
        if n <= MIN_TOKENS:
            return self._refuse("tokens", N_("at least {limit} tokens are needed", limit=MIN_TOKENS), N_("tokens"))
        if not 0 <= row < n:
            return self._refuse("tokens", N_("row {row} does not exist", row=row), N_("tokens"))
        keep = [i for i in range(n) if i != row]
        changes = dict(tokens=[self.tokens[i] for i in keep], keys=np.array(self.keys)[keep],
                       values=np.array(self.values)[keep])
        if row == self.selected:
            changes.update(selected=0, query=tuple(float(c) for c in changes["keys"][0]))
        elif row < self.selected:
            changes.update(selected=self.selected - 1)
        return self._edited(**changes)


    # --- the Projections and Heads tabs ----------------------------------------------------------------
    def head_attention(self) -> MultiHeadResult:
        """The heads in use on X at ``temperature``: ``multi_head_attention`` with every head's steps.

        Heads: Q, K, V : (3, 2) and weights (3, 3) each; concat (3, 2 * heads); output (3, d_model).
        """
        P, h = self.projections, self.heads
        return multi_head_attention(self.embeddings, P[:h, 0], P[:h, 1], P[:h, 2], self.w_o,
                                    temperature=self.temperature)

    def head_self_attention(self, head: int | None = None) -> SelfAttention:
        """Head ``head`` (default: the shown one) on X at ``temperature``: its Q, K, V : (3, 2) and every step."""
        head = self.head if head is None else head
        X, P, T = self.embeddings, self.projections, self.temperature
        # X and W are read-only arrays, replaced on every change: the same ones give the same result (a drag's
        # release asks for it twice, the view and the drag's answer)
        c = self._head_result
        if c is not None and c[0] is X and c[1] is P and c[2:4] == (head, T):
            return c[4]
        result = self_attention(X, P[head][0], P[head][1], P[head][2], temperature=T)
        self._head_result = (X, P, head, T, result)
        return result

    def embedding_field(self, row: int, axis: int | None = None) -> str:
        """``x_love`` or ``x_love[2]`` (1-based axis, as in the course)."""
        return f"x_{HEAD_TOKENS[row]}" + ("" if axis is None else f"[{axis + 1}]")

    def projection_field(self, role: int, row: int | None = None, col: int | None = None) -> str:
        """``W_Q``, ``W_Q[1,2]``; prefixed with the head (``head 2 W_Q[1,2]``) once there are several."""
        name = ROLES[role] + ("" if row is None else f"[{row + 1},{col + 1}]" if col is not None else f"[{row + 1}]")
        return name if self.heads == 1 else f"head {self.head + 1} {name}"

    def _projections_with(self, head: int, matrices) -> np.ndarray:
        P = np.array(self.projections, dtype=np.float64)
        P[head] = matrices
        return _frozen(P)

    def set_embedding(self, row: int, axis: int, text) -> bool:
        """Set coordinate ``axis`` of embedding ``row`` from typed text; refuses bad input with a message."""
        field = self.embedding_field(row, axis)
        try:
            x = self._parse(text)
        except ValueError as exc:
            return self._refuse(field, why(exc))
        X = np.array(self.embeddings, dtype=np.float64)
        X[row, axis] = x
        return self._heads_edited(embeddings=_frozen(X))

    def move_embedding(self, row: int, x, y) -> bool:
        """Move embedding ``row`` to (x, y), as a drag does. Refuses bad input with a message."""
        try:
            point = (self._parse(x), self._parse(y))
        except ValueError as exc:
            return self._refuse(self.embedding_field(row), why(exc))
        X = np.array(self.embeddings, dtype=np.float64)
        X[row] = point
        return self._heads_edited(embeddings=_frozen(X))

    def set_projection(self, role: int, row: int, col: int, text) -> bool:
        """Set entry (row, col) of the shown head's W_Q, W_K or W_V (``role`` 0, 1, 2) from typed text."""
        field = self.projection_field(role, row, col)
        try:
            x = self._parse(text)
        except ValueError as exc:
            return self._refuse(field, why(exc))
        W = np.array(self.projections[self.head], dtype=np.float64)
        W[role, row, col] = x
        return self._heads_edited(projections=self._projections_with(self.head, W))

    def move_basis_image(self, role: int, row: int, x, y) -> bool:
        """Move e_row W (row ``row`` of the shown head's W_Q, W_K or W_V) to (x, y), as a drag does.

        With embeddings as rows, x W = x_1 (e_1 W) + x_2 (e_2 W): the rows of W are where it sends the two
        basis vectors, so dragging them is editing W.
        """
        try:
            point = (self._parse(x), self._parse(y))
        except ValueError as exc:
            return self._refuse(self.projection_field(role, row), why(exc))
        W = np.array(self.projections[self.head], dtype=np.float64)
        W[role, row] = point
        return self._heads_edited(projections=self._projections_with(self.head, W))

    def load_projection_preset(self, name: str) -> bool:
        """Load one of PROJECTION_CHOICES into X and the shown head ("Random" draws with ``projection_seed``)."""
        if name not in PROJECTION_CHOICES:
            return self._refuse("preset", N_("{name} is not one of {choices}", name=shown(name),
                                             choices=", ".join(PROJECTION_CHOICES)), N_("preset"))
        if name == "Random":
            W = random_head(self.projection_seed)
        else:
            W = _head_of(IDENTITY_PROJECTION if name == "Q = K = V = X" else SECTION_6_2D)
        return self._heads_edited(embeddings=I_LOVE_NLP.keys, projections=self._projections_with(self.head, W))

    def new_projection_draw(self) -> bool:
        """Draw the shown head's W_Q, W_K, W_V again, with the next seed."""
        with param.parameterized.batch_call_watchers(self):
            self.projection_seed += 1
            return self.load_projection_preset("Random")

    def set_heads(self, heads: int) -> bool:
        """Run ``heads`` heads (1 to 4). W_O goes back to the average of the heads, whose number it depends on."""
        if isinstance(heads, bool) or not isinstance(heads, (int, np.integer)) or not 1 <= heads <= MAX_HEADS:
            return self._refuse("heads", N_("{heads} is not a number of heads from 1 to {limit}", heads=shown(heads),
                                            limit=MAX_HEADS), N_("heads"))
        if heads == self.heads:
            return True
        return self._heads_edited(heads=int(heads), head=min(self.head, heads - 1), w_o=default_w_o(heads))

    def select_head(self, head: int) -> bool:
        """Show head ``head`` (0-based) in the Projections tab."""
        if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < self.heads:
            return self._refuse("head", N_("head {head} does not run: choose 1 to {heads}", head=shown(head),
                                           heads=self.heads), N_("head"))
        return self._heads_edited(head=int(head))

    def set_w_o(self, row: int, col: int, text) -> bool:
        """Set entry (row, col) of W_O from typed text; refuses bad input with a message."""
        field = f"W_O[{row + 1},{col + 1}]"
        try:
            x = self._parse(text)
        except ValueError as exc:
            return self._refuse(field, why(exc))
        W = np.array(self.w_o, dtype=np.float64)
        W[row, col] = x
        return self._heads_edited(w_o=_frozen(W))

    def set_temperature(self, text) -> bool:
        """Set T from a number or typed text, from MIN_TEMPERATURE to MAX_TEMPERATURE; refuses anything else."""
        try:
            t = self._parse(text)
        except ValueError as exc:
            return self._refuse("T", why(exc))
        if not MIN_TEMPERATURE <= t <= MAX_TEMPERATURE:
            return self._refuse("T", N_("{text} is outside {low} to {high}", text=shown(text),
                                        low=f"{MIN_TEMPERATURE:g}", high=f"{MAX_TEMPERATURE:g}"))
        return self._heads_edited(temperature=t)

    def load_heads_preset(self) -> bool:
        """Two heads that attend to different tokens: the previous one, and the token itself (PREVIOUS_AND_SELF_2D)."""
        p = PREVIOUS_AND_SELF_2D
        P = np.array(self.projections, dtype=np.float64)
        for h in range(len(p.head_names)):
            P[h] = np.stack([p.W_Q[h], p.W_K[h], p.W_V[h]])
        return self._heads_edited(embeddings=p.X, projections=_frozen(P), heads=len(p.head_names), head=0,
                                  w_o=p.W_O, temperature=DEFAULT_TEMPERATURE)

    def new_heads_draw(self) -> bool:
        """Draw every running head's projections again, with the next seeds (one per head)."""
        seed = self.projection_seed + 1
        P = np.array(self.projections, dtype=np.float64)
        for h in range(self.heads):
            P[h] = random_head(seed + h)
        return self._heads_edited(projections=_frozen(P), projection_seed=seed + self.heads - 1)

    def show_head_in_explorer(self, head: int) -> bool:
        """Load head ``head``'s plane into the explorer, and show that head in the Projections tab.

        The explorer takes the head's keys K = X W_K as its keys, its values V = X W_V (2-D), the sentence's
        tokens, and as q the selected token's query x W_Q (love, if the selected row is not one of the
        three). Its other rows keep its own convention (each token's query is its key), and it divides by
        sqrt(d_k): its numbers for the selected token are the head's when T = sqrt(d_k).
        """
        if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < self.heads:
            return self._refuse("head", N_("head {head} does not run: choose 1 to {heads}", head=shown(head),
                                           heads=self.heads), N_("head"))
        Q, K, V = self.head_attention().heads[head].projections
        row = self.selected if self.selected < len(HEAD_TOKENS) else 1
        if max(np.abs(Q).max(), np.abs(K).max(), np.abs(V).max()) > MAX_ABS_COORD:
            return self._refuse(f"head {head + 1}", N_("its queries, keys or values leave ±{limit}, the explorer's "
                                                       "plane", limit=f"{MAX_ABS_COORD:g}"),
                                N_("head {head}", head=head + 1))
        with param.parameterized.batch_call_watchers(self):
            self.param.update(tokens=list(HEAD_TOKENS), keys=K.copy(), values=V.copy(), selected=row,
                              query=(float(Q[row, 0]), float(Q[row, 1])), preset=CUSTOM, scale=True, causal=False,
                              trap=False, head=int(head), message="", message_field="")
        return True

    def _heads_edited(self, **changes) -> bool:
        # only what differs: an edit to the same number, or a drag let go where it started, redraws nothing
        changes = {name: value for name, value in changes.items() if not _same(getattr(self, name), value)}
        self.param.update(**changes, message="", message_field="")
        return True


def show_step(shown, placeholders, revealed: bool) -> None:
    """Step-through in a figure: show the renderers ``shown`` and hide their ``placeholders`` once revealed.

    Only ``visible`` flags change; the data sources stay as they are.
    """
    for r in shown:
        r.visible = revealed
    for r in placeholders:
        r.visible = not revealed
