"""One browser session's state: the single source of truth every view renders."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import param

from core import (
    PRESETS,
    AttentionResult,
    ScalingExperiment,
    scaled_dot_product_attention,
    scaling_experiment,
    scores_against_values,
)
from core.scaling import MAX_D_K
from session.heads import COST_SIZES, DEFAULT_TEMPERATURE, HeadsState, same_value  # noqa: F401  (tests' names)
from session.i18n import LANGUAGES, N_, PSEUDO, Translator, translator
from session.inputs import MAX_ABS_COORD, parse_coordinate, refuse, set_typed, shown  # noqa: F401  (tests' names)
from session.model import ModelState
from session.training import TrainingState

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


def set_together(obj: param.Parameterized, **values) -> None:
    """Set several params of ``obj`` as one change (watchers called once, after all are set).

    Like ``obj.param.update(**values)``, without the snapshot of every param's value that ``update`` takes so
    it can be undone: on the path of every drag position that snapshot was a tenth of the update's cost.
    """
    with param.parameterized.batch_call_watchers(obj):
        for name, value in values.items():
            setattr(obj, name, value)


class AttentionState(HeadsState, ModelState, param.Parameterized):
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
                                      doc="Derived: softmax(Q V^T / sqrt(d_k)) V when `trap` is on and defined, "
                                          "else None.")
    trap_error = param.String(default="", doc="Derived: why scoring against the values is undefined, if it is.")
    dk_experiment = param.Integer(default=64, bounds=(1, MAX_D_K), doc="d_k of the random-vector experiment.")
    dk_seed = param.Integer(default=0, bounds=(0, None), doc="Seed of this session's random-vector draws.")
    scaling = param.ClassSelector(class_=ScalingExperiment, allow_None=True, doc=(
        "Derived: the d_k experiment's result, once a view has asked for it (require_scaling); None before: "
        "most pages never open the √d_k tab, and drawing 4096 random pairs costs every page build."))

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
                     "temperature", "projection_seed", "cost_n", "training_view", "tabs", "header", "sentence",
                     "model_layer", "model_head", "model_row")
    #: Params never followed: derived ones, feedback about the page's own input or address, and the page's
    #: own look (a follower chooses projector mode and theme for their own screen).
    LOCAL_PARAMS = ("name", "message", "message_field", "notice", "result", "trap_result", "trap_error",
                    "scaling", "mode", "theme", "lang", "model_result", "model_message")

    #: Whether ``lang`` was chosen on the page or by its link (the address then keeps it), not by the browser.
    lang_chosen = False

    def __init__(self, **params):
        super().__init__(**params)
        #: The Train tab's own state (session/training.py); its shared part is mirrored in ``training_view``.
        self.training = TrainingState()
        #: Called with a function that computes the d_k experiment, to call it when the server has time (a served
        #: page's queue, services/train_queue.py: one at a time, at most half the loop); None computes at once. A
        #: plain attribute, set by the √d_k view in a served page.
        self.experiment_scheduler = None
        self._experiment_waiting = False  # a new experiment has been asked for and not computed yet
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
                      if n in snapshot and not same_value(getattr(self, n), snapshot[n])}
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
        # `result` is constant to everyone else; param.edit_constant lifts every one of the state's many parameters
        # for it, on the path of every drag position (bench/HISTORY.md): only this page's own `result` here
        result = self.param["result"]
        result.constant = False
        try:
            self.result = r
        finally:
            result.constant = True

    @param.depends("dk_experiment", "dk_seed", watch=True)
    def _run_experiment(self):
        if self.scaling is None:  # nobody shows it
            return
        # One draw at d_k = 1024 is a long turn of NumPy, longer on a loaded server: a served page's draw is
        # made off the loop (the scheduler's worker thread) and shown in the page's turn; a page that sends d_k
        # and "New random draw" as fast as it can waits for one draw at a time
        if self.experiment_scheduler is None:
            self.compute_experiment()
        elif not self._experiment_waiting:
            self._experiment_waiting = True
            self.experiment_scheduler(self.show_experiment, self.draw_experiment)

    def compute_experiment(self) -> None:
        """Set ``scaling`` to the experiment of ``dk_experiment`` and ``dk_seed`` as they are now."""
        self._experiment_waiting = False
        self.scaling = self.draw_experiment()

    def draw_experiment(self) -> ScalingExperiment:
        """The experiment of ``dk_experiment`` and ``dk_seed`` as they are now; changes nothing, so it may run on
        another thread than the page's."""
        return scaling_experiment(self.dk_experiment, self.dk_seed)

    def show_experiment(self, experiment: ScalingExperiment) -> None:
        """Set ``scaling`` to ``experiment`` (drawn by :meth:`draw_experiment`); if d_k or the seed changed while
        it was drawn, ask for one more draw, of the values as they are now."""
        self._experiment_waiting = False
        self.scaling = experiment
        if (experiment.d_k, experiment.seed) != (self.dk_experiment, self.dk_seed):
            self._run_experiment()

    def require_scaling(self) -> ScalingExperiment:
        """The d_k experiment's result (``scaling``), computed now if no view had asked for it yet."""
        if self.scaling is None:
            self.scaling = self.draw_experiment()
        return self.scaling

    def move_query(self, x, y) -> bool:
        """Set q = (x, y) if both are finite numbers with |x|, |y| <= 1e6.

        Returns True if accepted. Otherwise nothing changes except ``message``.
        """
        try:
            q = (float(x), float(y))
        except (TypeError, ValueError, OverflowError):  # OverflowError: a whole number past a float's range
            self.param.update(message=N_("Query refused: ({x}, {y}) are not numbers.", x=shown(x), y=shown(y)),
                              message_field="q")
            return False
        if not all(math.isfinite(c) and abs(c) <= MAX_ABS_COORD for c in q):
            self.param.update(message=N_("Query refused: coordinates must be finite and within ±{limit}.",
                                         limit=f"{MAX_ABS_COORD:g}"),
                              message_field="q")
            return False
        if self.message or self.message_field:
            set_together(self, query=q, message="", message_field="")
        else:  # the common case, every position of a drag: the message is clear already
            self.query = q
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
        def change(x):
            q = list(self.query)
            q[axis] = x
            self.param.update(query=tuple(q), message="", message_field="")
            return True
        return set_typed(self, f"q[{axis + 1}]", [text], change)

    def set_key(self, row: int, axis: int, text) -> bool:
        """Set coordinate ``axis`` of key ``row``; the preset becomes Custom. Refuses bad input."""
        def change(x):
            if x == self.keys[row, axis]:
                return True
            K = np.array(self.keys, dtype=np.float64)
            K[row, axis] = x
            return self._edited(keys=K)
        return set_typed(self, self.key_field(row, axis), [text], change)

    def move_key(self, row: int, x, y) -> bool:
        """Move key ``row`` to (x, y), as a drag does; the preset becomes Custom. Refuses bad input."""
        def change(*k):
            K = np.array(self.keys, dtype=np.float64)
            K[row] = k
            return self._edited(keys=K)
        return set_typed(self, f"k_{self.tokens[row]}", [x, y], change)

    def set_value(self, row: int, axis: int, text) -> bool:
        """Set value ``row`` (coordinate ``axis`` for vector values); the preset becomes Custom."""
        def change(x):
            V = np.array(self.values, dtype=np.float64)
            if V.ndim == 1:
                V[row] = x
            else:
                V[row, axis] = x
            if np.array_equal(V, self.values):
                return True
            return self._edited(values=V)
        return set_typed(self, self.value_field(row, axis), [text], change)

    def rename_token(self, row: int, name) -> bool:
        """Rename token ``row``. Names are short words: HTML, markup and duplicates are refused."""
        field, label = f"name of token {row + 1}", N_("name of token {row}", row=row + 1)
        name = name.strip() if isinstance(name, str) else name
        if not isinstance(name, str) or not name:
            return refuse(self, field, N_("a token needs a name"), label)
        if not TOKEN_NAME.match(name):
            return refuse(self, field, N_("{name} may only use letters, digits, spaces and . , ! ? ' - (HTML and "
                                          "other markup are never accepted)", name=shown(name)), label)
        if len(name) > MAX_TOKEN_CHARS:
            return refuse(self, field, N_("{name} is longer than {limit} characters", name=shown(name),
                                          limit=MAX_TOKEN_CHARS), label)
        if name in self.tokens[:row] + self.tokens[row + 1:]:
            return refuse(self, field, N_("{name} is already a token", name=shown(name)), label)
        if name == self.tokens[row]:
            return True
        tokens = list(self.tokens)
        tokens[row] = name
        return self._edited(tokens=tokens)

    def add_token(self) -> bool:
        """Append a token with key (0, 0) and value 0 (up to 8 tokens)."""
        n = len(self.tokens)
        if n >= MAX_TOKENS:
            return refuse(self, "tokens", N_("at most {limit} tokens", limit=MAX_TOKENS), N_("tokens"))
        name = next(f"t{i}" for i in range(n + 1, n + 2 + MAX_TOKENS) if f"t{i}" not in self.tokens)
        V = np.asarray(self.values, dtype=np.float64)
        with param.parameterized.batch_call_watchers(self):
            return self._edited(tokens=[*self.tokens, name], keys=np.vstack([self.keys, np.zeros(self.d_k)]),
                                values=np.concatenate([V, np.zeros((1,) + V.shape[1:])]))

    def remove_token(self, row: int) -> bool:
        """Remove token ``row`` (at least 2 stay). The selection follows its token, or moves to row 0."""
        n = len(self.tokens)
        if n <= MIN_TOKENS:
            return refuse(self, "tokens", N_("at least {limit} tokens are needed", limit=MIN_TOKENS), N_("tokens"))
        if not 0 <= row < n:
            return refuse(self, "tokens", N_("row {row} does not exist", row=row), N_("tokens"))
        keep = [i for i in range(n) if i != row]
        changes = dict(tokens=[self.tokens[i] for i in keep], keys=np.array(self.keys)[keep],
                       values=np.array(self.values)[keep])
        if row == self.selected:
            changes.update(selected=0, query=tuple(float(c) for c in changes["keys"][0]))
        elif row < self.selected:
            changes.update(selected=self.selected - 1)
        return self._edited(**changes)
