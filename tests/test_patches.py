"""Every patch of Bokeh's and Panel's code is checked against the upstream code it was written for
(server/patches/): the installed libraries fit every one, and a changed or missing upstream function is reported and
its patch left out."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from server import patches
from server.patches.fit import CHANGED, MISSING, OK, Patch, fingerprint, resolve

ROOT = Path(__file__).resolve().parents[1]


def test_every_patch_fits_the_installed_libraries():
    results = patches.check()
    assert [r.describe() for r in results if r.status != OK] == []
    assert {r.patch.name for r in results} == set(patches.MODULES)


def test_every_module_of_the_package_is_a_checked_patch_that_says_what_why_and_for_which_version():
    """A patch module left out of MODULES would be neither checked nor installed."""
    modules = {p.stem for p in (ROOT / "server" / "patches").glob("*.py")} - {"__init__", "fit"}
    assert modules == set(patches.MODULES)
    for patch in patches.all_patches():
        module = importlib.import_module(f"server.patches.{patch.name}")
        assert patch.targets and all(len(fp) == 16 for fp in patch.targets.values()), patch.name
        pinned = any(version in patch.written_for for version in ("3.10.2", "1.10.0"))
        assert patch.changes and patch.upstream and pinned, patch.name
        doc = " ".join((module.__doc__ or "").split())
        assert "Written for" in doc or "written for" in doc, patch.name  # the docstring says the version too


def test_check_patches_lists_every_patch_and_exits_0_when_all_fit():
    done = subprocess.run([sys.executable, "-m", "server", "--check-patches"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["patch", "upstream", "object", "expected", "found", "status"]
    for patch in patches.all_patches():
        for target, expected in patch.targets.items():
            assert any(line.split()[:2] == [patch.name, target] and line.split()[2:] == [expected, expected, OK]
                       for line in lines), (patch.name, target)
    assert lines[-1].startswith(f"{len(patches.MODULES)} of {len(patches.MODULES)} patches fit (bokeh 3.10.2")


@pytest.fixture
def upstream(tmp_path, monkeypatch):
    """A stand-in upstream module, ``standin_upstream``, whose source a test rewrites: returns ``write(source)``,
    which writes it and (re)imports it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "standin_upstream.py"

    def write(source: str):
        path.write_text(source)
        importlib.invalidate_caches()
        module = sys.modules.get("standin_upstream")
        return importlib.reload(module) if module is not None else importlib.import_module("standin_upstream")

    yield write
    sys.modules.pop("standin_upstream", None)


def test_a_changed_upstream_function_is_reported_and_its_patch_left_out(upstream, caplog):
    written_for = upstream("def scores(q, k):\n    return q @ k.T\n\n\nclass Head:\n    def softmax(self, s):\n"
                           "        return s\n")
    applied = []
    patch = Patch(name="standin", changes="a stand-in change", written_for="stand-in 1.0", upstream="none filed",
                  targets={"standin_upstream:scores": fingerprint(written_for.scores),
                           "standin_upstream:Head.softmax": fingerprint(written_for.Head.softmax)},
                  apply=lambda: applied.append(1))
    assert [r.status for r in patch.check()] == [OK, OK]
    # an upgrade changes one function without renaming it, and drops the other
    upstream("def scores(q, k):\n    return (q @ k.T) / 2\n")
    changed, missing = patch.check()
    assert (changed.status, changed.found != changed.expected) == (CHANGED, True)
    assert (missing.status, missing.found) == (MISSING, "")
    with caplog.at_level(logging.ERROR, logger="server.patches"):
        assert patch.install() is False
        assert patch.install() is False  # said once
    assert applied == []  # a patch written for other code is not applied
    said = [r.getMessage() for r in caplog.records if r.name == "server.patches"]
    assert len(said) == 1
    assert "server.patches.standin not applied" in said[0] and "written for stand-in 1.0" in said[0]
    assert "standin_upstream:scores CHANGED" in said[0] and "standin_upstream:Head.softmax MISSING" in said[0]
    assert "CHANGED" in patches.report(patch.check()) and "does not fit" in patches.report(patch.check())
    # a patch whose code lives with the views, with no fallback, is said all the same
    caplog.clear()
    kept = dataclasses.replace(patch, name="standin_kept", leaves_out=False, apply=None)
    with caplog.at_level(logging.ERROR, logger="server.patches"):
        assert kept.fits() is False
    said = [r.getMessage() for r in caplog.records if r.name == "server.patches"]
    assert len(said) == 1 and "standin_kept no longer fits" in said[0] and "used as it is" in said[0]


