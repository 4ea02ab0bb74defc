"""One page's Train tab: what attention should learn, how, and which step of the run is shown.

Module 2: "At initialisation they are random and the three roles are indistinguishable; after training, each
has learned its specialty." :class:`TrainingState` holds a learner's choices (a preset target or a painted
pattern, the seed, the learning rate, scaling by √d_k, the temperature, the heads), the run that
:func:`core.training.train` computes from them, and the step the page shows. The page plays the run back
itself (``link/train.js``) and reports only where it paused, where a scrub ended and when it started playing,
so the address and a presented room follow without a message per frame.

A run costs the server CPU (see bench/RESULTS.md, "one training run"): the state does not compute it when a choice
changes but asks its ``scheduler`` (``services/train_queue.py`` in a served page: runs one at a time, the
newest request of a page replacing its waiting one); without a scheduler (a test, a notebook) it computes at
once, and it computes nothing until the tab is first shown. A learner's new choice shows the new run's step 0;
a link or a presenter's view sets the step with the settings, and the new run opens there.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np
import param

from core.checks import is_real, is_whole
from core.training import (
    MAX_LEARNING_RATE,
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    TRAINING_PRESETS,
    LossFloor,
    TrainingRun,
    TrainingTask,
    loss_floor,
    train,
    weights_task,
)
from course.text import N_

#: The presets by the slug the address writes, in the order the page lists them (core's order).
PRESET_SLUGS = {"previous": "attend to the previous token", "yourself": "attend to yourself",
                "nlp": "everyone attends to NLP", "retrieve": "retrieve the value"}
#: The target that is a learner's own pattern.
PAINT = "paint"
TARGETS = (*PRESET_SLUGS, PAINT)
#: Updates in a run: enough for every preset to reach its goal with the defaults (core/training/'s table).
RUN_STEPS = 500
#: The page's learning rates and temperatures: a slider's stops.
LEARNING_RATES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
DEFAULT_LEARNING_RATE = 0.05
TEMPERATURES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
#: One head or two: two is the Heads tab's multi-head, trained; it meets patterns one head cannot.
MAX_TRAIN_HEADS = 2
#: The largest seed the page and its address take (the core takes up to 2**32 - 1).
MAX_SEED = 2 ** 31 - 1
#: The largest weight a painted cell may have (a click cycles 0, 1, 0; the address may give up to 9).
MAX_PAINT = 9


def _sentences() -> dict[int, TrainingTask]:
    """The sentences a pattern can be painted on, by their length: the presets' two sentences."""
    return {task.X.shape[0]: task for task in TRAINING_PRESETS.values()}


#: A painted pattern's sentence by its number of tokens: 3, "I love NLP" (Section 6's embeddings);
#: 5, "attention is all you need" (positions on a half circle).
PAINT_SENTENCES = _sentences()


def painted_task(pattern) -> TrainingTask:
    """The task of a painted pattern on the sentence of its size (:data:`PAINT_SENTENCES`).

    pattern : (n, n) array_like of whole numbers 0 to 9, n 3 or 5; each row is divided by its sum.
    Raises ValueError (its argument a marked text) for another size, or an entry out of range, or a row of
    zeros (a token must attend somewhere).
    """
    P = np.asarray(pattern, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] not in PAINT_SENTENCES:
        raise ValueError(N_("a painted target has 3 or 5 rows of as many cells"))
    if not np.all((P >= 0) & (P <= MAX_PAINT) & (P == np.round(P))):
        raise ValueError(N_("each painted cell is a whole number from 0 to {top}", top=MAX_PAINT))
    sentence = PAINT_SENTENCES[P.shape[0]]
    for i in np.flatnonzero(P.sum(axis=1) == 0):
        raise ValueError(N_("row {token} would attend to nothing: every token must attend somewhere",
                            token=sentence.tokens[i]))
    return weights_task(P, sentence.X, sentence.tokens, name="your own pattern")


def parse_pattern(text: str) -> np.ndarray:
    """A painted pattern as the address writes it: rows of digits separated by ``.``, e.g. ``100.100.010``.

    Raises ValueError (a marked text) if it is not 3 or 5 rows of as many digits, or a row is all zeros.

    >>> parse_pattern("100.100.010").tolist()
    [[1, 0, 0], [1, 0, 0], [0, 1, 0]]
    """
    rows = text.split(".")
    if not all(re.fullmatch(r"[0-9]+", r) for r in rows) or any(len(r) != len(rows) for r in rows):
        raise ValueError(N_("a painted target is rows of digits separated by '.', as many digits as rows"))
    P = np.array([[int(c) for c in r] for r in rows], dtype=np.int64)
    painted_task(P)  # the same checks as a painted click's
    return P


