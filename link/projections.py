"""The server's end of the Projections tab's drag, beside its script (``link/projections.js``).

Under the drag's contract (``link/__init__.py``), with one difference: the page computes every position
between the press and the release itself and sends only those two, so a drag costs the server two messages
whatever its length. The view is ``widgets/projections.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import panel as pn
import param

from core import self_attention
from link.channel import PositionChannel
from link.row import OneRow
from session.heads import HEAD_TOKENS, ROLES
from session.i18n import N_, Translator, translator
from session.state import AttentionState

HERE = Path(__file__).resolve().parent
ENGLISH = translator("en")
#: The page's script for a drag in the planes: the formula's softmax and fmt (attention.js), the helpers both drags
#: share, the outbox, then the mirror and the drag.
PROJECTIONS_JS = "\n".join((HERE / name).read_text()
                           for name in ("attention.js", "shared.js", "outbox.js", "projections.js"))

#: A press this close to a handle picks it up, as a share of the plane's width (~16 px of a 270 px plane).
GRAB = 0.06

#: The drag's status line, here and in the page's preview (projections.js, statusText).
OUTPUTS = N_("Outputs Σ aⱼvⱼ: {outputs}")


def projection_status(result, handle: str = "", at=None, tr: Translator = ENGLISH) -> str:
    """The outputs of each token in one line, after the dragged ``handle`` and where it is (``at``) during a
    drag: the server's answer to a position, and the page's text for it (projections.js, statusText), in the
    page's language."""
    points = [tr.vec(o, 4) for o in result.attention.output]
    where = f"{handle} {tr.vec(at, 2)} → " if handle else ""
    outputs = " · ".join(f"{t} {p}" for t, p in zip(HEAD_TOKENS, points, strict=True))
    return where + tr(N_(OUTPUTS.msgid, outputs=outputs))


def handle_names(role: int) -> dict[str, list[str]]:
    """What the drag's handles are called on the page: ``x love``; ``e₁W_Q`` for the rows of W_Q."""
    sub = ROLES[role][1:]
    return {"x": [f"x {t}" for t in HEAD_TOKENS], "w": [f"e₁W{sub}", f"e₂W{sub}"]}