def test_a_patch_that_fits_is_applied_once_and_still_fits_once_in_place(upstream):
    """The check reads through the patch's own wrapper (``__wrapped__``) to the upstream function under it."""
    import functools

    module = upstream("class Head:\n    def softmax(self, s):\n        return s\n")
    expected = fingerprint(module.Head.softmax)

    def wrap():
        original = module.Head.softmax
        module.Head.softmax = functools.wraps(original)(lambda self, s: original(self, s))

    patch = Patch(name="standin", changes="a stand-in change", written_for="stand-in 1.0", upstream="none filed",
                  targets={"standin_upstream:Head.softmax": expected}, apply=wrap)
    assert patch.install() is True
    assert module.Head.softmax.__wrapped__ is not None
    assert [r.status for r in patch.check()] == [OK]
    assert fingerprint(resolve("standin_upstream:Head.softmax")) == expected


def test_the_server_leaves_out_a_real_patch_that_no_longer_fits_and_says_so(monkeypatch, caplog):
    """As at start (app.py and server/serve.py call install()): Bokeh's executor hand-off is kept when the function the
    patch replaces is not the one it was written for."""
    from bokeh.server import session

    from server.patches import bokeh_session_executor

    moved = dataclasses.replace(bokeh_session_executor.PATCH,
                                targets={"bokeh.server.session:_run_in_executor": "0" * 16})
    monkeypatch.setattr(bokeh_session_executor, "PATCH", moved)
    before = session._run_in_executor
    with caplog.at_level(logging.ERROR, logger="server.patches"):
        assert patches.install(names=("bokeh_session_executor",)) == []
    assert session._run_in_executor is before
    said = [r.getMessage() for r in caplog.records if r.name == "server.patches"]
    assert len(said) == 1 and "bokeh_session_executor not applied" in said[0]
    assert "bokeh.server.session:_run_in_executor CHANGED (expected 0000000000000000" in said[0]


def test_a_page_places_its_own_bokeh_models_without_walking_every_model_their_scripts_reach(monkeypatch):
    """Panel's Bokeh pane walks all its model reaches for scripts to rewrite; the readout's and the weights' Divs carry
    the drag's script, which reaches most of the page: a whole-page walk per pane in every build
    (server/patches/panel_bokeh_pane.py). The app's own panes ask for no such walk, and keep Panel's placing."""
    from bokeh.document import Document
    from bokeh.model import Model
    from bokeh.models import CustomJS

    import app

    walked = []
    select = Model.select
    monkeypatch.setattr(Model, "select", lambda self, selector: walked.append(selector) or select(self, selector))
    page = app.create_app()
    doc = Document()
    doc.add_root(page.get_root(doc))
    assert [s for s in walked if s.get("type") is CustomJS] == []
    readout = next(m for m in doc.models if m.name == "readout")
    assert readout.document is doc and readout.js_property_callbacks["change:text"]


def test_where_the_bokeh_pane_no_longer_fits_panel_the_app_has_panel_s_own(monkeypatch):
    import panel as pn

    from server.patches import panel_bokeh_pane

    assert panel_bokeh_pane.bokeh_pane() is panel_bokeh_pane.OwnModelsBokeh
    monkeypatch.setattr(panel_bokeh_pane.PATCH, "_fits", False)
    assert panel_bokeh_pane.bokeh_pane() is pn.pane.Bokeh


def _first_page_stylesheets():
    """The ``ImportedStyleSheet`` models made while a first page is built into a document, and its models' sheets."""
    from bokeh.document import Document
    from bokeh.models import ImportedStyleSheet
    from panel.io.state import set_curdoc

    import app

    made = []
    init = ImportedStyleSheet.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)
    ImportedStyleSheet.__init__ = counted
    try:
        doc = Document()
        with set_curdoc(doc):
            doc.add_root(app.create_app().get_root(doc))
    finally:
        ImportedStyleSheet.__init__ = init
    sheets = sorted((type(m).__name__, i, s.url) for m in doc.models
                    for i, s in enumerate(getattr(m, "stylesheets", [])) if isinstance(s, ImportedStyleSheet))
    return made, [m for m in doc.models if isinstance(m, ImportedStyleSheet)], sheets


