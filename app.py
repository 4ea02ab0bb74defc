"""Attention Explorer: scaled dot-product attention on "I love NLP", live in the browser.

``panel serve app.py`` or ``python app.py`` start it; each browser session gets
its own :class:`~widgets.state.AttentionState`.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

import panel as pn

from widgets.charts import ValuesView, WeightBars
from widgets.dk_panel import DkPanel
from widgets.editor import Editor
from widgets.formula import Formula
from widgets.inspector import Inspector, Readout
from widgets.matrix import AttentionMatrix
from widgets.preview import DragPreview
from widgets.query_plot import QueryPlot
from widgets.state import AttentionState
from widgets.trap import TrapPanel

HERE = Path(__file__).parent
APP_CSS = (HERE / "static" / "app.css").read_text()
INSPECTOR_CSS = (HERE / "static" / "inspector.css").read_text()
TEACHING_CSS = (HERE / "static" / "teaching.css").read_text()
TITLE = "Attention Explorer"


# --- teaching panels: presets and editing, the formula, the trap, why √d_k -------------
def teaching_panels(state: AttentionState) -> dict[str, pn.viewable.Viewable]:
    """The views beyond the running example, by name, for the page layout to place.

    ``formula``: the recipe with live numbers (meant beside the inspector);
    ``editor``: presets, switches (scaling, causal mask, trap) and exact numbers;
    ``trap``: scoring against values instead of keys; ``dk``: why divide by √d_k.
    """
    panels = {"formula": Formula(state=state), "editor": Editor(state=state), "trap": TrapPanel(state=state),
              "dk": DkPanel(state=state)}
    layouts = {}
    for name, view in panels.items():
        layout = view.__panel__()
        for pane in layout.select(pn.pane.HTML):
            pane.stylesheets = [*pane.stylesheets, TEACHING_CSS]
        layout.css_classes = [*layout.css_classes, "teaching-panel"]
        layout.stylesheets = [*layout.stylesheets, TEACHING_CSS]
        layouts[name] = layout
    return layouts


def create_app(state: AttentionState | None = None) -> pn.viewable.Viewable:
    """Build one learner's page over ``state`` (a fresh one by default)."""
    state = state or AttentionState()
    query_plot = QueryPlot(state=state)
    matrix = AttentionMatrix(state=state)
    inspector = Inspector(state=state)
    inspector._pane.stylesheets = [INSPECTOR_CSS]
    readout = Readout(state=state)
    bars, values = WeightBars(state=state), ValuesView(state=state)
    DragPreview(query_plot, values, matrix, readout, bars, state=state)

    reset = pn.widgets.Button(label="Reset example", color="primary", width=150, height=40,
                              description="Restore the preset: q = q_love, its keys and values, scaling on, no mask")
    reset.on_click(lambda _: state.reset())
    # escaped: messages quote what the learner typed, which is never HTML
    message = pn.pane.HTML(pn.bind(lambda m: f"<p>{escape(m)}</p>" if m else "", state.param.message),
                           css_classes=["message"], stylesheets=[APP_CSS], width=220)
    teaching = teaching_panels(state)

    header = pn.pane.HTML(
        "<h1>Attention Explorer</h1>"
        "<p>Scaled dot-product attention on “I love NLP”: scores s<sub>i</sub> = q·k<sub>i</sub>/√d<sub>k</sub>, "
        "weights a = softmax(s), output Σ a<sub>i</sub>v<sub>i</sub>. Drag the query q; click a row of the "
        "matrix to inspect that token's query.</p>",
        css_classes=["app-header"], stylesheets=[APP_CSS], sizing_mode="stretch_width",
    )
    page = pn.Column(
        pn.Row(header, pn.Column(reset, message, width=220)),
        pn.Row(query_plot, pn.Column(bars, values, readout)),
        pn.Row(matrix, pn.Column(inspector, teaching["formula"])),
        # dynamic: a tab's models are built only when it is first shown, so the page loads faster
        pn.Tabs(("Edit the example", teaching["editor"]), ("The common trap", teaching["trap"]),
                ("Why divide by √d_k", teaching["dk"]), dynamic=True, name="teaching-tabs"),
        sizing_mode="stretch_width", stylesheets=[APP_CSS],
    )
    page.state = state  # lets tests reach the session's state from the served page
    return page


if pn.state.served:
    create_app().servable(title=TITLE)

if __name__ == "__main__":
    pn.serve(create_app, port=int(os.environ.get("PORT", "5006")), address="0.0.0.0" if os.environ.get("ADDRESS") else None,
             show=False, title=TITLE)
