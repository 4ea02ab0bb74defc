"""The recipe's formulas with live numbers: course numbers substituted into the LaTeX."""

from __future__ import annotations

import panel as pn
import pytest

from session.state import AttentionState
from widgets.recipe import Formula, latex_text, recipe_latex, recipe_steps_latex


def test_love_query_formulas_show_the_course_numbers():
    score, normalise, combine = recipe_steps_latex(AttentionState())
    assert r"s_{\text{love}} &= \frac{(0,\ 1) \cdot (0,\ 1)}{\sqrt{2}} = \frac{1.0000}{1.4142} = 0.7071" in score
    assert r"a_{\text{I}} &= \frac{0.4931}{2.4931} = 0.1978" in normalise  # e^(-1/√2) / (1 + 1 + e^(-1/√2))
    assert "0.1978 \\cdot 2 + 0.4011 \\cdot 6 + 0.4011 \\cdot 4 = 4.4067" in combine


def test_vector_values_and_mask_in_the_formulas():
    s = AttentionState(preset="Module 2: vector values")
    s.select_row(0)
    assert combine_ends(recipe_latex(s, 3), r"= (6.0167,\ 3.9833)")
    s.causal = True
    s.select_row(1)
    assert r"s_{\text{NLP}} &= -\infty" in recipe_latex(s, 1)
    assert r"a_{\text{love}} &= \frac{1.0000}{1.4931} = 0.6698" in recipe_latex(s, 2)


def test_unscaled_formula_says_so():
    s = AttentionState(scale=False)
    assert "scaling off" in recipe_latex(s, 1) and r"\sqrt" not in recipe_latex(s, 1)
    assert "= 4.5339" in recipe_latex(s, 3)


def combine_ends(latex: str, tail: str) -> bool:
    return latex.removesuffix(r"\end{aligned}").endswith(tail)


def test_token_names_are_escaped_for_tex():
    assert latex_text("a_b") == r"\text{a\_b}"
    assert latex_text("{\\x}") == r"\text{\{\textbackslash{}x\}}"


def test_bad_step_and_view_updates():
    s = AttentionState()
    with pytest.raises(ValueError, match="step must be 1, 2 or 3"):
        recipe_latex(s, 4)
    view = Formula(state=s)
    s.select_row(2)
    assert "= 4.0000" in view._panes[3].object and view._panes[3].object.startswith("$$")


def test_the_recipe_a_page_shows_first_is_katex_s_own_html_of_today_s_formula():
    # the step-through's recipe is drawn from KaTeX's HTML kept in static/katex/recipe.html, so a first visit loads
    # no KaTeX script: a changed formula or another KaTeX must write it anew (python -m testing.katex)
    from testing.katex import render
    from widgets.stepper import RECIPE_HTML, RECIPE_LATEX, StepThrough

    assert RECIPE_HTML.read_text() == render(RECIPE_LATEX)
    step_through = StepThrough(state=AttentionState())
    assert step_through.formula.object == RECIPE_HTML.read_text() and "softmax" in step_through.formula.object
    assert not isinstance(step_through.formula, pn.pane.LaTeX)


def test_the_first_step_shown_puts_katex_s_pane_in_the_recipe_s_place():
    from widgets.stepper import RECIPE_LATEX, StepThrough

    state = AttentionState()
    step_through = StepThrough(state=state)
    layout = step_through.__panel__()
    state.guided = True
    assert isinstance(layout[2], pn.pane.LaTeX) and layout[2] is step_through.formula
    assert r"\sqrt{2} &= (0.0000,\ 0.7071,\ 0.7071)" in layout[2].object
    state.guided = False
    assert layout[2].object == RECIPE_LATEX
    guided = StepThrough(state=AttentionState(guided=True))  # a link to a step: the pane from the start
    assert isinstance(guided.__panel__()[2], pn.pane.LaTeX)
