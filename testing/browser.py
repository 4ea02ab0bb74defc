"""Which Chromium the tests and the benchmarks drive (Playwright never downloads one here)."""

from __future__ import annotations

import os
import shutil

#: The executables looked for on the PATH, in order, when ``$CHROMIUM`` is not set. Debian's
#: ``chromium-headless-shell`` is Chromium's own engine without the browser around it (what Playwright itself
#: drives headless): a page costs it about a quarter less CPU to open, and the browser tests open hundreds.
HEADLESS_FIRST = ("chromium-headless-shell", "chromium", "chromium-browser")
#: A benchmark of what a learner's browser does prefers the full browser, when there is one.
BROWSER_FIRST = ("chromium", "chromium-browser", "chromium-headless-shell")


def chromium(names: tuple[str, ...] = HEADLESS_FIRST) -> str | None:
    """``$CHROMIUM``, or the first of ``names`` on the PATH; None if there is none."""
    return os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, names)), None)
