"""How a training run reaches the page, and how the page says where it is in it (``link/train.js``).

The server computes the whole run in one call (``core.training.train``, 500 steps) and sends it once: the W's of
every step and the loss, as arrays of float64 (Bokeh sends them as binary buffers: 24 kB for one head on
"I love NLP", 96 kB for two heads on five tokens). The page computes each step's queries, keys, weights,
outputs and loss from X and the W's with its mirror of the core's forward pass, and plays the run back at the
screen's frame rate with no message per frame. It tells the server where it is only when a learner presses Play
or Pause, lets go of the scrub slider, or stops stepping (:meth:`TrainLink._handle_msg`), so the address and a
presented room follow; a click on a painted target's cell comes the same way.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.palettes import Cividis256

from core.training import TrainingRun
from link.updates import one_message
from session.training import TrainingState

HERE = Path(__file__).resolve().parent
#: The player's look, in its shadow root (sizes and colours from the page's custom properties).
TRAIN_CSS = (HERE.parent / "static" / "train.css").read_text()


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


class TrainLink(pn.custom.JSComponent):
    """The Train tab's player in the page, and the server's end of what it reports.

    ``run`` is :func:`run_payload` of the state's run; ``step`` and ``playing`` the state's (the page goes there
    when they change from the server); ``words`` the player's texts in the page's language; ``paintable`` makes
    the target's cells buttons. The page's messages: ``{"action": "show", "step": k, "playing": bool}`` and
    ``{"action": "paint", "row": i, "col": j}``; anything else is ignored.

    Test hooks: the player's root ``.train-player`` carries ``data-step``; the readout ``.readout`` its
    ``data-loss``; the weights' cells ``.weights td[data-i][data-j]`` and each W's ``table[data-w][data-h]
    td[data-r][data-c]`` their ``data-value``; the swapped loss ``.swap-loss`` its ``data-loss``.
    """

    run = param.Dict(default={}, doc="The run to play (run_payload); empty until the first is computed.")
    step = param.Integer(default=0, doc=(
        "The step the server holds: the page's last report, or a link's or presenter's."))
    playing = param.Boolean(default=False)
    plays = param.Integer(default=0, doc="How many times Play was pressed: a press from the same step plays again.")
    paintable = param.Boolean(default=False, doc="The target is the learner's painted pattern: its cells are buttons.")
    words = param.Dict(default={}, doc="The player's texts and the number format, in the page's language.")
    palette = param.List(default=list(Cividis256[::8]), doc="The weights' colours, 0 to 1 (the Matrix tab's Cividis).")

    _esm = HERE / "train.js"
    _stylesheets = [TRAIN_CSS]

    def __init__(self, training: TrainingState, **params):
        super().__init__(**params)
        self.training = training  # plain attribute: the state stays on the server
        training.param.watch(self._on_run, ["run", "floor"])
        training.param.watch(self._on_step, ["step", "playing", "plays"])
        training.param.watch(self._on_target, ["target"])
        self._on_target()
        self._on_run()
        self._on_step()

    def _on_run(self, *_) -> None:
        t = self.training
        if t.run is None:
            return
        floor = t.floor.loss if t.floor is not None and not t.floor.learnable else None
        self.param.update(run=run_payload(t.run, floor), step=t.step, playing=t.playing, plays=t.plays)

    def _on_step(self, *_) -> None:
        t = self.training
        self.param.update(step=t.step, playing=t.playing, plays=t.plays)

    def _on_target(self, *_) -> None:
        self.paintable = self.training.target == "paint"

    def _handle_msg(self, msg) -> None:
        if not isinstance(msg, dict):
            return
        action = msg.get("action")
        with one_message():
            if action == "show":
                # The page is where it says: the player's own step and play state are not sent back to it (a
                # class pressing Play together costs the server one message less each), only what follows from
                # them (the address, a room). The parameters still take the values, so a later change from the
                # server (a presenter's step) is compared with where the page really is.
                with param.parameterized.discard_events(self):
                    self.training.show(msg.get("step"), msg.get("playing"))
            elif action == "paint":
                self.training.paint(msg.get("row"), msg.get("col"))
