"""Only the scripts a page runs: BokehJS's WebGL bundle left out of a page that draws nothing with WebGL.

A served Panel page lists its scripts in ``panel.io.server.server_html_page_for_session``, through
``panel.io.resources.bundle_resources``: Panel leaves out BokehJS's tables and MathJax bundles where the page has no
table and no MathJax, but always sends ``bokeh-gl.min.js`` (274 kB, 78 kB in gzip), which only a figure with
``output_backend="webgl"`` runs (Bokeh's own standalone pages leave it out likewise: ``bokeh.embed.bundle._use_gl``).
No figure of this app asks for WebGL (``tests/test_first_visit.py`` checks every tab's), so the page is sent without
it, unless a document's figure at load asks for it. Panel 1.10.0 (holoviz/panel#2796 asked for the server's page to
leave out unused bundles; Panel 1.10 leaves out the tables and MathJax ones only; ``tests/test_first_visit.py`` fails
if its names move). The notebook's output (``panel.io.notebook``) is left as it is.

Panel's extensions are already declared per page (``pn.extension()`` in app.py: without it, every imported
extension's scripts came with the page), and KaTeX is loaded by Panel's own lazy path, when a formula is first shown
(``widgets/stepper.py``).
"""

from __future__ import annotations

import functools

__all__ = ["GL_BUNDLE", "leave_out_unused_bundles", "uses_webgl"]

#: BokehJS's WebGL bundle, as Bokeh's resources name it
GL_BUNDLE = "bokeh-gl"


def uses_webgl(roots) -> bool:
    """Whether any figure under ``roots`` (Bokeh models) is drawn with WebGL.

    The roots' document knows its models already (no walk of the page); roots outside one are walked.
    """
    from bokeh.models import Plot

    roots = list(roots)
    document = roots[0].document if roots else None
    models = document.models if document is not None else {m for root in roots for m in root.references()}
    return any(isinstance(model, Plot) and model.output_backend == "webgl" for model in models)


def leave_out_unused_bundles() -> None:
    """A served page's scripts without BokehJS's WebGL bundle where no figure of the page uses it. Idempotent."""
    import panel.io.server as panel_server

    original = panel_server.bundle_resources
    if getattr(original, "without_unused_bundles", False):
        return

    def bundle_resources(roots, resources, *args, **kwargs):
        if resources is not None and GL_BUNDLE in resources.components and not uses_webgl(roots or ()):
            resources = resources.clone(components=[c for c in resources.components if c != GL_BUNDLE])
        return original(roots, resources, *args, **kwargs)

    bundle_resources.without_unused_bundles = True
    panel_server.bundle_resources = functools.update_wrapper(bundle_resources, original)
