"""Every change this app makes to Bokeh's, Panel's and param's own code, one module per upstream thing it changes,
each checked against the upstream code it was written for before it is applied.

Each module's docstring says what it changes, why, the upstream issue about it and the versions it was written for;
its ``PATCH`` (:class:`~server.patches.fit.Patch`) names every upstream object it replaces, wraps or relies on with
that object's fingerprint (a hash of its source) for the versions pinned in requirements.txt. :func:`install` applies
each patch whose objects are all still the ones it was written for, and leaves out each one that no longer fits with
one log line naming it and what moved: the library's own code then runs, as it would without this app's change (each
patch speeds something up or guards against what no page sends; none is needed for a page to work). A patch used
where its code runs rather than installed (a subclass, a context manager, a read of a private attribute) is checked
the same way, at start, and falls back to the library's own behaviour likewise (the page's tabs, ``panel_tabs``, to
Panel's own ``Tabs``).

``python -m server --check-patches`` lists every patch, its upstream objects, their expected and found fingerprints
and OK / CHANGED / MISSING, and exits 0 only if all fit (:func:`main`); ``tests/test_patches.py`` runs it in the unit
stage. ``python -m server`` and ``python app.py`` install the patches as the server starts (``server/serve.py``); a
bare ``panel serve app.py`` when it first runs app.py, for its first page (app.py calls :func:`install` when it is
served). Each is idempotent, and each is the process's, never a session's.

Not patches, and so not here: bounded log records (``server/logs.py``: ``logging``'s own record factory and filters),
TCP_NODELAY (``server/transport.py``: Tornado's ``set_nodelay``), Panel's bundle once in a notebook
(``server/notebook.py``: ipykernel's publisher hook), and what needs the server's own settings (gzip, the link limit,
the routes of a room's live channel and of KaTeX's fonts: ``server/routes.py``, which only ``python -m server`` and
``python app.py`` run). The page's changes to BokehJS are in ``link/browser.js``, which checks the names it patches
as the page loads and says in the browser's console which it did not find.
"""

from __future__ import annotations

import importlib
import sys

from server.patches.fit import CHANGED, MISSING, OK, Found, Patch

__all__ = ["CHANGED", "MISSING", "MODULES", "OK", "Found", "Patch", "all_patches", "check", "install",
           "keep_stable_defaults", "main"]

#: Every patch's module (``server.patches.<name>``), in the order :func:`install` applies them.
MODULES = (
    "bokeh_property_descriptor",  # Bokeh's stable property defaults, once per model class
    "bokeh_themed_values",  # a model's theme overrides read without an exception
    "bokeh_has_props",  # serialising reads only what it sends
    "bokeh_serializer",  # a patch's references made lazily
    "bokeh_session_connections",  # (read) a session's websockets
    "bokeh_deserializer",  # (subclass) a page's events read before any is applied
    "bokeh_apply_patch",  # a page's patch resolves its models in the document, no table of them all
    "panel_ws_handler",  # each page's websocket served by the guard
    "bokeh_session_executor",  # a session's work on the event loop
    "bokeh_model_walks",  # (context manager) a document's models walked once
    "panel_syncable_events",  # a page's events held and paced
    "panel_link_callbacks",  # no walk for links while none is registered
    "panel_stylesheets",  # a model's stylesheet files: the page's own sheets from the start
    "panel_init_params",  # a component's synced parameters listed once per model
    "panel_busy_events",  # a page's event marks the process busy only where that is shown
    "panel_pane_layout",  # a pane's own Row made when first asked for
    "panel_add_to_doc",  # a served page's root added without a walk for other documents' models
    "panel_discrete_slider",  # (subclass) a discrete slider with no Panel link
    "panel_hold_lock",  # (read) whether Panel is releasing a hold
    "panel_tabs",  # (checked only) the page's tabs over Panel's
    "panel_bokeh_pane",  # (subclass) the app's own Bokeh models placed without a walk
    "bokeh_create_session",  # page builds at the build gate
    "panel_on_load",  # a loaded page's onload work charged to the gate
    "object_inits",  # each page's objects noted, to take it apart once closed
    "bokeh_cleanup_sessions",  # closed pages discarded one per turn
    "panel_garbage_collect",  # Panel's full pass left to the round
    "panel_liveness",  # the health check builds a page sparingly
    "panel_bundle_resources",  # no WebGL bundle for a page that draws none
)

#: The patches that make a page's Bokeh models and Panel objects cheaper to build and serialise, and change nothing
#: they read or send: app.py applies them where it is not served too (tests, benchmarks), outside a notebook.
STABLE_DEFAULTS = ("bokeh_property_descriptor", "bokeh_themed_values", "bokeh_has_props", "bokeh_serializer",
                   "panel_stylesheets", "panel_init_params", "panel_pane_layout")


def all_patches() -> list[Patch]:
    """Every patch, in :data:`MODULES`' order (importing their modules imports Bokeh and Panel)."""
    return [importlib.import_module(f"{__name__}.{name}").PATCH for name in MODULES]


def install(names: tuple[str, ...] | None = None) -> list[str]:
    """Apply every patch (or those of ``names``) that fits the installed libraries, and say in the log which does not
    (one line each, once per process); returns the names of those in force. A second call changes nothing."""
    from server.logs import install_log_redaction

    install_log_redaction()  # first: every record the rest may make is bounded (not a patch: logging's own hooks)
    return [patch.name for patch in all_patches() if (names is None or patch.name in names) and patch.install()]


def keep_stable_defaults() -> list[str]:
    """Apply :data:`STABLE_DEFAULTS` only (where they fit)."""
    return [patch.name for patch in all_patches() if patch.name in STABLE_DEFAULTS and patch.install()]


def check(patches: list[Patch] | None = None) -> list[Found]:
    """Every upstream object of each of ``patches`` (default: all) looked up and fingerprinted now."""
    return [found for patch in (all_patches() if patches is None else patches) for found in patch.check()]


def report(results: list[Found]) -> str:
    """``results`` as a table: patch, upstream object, expected and found fingerprints, status; then one line each
    for the patches that do not fit, with what they change and the versions they were written for."""
    rows = [("patch", "upstream object", "expected", "found", "status")]
    rows += [(r.patch.name, r.target, r.expected, r.found or "-", r.status) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
             for row in rows]
    misfits = {r.patch.name: r.patch for r in results if r.status != OK}
    for name, patch in misfits.items():
        lines.append(f"server.patches.{name} does not fit: {patch.changes}; written for {patch.written_for} "
                     f"(upstream: {patch.upstream}); it is left out and the library's own code runs")
    patches = {r.patch.name for r in results}
    lines.append(f"{len(patches) - len(misfits)} of {len(patches)} patches fit ({_versions()})")
    return "\n".join(lines)


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("bokeh", "panel", "param", "tornado"))


def main() -> int:
    """``python -m server --check-patches``: print :func:`report` of every patch; 0 if all fit, else 1."""
    results = check()
    print(report(results))
    sys.stdout.flush()
    return 0 if all(r.status == OK for r in results) else 1
