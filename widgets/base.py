"""The scaffolding every view of a page shares: its state, its layout built once, and its re-rendering."""

from __future__ import annotations

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from session.state import AttentionState


class View(pn.viewable.Viewer):
    """A view over one page's :class:`~session.state.AttentionState` (Panel's custom-viewer pattern).

    A view builds its layout once, in ``__init__``, into ``self._layout`` (what :meth:`__panel__` returns),
    and changes it in place afterwards: :meth:`render_on` calls ``self._render`` whenever one of the state's
    named params changes (its language, usually, among them).
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this view renders.")

    def render_on(self, *names: str) -> None:
        """Call ``self._render`` now and whenever one of the state's params ``names`` changes."""
        self.state.param.watch(self._render, list(names))
        self._render()

    def _render(self, *_) -> None:
        raise NotImplementedError

    def __panel__(self):
        return self._layout


class DiscreteSlider(pn.widgets.DiscreteSlider):
    """Panel's ``DiscreteSlider`` (the same parameters) whose chosen option is written by the slider itself, in its
    title (``label: option``), formatted in the page by Bokeh from the options' labels.

    Panel's own writes it into a text above the slider, through a Panel link. Panel keeps its links in one
    registry for the whole process, and while any link is registered, any change of any layout in any page made
    Panel walk that page (each Panel object, each Bokeh model under the change) to look for links: a tab's first
    showing took longer once a page had opened a tab with a discrete slider, on every page of the server
    (``bench/HISTORY.md``). And the page wrote the new text into the text's model, which the server refuses from a
    page (one "Ignored a page's writes" log line for each learner who moved the slider). Here the registry stays
    empty (``server.patches`` skips the walk while it is), and the page writes nothing but the slider's value.
    """

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
