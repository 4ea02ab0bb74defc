"""Imports run one way, so a file's folder says what it may depend on.

core ← course ← session ← services ← link ← widgets ← app.py: each imports only what is below it (and itself).
``services/``, the process's services a page uses (rooms, polls, the queues, the pacing, the sessions' sockets),
sits below the views; ``server/``, what serves the pages (transport, routes, patches, start-up), sits beside the
views, imports only ``core``, ``course`` and ``services``, and only app.py imports it: no view (``link``,
``widgets``) imports ``server/``, and nothing below the views does. ``course/`` is the standard library only,
``core/`` NumPy and the standard library, ``session/`` never Panel or Bokeh (its one state is a
``param.Parameterized``). ``testing/`` may import anything, and nothing of the app imports it; ``tests/`` never
import ``bench/``. Every ``import`` counts, also one inside a function.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The app's own packages, and app.py ("app").
OWN = ("core", "course", "session", "services", "link", "widgets", "server", "testing", "tests", "bench", "app")
#: Which of the app's own packages each may import (itself included).
MAY_IMPORT = {
    "core": {"core"},
    "course": {"course"},
    "session": {"core", "course", "session"},
    "services": {"core", "course", "session", "services"},
    "link": {"core", "course", "session", "services", "link"},
    "widgets": {"core", "course", "session", "services", "link", "widgets"},
    "server": {"core", "course", "services", "server"},
    "app": {"core", "course", "session", "services", "link", "widgets", "server"},
    "testing": set(OWN),
    "tests": set(OWN) - {"bench"},
}
#: Which libraries beyond the standard library each may import; None: any.
LIBRARIES = {"core": {"numpy"}, "course": set()}
#: Never imported by a page's model.
NOT_IN_SESSION = {"panel", "bokeh"}
#: The imports the rules above still meet, each for a reason, and no others. Four views use what the process does to
#: Panel's and Bokeh's code or its websocket guard, which live in server/ with the patches and the guard, checked at
#: start: the browser bridge the guard's refusal of a page (link/browser.py: refuse_page), one_message the walk of a
#: document's models and Panel's hold lock (link/updates.py), the slider and the Bokeh pane Panel's own with their
#: patches (widgets/base.py: discrete_slider, bokeh_pane), and the tabs their later turn of the loop (widgets/tabs.py:
#: later_turn); and the sessions' service reads a session's connections through the patch that checks Bokeh's private
#: names (services/sessions.py: session_connections). Four tests drive a server with bench/'s clients (a delaying proxy,
#: nginx in front, a poll's and a room's presenter), which belong in testing/, what tests and benchmarks share.
KNOWN = {("link/browser.py", "server"), ("link/updates.py", "server"),
         ("widgets/tabs.py", "server"), ("widgets/base.py", "server"), ("services/sessions.py", "server"),
         ("tests/test_bench_proxy.py", "bench"), ("tests/ui/test_nginx.py", "bench"),
         ("tests/test_room_abuse.py", "bench"), ("tests/test_hostile_traffic.py", "bench")}


def imports(path: Path, package: str) -> set[str]:
    """The top-level names of every module ``path`` imports, anywhere in it (a relative import is ``package``'s)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(package if node.level else node.module.split(".")[0])
    return names


def files(package: str, root: Path = ROOT) -> list[Path]:
    return [root / "app.py"] if package == "app" else sorted((root / package).rglob("*.py"))


def violations(package: str, root: Path = ROOT) -> list[str]:
    """``file -> module`` for each import of ``package``'s files (under ``root``) that the rules above do not allow."""
    found = []
    for path in files(package, root):
        name = path.relative_to(root).as_posix()
        for top in sorted(imports(path, package)):
            if top in OWN:
                allowed = top in MAY_IMPORT[package] or (name, top) in KNOWN
            elif top in sys.stdlib_module_names or top == "__future__":
                allowed = True
            elif package in LIBRARIES:
                allowed = top in LIBRARIES[package]
            else:
                allowed = not (package == "session" and top in NOT_IN_SESSION)
            if not allowed:
                found.append(f"{name} -> {top}")
    return found


@pytest.mark.parametrize("package", list(MAY_IMPORT))
def test_imports_run_one_way(package):
    assert files(package), f"no files in {package}"
    assert violations(package) == []


def test_the_rules_see_an_import_inside_a_function(tmp_path):
    (tmp_path / "session").mkdir()
    (tmp_path / "session" / "late.py").write_text(
        "from . import state\n\ndef late():\n    import panel\n    from widgets import base\n    return panel, base\n")
    assert violations("session", tmp_path) == ["session/late.py -> panel", "session/late.py -> widgets"]


def test_a_view_that_imports_the_server_or_a_link_that_imports_a_view_is_found(tmp_path):
    for folder, text in (("widgets", "from server import rooms\n"), ("link", "from widgets.matrix import ink\n"),
                         ("services", "from link import row\nfrom server.transport import later_turn\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "late.py").write_text(text)
    assert violations("widgets", tmp_path) == ["widgets/late.py -> server"]
    assert violations("link", tmp_path) == ["link/late.py -> widgets"]
    assert violations("services", tmp_path) == ["services/late.py -> link", "services/late.py -> server"]