def write_pattern(pattern) -> str:
    """The address's text of a painted pattern (:func:`parse_pattern` reads it back)."""
    return ".".join("".join(str(int(c)) for c in row) for row in np.asarray(pattern))


def nearest(stops: tuple[float, ...], x: float) -> float:
    """The stop nearest to ``x`` > 0 on a log scale (a slider shows it)."""
    return min(stops, key=lambda s: abs(math.log(s / x)))


#: The largest whole number float() takes.
_LARGEST_FLOAT = int(sys.float_info.max)


class TrainingState(param.Parameterized):
    """The Train tab of one page: the target, the training's settings, its run and the step shown.

    Every change of a setting asks for a new run (:meth:`request_run`); bad input sets ``message`` and changes
    nothing else. :meth:`view` and :meth:`apply_view` are what a presenter shares with a room (through
    ``AttentionState.training_view``).
    """

    target = param.Selector(default="previous", objects=list(TARGETS), doc=(
        "A preset's slug (PRESET_SLUGS), or 'paint': the learner's own pattern."))
    pattern = param.Array(default=None, allow_None=True, doc=(
        "The painted pattern: (n, n) whole numbers 0-9, n 3 or 5, each row's share of attention before it is "
        "divided by its sum. Kept when another target is chosen, so 'paint' comes back to it."))
    seed = param.Integer(default=0, bounds=(0, MAX_SEED), doc="Seed of the random start of W_Q, W_K, W_V (and W_O).")
    learning_rate = param.Number(default=DEFAULT_LEARNING_RATE, bounds=(0.0, MAX_LEARNING_RATE),
                                 inclusive_bounds=(False, True), doc="Adam's step size.")
    scale = param.Boolean(default=True, doc="Divide the scores by √d_k.")
    temperature = param.Number(default=1.0, bounds=(MIN_TEMPERATURE, MAX_TEMPERATURE), doc="Scores divided by T too.")
    heads = param.Integer(default=1, bounds=(1, MAX_TRAIN_HEADS), doc="Heads trained together (their average weights).")
    step = param.Integer(default=0, bounds=(0, RUN_STEPS), doc=(
        "The step of the run the page shows (0: the random start)."))
    playing = param.Boolean(default=False, doc="Whether the page plays the run (from ``step``).")
    plays = param.Integer(default=0, bounds=(0, None), doc=(
        "How many times Play was pressed: a room's followers play again when the presenter plays again from the "
        "same step."))
    run = param.ClassSelector(class_=TrainingRun, allow_None=True, doc="Derived: the run of the current settings.")
    floor = param.ClassSelector(class_=LossFloor, allow_None=True, doc=(
        "Derived: the lowest loss one head can reach on a painted pattern (None for a preset, which one head learns)."))
    message = param.String(default="", doc="Why the last input was refused; empty when it was accepted.")

    #: The settings that make up a run: a change of one asks for a new run.
    SETTINGS = ("target", "pattern", "seed", "learning_rate", "scale", "temperature", "heads")

    def __init__(self, **params):
        super().__init__(**params)
        #: Called with a function that computes the run, to call it when the server has time (a served page's
        #: queue); None computes at once. A plain attribute: the page's, set by the view's builder.
        self.scheduler = None
        self._waiting = False  # a run has been asked for and not computed yet
        # No run until the tab is first shown (activate): most pages never open it, and a run costs as much as a
        # fifth of building the page
        self._active = False
        self.param.watch(self._settings_changed, list(self.SETTINGS))

    # --- the run --------------------------------------------------------------------------------------------

    def task(self) -> TrainingTask:
        """The task of the current target (a preset's, or the painted pattern's)."""
        if self.target == PAINT:
            return painted_task(self.pattern)
        return TRAINING_PRESETS[PRESET_SLUGS[self.target]]

    def activate(self) -> None:
        """The tab is shown: from now on the state keeps its run up to date with its settings."""
        if not self._active:
            self._active = True
            self.request_run()

    def _settings_changed(self, *_) -> None:
        if self._active:
            self.request_run()

    def request_run(self) -> None:
        """Ask for the run of the current settings: now, or when the scheduler calls back (one call, however many
        changes come before it)."""
        if self._waiting:
            return
        self._waiting = True
        if self.scheduler is None:
            self.compute_run()
        else:
            self.scheduler(self.compute_run)

    def compute_run(self) -> None:
        """Compute the run of the settings as they are now (the scheduler's callback)."""
        self._waiting = False
        task = self.task()
        run = train(task, seed=self.seed, steps=RUN_STEPS, learning_rate=self.learning_rate, scale=self.scale,
                    temperature=self.temperature, heads=self.heads)
        floor = loss_floor(task) if self.target == PAINT else None
        # the step stays: a learner's choice set it to 0 already (_choose), a link or a presenter to theirs
        self.param.update(run=run, floor=floor, step=min(self.step, run.steps))

    @property
    def pending(self) -> bool:
        """A run has been asked for and is not computed yet (the page shows the previous one meanwhile)."""
        return self._waiting

    # --- a learner's choices --------------------------------------------------------------------------------

    def _refuse(self, why) -> bool:
        self.message = why
        return False

    def _choose(self, **changes) -> bool:
        """Apply settings that changed; the new run opens at its random start, paused (Play plays it)."""
        changed = {k: v for k, v in changes.items() if not _same(getattr(self, k), v)}
        if changed:
            self.param.update(**changed, step=0, playing=False, message="")
        elif self.message:
            self.message = ""
        return True

    def choose_target(self, target: str) -> bool:
        """Train towards a preset (a slug of :data:`PRESET_SLUGS`) or the painted pattern (``"paint"``).

        Painting starts from the current target when it is a pattern on the attention (a preset's, or one
        painted before), else from "attend to yourself" on "I love NLP".
        """
        if target not in TARGETS:
            return self._refuse(N_("No target {name}: choose one of {names}.", name=repr(str(target)[:40]),
                                   names=", ".join(TARGETS)))
        changes = {"target": target}
        if target == PAINT and self.pattern is None:
            task = self.task()
            start = task.target if task.kind == "weights" else np.eye(3)
            changes["pattern"] = (np.asarray(start) > 0).astype(np.int64)
        return self._choose(**changes)

    def paint_sentence(self, tokens) -> bool:
        """Paint on the sentence of ``tokens`` tokens (3, "I love NLP"; 5, "attention is all you need"): the painted
        target, starting from the first preset's pattern on that sentence where the pattern painted so far is on the
        other one. Anything but 3 or 5 is refused."""
        # a list or a dict (a crafted message) is not hashable: asked of the dict, it raised TypeError
        if not is_whole(tokens) or tokens not in PAINT_SENTENCES:
            return self._refuse(N_("No sentence of {n} tokens to paint on: choose 3 or 5.", n=repr(tokens)[:20]))
        pattern = self.pattern
        if pattern is None or len(pattern) != tokens:
            first = next(t for t in TRAINING_PRESETS.values() if t.kind == "weights" and len(t.tokens) == tokens)
            pattern = (np.asarray(first.target) > 0).astype(np.int64)
        return self._choose(target=PAINT, pattern=pattern)

    def paint(self, row, col) -> bool:
        """Click on the painted target's cell (row, col): 0 becomes 1, anything else 0. Switches to the painted
        target. A click that would leave a row with nothing to attend to is refused."""
        if self.target != PAINT:
            self.choose_target(PAINT)
        P = np.array(self.pattern, dtype=np.int64)
        n = P.shape[0]
        if not all(is_whole(k) and 0 <= k < n for k in (row, col)):
            return self._refuse(N_("Cell ({row}, {col}) refused: the target has {n} rows and columns.",
                                   row=repr(row)[:20], col=repr(col)[:20], n=n))
        P[row, col] = 0 if P[row, col] else 1
        try:
            painted_task(P)
        except ValueError as exc:
            return self._refuse(N_("Cell refused: {why}. The target stays as it was.", why=exc.args[0]))
        return self._choose(pattern=P)

    def set_seed(self, seed) -> bool:
        """Start from another random draw: a whole number from 0 to :data:`MAX_SEED`."""
        if not is_whole(seed) or not 0 <= seed <= MAX_SEED:
            return self._refuse(N_("Seed {seed} refused: a whole number from 0 to {top}.", seed=repr(seed)[:40],
                                   top=MAX_SEED))
        return self._choose(seed=int(seed))

    def new_seed(self) -> bool:
        """The next seed: a new random start, the same target and settings."""
        return self.set_seed(self.seed + 1 if self.seed < MAX_SEED else 0)

    def _number(self, name: str, x, lo: float, hi: float, lo_open: bool) -> float | None:
        if not is_real(x):
            return None
        # a page's JSON can hold a whole number of any size (10**400), which float() refuses with an OverflowError;
        # any beyond the range is out of every setting's range anyway
        if isinstance(x, (int, np.integer)) and not -_LARGEST_FLOAT <= int(x) <= _LARGEST_FLOAT:
            return None
        x = float(x)
        return x if math.isfinite(x) and (lo < x if lo_open else lo <= x) and x <= hi else None

    def set_learning_rate(self, rate) -> bool:
        """Adam's step size, in (0, 1]."""
        x = self._number("learning_rate", rate, 0.0, MAX_LEARNING_RATE, True)
        if x is None:
            return self._refuse(N_("Learning rate {rate} refused: a number above 0 and at most {top}.",
                                   rate=repr(rate)[:40], top=MAX_LEARNING_RATE))
        return self._choose(learning_rate=x)

    def set_temperature(self, t) -> bool:
        """The temperature T of the scores, from 0.01 to 100."""
        x = self._number("temperature", t, MIN_TEMPERATURE, MAX_TEMPERATURE, False)
        if x is None:
            return self._refuse(N_("Temperature {t} refused: a number from {lo} to {hi}.", t=repr(t)[:40],
                                   lo=MIN_TEMPERATURE, hi=MAX_TEMPERATURE))
        return self._choose(temperature=x)

    def set_scale(self, on) -> bool:
        """Divide the scores by √d_k (True) or not."""
        if not isinstance(on, (bool, np.bool_)):
            return self._refuse(N_("Scaling {value} refused: on or off.", value=repr(on)[:40]))
        return self._choose(scale=bool(on))

    def set_heads(self, heads) -> bool:
        """Train one head or two."""
        if not is_whole(heads) or not 1 <= heads <= MAX_TRAIN_HEADS:
            return self._refuse(N_("Heads {heads} refused: 1 or {top}.", heads=repr(heads)[:40],
                                   top=MAX_TRAIN_HEADS))
        return self._choose(heads=int(heads))

    # --- where the page is in the run -----------------------------------------------------------------------

    def show(self, step, playing: bool = False) -> bool:
        """The page paused at, scrubbed to, stepped to, or started playing from ``step`` (0 to the run's last)."""
        if not is_whole(step) or not 0 <= step <= RUN_STEPS:
            return self._refuse(N_("Step {step} refused: a whole number from 0 to {top}.", step=repr(step)[:40],
                                   top=RUN_STEPS))
        if not isinstance(playing, bool):
            return False
        self.param.update(step=int(step), playing=playing, plays=self.plays + playing)
        return True

    # --- what a room shares ---------------------------------------------------------------------------------

    def view(self) -> dict:
        """The shared part of the tab as plain values: settings, the pattern, the step and whether it plays."""
        return {"target": self.target, "pattern": None if self.pattern is None else np.asarray(self.pattern).tolist(),
                "seed": self.seed, "learning_rate": self.learning_rate, "scale": self.scale,
                "temperature": self.temperature, "heads": self.heads, "step": self.step, "playing": self.playing,
                "plays": self.plays}

    def apply_view(self, view: dict) -> None:
        """Take a presenter's :meth:`view` (values from another page of this app, checked all the same)."""
        update = {}
        for name in ("target", "seed", "learning_rate", "scale", "temperature", "heads", "step", "playing", "plays"):
            if name in view and not _same(getattr(self, name), view[name]):
                update[name] = view[name]
        if view.get("pattern") is not None:
            pattern = np.array(view["pattern"], dtype=np.int64)
            if not _same(self.pattern, pattern):
                update["pattern"] = pattern
        if update:
            self.param.update(**update, message="")


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b


