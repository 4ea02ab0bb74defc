"""The Train tab: watch W_Q, W_K and W_V learn.

Module 2: "At initialisation they are random and the three roles are indistinguishable; after training, each has
learned its specialty … a query learns to look for what a key learns to expose." A learner picks what attention
should do (a preset, or a pattern painted cell by cell), presses Play and watches gradient descent: the loss
falling, the attention weights moving towards the target, each head's queries and keys moving in a plane drawn as
the Projections tab draws its own, W's numbers changing. At the end the tab says what each W learned, shows that
swapping W_Q and W_K now costs loss, and, for a painted pattern one head cannot learn, where its loss stops and
why; two heads (the Heads tab's multi-head, trained) go below it.

The state is ``AttentionState.training`` (session/training.py); the run is played back in the page
(link/train.py, link/train.js); the server only says what was learned, once per run.
"""

from __future__ import annotations

import csv
import io
import json
from html import escape

import numpy as np
import panel as pn
import param

from core.training import learned
from link.rules import INK_THRESHOLD
from link.train import TrainLink
from services.train_queue import scheduler_for
from session.i18n import N_, Translator
from session.state import AttentionState
from session.training import PAINT, PAINT_SENTENCES, TrainingState
from widgets.style import TOKEN_COLORS

#: The targets as the page names them; the core's names are its English data.
TARGET_LABELS = {"previous": N_("Attend to the previous token"), "yourself": N_("Attend to yourself"),
                 "nlp": N_("Everyone attends to NLP"), "retrieve": N_("Retrieve the value"),
                 PAINT: N_("Paint your own")}
#: What each target asks, in the course's words.
TARGET_NOTES = {
    "previous": N_("\"attention is all you need\", each embedding its position on a half circle, 45° apart. Each "
                   "token should attend to the one before it, the first token to itself."),
    "yourself": N_("\"I love NLP\" with Section 6's embeddings. Each token should attend to itself."),
    "nlp": N_("\"I love NLP\". Every token should attend to NLP."),
    "retrieve": N_("\"I love NLP\". Each output should equal a value of Section 6: I → 2, love → 6, NLP → 4. "
                   "W_V has to learn as well as W_Q and W_K. Each output is a mix of the values, weighted by the "
                   "attention, so the values W_V learns need not be 2, 6 and 4 in that order."),
    PAINT: N_("Click a cell of the target to switch it on or off: row i is what token i should attend to (its "
              "cells share the row's attention equally). Will one head learn it?"),
}
#: What a head's plane shows, for a screen reader (the page draws the plane: link/train_plane.js).
PLANE_LABEL = N_("The queries (●) and keys (■) of head {n} at the step shown, with the values (▲) when W_V learns")
#: A swap that raises the loss by more than this (nats, or squared units) shows that the roles have parted.
ROLES_APART = 0.1


def sentence(text: str) -> str:
    """``text`` as a sentence's start: its first letter a capital (where the language has capitals)."""
    return text[:1].upper() + text[1:]


def tab_words(tr: Translator) -> dict:
    """The tab's texts (link/train.js) in the page's language, with its number format: plain text the page sets
    as text, except ``intro``, HTML made here of escaped texts."""
    return {**tr.number_format(),
            "intro": "<h3>" + escape(tr._("Train W_Q, W_K and W_V")) + "</h3><p>" + tr._(
                "<q>At initialisation they are random and the three roles are indistinguishable; after training, "
                "each has learned its specialty.</q> (Module 2) Pick what attention should do, press "
                "<strong>Play</strong> and watch gradient descent learn it: the loss falls, the weights move towards "
                "the target, the queries and keys move in their plane. Space plays and pauses, ← → step.") + "</p>",
            "targets": {key: tr(label) for key, label in TARGET_LABELS.items()},
            "notes": {key: tr(note) for key, note in TARGET_NOTES.items()},
            "new_seed": tr._("New seed"), "new_seed_label": tr._("Another random start: the same target"),
            "seed": tr._("seed {seed}"), "heads": tr._("Heads"), "learning_rate": tr._("Learning rate"),
            "temperature": tr._("Temperature T"), "scale": tr._("Divide the scores by √d_k"),
            "two_heads": tr._("Two heads"),
            "two_heads_label": tr._("Train two heads together: their average attention"),
            "csv": tr._("Run as CSV"), "json": tr._("Run as JSON"),
            "play": tr._("Play"), "pause": tr._("Pause"), "back": "◀", "fwd": "▶",
            "back_label": tr._("One step back (←)"), "fwd_label": tr._("One step on (→)"),
            "scrub": tr._("Step of the run"),
            "readout": tr._("Step {step} of {steps} · loss {loss}"),
            "swap": tr._("Swap W_Q and W_K"), "swapped": tr._("loss {loss} → swapped {swapped}"),
            "loss_caption": tr._("Loss at each step"),
            "loss_aria": tr._("Loss curve: from {first} at the random start to {last} at the last step"),
            "weights_caption": tr._("Attention weights (heads' average)"),
            "weights_caption_one": tr._("Attention weights"), "target_caption": tr._("Target"),
            "paint_caption": tr._("Target: click to paint"), "paint_cell": tr._("{query} attends to {key}"),
            "outputs_caption": tr._("Outputs and targets"), "output": tr._("output"), "wanted": tr._("target"),
            "head": tr._("head {n}"), "plane_label": tr._(PLANE_LABEL.msgid),
            # the sentences a pattern is painted on, as they are written (their tokens are the run's own)
            "sentence": tr._("Paint on"),
            "sentences": {str(n): " ".join(task.tokens) for n, task in PAINT_SENTENCES.items()}}


