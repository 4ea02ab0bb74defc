"""The three steps of the recipe as formulas with the current numbers substituted.

:func:`recipe_latex` is a plain function (state in, LaTeX out) so any view can show
one step; :class:`Formula` shows all three with Panel's ``LaTeX`` pane, which
renders with the KaTeX bundled in Panel and served by this app (no CDN).
"""

from __future__ import annotations

import numpy as np
import panel as pn

from session.i18n import N_, Translator
from session.state import AttentionState
from widgets.base import View
from widgets.style import KATEX_CSS

#: KaTeX draws at 1.21em of its host: the formulas' main line is the page's formula size (22 px on a projector).
# a formula cannot reflow: where it is wider than the tab it scrolls sideways, and shows it does; left to right in
# every language, as mathematics is written (in a right-to-left page its box would start at the right, and what
# runs past its right edge could not be scrolled to)
FORMULA_CSS = (":host { font-size: calc(var(--ae-formula, 19px) / 1.21); overflow-x: auto; --ae-scroll-hint: 1; "
               "scrollbar-width: thin; background: var(--ae-scroll-shadows); direction: ltr; }")
STEP_TITLES = {1: N_("1. Score"), 2: N_("2. Normalise"), 3: N_("3. Combine")}
#: Terms per line in long sums, so 8 tokens still fit beside the inspector.
TERMS_PER_LINE = 3


def latex_text(name: str) -> str:
    r"""``\text{name}`` for a token name. Names are already restricted to words
    (see ``session.state.TOKEN_NAME``); escaping the few characters TeX reads
    specially keeps this safe even for a name set directly on the state."""
    special = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
               "^": r"\textasciicircum{}", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}"}
    return r"\text{" + "".join(special.get(c, c) for c in name) + "}"


def _tex(text: str) -> str:
    return text.replace(",", "{,}")  # a decimal comma: no space after it in TeX


def _vec(v, tr: Translator, short: bool = True) -> str:
    v = np.atleast_1d(np.asarray(v, dtype=float))
    write = tr.short if short else tr.num
    sep = r";\ " if tr.decimal == "," else r",\ "
    return _tex(write(v[0])) if v.size == 1 else "(" + sep.join(_tex(write(c)) for c in v) + ")"


def _out(v, tr: Translator) -> str:
    return _vec(v, tr, short=False)


def _sum_lines(lhs: str, terms: list[str], rhs: str) -> str:
    """``lhs &= t1 + t2 + t3 \\ &\\quad + t4 ... = rhs`` broken every TERMS_PER_LINE terms."""
    chunks = [" + ".join(terms[i:i + TERMS_PER_LINE]) for i in range(0, len(terms), TERMS_PER_LINE)]
    body = r" \\ &\quad + ".join(chunks)
    return f"{lhs} &= {body} = {rhs}"


