"""Step-through (predict, then reveal): Back / Next over the recipe's three steps, with the live formula."""

from __future__ import annotations

import functools

import numpy as np
import panel as pn

from session.i18n import N_, Translator
from session.state import STEPS, AttentionState
from widgets.base import View
from widgets.style import APP_CSS, KATEX_CSS, STATIC

TITLES = {1: N_("Step 1 of 3 · score"), 2: N_("Step 2 of 3 · normalise"), 3: N_("Step 3 of 3 · combine")}


def latex_number(tr: Translator, x: float, decimals: int = 4) -> str:
    """A number in a formula as the language writes it; a decimal comma in braces, so TeX sets no space after it."""
    return tr.num(x, decimals).replace(",", "{,}")


def _vec(xs, tr: Translator) -> str:
    sep = r";\ " if tr.decimal == "," else r",\ "  # never the decimal mark
    return "(" + sep.join(latex_number(tr, float(x)) for x in xs) + ")"


def step_latex(state: AttentionState, step: int) -> str:
    r"""LaTeX for recipe step ``step`` (1 score, 2 normalise, 3 combine) of the selected query, live numbers in.

    Vectors run over the keys in token order; at most three short lines, so the
    formula fits beside the query plot even at projector size. Numbers are the
    state's own (computed once by the core), written with :func:`core.report.fmt`.

    Raises
    ------
    ValueError
        If ``step`` is not 1, 2 or 3.

    >>> print(step_latex(AttentionState(), 3))
    $$\begin{aligned} o &= \textstyle\sum_i a_i v_i \\
    &= 0.1978 \cdot 2 + 0.4011 \cdot 6 + 0.4011 \cdot 4 = 4.4067 \end{aligned}$$
    """
    s, i = state, state.selected
    r, tr = s.result, s.tr
    fmt = functools.partial(latex_number, tr)
    if step == 1:
        scaled = rf"s_i = q \cdot k_i / \sqrt{{{s.d_k}}}" if s.scale else r"s_i = q \cdot k_i"
        body = rf"q \cdot k_i &= {_vec(r.dots[i], tr)} \\ {scaled} &= {_vec(r.scores[i], tr)}"
    elif step == 2:
        body = (rf"e_i = e^{{\,s_i - \max s}} &= {_vec(r.exp[i], tr)} \\ "
                rf"\textstyle\sum_j e_j &= {fmt(float(r.exp_sum[i]))} \\ "
                rf"a_i = e_i / \textstyle\sum_j e_j &= {_vec(r.weights[i], tr)}")
    elif step == 3:
        v = np.asarray(s.values, dtype=float)
        terms = " + ".join(rf"{fmt(float(a))} \cdot {tr.short(float(x), 2).replace(',', '{,}')}"
                           for a, x in zip(r.weights[i], v, strict=True))
        body = rf"o &= \textstyle\sum_i a_i v_i \\ &= {terms} = {fmt(float(r.output[i]))}"
    else:
        raise ValueError(f"step must be 1, 2 or 3, got {step!r}")
    return rf"$$\begin{{aligned}} {body} \end{{aligned}}$$"


STEP_THROUGH = "Step through"
N_("Step through")  # STEP_THROUGH, for the catalogs

#: Shown when the step-through is off: the whole recipe, symbols only, one equation a line.
RECIPE_LATEX = (r"$$\begin{aligned} s_i &= q \cdot k_i / \sqrt{d_k} \\ a &= \operatorname{softmax}(s) \\ "
                r"o &= \textstyle\sum_i a_i v_i \end{aligned}$$")
#: KaTeX's own HTML for :data:`RECIPE_LATEX`, rendered once with Panel's bundled KaTeX (``python -m testing.katex``;
#: ``tests/test_formula.py`` checks it is KaTeX's HTML of today's formula): the recipe a page shows first, drawn
#: without KaTeX's script, which the page then loads only when a formula with numbers is shown.
RECIPE_HTML = STATIC / "katex" / "recipe.html"
_RECIPE_SHOWN = RECIPE_HTML.read_text() if RECIPE_HTML.exists() else ""  # python -m testing.katex writes it