#: The run's CSV columns: one number per line, named by what it is, its head, its step and its place.
RUN_CSV_COLUMNS = ("quantity", "head", "step", "row", "column", "value")


def run_numbers(run) -> dict:
    """A run as plain numbers (full float64 precision, English keys): its settings, the sentence, the target, and
    at every step (index 0 the random start) the loss and each W, ``W_Q[step][head][row][column]``."""
    task = run.task
    return {"target": task.name, "tokens": list(task.tokens), "X": task.X.tolist(), "kind": task.kind,
            "target_values": np.asarray(task.target).tolist(), "seed": run.seed, "steps": run.steps,
            "learning_rate": run.learning_rate, "scaled": run.scale, "temperature": run.temperature,
            "heads": run.heads, "loss": run.loss.tolist(), "W_Q": run.W_Q.tolist(), "W_K": run.W_K.tolist(),
            "W_V": run.W_V.tolist(), "W_O": None if run.W_O is None else run.W_O.tolist()}


def run_json(run) -> str:
    return json.dumps(run_numbers(run))


def run_csv(run) -> str:
    """The run, one number a line (:data:`RUN_CSV_COLUMNS`): the loss of each step, then each W's entries."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(RUN_CSV_COLUMNS)
    writer.writerows(("loss", "", k, "", "", repr(float(x))) for k, x in enumerate(run.loss))
    for name in ("W_Q", "W_K", "W_V"):
        W = getattr(run, name)
        writer.writerows((name, h + 1, k, r, c, repr(float(W[k, h, r, c])))
                         for k in range(W.shape[0]) for h in range(W.shape[1]) for r in range(W.shape[2])
                         for c in range(W.shape[3]))
    if run.W_O is not None:
        writer.writerows(("W_O", "", k, r, c, repr(float(run.W_O[k, r, c])))
                         for k in range(run.W_O.shape[0]) for r in range(run.W_O.shape[1])
                         for c in range(run.W_O.shape[2]))
    return out.getvalue()


class TrainView(pn.viewable.Viewer):
    """The Train tab over ``state.training``: the target, the settings, the player, the planes, what was learned.

    The page draws all of it (:class:`link.train.TrainLink`, its test hooks); this view gives it the texts in the
    page's language, what was learned once per run, a refused input's message, and the files of a run.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        t: TrainingState = s.training
        doc = pn.state.curdoc
        served = doc is not None and doc.session_context is not None
        if served:  # a served page: its runs wait their turn
            t.scheduler = scheduler_for(doc)
        # the whole tab, scrolling inside it (static/train.css) like the other tabs: the page itself never scrolls
        self.player = TrainLink(t, words=tab_words(s.tr), colors=list(TOKEN_COLORS), name="train",
                                css_classes=["train-tab"], sizing_mode="stretch_both", margin=(0, 0, 0, 5),
                                ink_threshold=INK_THRESHOLD)
        self.player.on_download = self._file
        if served:
            self.player.attach(doc)
        s.param.watch(self._on_lang, "lang")
        t.param.watch(lambda *_: self._render(), ["run", "floor"])
        t.param.watch(self._on_message, "message")
        t.activate()  # the first run: now, or when the server's queue comes to it
        self._render()

    def _file(self, kind: str) -> tuple[str, str]:
        run = self.state.training.run
        return ("training-run.csv", run_csv(run)) if kind == "csv" else ("training-run.json", run_json(run))

    def _on_lang(self, *_) -> None:
        with pn.io.hold():
            self.player.words = tab_words(self.state.tr)
            self._render()
            self._on_message()

    def _on_message(self, *_) -> None:
        msg = self.state.training.message
        self.player.message = self.state.tr(msg) if msg else ""

    # --- what the run shows -------------------------------------------------------------------------------------

    def _render(self) -> None:
        t = self.state.training
        run = t.run
        if run is None:
            return
        self.player.param.update(
            summary=self._summary_html(run),
            two_heads=bool(t.floor is not None and not t.floor.learnable and t.heads == 1
                           and not any(c.any_heads for c in t.floor.conflicts)))

    def _summary_html(self, run) -> str:
        t, tr = self.state.training, self.state.tr
        what = learned(run)
        first, last = float(run.loss[0]), float(run.loss[-1])
        parts = [f"<h4>{escape(tr._('What was learned'))}</h4>",
                 "<p>" + escape(tr._("After {steps} steps the loss is {last} (at the random start: {first}).",
                                     steps=run.steps, last=tr.num(last), first=tr.num(first))) + "</p>"]
        tokens = [tr.name(tok) for tok in run.task.tokens]
        if run.task.kind == "weights":
            parts.append(self._attends_html(run, what, tokens))
        else:
            parts.append(self._values_html(run, what, tokens))
        # the swap: at the start the roles are interchangeable; after training, not where the pattern needs them apart
        start_swap = float(learned(run, 0).swapped_loss)
        swapped = float(what.swapped_loss)
        apart = swapped - last > ROLES_APART
        parts.append(f"<p data-swap='{swapped!r}'>" + escape(tr._(
            "Swap W_Q and W_K: at the random start the loss goes from {l0} to {s0}, the roles indistinguishable; now "
            "from {l1} to {s1}.", l0=tr.num(first), s0=tr.num(start_swap), l1=tr.num(last), s1=tr.num(swapped))) + " "
            + escape(tr._("The roles are no longer interchangeable: a query learned to look for what a key learned to "
                          "expose.") if apart else tr._(
                "Swapping changes little here: the learned W_Q W_Kᵀ is nearly symmetric, so a query and a key can "
                "play each other's part (as with Q = K).")) + "</p>")
        if t.floor is not None:
            parts.append(self._floor_html(run, t))
        return "".join(parts)

    def _attends_html(self, run, what, tokens) -> str:
        tr = self.state.tr
        out = []
        n = len(tokens)
        for h in range(run.heads):
            picks = what.attends_to[h].tolist()
            head = tr._("Head {n}", n=h + 1) + ": " if run.heads > 1 else ""
            if picks == [0, *range(n - 1)]:
                text = tr._("the query of position i points where the key of i − 1 points (the first token's where "
                            "its own key points).")
            else:
                top = what.top_weight[h]
                text = tr.list_sep.join(
                    tr._("the query of “{a}” points where the key of “{b}” points", a=tokens[i], b=tokens[j])
                    if top[i] > 0.6
                    else tr._("the query of “{a}” spreads its attention", a=tokens[i])
                    for i, j in enumerate(picks)) + "."
            turn = ""
            if what.rotation_share[h] > 0.9:
                turn = " " + tr._("W_Q W_Kᵀ is close to a turn by {deg}°: each query is its embedding turned by "
                                  "{deg}°, and it meets the key that lies there.",
                                  deg=tr.minus_sign(tr.num(float(what.rotation_deg[h]), 0)))
            out.append(f"<p>{escape(head + (text if head else sentence(text)) + turn)}</p>")
        return "".join(out)

    def _values_html(self, run, what, tokens) -> str:
        """What W_V learned, and why its values are not the targets in order: each output is a mix of the values,
        and (one head) which values each token's output reads."""
        tr = self.state.tr
        values = what.values[0][:, 0]
        learned_values = tr.list_sep.join(f"{tok} {tr.minus_sign(tr.num(v, 2))}"
                                          for tok, v in zip(tokens, values, strict=True))
        parts = ["<p>" + escape(tr._(
            "W_V learned the values {values}, not the targets in order: each output is a mix of the values, weighted "
            "by the attention, and W_Q and W_K learned which values each token reads.", values=learned_values))
            + "</p>"]
        if run.heads == 1:  # with two heads W_O mixes the heads' outputs too: no one value per output to name
            weights = run.head_weights[what.step][0]
            outputs = weights @ values
            reads = " ".join(
                tr._("“{a}” reads the value of “{b}” (weight {weight}), so its output is {output}.", a=tokens[i],
                     b=tokens[j], weight=tr.num(float(weights[i, j]), 2), output=tr.minus_sign(tr.num(outputs[i], 2)))
                if weights[i, j] > 0.6 else
                tr._("“{a}” spreads its attention, so its output {output} is the weighted average of the values.",
                     a=tokens[i], output=tr.minus_sign(tr.num(outputs[i], 2)))
                for i, j in enumerate(what.attends_to[0].tolist()))
            parts.append("<p>" + escape(reads) + "</p>")
        return "".join(parts)

    def _floor_html(self, run, t) -> str:
        tr = self.state.tr
        floor = t.floor
        tokens = [tr.name(tok) for tok in run.task.tokens]
        last = float(run.loss[-1])
        if floor.learnable:
            return "<p data-floor='none'>" + escape(tr._(
                "One head can learn this target: its loss can reach {entropy}, the target's own lowest.",
                entropy=tr.num(floor.entropy))) + "</p>"
        why = []
        for c in floor.conflicts:
            a, b = tokens[c.rows[0]], tokens[c.rows[1]]
            if c.rows[0] == c.rows[1]:
                why.append(tr._("{a}'s embedding is 0: its scores are all 0 and its weights equal, whatever W.", a=a))
            elif c.factor == 1.0:
                why.append(tr._("{a} and {b} have the same embedding, so every head gives them the same weights, but "
                                "the target asks for different ones.", a=a, b=b))
            else:
                why.append(tr._("x_{b} = {c} × x_{a}: for any W_Q and W_K, {b}'s scores are {c} times {a}'s, so {b} "
                                "cannot rank the keys as the target asks.", a=a, b=b,
                                c=tr.minus_sign(tr.short(c.factor, 2))))
        if not why:
            why.append(self._dependency_text(run, floor, tokens))
        text = tr._("One head cannot learn this target: its loss stops at {floor}, above the target's own lowest "
                    "{entropy}.", floor=tr.num(floor.loss), entropy=tr.num(floor.entropy))
        more = ""
        if t.heads > 1:
            more = " " + (tr._("Two heads: the loss reaches {loss}, below one head's floor {floor}.", loss=tr.num(last),
                               floor=tr.num(floor.loss)) if last < floor.loss - 1e-3 else
                          tr._("Two heads: the loss is {loss}, not below one head's floor {floor}.",
                               loss=tr.num(last), floor=tr.num(floor.loss)))
        elif not any(c.any_heads for c in floor.conflicts):
            more = " " + tr._("Two heads average two patterns, each peaked on its own key: try them.")
        return (f"<p data-floor='{floor.loss!r}' class='note'>" + escape(text) + " " + escape(" ".join(why))
                + escape(more) + "</p>")

    def _dependency_text(self, run, floor, tokens) -> str:
        """Why three rows conflict: one embedding is a combination of two others, and so are its scores."""
        tr = self.state.tr
        X = run.task.X
        short = [k for k in range(len(X)) if floor.row_excess[k] > 1e-6] or range(len(X))
        best = None  # (negative coefficients, their size), k, a, b, coefficients: the plainest sum first
        for k in short:
            others = [i for i in range(len(X)) if i != k]
            for a in others:
                for b in others:
                    if a < b and abs(np.linalg.det(X[[a, b]])) > 1e-9:
                        coef = np.linalg.solve(X[[a, b]].T, X[k])
                        key = (int(np.sum(coef < 0)), float(np.abs(coef).sum()))
                        if best is None or key < best[0]:
                            best = (key, k, a, b, coef)
        if best is None:
            return ""
        _, k, a, b, (ca, cb) = best
        return tr._("In two dimensions x_{k} = {ca} x_{a} + {cb} x_{b}, so for any W_Q and W_K one head's scores of "
                    "{k} are that same mix of {a}'s and {b}'s (a score x_i W_Q W_Kᵀ x_jᵀ is linear in x_i): the rows "
                    "cannot all get what they ask for.", k=tokens[k], a=tokens[a], b=tokens[b],
                    ca=tr.minus_sign(tr.short(float(ca), 2)), cb=tr.minus_sign(tr.short(float(cb), 2)))

    def __panel__(self):
        return self.player


def train_tab(state: AttentionState, styler=None) -> pn.viewable.Viewable:
    """The tab's contents. ``styler`` is the other tabs' restyler of Bokeh figures: this tab has none (the page draws
    its planes and curve in the page's own custom properties, so projector mode and the theme reach them)."""
    return TrainView(state=state).__panel__()
