"""The stage (widgets/stage.py): the Train tab takes the page while shown; the query's tabs give the plot back."""

from __future__ import annotations

import panel as pn

import app


def _args(**kw) -> dict:
    return {k: [v.encode()] for k, v in kw.items()}


def _parts(page):
    """The page's tabs, its query plot's column, its step-through and the stage's strip."""
    tabs = next(t for t in page.select(pn.Tabs) if "explorer-tabs" in t.css_classes)
    left = next(c for c in page.select(pn.Column) if "left" in c.css_classes)
    stepper = next(c for c in page.select(pn.Column) if "stepper" in c.css_classes)
    strip = next(c for c in page.select(pn.Column) if "stage-strip" in c.css_classes)
    return tabs, left, stepper, strip


def _toggle(strip) -> pn.widgets.Button:
    return strip.objects[0]


def test_the_train_tab_takes_the_stage_and_the_query_s_tabs_give_it_back():
    page = app.create_app()
    tabs, left, stepper, strip = _parts(page)
    assert left.visible and stepper.visible and not strip.visible
    tabs.active = app.TAB_NAMES.index("train")
    assert not left.visible and not stepper.visible and strip.visible
    assert _toggle(strip).label == "Show the query plot"
    _toggle(strip).clicks += 1  # the way back, on the Train tab
    assert left.visible and stepper.visible and _toggle(strip).label == "Hide the query plot"
    _toggle(strip).clicks += 1
    assert not left.visible
    for name in ("projections", "heads", "weights"):  # the tabs about the query keep the plot beside them
        tabs.active = app.TAB_NAMES.index(name)
        assert left.visible and stepper.visible and not strip.visible
    tabs.active = app.TAB_NAMES.index("train")  # set aside again, whatever was chosen before
    assert not left.visible


def test_a_train_lesson_opens_on_the_stage_in_the_page_s_language():
    page = app.create_app(args=_args(tabs="train", lang="fr"))
    _, left, stepper, strip = _parts(page)
    assert not left.visible and not stepper.visible and strip.visible
    assert _toggle(strip).label == "Afficher le plan des requêtes"
    page.state.lang = "de"
    assert _toggle(strip).label == "Anfrage-Ebene zeigen"


def test_a_presenter_s_lesson_reaching_a_follower_keeps_the_stage_in_step():
    page = app.create_app(args=_args(tabs="train"))
    _, left, _, _ = _parts(page)
    assert not left.visible
    page.state.apply_snapshot({"tabs": ["weights", "check"]})  # the new tabs: Weights shown
    assert left.visible
    page.state.apply_snapshot({"tabs": ["train"]})
    assert not left.visible


def test_the_real_model_tab_takes_the_stage_too():
    """At 800×600 on a projector the plot, readout and step-through beside the Real model tab left its sentence box
    under the screen's edge."""
    page = app.create_app()
    tabs, left, stepper, strip = _parts(page)
    tabs.active = app.TAB_NAMES.index("model")
    assert not left.visible and not stepper.visible and strip.visible
    tabs.active = app.TAB_NAMES.index("weights")
    assert left.visible and stepper.visible and not strip.visible
