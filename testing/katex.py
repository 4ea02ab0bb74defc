"""KaTeX run by Node, for formulas the page shows without loading KaTeX (``static/katex/recipe.html``).

The step-through's recipe, shown while the step-through is off, never changes: it is KaTeX's own HTML for
:data:`widgets.stepper.RECIPE_LATEX`, rendered here once with Panel's bundled KaTeX (the same script a page loads
for a formula with numbers) and kept in ``static/katex/``, so a first visit draws it without KaTeX's 280 kB
script. ``tests/test_formula.py`` renders it again and fails if the kept file differs (a changed formula, a new
KaTeX); ``python -m testing.katex`` writes it anew.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from widgets.stepper import RECIPE_HTML, RECIPE_LATEX
from widgets.style import KATEX_STYLESHEET

#: Panel's bundled KaTeX, beside its stylesheet
KATEX_SCRIPT = KATEX_STYLESHEET.with_name("katex.min.js")


def render(tex: str) -> str:
    """KaTeX's HTML for ``tex``, a ``$$…$$`` display formula, as Panel's LaTeX pane renders it (auto-render's
    display mode). Raises ``RuntimeError`` without Node, ``subprocess.CalledProcessError`` on a TeX error."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("Node is needed to run KaTeX")
    body = tex.strip().removeprefix("$$").removesuffix("$$")
    script = (f"const katex = require({json.dumps(str(KATEX_SCRIPT))});"
              f"process.stdout.write(katex.renderToString({json.dumps(body)}, "
              "{displayMode: true, throwOnError: true}))")
    return subprocess.run([node, "-e", script], check=True, capture_output=True, text=True).stdout


def main() -> None:
    RECIPE_HTML.write_text(render(RECIPE_LATEX))
    print(f"wrote {RECIPE_HTML}")


if __name__ == "__main__":
    main()