def recipe_latex(state: AttentionState, step: int) -> str:
    """LaTeX (KaTeX-compatible, no delimiters) for one step of the selected query's recipe.

    Parameters
    ----------
    state : AttentionState
        The formula uses ``state.result`` for the row ``state.selected``.
    step : {1, 2, 3}
        1 score: s_i = q·k_i / sqrt(d_k); 2 normalise: a_i = softmax(s)_i (max-shifted,
        as computed); 3 combine: output = sum_i a_i v_i.

    Raises
    ------
    ValueError
        If ``step`` is not 1, 2 or 3.
    """
    s, r, i = state, state.result, state.selected
    tr = s.tr

    def fmt(x):
        return _tex(tr.num(x))
    names = [latex_text(t) for t in s.tokens]
    masked = ~r.mask[i]
    if step == 1:
        root = f"\\sqrt{{{s.d_k}}}"
        head = (r"s_i &= \frac{q \cdot k_i}{\sqrt{d_k}}" if s.scale
                else r"s_i &= q \cdot k_i \quad " + latex_text(tr._("(scaling off)")))
        lines = [head]
        for j, name in enumerate(names):
            if masked[j]:
                lines.append(f"s_{{{name}}} &= -\\infty \\quad {latex_text(tr._('(masked: a later token)'))}")
            elif s.scale:
                lines.append(f"s_{{{name}}} &= \\frac{{{_vec(s.query, tr)} \\cdot {_vec(s.keys[j], tr)}}}{{{root}}} = "
                             f"\\frac{{{fmt(r.dots[i, j])}}}{{{fmt(np.sqrt(s.d_k))}}} = {fmt(r.scores[i, j])}")
            else:
                lines.append(f"s_{{{name}}} &= {_vec(s.query, tr)} \\cdot {_vec(s.keys[j], tr)} = "
                             f"{fmt(r.scores[i, j])}")
        return "\\begin{aligned}" + r" \\ ".join(lines) + "\\end{aligned}"
    if step == 2:
        lines = [r"a_i &= \mathrm{softmax}(s)_i = \frac{e^{s_i - m}}{\sum_j e^{s_j - m}}, \quad m = \max_j s_j = "
                 + fmt(r.row_max[i])]
        # exp(…), not e^{…}: an exponent is set at 70 %, under 20 px on a projector
        terms = [f"\\exp({fmt(r.shifted[i, j])})" for j in range(len(names)) if not masked[j]]
        lines.append(_sum_lines(r"\textstyle\sum_j e^{s_j - m}", terms, fmt(r.exp_sum[i])))
        for j, name in enumerate(names):
            if masked[j]:
                lines.append(f"a_{{{name}}} &= 0 \\quad {latex_text(tr._('(masked)'))}")
            else:
                lines.append(f"a_{{{name}}} &= \\frac{{{fmt(r.exp[i, j])}}}{{{fmt(r.exp_sum[i])}}} = "
                             f"{fmt(r.weights[i, j])}")
        return "\\begin{aligned}" + r" \\ ".join(lines) + "\\end{aligned}"
    if step == 3:
        terms = [f"{fmt(r.weights[i, j])} \\cdot {_vec(s.values[j], tr)}" for j in range(len(names))]
        lines = [latex_text(tr._("output")) + r" &= \textstyle\sum_i a_i v_i",
                 _sum_lines("", terms, _out(r.output[i], tr))]
        return "\\begin{aligned}" + r" \\ ".join(lines) + "\\end{aligned}"
    raise ValueError(f"step must be 1, 2 or 3, got {step!r}")


def recipe_steps_latex(state: AttentionState) -> tuple[str, str, str]:
    """The three steps' LaTeX for the selected query: (score, normalise, combine)."""
    return tuple(recipe_latex(state, k) for k in (1, 2, 3))


class Formula(View):
    """s_i = q·k_i/√d_k, a_i = softmax(s)_i and output = Σ a_i v_i with the current numbers, as maths."""

    def __init__(self, **params):
        super().__init__(**params)
        # as wide as the tab less their margins (a pane the tab's width and its margin ran 10 px past its edge)
        self._panes = {k: pn.pane.LaTeX("", renderer="katex", stylesheets=[KATEX_CSS, FORMULA_CSS],
                                        name=f"formula-step-{k}", sizing_mode="stretch_width") for k in STEP_TITLES}
        self._heading = pn.pane.HTML("", margin=(0, 10))
        self._titles = {k: pn.pane.HTML("", margin=(6, 10, 0, 10)) for k in STEP_TITLES}
        self._layout = pn.Column(
            self._heading, *[item for k in STEP_TITLES for item in (self._titles[k], self._panes[k])],
            name="formula", css_classes=["formula"],
        )
        self.render_on("result", "lang")

    def _render(self, *_):
        tr = self.state.tr
        self._heading.object = f"<h3>{tr._('The recipe with your numbers')}</h3>"
        for k, title in STEP_TITLES.items():
            self._titles[k].object = f"<strong>{tr(title)}</strong>"
        for k, latex in zip(STEP_TITLES, recipe_steps_latex(self.state), strict=True):
            self._panes[k].object = f"$${latex}$$"