class ProjectionChannel(PositionChannel):
    """The server's end of a drag in the Projections tab's planes; what the page's script reads.

    ``channel`` is the :class:`~link.row.OneRow` the page writes one position at a time: ``x``, ``y`` (data
    units of the plane, clamped to it), ``seq``, ``start`` (the press), ``end`` (the release) and ``plane``
    (``"x"``: the embeddings, ``"w"``: the basis images of the chosen W). ``confirmed`` answers each position
    taken with its ``seq`` and ``text``, the outputs the core computes for it (:func:`projection_status`).
    ``inputs`` holds what the page's preview needs besides the position: X, the shown head's W_Q, W_K, W_V,
    T, the tokens, which W the right plane edits (``role``) and the grab radius.

    The press picks the handle up as the page does: the nearest embedding (left plane) or basis image (right
    plane) within :data:`GRAB` of the plane's width, or nothing (then the drag moves nothing). Particular to
    this drag (see the contract in ``link/__init__.py``): the page sends the press and the release only, and the
    state takes the dragged value at the release; a position sent between them (no page of ours sends one) is
    answered paced as the query's, and counts against the process's share for mid-drag updates.
    """

    state = param.ClassSelector(class_=AttentionState)
    role = param.Integer(default=0, bounds=(0, 2), doc="Which W the right plane edits: 0 W_Q, 1 W_K, 2 W_V.")

    #: The plane a position is in: ``"x"`` (the embeddings) or ``"w"`` (the chosen W's basis images).
    EXTRA = {"plane": ("x", lambda plane: plane in ("x", "w"))}

    def __init__(self, bounds, refresh, status, **params):
        super().__init__(**params)
        # Each plane's extent as the server drew it, {"x" | "w": ((x0, x1), (y0, y1))}: what a press grabs and
        # where a position is clamped to. A page can write its figures' ranges; these it cannot.
        self.bounds = bounds
        self._refresh = refresh  # draws the state again: a release that changed nothing takes back the preview
        self._status = status  # the outputs' line the view drew for the state, the release's answer
        self.inputs = OneRow(data=self._inputs(), name="projection-inputs")
        self.confirmed = OneRow(data=dict(seq=[0], text=[""]), name="projection-confirmed")
        self._open_channel("projection-channel")  # _pending: ((plane, index), x, y, seq) not yet taken
        self._target = None  # (plane, index) of the handle being dragged
        self._release = False
        self._unreleased = 0  # positions taken since the last release
        self.state.param.watch(self._sync, ["embeddings", "projections", "head", "temperature", "lang"])
        self.param.watch(self._sync, "role")

    def _inputs(self) -> dict:
        s = self.state
        names = handle_names(self.role)
        return dict(X=[np.asarray(s.embeddings, dtype=float).tolist()],
                    W=[np.asarray(s.projections[s.head], dtype=float).tolist()], T=[float(s.temperature)],
                    tokens=[list(HEAD_TOKENS)], role=[self.role], grab=[GRAB], names_x=[names["x"]],
                    names_w=[names["w"]],
                    # as JSON text: a dict in a data source reaches the page as a Map
                    words=[json.dumps({**s.tr.number_format(), "outputs": s.tr(OUTPUTS)}, ensure_ascii=False)])

    def _sync(self, *_):
        self.inputs.data = self._inputs()

    def _handles(self, plane: str) -> np.ndarray:
        s = self.state
        return np.asarray(s.embeddings if plane == "x" else s.projections[s.head][self.role], dtype=float)

    def _grab(self, plane: str, x: float, y: float) -> int | None:
        (x0, x1), _ = self.bounds[plane]
        d = np.hypot(*(self._handles(plane) - [x, y]).T)
        j = int(np.argmin(d))
        return j if d[j] <= GRAB * (x1 - x0) else None

    def receive(self, x: float, y: float, *, plane: str, seq: int = 0, start: bool = False, end: bool = False) -> None:
        """Take one position of the page's drag: ``(x, y)`` in ``plane`` (``"x"`` or ``"w"``), its ``seq``."""
        finite = math.isfinite(x) and math.isfinite(y)
        if start:
            self._target = (plane, self._grab(plane, x, y)) if finite else None
            if self._target is not None and self._target[1] is None:
                self._target = None
            self._release = False
        if self._target is None or self._target[0] != plane:
            if end:  # a release in the other plane still ends the drag
                self._target = None
                self._unreleased = 0
                self._drag_ended()
            self._answer(seq, "")  # nothing picked up: the page's next position may come
            return
        if not end and not finite:  # no page sends one mid-drag: nothing to compute
            self._answer(seq, "")
            return
        (x0, x1), (y0, y1) = self.bounds[plane]
        x, y = min(max(x, x0), x1), min(max(y, y0), y1)
        self._pending = (self._target, x, y, seq)
        if end:
            self._release = True
            self._target = None
            self._unreleased = 0
            self._drag_ended()
        else:
            # The page sends the press and the release only: a drag counts against the process's share for
            # mid-drag updates from the second position before a release (a page of its own making: positions
            # in between, or press after press), not from the press, after which an honest page sends nothing.
            self._unreleased += 1
            if self._unreleased > 1 and self not in self._budget:
                self._drag_started()
        self._schedule(end)

    def _take(self, pending) -> None:
        (plane, index), x, y, seq = pending
        s = self.state
        with pn.io.hold():
            if self._release:
                self._release = False
                X, P = s.embeddings, s.projections
                ok = s.move_embedding(index, x, y) if plane == "x" else s.move_basis_image(self.role, index, x, y)
                if s.embeddings is X and s.projections is P:
                    self._refresh()  # nothing changed: the page's preview gives way to what the state holds
                self._answer(seq, self._status() if ok else "")
            else:
                X, W = np.array(s.embeddings, dtype=float), np.array(s.projections[s.head], dtype=float)
                if plane == "x":
                    X[index] = (x, y)
                else:
                    W[self.role, index] = (x, y)
                try:
                    text = projection_status(self_attention(X, W[0], W[1], W[2], temperature=s.temperature),
                                             handle_names(self.role)[plane][index], (x, y), s.tr)
                except ValueError as exc:  # products too large for float64: the release will say so
                    text = str(exc)
                self._answer(seq, text)

    def _answer(self, seq: int, text: str) -> None:
        self.confirmed.data = dict(seq=[seq], text=[text])
