"""Where KaTeX's fonts are kept, which Panel's bundled KaTeX lacks: the server serves them
(``server/katex_fonts.py``) and a notebook inlines them (``widgets/style.py``)."""

from __future__ import annotations

from pathlib import Path

#: KaTeX's own fonts (woff2, from npm ``katex``; its MIT licence beside them), which Panel's bundle lacks: the
#: server serves them where katex.min.css looks, a notebook inlines them (widgets/style.py
#: ``katex_fonts_inline_css``).
KATEX_FONTS = Path(__file__).resolve().parents[1] / "static" / "katex" / "fonts"
#: The KaTeX release the fonts come from: Panel's bundled one (tests/test_deploy.py checks they agree).
KATEX_FONTS_VERSION = "0.16.22"
