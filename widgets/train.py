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
from bokeh.models import ColumnDataSource, Scatter, Text

from core.training import learned
from link.train import TrainLink
from server.train_queue import scheduler_for
from session.i18n import N_, Translator
from session.state import AttentionState
from session.training import (
    LEARNING_RATES,
    MAX_TRAIN_HEADS,
    PAINT,
    TEMPERATURES,
    TrainingState,
    nearest,
)
from widgets.glyphs import draw
from widgets.projections import _PLACED, HEADS_CSS, _fit, _placed, _plane, styled
from widgets.style import token_color

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
                   "W_V has to learn as well as W_Q and W_K."),
    PAINT: N_("Click a cell of the target to switch it on or off: row i is what token i should attend to (its "
              "cells share the row's attention equally). Will one head learn it?"),
}
#: Markers of the queries, keys and values in a head's plane (as the Projections tab's right plane).
MARKERS = {"Q": "circle", "K": "square", "V": "triangle"}
#: A swap that raises the loss by more than this (nats, or squared units) shows that the roles have parted.
ROLES_APART = 0.1


def player_words(tr: Translator) -> dict:
    """The player's texts (link/train.js) in the page's language, with its number format."""
    return {**tr.number_format(), "play": tr._("Play"), "pause": tr._("Pause"), "back": "◀", "fwd": "▶",
            "back_label": tr._("One step back (←)"), "fwd_label": tr._("One step on (→)"),
            "scrub": tr._("Step of the run"),
            "readout": tr._("Step {step} of {steps} · loss {loss}"),
            "swap": tr._("Swap W_Q and W_K"), "swapped": tr._("loss {loss} → swapped {swapped}"),
            "loss_caption": tr._("Loss at each step"),
            "loss_aria": tr._("Loss curve: from {first} at the random start to {last} at the last step"),
            "weights_caption": tr._("Attention weights (heads' average)"), "target_caption": tr._("Target"),
            "paint_caption": tr._("Target: click to paint"), "paint_cell": tr._("{query} attends to {key}"),
            "outputs_caption": tr._("Outputs and targets"), "output": tr._("output"), "wanted": tr._("target"),
            "head": tr._("head {n}")}


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

    Test hooks: the targets are the buttons ``train-target-<slug>`` (``paint`` too); the player is
    :class:`link.train.TrainLink`
    (its own hooks); the planes are the figures ``train-plane-<h>``; what was learned is the pane
    ``train-summary`` (``[data-swap]``, ``[data-floor]``), the "Two heads" button ``train-two-heads``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        t: TrainingState = s.training
        self._syncing = False
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:  # a served page: its runs wait their turn
            t.scheduler = scheduler_for(doc)
        tr = s.tr
        # one button per target, in a box that wraps (a button group does not: its second line covered the note)
        self.targets = {key: styled(pn.widgets.Button(css_classes=["train-target", f"train-target-{key}"]))
                        for key in TARGET_LABELS}
        for key, button in self.targets.items():
            button.on_click(lambda _, key=key: t.choose_target(key))
        self.note = styled(pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 5)))
        self.new_seed = styled(pn.widgets.Button(css_classes=["train-new-seed"]))
        self.new_seed.on_click(lambda _: t.new_seed())
        self.seed_text = styled(pn.pane.HTML("", margin=(8, 5)))
        self.rate = styled(pn.widgets.DiscreteSlider(options={f"{r:g}": r for r in LEARNING_RATES},
                                                     value=nearest(LEARNING_RATES, t.learning_rate), width=220))
        self.rate.param.watch(lambda e: self._syncing or t.set_learning_rate(e.new), "value_throttled")
        self.temperature = styled(pn.widgets.DiscreteSlider(options={f"{x:g}": x for x in TEMPERATURES},
                                                            value=nearest(TEMPERATURES, t.temperature), width=220))
        self.temperature.param.watch(lambda e: self._syncing or t.set_temperature(e.new), "value_throttled")
        # CheckBoxGroup, not Checkbox: its box sits in a <label>, so it has an accessible name
        self.scale = styled(pn.widgets.CheckBoxGroup(options={"√d_k": "scale"}, value=["scale"] * t.scale,
                                                     inline=True, css_classes=["train-scale"]))
        self.scale.param.watch(lambda e: self._syncing or t.set_scale("scale" in e.new), "value")
        self.heads = styled(pn.widgets.RadioButtonGroup(options=[str(h) for h in range(1, MAX_TRAIN_HEADS + 1)],
                                                        value=str(t.heads), css_classes=["train-heads"]))
        self.heads.param.watch(lambda e: self._syncing or t.set_heads(int(e.new)), "value")
        self.heads_label = styled(pn.pane.HTML("", margin=(8, 5)))
        self.player = TrainLink(t, sizing_mode="stretch_width", margin=(0, 5))
        self.summary = styled(pn.pane.HTML("", name="train-summary", sizing_mode="stretch_width", margin=(0, 5),
                                           css_classes=["train-summary"]))
        self.two_heads = styled(pn.widgets.Button(color="primary", visible=False, css_classes=["train-two-heads"]))
        self.two_heads.on_click(lambda _: t.set_heads(2))
        self.field_message = styled(pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 5)))
        self.csv = pn.widgets.FileDownload(callback=lambda: io.StringIO(run_csv(t.run)), filename="training-run.csv",
                                           embed=False, width=200, css_classes=["train-csv"])
        self.json = pn.widgets.FileDownload(callback=lambda: io.StringIO(run_json(t.run)),
                                            filename="training-run.json", embed=False, width=200,
                                            css_classes=["train-json"])
        self.intro = styled(pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 5)))
        # each head's queries and keys (and values, when W_V learns) in a plane of the Projections tab's drawing
        self.sources, self.figures = [], []
        for h in range(MAX_TRAIN_HEADS):
            source = ColumnDataSource(data=dict(x=[], y=[], marker=[], color=[], alpha=[], label=[], **_PLACED),
                                      name=f"train-points-{h}")
            fig = _plane(f"train-plane-{h}", "Q ●  K ■")
            draw(fig, Scatter, source, "x", "y", size=13, color="color", marker="marker", fill_alpha="alpha",
                 line_alpha="alpha")
            draw(fig, Text, source, "x", "y", text="label", x_offset="dx", y_offset="dy", text_align="align",
                 text_baseline="baseline", text_font_size="14px", text_color="color", text_font_style="bold")
            self.sources.append(source)
            self.figures.append(fig)
        self.planes = [pn.pane.Bokeh(fig, sizing_mode="stretch_width", max_width=400, min_width=250, margin=(5, 4),
                                     styles={"flex": "1 1 250px"}, visible=h < t.heads)
                       for h, fig in enumerate(self.figures)]
        self.labels = {k: styled(pn.pane.HTML("", margin=(8, 5))) for k in ("rate", "temperature", "scale")}
        self._layout = pn.Column(
            self.intro,
            pn.FlexBox(*self.targets.values(), align_items="center", css_classes=["train-targets"]), self.note,
            pn.FlexBox(self.new_seed, self.seed_text, self.heads_label, self.heads, align_items="center"),
            pn.FlexBox(self.labels["rate"], self.rate, self.labels["temperature"], self.temperature,
                       self.scale, align_items="center"),
            self.field_message,
            self.player,
            pn.FlexBox(*self.planes, flex_wrap="wrap", sizing_mode="stretch_width", max_width=820,
                       margin=(0, 8, 0, 0)),
            self.summary, self.two_heads,
            pn.FlexBox(self.csv, self.json, align_items="center"),
            name="train", css_classes=["heads-tab", "train-tab"], sizing_mode="stretch_both", scroll=True,
            stylesheets=[HEADS_CSS],
        )
        s.param.watch(self._on_lang, "lang")
        s.param.watch(lambda *_: self._render(), "mode")
        t.param.watch(self._sync, list(TrainingState.SETTINGS))
        t.param.watch(lambda *_: self._render(), ["run", "floor"])
        t.param.watch(self._on_message, "message")
        self._relabel()
        self._sync()
        t.activate()  # the first run: now, or when the server's queue comes to it
        self._render()

    # --- words --------------------------------------------------------------------------------------------------

    def _relabel(self) -> None:
        tr = self.state.tr
        for key, button in self.targets.items():
            button.label = tr(TARGET_LABELS[key])
        self.new_seed.param.update(label=tr._("New seed"), description=tr._("Another random start: the same target"))
        self.heads_label.object = f"<span class='label'>{escape(tr._('Heads'))}</span>"
        self.labels["rate"].object = f"<span class='label'>{escape(tr._('Learning rate'))}</span>"
        self.labels["temperature"].object = f"<span class='label'>{escape(tr._('Temperature T'))}</span>"
        self.scale.param.update(options={tr._("Divide the scores by √d_k"): "scale"}, value=self.scale.value)
        self.csv.label, self.json.label = tr._("Run as CSV"), tr._("Run as JSON")
        self.two_heads.param.update(label=tr._("Two heads"),
                                    description=tr._("Train two heads together: their average attention"))
        self.intro.object = "<h3>" + escape(tr._("Train W_Q, W_K and W_V")) + "</h3><p>" + tr._(
            "<q>At initialisation they are random and the three roles are indistinguishable; after training, each "
            "has learned its specialty.</q> (Module 2) Pick what attention should do, press <strong>Play</strong> "
            "and watch gradient descent learn it: the loss falls, the weights move towards the target, the queries "
            "and keys move in their plane. Space plays and pauses, ← → step.") + "</p>"
        self.player.words = player_words(tr)

    def _on_lang(self, *_) -> None:
        with pn.io.hold():
            self._relabel()
            self._sync()  # every control: their words are the language's
            self._render()

    def _on_message(self, *_) -> None:
        msg = self.state.training.message
        self.field_message.object = (f'<div class="field-message" role="alert">{escape(self.state.tr(msg))}</div>'
                                     if msg else "")

    # --- the controls follow the state --------------------------------------------------------------------------

    def _sync(self, *events) -> None:
        """The controls that show the settings which changed (all of them without ``events``): a class pressing
        New seed together costs the server only the seed's text each."""
        t, tr = self.state.training, self.state.tr
        names = {e.name for e in events} or set(TrainingState.SETTINGS)
        self._syncing = True
        try:
            if "learning_rate" in names:
                self.rate.value = nearest(LEARNING_RATES, t.learning_rate)
            if "temperature" in names:
                self.temperature.value = nearest(TEMPERATURES, t.temperature)
            if "scale" in names:
                self.scale.value = ["scale"] * t.scale
            if "heads" in names:
                self.heads.value = str(t.heads)
        finally:
            self._syncing = False
        if "target" in names:
            for key, button in self.targets.items():
                button.button_type = "primary" if key == t.target else "default"
            self.note.object = f"<p>{escape(tr(TARGET_NOTES[t.target]))}</p>"
        if "seed" in names:
            self.seed_text.object = f"<span class='label'>{escape(tr._('seed {seed}', seed=t.seed))}</span>"
        if "heads" in names:
            for h, pane in enumerate(self.planes):
                # the figure is the pane's model: Panel's Bokeh pane does not pass its own `visible` on to it
                pane.visible = self.figures[h].visible = h < t.heads

    # --- what the run shows -------------------------------------------------------------------------------------

    def _render(self) -> None:
        t = self.state.training
        run = t.run
        if run is None:
            return
        self._draw_planes(run, t.step)
        self.summary.object = self._summary_html(run)
        self.two_heads.visible = bool(t.floor is not None and not t.floor.learnable and t.heads == 1
                                      and not any(c.any_heads for c in t.floor.conflicts))

    def _draw_planes(self, run, step: int) -> None:
        X = run.task.X
        tokens = run.task.tokens
        show_v = run.task.kind == "outputs"
        mode = self.state.mode
        for h in range(run.heads):
            Q, K = X @ run.W_Q[:, h], X @ run.W_K[:, h]  # (steps + 1, n, 2) each
            sets = [("Q", Q), ("K", K)] + ([("V", X @ run.W_V[:, h])] if show_v and run.W_V.shape[-1] == 2 else [])
            fig = self.figures[h]
            fit = _fit(np.vstack([P.reshape(-1, 2) for _, P in sets]))
            for rng, (lo, hi) in zip((fig.x_range, fig.y_range), fit):
                rng.update(start=lo, end=hi)
            fig.title.text = ("Q ●  K ■  V ▲" if len(sets) == 3 else "Q ●  K ■") + (
                f" · {self.state.tr._('head {n}', n=h + 1)}" if run.heads > 1 else "")
            points = np.vstack([P[step] for _, P in sets])
            n = len(tokens)
            self.sources[h].data = dict(
                x=points[:, 0].tolist(), y=points[:, 1].tolist(),
                marker=[MARKERS[name] for name, _ in sets for _ in range(n)],
                color=[token_color(i) for _ in sets for i in range(n)],
                alpha=[1.0 if name == "Q" else 0.75 for name, _ in sets for _ in range(n)],
                # the queries are named; a key or value has its token's colour (ten labels crowded the random
                # start, where every point lies near the origin)
                label=[tok if name == "Q" else "" for name, _ in sets for tok in tokens],
                **_placed(points, points, fig, mode))

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
            values = what.values[0][:, 0] if what.values.shape[-1] >= 1 else what.values[0]
            parts.append("<p>" + escape(tr._(
                "W_V learned the values {values}: each output is a weighted average of them, and W_Q and W_K learned "
                "which values each token reads.",
                values=tr.list_sep.join(f"{tok} {tr.num(v, 2)}" for tok, v in zip(tokens, values)))) + "</p>")
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
                    tr._("the query of {a} points where the key of {b} points", a=tokens[i], b=tokens[j])
                    if top[i] > 0.6
                    else tr._("the query of {a} spreads its attention", a=tokens[i]) for i, j in enumerate(picks)) + "."
            turn = ""
            if what.rotation_share[h] > 0.9:
                turn = " " + tr._("W_Q W_Kᵀ is close to a turn by {deg}°: each query is its embedding turned by "
                                  "{deg}°, and it meets the key that lies there.",
                                  deg=tr.num(float(what.rotation_deg[h]), 0))
            out.append(f"<p>{escape(head + text + turn)}</p>")
        return "".join(out)

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
                                "cannot rank the keys as the target asks.", a=a, b=b, c=tr.short(c.factor, 2)))
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
                    ca=tr.short(float(ca), 2), cb=tr.short(float(cb), 2))

    def __panel__(self):
        return self._layout


def train_tab(state: AttentionState, styler=None) -> pn.viewable.Viewable:
    """The tab's contents, its planes restyled by ``styler`` (a :class:`~widgets.style.FigureStyler`)."""
    view = TrainView(state=state)
    if styler is not None:
        styler.add(view.figures)
    return view.__panel__()

