"""Panel's ``DiscreteSlider``, subclassed (:class:`OwnTitleDiscreteSlider`): the chosen option written by the slider
itself, in its title (``label: option``), formatted in the page by Bokeh from the options' labels, with no Panel link.

Panel 1.10.0's writes it into a text above the slider, through a Panel link (``jslink``). Panel keeps its links in one
registry for the whole process, and while any link is registered, any change of any layout in any page made Panel
walk that page (each Panel object, each Bokeh model under the change) to look for links: a tab's first showing took
longer once a page had opened a tab with a discrete slider, on every page of the server (``bench/HISTORY.md``). And
the page wrote the new text into the text's model, which the server refuses from a page (one "Ignored a page's
writes" log line for each learner who moved the slider). Here the registry stays empty
(``server/patches/panel_link_callbacks.py`` skips the walk while it is), and the page writes nothing but the slider's
value. Two of Panel's private methods are extended (``_update_options``, ``_update_style``) and three of its private
parts used (``_jslink``, ``_slider``, ``_text``, made in ``__init__``).

Written for Panel 1.10.0. Upstream: holoviz/panel#3050 (open: a ``DiscreteSlider``'s links fail) is about the same
link. Where this does not fit the installed Panel, :func:`discrete_slider` gives Panel's own ``DiscreteSlider``.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import CustomJSTickFormatter

from server.patches.fit import Patch

PATCH = Patch(
    name="panel_discrete_slider",
    changes="a discrete slider names its option in its own title, with no Panel link",
    targets={
        "panel.widgets.slider:DiscreteSlider._update_options": "dc7d486533097cea",
        "panel.widgets.slider:DiscreteSlider._update_style": "2110b2dd4ca6d851",
        "panel.widgets.slider:DiscreteSlider.__init__": "3689290a04d8cedb",
    },
    written_for="Panel 1.10.0",
    upstream="holoviz/panel#3050 (related: the same link fails under jscallback)",
)


class OwnTitleDiscreteSlider(pn.widgets.DiscreteSlider):
    """Panel's ``DiscreteSlider`` (the same parameters) whose chosen option is written in the slider's own title."""

    #: Bokeh keeps a slider's title on one line; Panel's text wrapped ("Temperature T: 1.4142 = √d_k" in a
    #: projector's 20 px is wider than the slider)
    TITLE_CSS = ".bk-slider-title { white-space: normal; }"

    def _update_options(self, *events):
        super()._update_options(*events)
        self._jslink.unwatch()  # out of Panel's registry: the slider's title shows the option instead
        labels = [str(o) if isinstance(o, str) else self.formatter % o for o in self.options]
        self._slider.param.update(name=self.label or self.name or "", show_value=True,
                                  format=CustomJSTickFormatter(args={"labels": labels}, code="return labels[tick]"))

    def _update_style(self, *events):
        super()._update_style(*events)  # the slider takes the widget's style, its stylesheets among it
        self._text.visible = False  # Panel shows it with the slider's value (show_value)
        self._slider.stylesheets = [*self._slider.stylesheets, self.TITLE_CSS]


def discrete_slider() -> type:
    """The discrete slider class the app uses: :class:`OwnTitleDiscreteSlider` where it fits the installed Panel,
    Panel's own ``DiscreteSlider`` otherwise."""
    return OwnTitleDiscreteSlider if PATCH.fits() else pn.widgets.DiscreteSlider
