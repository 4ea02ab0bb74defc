"""Every change this app makes to Bokeh's and Panel's own code, in one place, installed by every way of serving it.

``python -m server`` and ``python app.py`` install them as the server starts (server/serve.py); a bare ``panel
serve app.py`` installs them when it first runs app.py, for its first page (app.py calls :func:`install` at
import when it is served). Each is idempotent, and each is the process's, never a session's:

- :func:`server.logs.install_log_redaction`: every log record bounded, whichever logger makes it;
- :func:`server.bokeh_defaults.install`: Bokeh's stable property defaults kept once per process;
- :func:`server.transport.install_websocket_guard`: each page's websocket served by the guard, which closes a
  connection at its first message no page sends;
- :func:`server.transport.run_sessions_on_the_loop`: a session's work run on the event loop, not in threads;
- :func:`server.transport.hold_page_events`: each of a page's events processed inside a hold of its document
  (a change a view writes into a Bokeh model is otherwise lost, with a traceback);
- :func:`server.transport.pace_page_events`: each of a page's events through its session's pacing;
- :func:`server.transport.skip_link_walks_without_links`: no walk of a page for Panel links after a change of a
  layout while no link is registered (this app makes none);
- :func:`server.build_gate.pace_page_builds`: page builds take their share of the loop, not all of it, and
  :func:`server.build_gate.charge_page_loads`: a loaded page's ``onload`` work counts towards that share;
- :func:`server.teardown.note_page_objects`: the Bokeh models and param objects each page makes are noted, and
  :func:`server.housekeeping.sweep_sessions_paced`: Bokeh discards closed pages' sessions one per turn, each page
  taken apart as it goes, so its memory comes back without a full pass of the collector;
- :func:`server.liveness.build_pages_for_health_checks_sparingly`: the health check builds a page at most once in a
  while, at the build gate, however many ask.

- :func:`server.page_scripts.leave_out_unused_bundles`: a page's scripts without BokehJS's WebGL bundle, which no
  figure of the page runs.

What needs the server's own settings (gzip, the link limit, the routes of a room's live channel and of KaTeX's
fonts) is added where the server is made: :func:`server.routes.add_routes`, which only ``python -m server`` and
``python app.py`` run.
"""

from __future__ import annotations

from server.bokeh_defaults import install as keep_stable_defaults
from server.build_gate import charge_page_loads, pace_page_builds
from server.housekeeping import sweep_sessions_paced
from server.liveness import build_pages_for_health_checks_sparingly
from server.logs import install_log_redaction
from server.page_scripts import leave_out_unused_bundles
from server.teardown import note_page_objects
from server.transport import (
    hold_page_events,
    install_websocket_guard,
    pace_page_events,
    run_sessions_on_the_loop,
    skip_link_walks_without_links,
)

__all__ = ["install", "keep_stable_defaults"]


def install() -> None:
    """Install every patch (above) in this process; a second call changes nothing."""
    install_log_redaction()  # first: every record the rest may make is bounded
    keep_stable_defaults()
    install_websocket_guard()
    run_sessions_on_the_loop()
    hold_page_events()
    pace_page_events()
    skip_link_walks_without_links()
    pace_page_builds()
    charge_page_loads()
    note_page_objects()
    sweep_sessions_paced()
    build_pages_for_health_checks_sparingly()

    leave_out_unused_bundles()
