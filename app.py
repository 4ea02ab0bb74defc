"""Attention Explorer: scaled dot-product attention on "I love NLP", live in the browser.

``python app.py`` (or ``python -m server``) serves it with the server's settings and routes (server/serve.py);
``panel serve app.py`` serves it too, with every patch (server/patches/) but without what needs the server's
own settings (server/routes.py: gzip, the link limit, a room's live channel, KaTeX's fonts). Each browser session
gets its own :class:`~session.state.AttentionState`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import panel as pn
from bokeh.models import Plot

from link.browser import BrowserBridge
from link.drag import DragChannel
from link.shown import PlotsShown
from server import notebook, patches
from server.housekeeping import return_freed_memory
from server.transport import nodelay_on_load
from session.address import apply_address
from session.i18n import N_, from_accept_language
from session.progress import LearnerProgress
from session.state import AttentionState
from widgets.check import CheckView, ProgressStore
from widgets.dk import DkPanel
from widgets.edit import Editor
from widgets.export import Export
from widgets.header import Header, Notices
from widgets.header import title_html as _title  # noqa: F401  (its name in tests)
from widgets.heads import heads_tab
from widgets.keys import KeysHelp
from widgets.matrix import AttentionMatrix
from widgets.model import model_tab
from widgets.projections import projections_tab
from widgets.query_plot import QueryPlot
from widgets.recipe import Formula
from widgets.room import RoomControls
from widgets.stage import Stage
from widgets.stepper import StepThrough
from widgets.steps import Announcer, Inspector, Readout
from widgets.style import APP_CSS, KATEX_FONTS_CSS, PAGE_CSS, ClassroomDesign, FigureStyler, katex_fonts_inline_css
from widgets.tabs import lazy_tabs, retitle
from widgets.train import train_tab
from widgets.trap import TrapPanel
from widgets.weights import ValuesView, WeightBars

HERE = Path(__file__).parent
INSPECTOR_CSS = (HERE / "static" / "inspector.css").read_text()
TEACHING_CSS = (HERE / "static" / "teaching.css").read_text()
TITLE = "Attention Explorer"
VIEWPORT = "width=device-width, initial-scale=1"

#: The whole explorer's height in a notebook cell (CSS px), where it cannot take the screen's rest as a page does:
#: a cell gives a stretching layout no height at all.
NOTEBOOK_HEIGHT = 800


def in_notebook() -> bool:
    """True in a Jupyter kernel (JupyterLab, the classic notebook, VS Code), False under ``panel serve``."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and hasattr(shell, "kernel")


# `panel serve` runs this file as a module named bokeh_app_…, once per page (pn.state.served checks the same name
# through inspect.stack(), which cost every page build a few ms). Every patch to Bokeh and Panel (server/patches/:
# the websocket guard, events held and paced, bounded logs, ...) is in force from the first page of a bare `panel
# serve app.py` on, as under `python app.py`, which installs them as the server starts. Elsewhere, outside a
# notebook (whose kernel is the learner's own, and a page or two there gain nothing from it), only Bokeh's stable
# defaults are kept: pages built without being served (tests, benchmarks) are the same pages, made faster
SERVED = __name__.startswith("bokeh_app_")
if SERVED:
    patches.install()
elif not in_notebook():
    patches.keep_stable_defaults()

# In a notebook, BokehJS, Panel and KaTeX (its fonts too) go into the cell's output instead of coming from a CDN: a
# classroom's notebook works with no internet, and saved with its outputs it opens anywhere. A served page has them
# from its own server already (KaTeX's fonts: server/katex_fonts.py), KaTeX's script once a formula needs it.
# (BokehJS and Panel stored once in the saved notebook, not twice: server/notebook.py)
# A served page's document-level CSS goes into the page's head alone (global_css): Panel copies raw_css into every
# component's shadow root too, where it matches nothing (85 kB of a page's document, 11 kB compressed). Panel's
# signatures of its classes are for a notebook's completion; worked out again by every call, they cost a served
# page measurable server CPU (bench/HISTORY.md).
with notebook.bundle_once():
    pn.extension(design=ClassroomDesign,
                 **({"inline": True, "raw_css": [PAGE_CSS], "global_css": [katex_fonts_inline_css()]} if in_notebook()
                    else {"global_css": [PAGE_CSS, KATEX_FONTS_CSS], "apply_signatures": False}))

# --- teaching panels: presets and editing, the formula, the trap, why √d_k -------------
#: The views beyond the running example, by name: ``formula``, the recipe with live numbers; ``editor``,
#: presets, switches (scaling, causal mask, trap) and exact numbers; ``trap``, scoring against values instead
#: of keys; ``dk``, why divide by √d_k.
TEACHING = {"formula": Formula, "editor": Editor, "trap": TrapPanel, "dk": DkPanel}