def test_a_page_makes_only_the_stylesheet_models_it_keeps_and_the_same_ones_as_panel(monkeypatch):
    """Panel made a new ImportedStyleSheet for each file each model names, then replaced nearly all by the page's own
    for that file (server/patches/panel_stylesheets.py): 38 made for the first page's 5."""
    from panel import reactive

    from server.patches import panel_stylesheets

    assert panel_stylesheets.PATCH.install()  # app.py installs it outside a notebook: in force here already
    made, kept, sheets = _first_page_stylesheets()
    assert len(kept) >= 3 and sorted(map(id, made)) == sorted(map(id, kept))
    # Panel's own: the same sheets on the same models, made many times over
    monkeypatch.setattr(reactive, "ImportedStyleSheet", panel_stylesheets.ImportedStyleSheet)
    monkeypatch.setattr(reactive.Reactive, "_get_properties", reactive.Reactive._get_properties.__wrapped__)
    made_by_panel, kept_by_panel, sheets_by_panel = _first_page_stylesheets()
    assert len(kept_by_panel) == len(kept) and len(made_by_panel) > 4 * len(kept)
    assert sheets_by_panel == sheets


def _page_and_rows():
    """A first page's serialised document (its ids taken out) and the Panel ``Row``s made while it was built."""
    import re

    import panel as pn
    from bokeh.core.json_encoder import serialize_json
    from bokeh.document import Document

    import app

    made = []
    init = pn.Row.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)
    pn.Row.__init__ = counted
    try:
        doc = Document()
        doc.add_root(app.create_app().get_root(doc))
    finally:
        del pn.Row.__init__  # Panel's own, from its base class
    text = serialize_json(doc.to_json(deferred=False))
    text = re.sub(r"\[\[\d{9,},", "[[PYID,", text)  # the Python ids of Panel's callbacks, as in test_bokeh_defaults
    return re.sub(r'"([A-Za-z]+)\d{5}"', r'"\1"', re.sub(r"p\d{3,}", "ID", text)), len(made)


def test_a_page_s_panes_make_no_row_of_their_own_and_the_page_is_the_same(monkeypatch):
    """Panel made a Row around every pane as it was made, which a pane inside the app's own layouts never uses: eight
    on a first page (server/patches/panel_pane_layout.py). Now made when first asked for, as Panel made it."""
    import panel as pn
    from panel.pane.base import PaneBase

    from server.patches import panel_pane_layout

    panel_pane_layout.PATCH.install()  # app.py installs it outside a notebook: in force here already
    ours, rows = _page_and_rows()

    def a_pane_s_row():
        pane = pn.pane.Markdown("x", width=100, margin=5, sizing_mode="fixed")
        pane.width = 200
        row = pane.layout
        return row.objects == [pane], {p: getattr(row, p) for p in ("width", "height", "margin", "sizing_mode")}
    row = a_pane_s_row()
    monkeypatch.setattr(PaneBase, "__init__", PaneBase.__init__.__wrapped__)
    monkeypatch.delattr(PaneBase, "layout")  # Panel's: an attribute each pane sets as it is made
    panels, panel_rows = _page_and_rows()
    assert panel_rows >= rows + 8
    assert ours == panels
    assert row == a_pane_s_row() and row[0]


