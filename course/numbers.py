"""How the page reads a number a learner typed: one rule for the editor's boxes, the page address and the Check
tab's answers.

- Unicode NFKC first: full-width forms are the same characters (``１．５`` is ``1.5``, ``７，８５`` is ``7,85``);
  ``\\d`` is a decimal digit of any script (Arabic-Indic ``٠١٢``), which Python reads as that digit.
- The minus sign (U+2212, as pasted from the course) is ``-``.
- The decimal mark is the page language's (CLDR, through Babel): a comma in French, Spanish and German, a point
  in English, Chinese and Arabic. The Arabic decimal separator ``٫`` (U+066B) is a decimal mark in every
  language: it means nothing else.
- The other mark is refused with a message naming the mark to use (``0.5`` on a French page: write ``0,5``),
  never misread: a French or German reader may mean 1000 by ``1.000``, an English one by ``1,000``.
- An exponent (``3e-2``) only where asked: coordinates take one, the Check tab's answers, judged by their
  decimal places, do not.

Standard library only, so the Check tab's grading (``course/questions/grading.py``) shares it.
"""

from __future__ import annotations

import re
import unicodedata

from course.text import N_

#: Characters of what a person typed that a message quotes back; longer text is cut with "…".
SHOWN_CHARS = 40
#: The Arabic decimal separator (U+066B); NFKC leaves it as it is.
ARABIC_DECIMAL = "\u066b"
#: A number with a point as its decimal mark, and an exponent: "−2", "1.5", ".5", "5.", "3e-2".
NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: The same without an exponent: what the Check tab takes.
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)")
_OTHER = {".": ",", ",": "."}


def shown(text) -> str:
    """``text`` as a message quotes it: ``repr``, cut to :data:`SHOWN_CHARS` characters."""
    text = str(text)
    return repr(text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…")


def read_number(text: str, decimal: str | None = ".", *, exponent: bool = True, max_chars: int | None = None) -> str:
    """The number in ``text`` as ASCII-marked text that ``float`` and ``Decimal`` read (``"0,5"`` -> ``"0.5"``).

    ``decimal``: the page's decimal mark, ``"."`` or ``","``; None takes either (a reader whose language is not
    known). ``exponent``: whether ``3e-2`` is a number; ``max_chars``: the longest text taken. Digits stay as
    typed (any script's). Raises ValueError whose argument is a message fragment for the learner (a
    :class:`~course.text.Text`, "… is not a number: …", to be set in a sentence): for empty text, the other decimal
    mark, anything else.

    >>> read_number("１，５", ","), read_number("0٫731"), read_number(" −.5 ", None)
    ('1.5', '0.731', '-.5')
    """
    t = unicodedata.normalize("NFKC", text).strip().replace("\u2212", "-")
    if not t:
        raise ValueError(N_("is empty: type a number"))
    pattern = NUMBER if exponent else PLAIN_NUMBER
    if max_chars is not None and len(t) > max_chars:
        pattern = re.compile("(?!)")  # nothing matches: refused below as any other text that is no number

    def ascii_marked(mark: str | None) -> str | None:
        marked = t.replace(ARABIC_DECIMAL, mark or ".")
        if mark is None:  # either mark, never both
            return ascii_marked(",") if "," in marked and "." not in marked else ascii_marked(".")
        # the other mark becomes a character no number has, so it is refused below, never misread
        candidate = marked.replace(_OTHER[mark], "_").replace(mark, ".")
        return candidate if pattern.fullmatch(candidate) else None

    found = ascii_marked(decimal)
    if found is not None:
        return found
    if exponent and t.lower().lstrip("+-") in ("nan", "inf", "infinity"):  # what float() reads, but no coordinate
        raise ValueError(N_("{text} is not a finite number", text=shown(text)))
    mark = decimal or "."
    if _OTHER[mark] in t and ascii_marked(_OTHER[mark]) is not None:  # a number, in the other language's way
        example = t.replace(ARABIC_DECIMAL, _OTHER[mark]).replace(_OTHER[mark], mark)
        if mark == ",":
            raise ValueError(N_("{text} has a decimal point: this page writes a decimal comma, as in {example}, and "
                                "no thousands separator", text=shown(text), example=example))
        raise ValueError(N_("{text} has a comma: this page writes a decimal point, as in {example}, and no thousands "
                            "separator", text=shown(text), example=example))
    if exponent:
        raise ValueError(N_("{text} is not a number: write it like {a}, {b} or {c}, without _, spaces or other marks "
                            "between digits", text=shown(text), a="1.5".replace(".", mark), b="-2", c="3e-2"))
    raise ValueError(N_("{text} is not a number: type digits with at most one decimal mark, such as {a} or {b}",
                        text=shown(text), a="0.5".replace(".", mark), b="-2"))
