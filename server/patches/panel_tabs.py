"""Panel's ``Tabs``, subclassed by the page's tabs (``widgets/tabs.py``: ``LazyTabs`` and ``retitle``): checked, not
installed.

``LazyTabs`` extends Panel's private ``_get_model`` (a Bokeh callback on the tabs' model instead of a Panel link) and
``_get_objects`` (every tab not yet built holds one placeholder model), and ``retitle`` rewrites Panel's private
``_names``, ``_models`` and ``_panels`` (Panel reuses a built tab's Bokeh panel, and its title, when its contents
stay). That code lives with the views (``widgets/tabs.py``): where Panel's code moved, they make Panel's own tabs
instead (``PanelTabs``: a spacer per tab not built yet, each tab boxed anew for a new title), and the start's log and
``python -m server --check-patches`` say so. Written for Panel 1.10.0; no upstream issue asks for placeholder tabs.
"""

from __future__ import annotations

from server.patches.fit import Patch

PATCH = Patch(
    name="panel_tabs",
    changes="the page's tabs share one placeholder and are retitled in place (widgets/tabs.py)",
    targets={
        "panel.layout.tabs:Tabs._get_objects": "03a6acd2bc544578",
        "panel.layout.base:Panel._get_model": "5b9c5879f9a5dcad",
        "panel.layout.tabs:Tabs.__init__": "25f94253fb726931",
        "panel.layout.tabs:Tabs._update_names": "6b448cf0d3ae8bed",
    },
    written_for="Panel 1.10.0",
    upstream="none filed",
)
