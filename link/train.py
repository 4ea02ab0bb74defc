"""The Train tab as the page draws it, and how the page says where it is in a run (``link/train.js``).

The server computes the whole run in one call (``core.training.train``, 500 steps) and sends it once: the W's of
every step and the loss, as arrays of float64 (Bokeh sends them as binary buffers, a few kB a head and token:
bench/HISTORY.md). The page computes each step's queries, keys, weights,
outputs and loss from X and the W's with its mirror of the core's forward pass, and plays the run back at the
screen's frame rate with no message per frame.

The page draws the whole tab itself, from the settings, texts and run the server gives it: the targets, the
settings' controls, the player, the loss curve, the weights beside the target, W's numbers and each head's
queries and keys in a plane of its own (SVG). Panel's widgets and Bokeh's figures for the same were a hundred
Bokeh models, built and sent for each learner who opened the tab (their cost: bench/HISTORY.md); this is one
component, its data and its stylesheet, and one channel.

What the page sends:

- where it is in the run, only when a learner presses Play or Pause, lets go of the scrub slider, or stops
  stepping: a row ``{step, playing, seq}`` written into :attr:`TrainLink.report`, a
  :class:`~link.row.OneRow` of its own. A change of one property reaches :meth:`TrainLink._on_report` directly
  (a message through Panel's event handling costs the server many times as much before any of our code runs:
  bench/HISTORY.md).
  What follows from it (the state's step, the address, a presented room) is taken paced: the newest report
  of a page, at most one every :data:`REPORT_GAP` seconds or as long as the last one took (``services/pace.py``),
  through the process's queue of reports (``services/train_queue.py``, at most a quarter of the loop). Sixty
  learners pressing Play in the same instant are then sixty cheap writes, and their reports are taken one a turn
  while everyone else's keys and clicks come between them; the page plays at once, since its playback is its own.
- a learner's choice (a target, a painted cell, New seed, the learning rate, the temperature, scaling, the heads)
  and a download, as a message (``model.send_msg``): each asks for a new run or a file anyway, which the
  server's queue of runs paces. A download (the run as CSV or JSON: 420 kB and about 44 ms of the loop for a run of
  two heads) is made when the queue comes to it, one at a time and fairly between clients like the runs, a page's
  newest download request replacing its waiting one; the file of a run is made once and kept while the run lasts.
  Twenty pages asking for it every 0.2 s otherwise held every key over 300 ms (up to 1 s).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.palettes import Cividis256

from core.checks import is_whole
from core.training import TrainingRun
from link.row import OneRow
from link.updates import one_message
from services.pace import Pace
from services.train_queue import get_queue, get_report_queue
from session.training import LEARNING_RATES, TEMPERATURES, TrainingState

HERE = Path(__file__).resolve().parent
#: The Train tab's scripts, in the order the page runs them as one module: the page's number format, the mirror of
#: the core's forward pass, the heads' planes, the tab's parts, a run's parts and a step's numbers, then the player and
#: the link (``render``). One scope: each file's top-level names are the others'.
TRAIN_SCRIPTS = ("attention.js", "shared.js", "train_mirror.js", "train_plane.js", "train_parts.js", "train_steps.js",
                 "train.js")
TRAIN_JS = "\n".join((HERE / name).read_text() for name in TRAIN_SCRIPTS)
#: The tab's look, in its shadow root (sizes and colours from the page's custom properties).
TRAIN_CSS = (HERE.parent / "static" / "train.css").read_text()
#: The shortest time (s) between two reports of one page that the server takes (a learner presses Play or Pause a
#: few times a second at most; a page that writes more gets its newest report taken, one per gap).
REPORT_GAP = 0.1
#: A learner's choices as the page sends them: action -> (TrainingState's method, the message's argument or None).
CHOICES = {"target": ("choose_target", "target"), "seed": ("new_seed", None),
           "learning_rate": ("set_learning_rate", "value"), "temperature": ("set_temperature", "value"),
           "scale": ("set_scale", "on"), "heads": ("set_heads", "heads"), "sentence": ("paint_sentence", "tokens")}
#: The files a run downloads as.
DOWNLOADS = ("csv", "json")


def run_payload(run: TrainingRun, floor: float | None = None) -> dict:
    """What the page needs of a run to play it back: sizes, X, the target, the W's of every step, the loss.

    Arrays are flat float64 in C order: ``WQ``, ``WK`` : (steps + 1, H, 2, 2); ``WV`` : (steps + 1, H, 2, d_v)
    when W_V is trained (an "outputs" task), else its one draw (1, H, 2, d_v); ``WO`` : (steps + 1, H d_v,
    d_out) or empty; ``loss`` : (steps + 1,); ``X`` : (n, 2); ``target`` : (n, n) weights or (n, d_out) outputs.
    ``floor``: one head's lowest loss on the target (a line on the loss curve), or None.
    """
    task = run.task
    wv_trained = task.kind == "outputs"
    d_v = run.W_V.shape[-1]
    target = np.asarray(task.target, dtype=np.float64)
    d_out = 1 if target.ndim == 1 else target.shape[1] if task.kind == "outputs" else 2
    flat = lambda a: np.ascontiguousarray(a, dtype=np.float64).ravel()  # noqa: E731
    return {
        "steps": run.steps, "n": len(task.tokens), "H": run.heads, "d_v": d_v, "d_out": d_out,
        "kind": task.kind, "factor": run.factor, "entropy": run.entropy, "tokens": list(task.tokens),
        "X": flat(task.X), "target": flat(target), "WQ": flat(run.W_Q), "WK": flat(run.W_K),
        "WV": flat(run.W_V if wv_trained else run.W_V[:1]), "wv_trained": wv_trained,
        "WO": flat(run.W_O) if run.W_O is not None else np.zeros(0), "has_WO": run.W_O is not None,
        "loss": flat(run.loss), "floor": None if floor is None or not math.isfinite(floor) else float(floor),
    }


def _settings(training: TrainingState) -> dict:
    return {"target": training.target, "seed": training.seed, "learning_rate": training.learning_rate,
            "temperature": training.temperature, "scale": training.scale, "heads": training.heads}


class TrainLink(pn.custom.JSComponent):
    """The Train tab as the page draws it (``link/train.js``), and the server's end of what it sends.

    ``run`` is :func:`run_payload` of the state's run; ``step`` and ``playing`` the state's (the page goes there
    when they change from the server); ``settings`` what the controls show; ``words`` the tab's texts in the
    page's language (``widgets/train.py``); ``summary`` what was learned, HTML the server escaped; ``paintable``
    makes the target's cells buttons. What the page sends (see the module's text): a report row in
    :attr:`report`, and the messages ``{"action": "paint", "row": i, "col": j}``, ``{"action": a, ...}`` for each
    of :data:`CHOICES`, ``{"action": "download", "kind": "csv" | "json"}`` (answered with ``{"download": file
    name, "text": contents}``) and ``{"action": "show", "step": k, "playing": bool}`` (where the report row is
    not in the page: a notebook); anything else is ignored.

    Test hooks: the targets are the buttons ``.train-target-<slug>`` in ``.train-targets``; the player's root
    ``.train-player`` carries ``data-step``; the readout ``.readout`` its ``data-loss``; the weights' cells
    ``.weights td[data-i][data-j]`` and each W's ``table[data-w][data-h] td[data-r][data-c]`` their
    ``data-value``; the swapped loss ``.swap-loss`` its ``data-loss``; each head's plane ``svg.train-plane``
    (``data-h``), its points ``[data-role][data-i]`` with ``data-x`` and ``data-y``; what was learned
    ``.train-summary`` (``[data-swap]``, ``[data-floor]``); the buttons ``.train-new-seed``, ``.train-two-heads``,
    ``.train-csv`` and ``.train-json``; the settings ``.train-rate``, ``.train-temperature``, ``.train-scale`` and
    ``.train-heads``.
    """

    run = param.Dict(default={}, doc="The run to play (run_payload); empty until the first is computed.")
    step = param.Integer(default=0, doc=(
        "The step the server holds: the page's last report, or a link's or presenter's."))
    playing = param.Boolean(default=False)
    plays = param.Integer(default=0, doc="How many times Play was pressed: a press from the same step plays again.")
    paintable = param.Boolean(default=False, doc="The target is the learner's painted pattern: its cells are buttons.")
    settings = param.Dict(default={}, doc=(
        "What the controls show: target, seed, learning_rate, temperature, scale, heads (the state's)."))
    stops = param.Dict(default={"learning_rate": list(LEARNING_RATES), "temperature": list(TEMPERATURES)},
                       constant=True, doc="The sliders' stops.")
    words = param.Dict(default={}, doc="The tab's texts and the number format, in the page's language.")
    summary = param.String(default="", doc="What was learned: HTML the server escaped (widgets/train.py).")
    two_heads = param.Boolean(default=False, doc="Offer Two heads: a painted target one head cannot learn.")
    message = param.String(default="", doc="Why the last input was refused, in the page's language; empty if none.")
    colors = param.List(default=[], doc="Each token's colour, as every plot of the page draws it.")
    palette = param.List(default=list(Cividis256[::8]), doc="The weights' colours, 0 to 1 (the Matrix tab's Cividis).")

    ink_threshold = param.Number(default=None, allow_None=True, bounds=(0, 1), constant=True, doc=(
        "A weight's cell is written in dark ink from this weight up, light below: the Matrix tab's threshold "
        "(link/rules.py), which the view gives."))

    # The scripts (TRAIN_SCRIPTS, link/train.js last), read once per process, after the page's one number format
    # (link/attention.js's fmt, link/shared.js's fmtL and fmtShortL, checked with the server's under node: tests/js/).
    _esm = TRAIN_JS
    _stylesheets = [TRAIN_CSS]

    def __init__(self, training: TrainingState, **params):
        super().__init__(**params)
        self.training = training  # plain attribute: the state stays on the server
        #: Where the page writes where it is: its own model, so a write costs the server one property's change. A
        #: served page's document holds it as a root (:meth:`attach`).
        self.report = OneRow(data=dict(step=[0], playing=[False], seq=[0]), name="train-report")
        self.report.on_change("data", self._on_report)
        #: Called with "csv" or "json", returns (file name, contents): set by the view. A plain attribute.
        self.on_download = None
        self._download = None  # the file kind waiting for the queue ("csv" or "json")
        self._file = None  # (run, kind, (name, text)): the last file made, kept while its run lasts
        self._pending = None  # the newest report not taken yet: (step, playing)
        self._scheduled = False
        # this page's reports: the newest wins, the next waits as long as the last took (half the loop), at least
        # REPORT_GAP; in perf_counter time
        self._pace = Pace(share=0.5, least=0.0)
        training.param.watch(self._on_run, ["run", "floor"])
        training.param.watch(self._on_step, ["step", "playing", "plays"])
        training.param.watch(self._on_settings, list(TrainingState.SETTINGS))
        self._on_settings()
        self._on_run()
        self._on_step()

    def attach(self, doc) -> None:
        """Put the report row in a served page's document (a root of its own: nothing draws it)."""
        if doc is not None and self.report.document is None:
            doc.add_root(self.report)

    # --- the server's state, to the page ---------------------------------------------------------------------------

    def _on_run(self, *_) -> None:
        t = self.training
        if t.run is None:
            return
        floor = t.floor.loss if t.floor is not None and not t.floor.learnable else None
        self.param.update(run=run_payload(t.run, floor), step=t.step, playing=t.playing, plays=t.plays)

    def _on_step(self, *_) -> None:
        t = self.training
        self.param.update(step=t.step, playing=t.playing, plays=t.plays)

    def _on_settings(self, *_) -> None:
        self.param.update(settings=_settings(self.training), paintable=self.training.target == "paint")

    # --- where the page is: paced ------------------------------------------------------------------------------------

    def _on_report(self, attr, old, new) -> None:
        # a page writes one row of a whole number and a boolean; anything else is ignored, as the drag channel's
        try:
            step, playing = new["step"][0], new["playing"][0]
        except (KeyError, IndexError, TypeError):
            return
        if is_whole(step) and isinstance(playing, bool):
            self._receive(step, playing)

    def _receive(self, step: int, playing: bool) -> None:
        """Keep the page's newest report, and take it now (outside a served page) or when the pacing allows
        (``services/pace.py``): once the page's wait is over it joins the process's queue of reports, which takes it
        in its turn, so the page's pause counts from when it was taken."""
        self._pending = (step, playing)
        doc = self.report.document or pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._take()
        elif not self._scheduled:
            self._scheduled = True
            wait = self._pace.wait(time.perf_counter())
            if wait > 0:
                doc.add_timeout_callback(self._submit, max(1, round(wait * 1000)))
            else:
                self._submit()

    def _submit(self) -> None:
        doc = self.report.document or pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._take()
        else:
            get_report_queue().submit(doc, self._take)

    def _take(self) -> None:
        """Apply the newest report: the state's step, and what follows it (the address, a room)."""
        self._scheduled = False
        pending, self._pending = self._pending, None
        if pending is None:
            return
        start = time.perf_counter()
        with one_message():
            # The page is where it says: the player's own step and play state are not sent back to it (a class
            # pressing Play together costs the server one message less each), only what follows from them (the
            # address, a room). The parameters still take the values, so a later change from the server (a
            # presenter's step) is compared with where the page really is.
            with param.parameterized.discard_events(self):
                self.training.show(*pending)
        end = time.perf_counter()
        self._pace.took(end - start, end, at_least=REPORT_GAP)

    # --- a learner's choices and downloads ---------------------------------------------------------------------------

    def _ask_download(self, kind: str) -> None:
        """Send the run as ``kind``: at once outside a served page, else when the queue of runs comes to it."""
        waiting, self._download = self._download is not None, kind
        doc = self.report.document or pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._send_download()
        elif not waiting:
            get_queue().submit(doc, self._send_download)

    def _send_download(self) -> None:
        kind, self._download = self._download, None
        run = self.training.run
        if kind is None or run is None or self.on_download is None:
            return
        if self._file is None or self._file[0] is not run or self._file[1] != kind:
            self._file = (run, kind, self.on_download(kind))
        name, text = self._file[2]
        self._send_msg({"download": name, "text": text})

    def _handle_msg(self, msg) -> None:
        if not isinstance(msg, dict):
            return
        action = msg.get("action")
        if action == "show":
            step, playing = msg.get("step"), msg.get("playing")
            if is_whole(step) and isinstance(playing, bool):
                self._receive(step, playing)
            return
        if action == "download":
            if msg.get("kind") in DOWNLOADS and self.on_download is not None and self.training.run is not None:
                self._ask_download(msg["kind"])
            return
        with one_message():
            if action == "paint" or action in CHOICES:
                # what the page sent first is taken first: a report still waiting is where the page was before
                # this choice (which opens its new run at step 0)
                self._take()
            if action == "paint":
                self.training.paint(msg.get("row"), msg.get("col"))
            elif action in CHOICES:
                method, argument = CHOICES[action]
                getattr(self.training, method)(*(() if argument is None else (msg.get(argument),)))
