"""Only the scripts a page runs: BokehJS's WebGL bundle left out of a page that draws nothing with WebGL.

A served Panel page lists its scripts in ``panel.io.server.server_html_page_for_session``, through
``panel.io.resources.bundle_resources``: Panel leaves out BokehJS's tables and MathJax bundles where the page has no
table and no MathJax, but always sends ``bokeh-gl.min.js`` (274 kB, 78 kB in gzip), which only a figure with
``output_backend="webgl"`` runs (Bokeh's own standalone pages leave it out likewise: ``bokeh.embed.bundle._use_gl``).
No figure of this app asks for WebGL (``tests/test_first_visit.py`` checks every tab's), so the page is sent without
it, unless a document's figure at load asks for it (``server/patches/panel_bundle_resources.py``, which names the
upstream issue). The notebook's output (``panel.io.notebook``) is left as it is.

Panel's extensions are already declared per page (``pn.extension()`` in app.py: without it, every imported
extension's scripts came with the page), and KaTeX is loaded by Panel's own lazy path, when a formula is first shown
(``widgets/stepper.py``).
"""

from __future__ import annotations

__all__ = ["GL_BUNDLE", "uses_webgl"]

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