# --- the page address ------------------------------------------------------------------------------------------

#: The Train tab's address arguments: ``train`` (a preset's slug or a painted pattern, ``100.100.010``), ``lr``,
#: ``train_seed``, ``train_step``, ``train_scale`` (``off``), ``train_t`` and ``train_heads``; each written only
#: when it is not the default. (``seed``, ``step``, ``heads``, ``temperature`` and ``scale`` are the other tabs'.)
TRAIN_ARGUMENTS = ("train", "lr", "train_seed", "train_step", "train_scale", "train_t", "train_heads")


def _whole(value: str, top: int) -> int | None:
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 10 and int(value) <= top else None


def _positive(value: str, lo: float, hi: float, lo_open: bool) -> float | None:
    try:
        x = float(value) if re.fullmatch(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?", value) else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) and (lo < x if lo_open else lo <= x) and x <= hi else None


def parse_train_address(values_of: dict[str, str]) -> tuple[dict, list]:
    """The Train tab's arguments (:data:`TRAIN_ARGUMENTS`, text already decoded): TrainingState settings and
    one marked sentence per argument ignored.

    >>> parse_train_address({"train": "100.100.010", "lr": "0.1", "train_step": "120"})[0]["pattern"].tolist()
    [[1, 0, 0], [1, 0, 0], [0, 1, 0]]
    >>> parse_train_address({"train": "nope", "lr": "2"})[1]
    ["train = 'nope' ignored: choose previous, yourself, nlp, retrieve or a painted target such as 100.100.010.", \
"lr = '2' ignored: a number above 0 and at most 1."]
    """
    settings: dict = {}
    problems: list = []
    if "train" in values_of:
        value = values_of["train"]
        if value in PRESET_SLUGS:
            settings["target"] = value
        else:
            try:
                settings.update(target=PAINT, pattern=parse_pattern(value))
            except ValueError:
                problems.append(N_("train = {value} ignored: choose {names} or a painted target such as {example}.",
                        value=repr(value[:40]), names=", ".join(PRESET_SLUGS), example="100.100.010"))
    if "lr" in values_of:
        x = _positive(values_of["lr"], 0.0, MAX_LEARNING_RATE, True)
        if x is None:
            problems.append(N_("lr = {value} ignored: a number above 0 and at most {top}.",
                               value=repr(values_of["lr"][:40]),
                    top=f"{MAX_LEARNING_RATE:g}"))
        else:
            settings["learning_rate"] = x
    if "train_t" in values_of:
        x = _positive(values_of["train_t"], MIN_TEMPERATURE, MAX_TEMPERATURE, False)
        if x is None:
            problems.append(N_("{name} = {value} ignored: a number from {lo} to {hi}.", name="train_t",
                               value=repr(values_of["train_t"][:40]),
                    lo=f"{MIN_TEMPERATURE:g}", hi=f"{MAX_TEMPERATURE:g}"))
        else:
            settings["temperature"] = x
    for name, param_name, top in (("train_seed", "seed", MAX_SEED), ("train_step", "step", RUN_STEPS),
                                  ("train_heads", "heads", MAX_TRAIN_HEADS)):
        if name in values_of:
            k = _whole(values_of[name], top)
            if k is None or (name == "train_heads" and k < 1):
                problems.append(N_("{name} = {value} ignored: a whole number from {lo} to {top}.", name=name,
                        value=repr(values_of[name][:40]), lo=int(name == "train_heads"), top=top))
            else:
                settings[param_name] = k
    if "train_scale" in values_of:
        value = values_of["train_scale"]
        if value in ("on", "off"):
            settings["scale"] = value == "on"
        else:
            problems.append(N_("{name} = {value} ignored: choose {a} or {b}.", name="train_scale",
                               value=repr(value[:40]), a="on", b="off"))
    return settings, problems


def train_address(training: TrainingState) -> dict[str, str]:
    """The arguments that reopen ``training``'s run at its step: only those that differ from the defaults.

    >>> train_address(TrainingState(target="yourself", step=40))
    {'train': 'yourself', 'train_step': '40'}
    """
    out = {}
    if training.target == PAINT and training.pattern is not None:
        out["train"] = write_pattern(training.pattern)
    elif training.target != TrainingState.param.target.default:
        out["train"] = training.target
    if training.learning_rate != DEFAULT_LEARNING_RATE:
        out["lr"] = repr(float(training.learning_rate))
    if training.seed:
        out["train_seed"] = str(training.seed)
    if training.step:
        out["train_step"] = str(training.step)
    if not training.scale:
        out["train_scale"] = "off"
    if training.temperature != TrainingState.param.temperature.default:
        out["train_t"] = repr(float(training.temperature))
    if training.heads != 1:
        out["train_heads"] = str(training.heads)
    return out
