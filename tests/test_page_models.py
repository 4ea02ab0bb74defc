"""What a page's first view costs in Bokeh models: every one is built, kept and sent for each learner."""

from __future__ import annotations

import collections

import pytest
from bokeh.document import Document
from bokeh.models import AllIndices, CDSView, ColumnDataSource, GlyphRenderer, Selection, Spacer, Tabs

import app
from widgets.tabs import LazyTabs, Unbuilt

TITLES = ["Weights", "Matrix", "All steps", "Recipe", "Edit", "Trap", "√d_k", "Projections", "Heads · n²", "Train",
          "Real model", "Check", "Export", "Keys"]


@pytest.fixture
def built():
    page = app.create_app()
    doc = Document()
    doc.add_root(page.get_root(doc))
    return page, doc


def _tabs(doc) -> Tabs:
    return next(m for m in doc.models if isinstance(m, Tabs) and "explorer-tabs" in m.css_classes)


def test_the_hidden_tabs_hold_one_placeholder(built):
    page, doc = built
    tabs = _tabs(doc)
    assert [t.title for t in tabs.tabs] == TITLES
    assert not isinstance(tabs.tabs[0].child, Spacer)  # the shown tab has its contents
    placeholders = {t.child for t in tabs.tabs[1:]}
    assert len(placeholders) == 1 and isinstance(placeholders.pop(), Spacer)
    assert sum(isinstance(m, Spacer) for m in doc.models) == 1


def test_the_tabs_not_built_yet_are_one_panel_object_and_keep_their_titles_in_a_new_language(built):
    """Each tab's placeholder was a Panel object of every page's build: 13 of the first page's 50."""
    page, doc = built
    layout = next(o for o in page.select(LazyTabs))
    assert len({id(o) for o in layout if isinstance(o, Unbuilt)}) == 1
    tabs = _tabs(doc)
    page.state.lang = "fr"
    french = [t.title for t in tabs.tabs]
    assert french[:3] == ["Poids", "Matrice", "Toutes les étapes"] and french[-1] == "Touches"
    layout.active = TITLES.index("Keys")  # built after the new titles: every tab keeps its own
    assert [t.title for t in tabs.tabs] == french and "Quand la page a le focus" in tabs.tabs[-1].child.text
    assert len({t.child for t in tabs.tabs[1:-1]}) == 1 and isinstance(tabs.tabs[1].child, Spacer)
    assert len({id(o) for o in layout if isinstance(o, Unbuilt)}) == 1


def test_a_tab_shown_gets_its_contents_and_keeps_them_when_hidden(built):
    page, doc = built
    layout = next(o for o in page.select(LazyTabs))
    tabs = _tabs(doc)
    weights = tabs.tabs[0].child
    layout.active = TITLES.index("Keys")
    keys = tabs.tabs[layout.active].child
    assert not isinstance(keys, Spacer) and "keys" in keys.text
    assert tabs.tabs[0].child is weights  # hidden, still in the page
    assert isinstance(tabs.tabs[1].child, Spacer) and tabs.tabs[1].child is tabs.tabs[2].child  # never shown
    assert [t.title for t in tabs.tabs] == TITLES
    layout.active = 0
    assert tabs.tabs[0].child is weights and tabs.tabs[TITLES.index("Keys")].child is keys


def test_showing_a_built_tab_again_changes_only_which_is_shown(built):
    # Each model a switch puts back into the document is walked and sent to the page again: 64 for the
    # Matrix tab, 182 for Projections, tens of milliseconds of the server's loop that every page waits behind
    page, doc = built
    layout = next(o for o in page.select(LazyTabs))
    for name in ("Matrix", "√d_k", "Projections", "Heads · n²"):
        layout.active = TITLES.index(name)
    layout.active = 0
    models = set(doc.models)
    changed = []
    doc.on_change(lambda event: changed.append(event))
    for name in ("Matrix", "√d_k", "Projections", "Heads · n²", "Weights"):
        layout.active = TITLES.index(name)
        assert set(doc.models) == models, name
    assert {(e.model, e.attr) for e in changed} == {(_tabs(doc), "active")}


def test_the_drag_channel_brings_no_selections(built):
    _, doc = built
    named = {m.name: m for m in doc.models if m.name in ("drag-inputs", "drag-confirmed", "drag-channel", "live-room")}
    assert len(named) == 4 and not any(isinstance(m, ColumnDataSource) for m in named.values())
    # the plots' own sources still have theirs
    assert sum(isinstance(m, Selection) for m in doc.models) == sum(isinstance(m, ColumnDataSource) for m in doc.models)


def test_a_figures_renderers_of_one_source_share_one_view(built):
    _, doc = built
    fig = doc.get_model_by_name("query-plot")
    # the hidden renderer of the extent the plane shows (widgets/glyphs.py true_units) has a source of its own
    renderers = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
    assert [r.name for r in renderers].count("extent") == 1
    sources = {r.data_source for r in renderers}
    assert len(renderers) == 7 and len(sources) == 4
    assert len({r.view for r in renderers}) == 4
    assert all(len({r.view for r in renderers if r.data_source is s}) == 1 for s in sources)
    assert len({r.view.filter for r in renderers}) == 1
    kinds = collections.Counter(type(m) for m in doc.models)
    assert kinds[CDSView] == 4 and kinds[AllIndices] == 1


def test_the_first_view_stays_under_its_budget(built):
    # 122 before one placeholder for the hidden tabs, the drag channel's data without selections and shared
    # views; each model is ≈ 1 ms of the server's CPU per page (97: the Train tab's header, one more TabPanel;
    # 104: the query plane and the value plane each show their extent in true units, a hidden renderer and its
    # source and ranges, widgets/glyphs.py true_units; 105: the Real model tab's header; the recipe's formula drawn
    # from KaTeX's kept HTML, one model fewer; 106: the stage's strip and its button, widgets/stage.py; 104: the
    # strip and its button made the first time a tab takes the stage)
    _, doc = built
    assert len(doc.models) <= 104
