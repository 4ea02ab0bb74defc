"""Attention Explorer: scaled dot-product attention on "I love NLP", live in the browser.

``panel serve app.py`` or ``python app.py`` start it; each browser session gets
its own :class:`~widgets.state.AttentionState`.
"""

from __future__ import annotations

import os
from pathlib import Path

import panel as pn

from widgets.charts import OutputLine, WeightBars
from widgets.follow import RoomControls
from widgets.inspector import Inspector, Readout
from widgets.matrix import AttentionMatrix
from widgets.query_plot import QueryPlot
from widgets.state import AttentionState

HERE = Path(__file__).parent
APP_CSS = (HERE / "static" / "app.css").read_text()
INSPECTOR_CSS = (HERE / "static" / "inspector.css").read_text()
TITLE = "Attention Explorer"


def create_app(state: AttentionState | None = None) -> pn.viewable.Viewable:
    """Build one learner's page over ``state`` (a fresh one by default)."""
    state = state or AttentionState()
    query_plot = QueryPlot(state=state)
    matrix = AttentionMatrix(state=state)
    inspector = Inspector(state=state)
    inspector._pane.stylesheets = [INSPECTOR_CSS]
    readout = Readout(state=state)

    reset = pn.widgets.Button(label="Reset example", color="primary", width=150, height=40,
                              description="Restore q = q_love and the original keys and values")
    reset.on_click(lambda _: state.reset())
    message = pn.pane.Str(state.param.message, css_classes=["message"], stylesheets=[APP_CSS])
    room = RoomControls(state=state)  # Present / follow a room (widgets/follow.py): placed beside Reset

    header = pn.pane.HTML(
        "<h1>Attention Explorer</h1>"
        "<p>Scaled dot-product attention on “I love NLP”: scores s<sub>i</sub> = q·k<sub>i</sub>/√d<sub>k</sub>, "
        "weights a = softmax(s), output Σ a<sub>i</sub>v<sub>i</sub>. Drag the query q; click a row of the "
        "matrix to inspect that token's query.</p>",
        css_classes=["app-header"], stylesheets=[APP_CSS], sizing_mode="stretch_width",
    )
    page = pn.Column(
        pn.Row(header, pn.Column(reset, message, room, width=220)),
        pn.Row(query_plot, pn.Column(WeightBars(state=state), OutputLine(state=state), readout)),
        pn.Row(matrix, inspector),
        sizing_mode="stretch_width", stylesheets=[APP_CSS],
    )
    page.state = state  # lets tests reach the session's state from the served page
    return page


if pn.state.served:
    create_app().servable(title=TITLE)

if __name__ == "__main__":
    # the same settings and server as the container: environment variables -> `panel serve` (serve.py)
    import serve

    serve.main()