class StepThrough(View):
    """The guided walk: a switch, Back and Next, the step's title and its formula with the live numbers.

    Every view hides the numbers of the steps not yet reached (``state.revealed``);
    this one shows the current step's formula. Rendered by Panel's ``LaTeX`` pane
    with KaTeX, which Panel serves itself (no request leaves the page's host); until the first step is shown, the
    recipe is KaTeX's HTML kept from one rendering (:data:`RECIPE_HTML`), and the page loads no KaTeX script.
    """

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        # CheckBoxGroup, not Checkbox: its box is wrapped in a <label>, so it has an accessible name
        self.toggle = pn.widgets.CheckBoxGroup(options=s.tr.options([STEP_THROUGH]), value=[STEP_THROUGH] * s.guided,
                                               margin=(12, 10))
        self.toggle.param.watch(lambda e: setattr(s, "guided", bool(e.new)), "value")
        self.back = pn.widgets.Button(margin=(4, 6))
        self.next = pn.widgets.Button(color="primary", margin=(4, 6))
        self.back.on_click(lambda _: s.previous_step())
        self.next.on_click(lambda _: s.next_step())
        self.title = pn.pane.HTML("", css_classes=["step-title"], margin=(0, 10), sizing_mode="stretch_width",
                                  stylesheets=[APP_CSS])
        # the recipe, symbols only, drawn from KaTeX's HTML kept beside its fonts; the first step shown puts a LaTeX
        # pane in its place for good (a first visit loads no KaTeX script: Panel loads it for the first LaTeX pane)
        self.formula = pn.pane.HTML(_RECIPE_SHOWN, **self._formula_params())
        self._latex: pn.pane.LaTeX | None = None
        s.param.watch(self._render, ["guided", "step", "lang"])
        # the formula carries numbers only in the step-through: otherwise a new result changes nothing here
        s.param.watch(lambda _: s.guided and self._render(), "result")
        self._render()
        row = pn.Row(self.toggle, self.back, self.next, css_classes=["step-row"], stylesheets=[APP_CSS])
        self._layout = pn.Column(row, self.title, self.formula, sizing_mode="stretch_width", css_classes=["stepper"],
                                 stylesheets=[APP_CSS])

    def _render(self, *_):
        s = self.state
        tr = s.tr
        self.toggle.param.update(options=tr.options([STEP_THROUGH]), value=[STEP_THROUGH] * s.guided)
        self.back.param.update(label=tr._("◀ Back"), description=tr._("Hide this step again (←)"))
        self.next.param.update(label=tr._("Next ▶"), description=tr._("Reveal the next step (Space, →)"))
        self.back.disabled = not s.guided or s.step == 1
        self.next.disabled = s.guided and s.step == len(STEPS)
        if s.guided:
            self.title.object = f"<h2>{tr(TITLES[s.step])}</h2>"
            self._show_latex(step_latex(s, s.step))
        else:
            self.title.object = f"<h2>{tr._('The recipe · Next or Space walks through it')}</h2>"
            if self._latex is not None:
                self._latex.object = RECIPE_LATEX

    @staticmethod
    def _formula_params() -> dict:
        return dict(css_classes=["formula"], margin=(0, 10), sizing_mode="stretch_width",
                    stylesheets=[KATEX_CSS, APP_CSS],
                    styles={"height": "calc(var(--ae-formula) * 4.9)"})  # 3 lines: the steps never shift

    def _show_latex(self, latex: str) -> None:
        """``latex`` in the LaTeX pane, which takes the place of the recipe's HTML the first time."""
        if self._latex is None:
            self._latex = pn.pane.LaTeX(latex, renderer="katex", **self._formula_params())
            self.formula = self._latex
            if hasattr(self, "_layout"):
                self._layout[2] = self._latex
        else:
            self._latex.object = latex