def teaching_panel(name: str, state: AttentionState) -> pn.viewable.Viewable:
    """The teaching view ``name`` (a key of :data:`TEACHING`) over ``state``, styled for its tab.

    A view that does less while its tab is hidden (``shown_in_tab``, the editor's) is told by the tabs
    (widgets/tabs.py, :func:`~widgets.tabs.lazy_tabs`).
    """
    view = TEACHING[name](state=state)
    layout = view.__panel__()
    if hasattr(view, "shown_in_tab"):
        layout.shown_in_tab = view.shown_in_tab
    for pane in layout.select(pn.pane.HTML):
        pane.stylesheets = [*pane.stylesheets, TEACHING_CSS]
    layout.css_classes = [*layout.css_classes, "teaching-panel"]
    layout.stylesheets = [*layout.stylesheets, TEACHING_CSS]
    return layout


def _stretch(view, **kw):
    """Let a view's Bokeh figure fill the space its layout cell gives it."""
    view.figure.sizing_mode = "stretch_both"
    view.figure.min_border_right = 20
    pane = view.__panel__()
    pane.param.update(sizing_mode="stretch_both", **kw)
    return view


#: The tabs beside the explorer, in order: each one's name in a lesson link (``?tabs=weights,check``, the same in
#: every language; session/lesson.py) and its title. A new tab adds its row here and its build in create_app.
TABS = (("weights", N_("Weights")), ("matrix", N_("Matrix")), ("steps", N_("All steps")), ("recipe", N_("Recipe")),
        ("edit", N_("Edit")), ("trap", N_("Trap")), ("dk", "√d_k"), ("projections", N_("Projections")),
        ("heads", N_("Heads · n²")), ("train", N_("Train")), ("model", N_("Real model")),
        ("check", N_("Check")), ("export", N_("Export")),
        ("keys", N_("Keys")))
TAB_NAMES = tuple(name for name, _ in TABS)
#: Up to this many tabs keep full-size titles on a short screen (an 800×600 projector): a lesson's few tabs fit.
LESSON_TABS = 5
TAB_TITLES = tuple(title for _, title in TABS)


def page_language(state: AttentionState) -> None:
    """The language the browser asks for (``Accept-Language``); the address's ``lang`` may override it."""
    headers = pn.state.headers if pn.state.curdoc is not None else {}
    state.lang = from_accept_language(headers.get("Accept-Language") if hasattr(headers, "get") else None)


def address_args() -> dict:
    """The page address's query arguments for a served session (empty otherwise)."""
    if pn.state.curdoc is None or pn.state.curdoc.session_context is None:
        return {}
    return {k: v for k, v in pn.state.session_args.items() if not k.startswith("bokeh-")}


