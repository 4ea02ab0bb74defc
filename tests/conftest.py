"""What kind of test each one is, by where it lives, and how the tests share workers when run in parallel.

``scripts/test`` runs the suite in stages: the unit tests (``-m "not server and not browser"``) first, the
server and browser tests after them, on several workers at once (pytest-xdist): a module's tests all run on one
worker (``--dist loadscope``, :func:`pytest_xdist_make_scheduler`), so a server or kernel its module-scoped fixture
starts is started once, except the modules in :data:`ONE_BY_ONE`, whose tests are handed out one at a time, last,
to whichever worker is free.

- ``browser``: everything under ``tests/ui/`` (a real page in Chromium, against a real server).
- ``server``: a test that starts a server or another long-lived process (an app process, an in-process
  Bokeh or Tornado server on a port, a Jupyter kernel): the modules in :data:`SERVER_MODULES`, and single
  tests elsewhere marked ``@pytest.mark.server`` where they are.

Each worker starts the session's own served app once (``tests/ui/conftest.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
BROWSER_DIR = TESTS / "ui"
SERVER_MODULES = frozenset({
    "test_bare_panel_serve.py",
    "test_class_leaving.py",
    "test_client_limits.py",
    "test_first_visit.py",
    "test_hostile_traffic.py",
    "test_housekeeping.py",
    "test_lab.py",
    "test_room_abuse.py",
    "test_session_cleanup.py",
    "test_transport.py",
})
#: Modules whose tests take longest, longest first: handed out before the rest, so that a worker does not take
#: one of them on when the others are nearly done (a parallel run lasts as long as its busiest worker).
SLOW_FIRST = (
    "ui/test_follow.py", "ui/test_reliability.py", "ui/test_heads.py", "ui/test_train.py", "ui/test_classroom_page.py",
    "ui/test_poll.py", "ui/test_check.py", "ui/test_room_secret.py", "ui/test_nginx.py", "ui/test_preview.py",
    "ui/test_languages.py", "ui/test_drag_channel.py", "test_housekeeping.py", "ui/test_explorer.py",
    "test_hostile_traffic.py", "ui/test_notebook.py", "test_lecture_hall.py", "ui/test_follow_across_processes.py",
)

#: Modules of many independent tests, each opening pages of its own on the worker's served app: handed out one
#: test at a time after the rest, so the workers finish together (one such module is a third of the browser stage).
#: Each with its longest tests' functions, longest first: they go out first, the rest after them in the order pytest
#: collected them, so that the last tests handed out are short ones (a worker takes a test on while it still has two
#: waiting: up to three tests at the end run on one worker while the other has none).
ONE_BY_ONE = {"ui/test_layout_screens.py": ("test_every_tab_fits_the_screen",
                                            "test_every_tab_fits_the_screen_in_each_language",
                                            "test_projection_labels_stay_clear",
                                            "test_presenting_keeps_the_plot_its_size_and_in_view_with_the_room_code")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # SLOW_FIRST in its order, then every module not named, then ONE_BY_ONE's (the rank of one not named is
    # len(SLOW_FIRST): counted before ONE_BY_ONE's are added, or they would share it and go out among the others)
    rest = len(SLOW_FIRST)
    rank = {TESTS / name: i for i, name in enumerate(SLOW_FIRST)}
    rank.update({TESTS / name: rest + 1 for name in ONE_BY_ONE})
    longest = {TESTS / name: functions for name, functions in ONE_BY_ONE.items()}
    for item in items:
        path = Path(item.path)
        if BROWSER_DIR in path.parents:
            item.add_marker(pytest.mark.browser)
        elif path.parent == TESTS and path.name in SERVER_MODULES:
            item.add_marker(pytest.mark.server)

    def order(item: pytest.Item) -> tuple[int, int]:
        path = Path(item.path)
        functions = longest.get(path, ())
        name = getattr(item, "originalname", item.name)
        return rank.get(path, rest), functions.index(name) if name in functions else len(functions)

    # a stable sort: within a module, and for every module not named, the order pytest collected them in
    items.sort(key=order)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadscope``: each module one unit of work, sent whole to one worker, but each test of
    :data:`ONE_BY_ONE`'s modules a unit of its own; units go out in the order the tests were sorted in.

    (``--dist loadgroup`` with an ``xdist_group`` mark per module did this until pytest 9.2, whose node ids xdist
    3.8 can no longer tag with the group: pytest-dev/pytest-xdist#1386. Every module's tests were then handed out
    one by one, and a module-scoped server started on both workers.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    one_by_one = {(TESTS / name).relative_to(config.rootpath).as_posix() for name in ONE_BY_ONE}

    class ModulesAndOneByOne(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module in one_by_one else module

    return ModulesAndOneByOne(config, log)
