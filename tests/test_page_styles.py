"""The app's own stylesheets and scripts leave BokehJS's canvas to the models' values."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where the app's CSS is written: its stylesheets, and the Python and JavaScript that set styles.
SOURCES = [p for folder in ("static", "widgets", "link", "session", "services", "server")
           for p in (ROOT / folder).rglob("*") if p.suffix in {".css", ".py", ".js"} and "katex" not in p.parts]
SOURCES += [ROOT / "app.py"]


def test_no_stylesheet_sets_a_bokeh_visual_variable():
    """link/browser.js has BokehJS paint the app's documents from the models' values without asking the CSS
    cascade for a `--bk-*` variable (bokeh/bokeh#15286): one set here would be ignored on the page."""
    assert len(SOURCES) > 20
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in SOURCES
             for m in re.finditer(r"--bk-[\w-]+", p.read_text(encoding="utf-8"))]
    assert not found, found
