"""Panel's ``bundle_resources`` as its server's page calls it (``panel.io.server.bundle_resources``): a served page's
scripts without BokehJS's WebGL bundle where no figure of the page uses it (:func:`server.page_scripts.uses_webgl`).

Panel 1.10.0 leaves out BokehJS's tables and MathJax bundles where the page has no table and no MathJax, but always
sends ``bokeh-gl.min.js`` (274 kB, 78 kB in gzip), which only a figure with ``output_backend="webgl"`` runs. Written
for Panel 1.10.0. Upstream: holoviz/panel#2796 (closed) asked for the server's page to leave out unused bundles; Panel
leaves out the tables and MathJax ones only.
"""

from __future__ import annotations

import functools

from server.patches.fit import Patch


def install() -> None:
    """A served page's scripts without BokehJS's WebGL bundle where no figure uses it. Idempotent."""
    import panel.io.server as panel_server

    from server.page_scripts import GL_BUNDLE, uses_webgl

    original = panel_server.bundle_resources
    if getattr(original, "without_unused_bundles", False):
        return

    def bundle_resources(roots, resources, *args, **kwargs):
        if resources is not None and GL_BUNDLE in resources.components and not uses_webgl(roots or ()):
            resources = resources.clone(components=[c for c in resources.components if c != GL_BUNDLE])
        return original(roots, resources, *args, **kwargs)

    bundle_resources.without_unused_bundles = True
    panel_server.bundle_resources = functools.update_wrapper(bundle_resources, original)


PATCH = Patch(
    name="panel_bundle_resources",
    changes="a served page's scripts without BokehJS's WebGL bundle where no figure uses it",
    targets={
        "panel.io.server:bundle_resources": "aa284ba9f2cd1e57",
        "panel.io.server:server_html_page_for_session": "32b42dfce46c9226",
    },
    written_for="Panel 1.10.0",
    upstream="holoviz/panel#2796",
    apply=install,
)
