"""The Projections and Heads tabs' part of a page's state: embeddings X, each head's W_Q, W_K, W_V, W_O, T.

:class:`HeadsState` is a mixin of :class:`session.state.AttentionState`: one page has one state, and these
params are read and written as ``state.embeddings``, ``state.set_projection(...)`` like the explorer's own.
"""

from __future__ import annotations

import math

import numpy as np
import param

from core import (
    I_LOVE_NLP,
    PREVIOUS_AND_SELF_2D,
    SECTION_6_2D,
    MultiHeadResult,
    SelfAttention,
    multi_head_attention,
    random_projections,
    self_attention,
)
from core.checks import is_whole
from core.cost import COST_SIZES
from core.projections import IDENTITY as IDENTITY_PROJECTION
from session.i18n import N_
from session.inputs import MAX_ABS_COORD, refuse, set_typed, shown

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

def same_value(a, b) -> bool:
    """Whether a param's value ``a`` equals ``b`` (arrays by shape and every entry)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b



class HeadsState(param.Parameterized):
    """The Projections and Heads tabs' sentence (HEAD_TOKENS), its embeddings X : (3, d_model) and up to
    MAX_HEADS heads, each with W_Q, W_K, W_V : (d_model, 2), and W_O : (heads * d_v, d_model).

    A mixin: the class using it provides ``tr`` (the page's language), ``message``/``message_field`` and
    ``_edited(**changes)`` (an edit of the explorer's example), as :class:`session.state.AttentionState` does.
    Bad input never changes the state: it is refused with a message.
    """

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

    #: (X, projections, head, T, result) of the last head_self_attention
    _head_result = None

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
        def change(x):
            X = np.array(self.embeddings, dtype=np.float64)
            X[row, axis] = x
            return self._heads_edited(embeddings=_frozen(X))
        return set_typed(self, self.embedding_field(row, axis), [text], change)

    def move_embedding(self, row: int, x, y) -> bool:
        """Move embedding ``row`` to (x, y), as a drag does. Refuses bad input with a message."""
        def change(*point):
            X = np.array(self.embeddings, dtype=np.float64)
            X[row] = point
            return self._heads_edited(embeddings=_frozen(X))
        return set_typed(self, self.embedding_field(row), [x, y], change)

    def set_projection(self, role: int, row: int, col: int, text) -> bool:
        """Set entry (row, col) of the shown head's W_Q, W_K or W_V (``role`` 0, 1, 2) from typed text."""
        def change(x):
            W = np.array(self.projections[self.head], dtype=np.float64)
            W[role, row, col] = x
            return self._heads_edited(projections=self._projections_with(self.head, W))
        return set_typed(self, self.projection_field(role, row, col), [text], change)

    def move_basis_image(self, role: int, row: int, x, y) -> bool:
        """Move e_row W (row ``row`` of the shown head's W_Q, W_K or W_V) to (x, y), as a drag does.

        With embeddings as rows, x W = x_1 (e_1 W) + x_2 (e_2 W): the rows of W are where it sends the two
        basis vectors, so dragging them is editing W.
        """
        def change(*point):
            W = np.array(self.projections[self.head], dtype=np.float64)
            W[role, row] = point
            return self._heads_edited(projections=self._projections_with(self.head, W))
        return set_typed(self, self.projection_field(role, row), [x, y], change)

    def load_projection_preset(self, name: str) -> bool:
        """Load one of PROJECTION_CHOICES into X and the shown head ("Random" draws with ``projection_seed``)."""
        if name not in PROJECTION_CHOICES:
            return refuse(self, "preset", N_("{name} is not one of {choices}", name=shown(name),
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
        if not is_whole(heads) or not 1 <= heads <= MAX_HEADS:
            return refuse(self, "heads", N_("{heads} is not a number of heads from 1 to {limit}",
                                            heads=shown(heads), limit=MAX_HEADS), N_("heads"))
        if heads == self.heads:
            return True
        return self._heads_edited(heads=int(heads), head=min(self.head, heads - 1), w_o=default_w_o(heads))

    def _runs(self, head) -> bool:
        """Whether ``head`` (0-based) is one of the running heads; if not, refuse it with a message."""
        if not is_whole(head) or not 0 <= head < self.heads:
            return refuse(self, "head", N_("head {head} does not run: choose 1 to {heads}", head=shown(head),
                                           heads=self.heads), N_("head"))
        return True

    def select_head(self, head: int) -> bool:
        """Show head ``head`` (0-based) in the Projections tab."""
        if not self._runs(head):
            return False
        return self._heads_edited(head=int(head))

    def set_w_o(self, row: int, col: int, text) -> bool:
        """Set entry (row, col) of W_O from typed text; refuses bad input with a message."""
        def change(x):
            W = np.array(self.w_o, dtype=np.float64)
            W[row, col] = x
            return self._heads_edited(w_o=_frozen(W))
        return set_typed(self, f"W_O[{row + 1},{col + 1}]", [text], change)

    def set_temperature(self, text) -> bool:
        """Set T from a number or typed text, from MIN_TEMPERATURE to MAX_TEMPERATURE; refuses anything else."""
        def change(t):
            if not MIN_TEMPERATURE <= t <= MAX_TEMPERATURE:
                return refuse(self, "T", N_("{text} is outside {low} to {high}", text=shown(text),
                                            low=f"{MIN_TEMPERATURE:g}", high=f"{MAX_TEMPERATURE:g}"))
            return self._heads_edited(temperature=t)
        return set_typed(self, "T", [text], change)

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
        if not self._runs(head):
            return False
        Q, K, V = self.head_attention().heads[head].projections
        row = self.selected if self.selected < len(HEAD_TOKENS) else 1
        if max(np.abs(Q).max(), np.abs(K).max(), np.abs(V).max()) > MAX_ABS_COORD:
            return refuse(self, f"head {head + 1}", N_("its queries, keys or values leave ±{limit}, the explorer's "
                                                        "plane", limit=f"{MAX_ABS_COORD:g}"),
                          N_("head {head}", head=head + 1))
        with param.parameterized.batch_call_watchers(self):
            return self._edited(tokens=list(HEAD_TOKENS), keys=K.copy(), values=V.copy(), selected=row,
                                query=(float(Q[row, 0]), float(Q[row, 1])), scale=True, causal=False, trap=False,
                                head=int(head))

    def _heads_edited(self, **changes) -> bool:
        # only what differs: an edit to the same number, or a drag let go where it started, redraws nothing
        changes = {name: value for name, value in changes.items() if not same_value(getattr(self, name), value)}
        self.param.update(**changes, message="", message_field="")
        return True
