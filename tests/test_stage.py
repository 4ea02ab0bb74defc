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
    return tabs, left, stepper, _strip(page)


def _strip(page):
    """The stage's strip, once the page has one (None before)."""
    return next((c for c in page.select(pn.Column) if "stage-strip" in c.css_classes), None)


def _toggle(strip) -> pn.widgets.Button:
    return strip.objects[0]


def test_the_train_tab_takes_the_stage_and_the_query_s_tabs_give_it_back():
    page = app.create_app()
    tabs, left, stepper, strip = _parts(page)
    assert left.visible and stepper.visible and strip is None  # made the first time a tab takes the stage
    tabs.active = app.TAB_NAMES.index("train")
    strip = _strip(page)
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
    strip = _strip(page)
    assert not left.visible and not stepper.visible and strip.visible
    tabs.active = app.TAB_NAMES.index("weights")
    assert left.visible and stepper.visible and not strip.visible


def test_the_strip_is_made_the_first_time_a_tab_takes_the_stage_and_placed_at_the_page_s_edge():
    """Most pages never show the Train or Real model tab: the strip and its button, two Panel objects and three Bokeh
    models, were built with every page."""
    page = app.create_app()
    tabs, left, _, _ = _parts(page)
    body = next(r for r in page.select(pn.Row) if "body" in r.css_classes)
    assert _strip(page) is None and not page.select(lambda o: "stage-toggle" in getattr(o, "css_classes", []))
    assert body.objects[0] is left
    tabs.active = app.TAB_NAMES.index("train")
    strip = _strip(page)
    assert body.objects[:2] == [strip, left] and strip.visible
    tabs.active = app.TAB_NAMES.index("weights")
    tabs.active = app.TAB_NAMES.index("model")
    assert _strip(page) is strip and body.objects[:2] == [strip, left]  # made once