def create_app(state: AttentionState | None = None, args: dict | None = None) -> pn.viewable.Viewable:
    """Build one learner's page over ``state`` (a fresh one by default), set up from the address ``args``."""
    state = state or AttentionState()
    nodelay_on_load()
    return_freed_memory()
    page_language(state)
    apply_address(state, address_args() if args is None else args, TAB_NAMES)
    tr = state.tr

    plots = PlotsShown(state=state)  # what the plots show, held during the page's own drag of q (link/shown.py)
    query_plot = _stretch(QueryPlot(state=state, plots=plots))
    # arrow keys move q while it has focus; no touch scrolling (beside QueryPlot's own class for vector values)
    query_plot.figure.css_classes = ["ae-query-plot", *query_plot.figure.css_classes]
    query_plot.figure.stylesheets = [APP_CSS]
    plot_label = N_("Query plane: drag q, or use the arrow keys")
    query_plot.figure.html_attributes = {"tabindex": "0", "role": "application", "aria-label": tr(plot_label)}
    bars = WeightBars(state=state, plots=plots)
    readout = Readout(state=state)
    drag = DragChannel(query_plot, readout, bars, state=state)
    styler = FigureStyler(state=state, figures=[query_plot.figure])

    def built(view):  # a view built after the page: the values' number line or plane, the matrix
        if hasattr(view, "figure"):  # a Bokeh figure; the SVG charts size and style themselves
            _stretch(view)
            styler.add([view.figure])
        return view

    # number line for scalar values, plane for 2-D ones: each built when the values first need it
    values = ValuesView(state=state, plots=plots, on_build=built)
    values.__panel__().sizing_mode = "stretch_both"

    def inspector():
        view = Inspector(state=state)
        # no margin above or below: the tab's box is as tall as the tab, and a margin moved it past the tab's bottom
        # (on a phone on its side, 5 px under the answer line)
        view._pane.param.update(stylesheets=[INSPECTOR_CSS], width=None, sizing_mode="stretch_width", margin=(0, 10))
        return view

    def teaching(name):
        def build():
            layout = teaching_panel(name, state)
            styler.add([p.object for p in layout.select(pn.pane.Bokeh) if isinstance(p.object, Plot)])
            return layout
        return build

    served = pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
    bridge = BrowserBridge(state=state, plots=plots, whole_page=served)
    # Present / follow a room (widgets/room.py), at the header's end
    room = RoomControls(state=state, live=drag.live, browser=bridge)
    room.share_hand_of(drag)
    # the Check tab's progress, made with the page so its tasks tick before the tab is first opened; they wait
    # while the page follows a presenter (the explorer then shows the presenter's work)
    learner = LearnerProgress(state=state, following=room.following, store=ProgressStore())
    room.param.watch(lambda e: setattr(learner, "following", e.new), "following")
    bridge.on_stored = learner.store.receive  # the progress the browser kept, through the page's own script
    # a room needs the server's address for its link; a notebook has none
    header = Header(state=state, extra=[room] if served else [])

    builds = dict(zip(TAB_NAMES, (
        lambda: pn.Column(bars, values, sizing_mode="stretch_both"),
        # in a Column: the tab's contents scroll inside it (static/app.css), while the figure keeps the
        # smallest size its cells' numbers need; the figure alone in the tab would be squeezed to the tab's box
        # scrolling sideways in its own box where the tab is narrower than its numbers (scroll-x)
        lambda: pn.Column(built(AttentionMatrix(state=state, plots=plots)), sizing_mode="stretch_both",
                          css_classes=["scroll-x"], stylesheets=[APP_CSS]),
        inspector, teaching("formula"), teaching("editor"), teaching("trap"), teaching("dk"),
        lambda: projections_tab(state, styler), lambda: heads_tab(state, styler), lambda: train_tab(state, styler),
        lambda: model_tab(state, styler, on_train=(lambda: open_tab("train")) if has_tab("train") else None),
        lambda: CheckView(learner=learner), lambda: Export(state=state), lambda: KeysHelp(state=state)), strict=True))

    def shown_tabs():  # the lesson link's tabs (every tab without one)
        return [(name, title) for name, title in TABS if name in state.tabs] or TABS

    def has_tab(name):
        return any(n == name for n, _ in shown_tabs())

    def open_tab(name):  # a tab's button that leads to another tab (the Real model tab's to the Train tab)
        names = [n for n, _ in shown_tabs()]
        if name in names:
            tabs.active = names.index(name)

    def explorer_tabs():  # a tab not shown is never built
        shown = shown_tabs()
        few = ["lesson"] if len(shown) <= LESSON_TABS else []
        return lazy_tabs(*((state.tr(title), builds[name]) for name, title in shown), sizing_mode="stretch_both",
                         css_classes=["explorer-tabs", *few], stylesheets=[APP_CSS])
    tabs = explorer_tabs()

    def relabel(*_):  # the query plot's name and the tabs' words; every view re-renders its own
        tr = state.tr
        query_plot.figure.html_attributes = {**query_plot.figure.html_attributes, "aria-label": tr(plot_label)}
        retitle(tabs, [tr(title) for _, title in shown_tabs()])
    state.param.watch(relabel, "lang")

    def new_lesson(_):  # a presenter's lesson reaching a follower: its tabs instead of this page's
        nonlocal tabs
        tabs = right[-1] = explorer_tabs()
        stage.watch(tabs)
    state.param.watch(new_lesson, "tabs")
    left = pn.Column(query_plot, readout, sizing_mode="stretch_both", css_classes=["left"], stylesheets=[APP_CSS])
    stepper = StepThrough(state=state).__panel__()
    right = pn.Column(stepper, tabs, sizing_mode="stretch_both", css_classes=["right"], stylesheets=[APP_CSS])
    # a presenter's room above the tabs, once the page presents: it takes its height from them, never the plot's room
    if served:
        room.bar_goes(lambda bar: right.insert(0, bar))
    body = pn.Row(left, right, sizing_mode="stretch_both", css_classes=["body"], stylesheets=[APP_CSS])
    # the Train tab takes the stage: the plot, the readout and the step-through step aside into a strip
    stage = Stage(state, aside=[left, stepper], names=lambda: [name for name, _ in shown_tabs()],
                  place=lambda strip: body.insert(0, strip))
    stage.watch(tabs)
    page = pn.Column(
        header, Notices(state=state), body, bridge, Announcer(state=state),
        sizing_mode="stretch_both", css_classes=["page"], stylesheets=[APP_CSS],
    )
    if not served:  # a notebook cell, or an embedding page: a height of its own
        page.param.update(sizing_mode="stretch_width", height=NOTEBOOK_HEIGHT)
    else:
        pn.state.curdoc.add_root(bridge.address_div)  # the address bar's text: no view, so no pane around it
        pn.state.curdoc.add_root(learner.store.div)  # the progress for the browser's storage, likewise
        # without it a phone lays the page out 980 px wide and shows it at 0.4x (Panel's page template writes it)
        pn.state.curdoc.template_variables.setdefault("meta", {})["viewport"] = VIEWPORT
    page.state = state  # lets tests reach the session's state from the served page
    return page


if SERVED:
    # location=False: Panel's Location model parses every address argument on the server, and one over 4,300
    # digits raises there and leaves the session broken; the browser bridge reports and changes the address
    create_app().servable(title=TITLE, location=False)

if __name__ == "__main__":
    # the same settings and server as the container: environment variables -> `panel serve` (server/serve.py)
    from server import serve

    serve.main()
