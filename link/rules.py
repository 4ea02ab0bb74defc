"""The rules the page's drag script draws by and the views draw by, written once here: the server sends their
constants to the page in the drag's ``inputs`` row (``link/drag.py``), and ``tests/js/`` checks the script's mirror
of each rule against cases these functions write (``tests/golden_reference.py``).

The query plot's plane and its lines' widths (``widgets/query_plot.py``), the values' marker sizes
(``widgets/weights.py``), the matrix's decimals and the ink of its numbers (``widgets/matrix.py``, and the Train
tab's, ``link/train.js``), the readout's templates and the placeholder of a step not yet revealed
(``widgets/steps.py``).
"""

from __future__ import annotations

import functools
import json

from session.i18n import translator

#: Visible plane; drags beyond it are clamped to its edge so q never leaves the view.
PLANE = (-1.5, 2.5)
MAX_LINE_WIDTH = 14


def line_width(w):
    """The width (px) of the line from q to a key that takes weight ``w`` (a number or an array): 1 at 0,
    :data:`MAX_LINE_WIDTH` at 1 (the page's drag preview draws it the same: link/drag.js, lineWidth)."""
    return 1 + (MAX_LINE_WIDTH - 1) * w


#: Decimals of the matrix's numbers by mode: at two, a projector's 20 px digits fit a cell beside the query plot
#: on a 1024 px screen (the readout, the inspector and the export keep four).
CELL_DECIMALS = {"normal": 4, "projector": 2}
#: Cividis is dark below about this weight and light above: a cell's number is white below it, black above
#: (also the page's drag preview: link/drag.py sends it).
INK_THRESHOLD = 0.55


def ink(w) -> str:
    """The colour of a cell's number at weight ``w``: "white" on Cividis's dark end, "black" on its light one (the
    page's drag preview: link/drag.js, inkOn; the Train tab's cells: link/train.js)."""
    return "white" if w < INK_THRESHOLD else "black"


def cell_decimals(mode: str) -> int:
    """Decimals of the matrix's numbers in ``mode`` ("normal" or "projector"); KeyError for another."""
    return CELL_DECIMALS[mode]


#: A value's marker in the values' plane: its size (px) at weight 0 and at weight 1, linear between (also the
#: page's drag preview: link/drag.py sends it).
VALUE_SIZE = (8, 24)


def value_size(w):
    """A value's marker size (px) at weight ``w`` (a number or an array): :data:`VALUE_SIZE`, linear between (the
    page's drag preview: link/drag.js, valueSize)."""
    return VALUE_SIZE[0] + (VALUE_SIZE[1] - VALUE_SIZE[0]) * w


#: What a number of a step not yet revealed shows instead (step-through mode).
PLACEHOLDER = "?"


@functools.cache
def readout_words(lang: str) -> dict[str, str]:
    """The readout's templates in ``lang``: :meth:`widgets.steps.Readout.text` fills them, and so does the page's
    drag preview (link/drag.js's readoutText), so both write the same text."""
    tr = translator(lang)
    return {
        "query": tr._('Query of "{token}": q = {q}'),
        "dots": tr._("Dot products q·k: {list}"),
        "scores": tr._("Scores s = {scale}: {list}"),
        "scaled": tr._("q·k / {root}"),
        "unscaled": tr._("q·k (unscaled)"),
        "weights": tr._("Weights a = softmax(s): {list}"),
        "output": tr._("Output Σ aᵢvᵢ = {value}"),
        "masked": tr._("masked"),
        # the value plane's output label, before its vector: a plot's words, isolated (widgets/weights.py)
        "output_word": tr.in_plot(tr._("output")),
    }


@functools.cache
def readout_script_words(lang: str) -> str:
    """:func:`readout_words` and the number format, as the JSON the page's script reads (``drag-inputs``)."""
    return json.dumps({**readout_words(lang), **translator(lang).number_format()}, ensure_ascii=False)
