"""KaTeX's fonts, served where Panel's bundled KaTeX stylesheet looks for them.

Panel ships KaTeX's script and stylesheet (``static/extensions/panel/bundled/katex/katex@<version>/dist/``)
without the ``fonts/`` folder that the stylesheet's ``@font-face`` rules point at
(``url(fonts/KaTeX_Main-Regular.woff2)``): every page with a formula asked for three fonts in three formats,
got 404 nine times, and drew its formulas in a system serif. The same KaTeX release's woff2 files (npm
``katex``, MIT licence in ``static/katex/LICENSE``) are kept in ``static/katex/fonts/`` and served at that very
path, so the stylesheet finds them; a browser that reads woff2 (every current one) then asks for no woff or ttf.
"""

from __future__ import annotations

import re

from tornado.web import StaticFileHandler

from services.katex_fonts import KATEX_FONTS, KATEX_FONTS_VERSION

#: Where Panel's katex.min.css finds its fonts, under the server's prefix (Bokeh adds it): only KaTeX's woff2
#: files, of the release the fonts come from.
ROUTE = (r"/static/extensions/panel/bundled/katex/katex@" + re.escape(KATEX_FONTS_VERSION)
         + r"/dist/fonts/(KaTeX_[A-Za-z0-9_-]+\.woff2)")


def font_patterns() -> list[tuple]:
    """The tornado route of KaTeX's fonts, for the server's ``extra_patterns`` (ahead of Bokeh's static ones)."""
    return [(ROUTE, StaticFileHandler, {"path": str(KATEX_FONTS)})]
