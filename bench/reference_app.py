"""The plain reference for the drag benchmark: one figure whose Pan events write a Markdown pane.

Nothing else: no coalescing, no batching, no socket settings. ``panel serve bench/reference_app.py``.
"""

import panel as pn
from bokeh import events
from bokeh.models import Range1d
from bokeh.plotting import figure


def create_reference() -> pn.viewable.Viewable:
    fig = figure(name="query-plot", width=460, height=460, tools="", toolbar_location=None,
                 x_range=Range1d(-1.5, 2.5), y_range=Range1d(-1.5, 2.5))
    fig.scatter([1, 0, 1], [0, 1, 1], size=14)
    readout = pn.pane.Markdown("q = (0.000, 1.000)", name="readout")
    fig.on_event(events.Pan, lambda ev: setattr(readout, "object", f"q = ({ev.x:.3f}, {ev.y:.3f})"))
    return pn.Row(pn.pane.Bokeh(fig), readout)


if pn.state.served:
    create_reference().servable(title="Reference")
