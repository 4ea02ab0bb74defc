"""The recipe's formulas with live numbers: course numbers substituted into the LaTeX."""

from __future__ import annotations

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