def test_a_served_page_s_root_is_added_without_panel_s_walk_for_other_documents_and_the_page_is_the_same(monkeypatch):
    """Panel's add_to_doc walked every model of a page to take each out of a document it had been shown in before,
    and found none on a served page, whose models are all its own (server/patches/panel_add_to_doc.py)."""
    import re
    from types import SimpleNamespace

    from bokeh.core.json_encoder import serialize_json
    from bokeh.document import Document
    from panel import viewable
    from panel.io import model as panel_model
    from panel.io.state import set_curdoc

    import app
    from server.patches import panel_add_to_doc

    served = SimpleNamespace(id="s", request=SimpleNamespace(arguments={}, headers={}, cookies={}))
    monkeypatch.setattr(Document, "session_context", property(lambda self: served))  # as a served page's
    monkeypatch.setattr(viewable, "add_to_doc", viewable.add_to_doc)  # Panel's own again after the test
    panel_add_to_doc.PATCH.install()  # the server installs it
    walks = []  # Panel's walk for other documents' models (not a registered link's: panel_link_callbacks)
    remove_root = panel_model.remove_root
    monkeypatch.setattr(panel_model, "remove_root", lambda obj, *a, **k: walks.append(obj) or remove_root(obj, *a, **k))

    def served_page():
        walks.clear()
        doc = Document()
        with set_curdoc(doc):
            app.create_app().server_doc(doc, location=False)
        text = serialize_json(doc.to_json(deferred=False))
        text = re.sub(r"\[\[\d{9,},", "[[PYID,", text)  # ids that differ between builds, as in _page_and_rows
        text = re.sub(r'"([A-Za-z]+)\d{5}"', r'"\1"', re.sub(r"p\d{3,}", "ID", text))
        return text, len(walks), [type(r).__name__ for r in doc.roots]

    ours, our_walks, roots = served_page()
    monkeypatch.setattr(viewable, "add_to_doc", viewable.add_to_doc.__wrapped__)
    panels, panel_walks, panel_roots = served_page()
    assert our_walks == 0 < panel_walks
    assert ours == panels and roots == panel_roots == ["Div", "Div", "Column", "BrowserInfo"]


def test_a_pages_event_marks_the_process_busy_only_while_an_indicator_shows_it(monkeypatch):
    """No busy indicator (this app's pages show none): Panel's handling of a click leaves the process's busy events
    alone. With one given to ``sync_busy``: busy while the event runs, as Panel does, and not after."""
    import panel as pn
    from bokeh.document import Document
    from bokeh.events import ButtonClick
    from panel.io.state import _state

    from server.patches import panel_busy_events

    monkeypatch.setattr(_state, "_add_busy_event", _state._add_busy_event)  # Panel's own again after the test
    monkeypatch.setattr(_state, "_remove_busy_event", _state._remove_busy_event)
    panel_busy_events.PATCH.install()  # the server installs it
    seen = []
    button = pn.widgets.Button(label="Next")
    button.on_click(lambda event: seen.append((pn.state.busy, list(pn.state._busy_counter))))
    doc = Document()
    model = button.get_root(doc)
    event = ButtonClick(model)

    button._process_bokeh_event(doc, event)
    assert seen == [(False, [])]  # nothing shows busy: no busy event made

    indicator = pn.indicators.BooleanStatus()
    pn.state.sync_busy(indicator)
    monkeypatch.setattr(_state, "_indicators", [indicator])
    button._process_bokeh_event(doc, event)
    assert seen[1][0] is True and len(seen[1][1]) == 1  # shown: Panel's own bookkeeping, busy while it runs
    assert pn.state.busy is False and not pn.state._busy_counter and indicator.value is False


def test_panels_loggers_make_a_record_only_at_a_level_a_handler_writes(monkeypatch):
    """Panel's logger is at DEBUG and filters at its handler: each page event's debug lines were made and dropped.
    After the server's start-up it makes only what its handlers write; a handler at DEBUG keeps DEBUG."""
    from panel.io.logging import panel_log_handler

    from server.logs import panel_records_only_when_written

    logger = logging.getLogger("panel")
    monkeypatch.setattr(logger, "level", logger.level)  # restored after the test
    monkeypatch.setattr(logger, "handlers", [panel_log_handler])  # Panel's own handler only, as in the server
    monkeypatch.setattr(panel_log_handler, "level", logging.WARNING)  # Panel's default config.log_level
    assert logger.isEnabledFor(logging.DEBUG)  # Panel's own set-up
    panel_records_only_when_written()
    component = logging.getLogger("panel.reactive.Button")  # where Panel logs a page's events
    assert not component.isEnabledFor(logging.DEBUG) and component.isEnabledFor(logging.WARNING)
    panel_log_handler.setLevel(logging.DEBUG)
    panel_records_only_when_written()
    assert component.isEnabledFor(logging.DEBUG)
