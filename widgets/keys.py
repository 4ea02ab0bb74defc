"""The Keys tab: the page's keyboard shortcuts, in the page's language."""

from __future__ import annotations

from html import escape

import panel as pn

from link.browser import SHORTCUTS
from session.i18n import translator
from widgets.base import View
from widgets.style import APP_CSS


def keys_html(lang: str) -> str:
    """The shortcuts (link/browser.py's SHORTCUTS) as a table, with how to give the page focus."""
    tr = translator(lang)
    rows = "".join(f"<tr><th scope='row'><kbd>{tr(k)}</kbd></th><td>{tr(what)}</td></tr>" for k, what in SHORTCUTS)
    # the table is focusable: on a short screen the help scrolls, and a keyboard reaches a scrolling region only
    # through something focusable inside it (axe: scrollable-region-focusable)
    return (f"<p>{tr._('With the page focused (click any empty spot):')}</p>"
            f"<table class='keys' tabindex='0' aria-label='{escape(tr._('Keyboard shortcuts'), quote=True)}'>{rows}"
            f"</table><p>{tr._('Tab reaches every control; the query plot can take focus too. Dragging works with a '
                              'mouse, a pen or a finger.')}</p>")


class KeysHelp(View):
    """The Keys tab's table of shortcuts, re-written when the page's language changes."""

    def __init__(self, **params):
        super().__init__(**params)
        # no margin above or below: the tab's box is as tall as the tab (a margin moved it 5 px past the tab's
        # bottom, under a landscape phone's answer line), as the All steps tab's
        self._layout = pn.pane.HTML(pn.bind(keys_html, self.state.param.lang), css_classes=["help"],
                                    sizing_mode="stretch_width", stylesheets=[APP_CSS], margin=(0, 10))
