"""The page's words and numbers in the learner's language: gettext catalogs read with Babel, once per process.

Texts are marked where they are written, in English (the catalogs' source language):

- ``tr._("Reset example")`` translates at once, for a view that knows its page's :class:`Translator`;
- ``N_("{field} refused: {why}.", field=..., why=...)`` is a :class:`Text`, a ``str`` that reads as the
  English text and remembers its message, so a state can hold it (``AttentionState.message``) and each
  page shows it in its own language, again after a switch; ``ngettext(...)`` is the same with plural forms.

Numbers: :meth:`Translator.num` writes a decimal mark as the language does (CLDR's, through Babel), and a vector's
separator never clashes with it: ``(0,5 ; 1)`` in French. Exports and the page address stay language-neutral.

The catalogs are ``locale/<lang>/LC_MESSAGES/messages.po``, compiled in memory the first time a page asks
for a language (no ``.mo`` file to build or to forget), then shared read-only by every page of the process.
``EXPLORER_PSEUDO_LOCALE=1`` adds the pseudo-language ``xx``: every message wrapped in ⟦…⟧ and accented, so a
test can find any text that does not come from a catalog.
"""

from __future__ import annotations

import functools
import gettext
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path

from babel import Locale, negotiate_locale
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal, get_decimal_symbol

from core.report import fmt, fmt_short
from course.text import N_, Text, _format, ngettext  # noqa: F401 (marked texts, re-exported)

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
#: The page's languages, by code, each named as it names itself (the menu's labels). English is the source.
LANGUAGES = {"en": "English", "fr": "Français", "es": "Español", "de": "Deutsch", "zh": "简体中文", "ar": "العربية"}
DEFAULT_LANGUAGE = "en"
PSEUDO = "xx"
#: Babel's locale for each code: number symbols, plural rules and text direction come from its CLDR data.
_BABEL_LOCALE = {"zh": "zh_Hans", PSEUDO: "fr"}
#: A vector's separator and a list's where the defaults do not fit: French sets a no-break space before ";" (a
#: wrapped line never starts with it), and Arabic separates the entries of a sentence's list with its own comma,
#: while a vector keeps mathematics' comma and a no-break space: a vector broken across two lines of right-to-left
#: text came out with its closing parenthesis mirrored, "(1.000". Chinese separates a sentence's list with its
#: full-width comma (no space), a vector keeping mathematics' comma: "两个头：前一个词元，自身".
_SEPARATORS = {"fr": ("\u00a0; ", "\u00a0; "), "ar": (",\u00a0", "، "), "zh": (", ", "，")}
#: Unicode's left-to-right isolate: a vector or a formula's text inside right-to-left text keeps its order.
LRI, PDI = "\u2066", "\u2069"
#: Unicode's first-strong isolate: a name whose direction is its own first letter's (an English or an Arabic token).
FSI = "\u2068"
#: Letters written right to left (Hebrew, Arabic, Syriac, Thaana, N'Ko and the rest to U+08FF, their presentation
#: forms): a name with one is isolated in a page of any language (link/drag.js has the same ranges).
RTL_LETTER = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


def pseudo_enabled() -> bool:
    """Whether ``?lang=xx`` is offered (tests, or a translator checking the page); never on by default."""
    return os.environ.get("EXPLORER_PSEUDO_LOCALE") == "1"


def languages() -> tuple[str, ...]:
    """The codes a page may use: :data:`LANGUAGES`, and the pseudo-language when enabled."""
    return (*LANGUAGES, PSEUDO) if pseudo_enabled() else tuple(LANGUAGES)


def menu_languages() -> dict[str, str]:
    """The language menu's entries, code -> name; the pseudo-language's name is its code."""
    return {**LANGUAGES, **({PSEUDO: PSEUDO} if pseudo_enabled() else {})}


def read_catalog(lang: str):
    """``locale/<lang>/LC_MESSAGES/messages.po`` as a Babel catalog."""
    with open(LOCALE_DIR / lang / "LC_MESSAGES" / "messages.po", "rb") as f:
        return read_po(f, locale=_BABEL_LOCALE.get(lang, lang))


@functools.cache
def _translations(lang: str) -> gettext.NullTranslations:
    if lang in (DEFAULT_LANGUAGE, PSEUDO):
        return gettext.NullTranslations()
    buffer = io.BytesIO()
    # fuzzy entries are a translator's guesses: gettext leaves them out, and so do we
    write_mo(buffer, read_catalog(lang), use_fuzzy=False)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


_ACCENTS = str.maketrans("aeiouycnAEIOUYCN", "áéíóúýçñÁÉÍÓÚÝÇÑ")
#: What pseudo-translation leaves as it is: placeholders, markup and entities.
_UNTOUCHED = re.compile(r"(\{[^{}]*\}|<[^>]*>|&[#\w]+;)")


def pseudo(text: str) -> str:
    """``⟦Ráñdóm⟧``: the text accented and marked, its placeholders and markup untouched."""
    parts = _UNTOUCHED.split(text)
    return "⟦" + "".join(p if i % 2 else p.translate(_ACCENTS) for i, p in enumerate(parts)) + "⟧"


class Translator:
    """One language's messages and number format; one per language and process, shared by its pages."""

    def __init__(self, lang: str):
        self.lang = lang
        self.locale = Locale.parse(_BABEL_LOCALE.get(lang, lang))
        self.rtl = self.locale.text_direction == "rtl" and lang != PSEUDO
        self.decimal = get_decimal_symbol(self.locale)
        default = ("; ", "; ") if self.decimal == "," else (", ", ", ")
        #: between a vector's coordinates; between the entries of a list of numbers (the readout's per token)
        self.vector_sep, self.list_sep = _SEPARATORS.get(lang, default)
        self._gettext = _translations(lang)
        self._wrap = pseudo if lang == PSEUDO else None

    # -- words ---------------------------------------------------------------------------------------------
    def _(self, msgid: str, **args) -> str:
        """``msgid`` in this language, its ``{placeholders}`` filled with ``args``."""
        return _format(self._message(msgid), args, self)

    def ngettext(self, singular: str, plural: str, n: int, **args) -> str:
        text = self._gettext.ngettext(singular, plural, n)
        return _format(self._wrap(text) if self._wrap else text, {"n": n, **args}, self)

    def _message(self, msgid: str) -> str:
        text = self._gettext.gettext(msgid)
        return self._wrap(text) if self._wrap else text

    def __call__(self, value) -> str:
        """A :class:`Text` (or a list of them, joined by spaces) in this language; any other text as it is."""
        if isinstance(value, Text):
            if value.plural is not None:
                args = {k: v for k, v in value.args.items() if k != "n"}
                return self.ngettext(value.msgid, value.plural, value.n, **args)
            return self._(value.msgid, **value.args)
        if isinstance(value, (list, tuple)):
            return " ".join(self(v) for v in value)
        return str(value)

    def options(self, names: Iterable[str]) -> dict[str, str]:
        """A selector's options: each name shown in this language, the value kept as it is."""
        return {self(N_(name)) if not isinstance(name, Text) else self(name): str(name) for name in names}

    # -- numbers -------------------------------------------------------------------------------------------
    def num(self, x: float, decimals: int = 4) -> str:
        """Fixed-point ``x`` with this language's decimal mark: 0,5000 in French."""
        return self._mark(fmt(x, decimals))

    def short(self, x: float, decimals: int = 4) -> str:
        """``x`` without trailing zeros (1, 0,5, 0,7071), as typed text is shown back."""
        return self._mark(fmt_short(x, decimals))

    def count(self, k: int) -> str:
        """A whole number with the language's digit grouping (CLDR's): 10,000; 10 000 in French; 10.000 in German."""
        return format_decimal(int(k), locale=self.locale)

    def vec(self, v, decimals: int = 3, isolate: bool = True, short: bool = False) -> str:
        """``(0,500 ; 1,000)``; isolated left to right inside right-to-left text (not in a plot's own text,
        ``isolate=False``, which is drawn left to right anyway). ``short``: without trailing zeros."""
        write = self.short if short else self.num
        text = "(" + self.vector_sep.join(write(float(c), decimals) for c in v) + ")"
        return LRI + text + PDI if self.rtl and isolate else text

    def ltr(self, text: str) -> str:
        """``text`` (a number as written) isolated left to right where the page is right to left: in an Arabic
        sentence "-1.5000" otherwise reads "1.5000-" (Unicode's bidi algorithm takes a hyphen-minus before digits
        for a neutral, which the right-to-left text around it claims)."""
        return LRI + text + PDI if self.rtl else text

    def name(self, text: str) -> str:
        """A name (a token: any language) inside this language's sentence: isolated, with its own first strong
        direction, where the page is right to left or the name has a right-to-left letter, so a list of "name number"
        entries reads in the page's order (an English list drew "0.0000 سلام" for "سلام 0.0000")."""
        return FSI + text + PDI if self.rtl or RTL_LETTER.search(text) else text

    @staticmethod
    def name_in_plot(text: str) -> str:
        """A name (a token: any language) in a plot's label, before its vector: isolated with its own first strong
        direction in every page language, since a plot is drawn left to right in each. Without the isolate, Unicode's
        bidi algorithm takes the digits after an Arabic name for Arabic numbers, and the vector after it reads
        backwards: "v سلام (0 ,10)"."""
        return FSI + text + PDI

    def in_plot(self, text: str) -> str:
        """A plot's own words (a title, an axis label): a plot is drawn left to right, so right-to-left words are
        isolated as such (otherwise their parts come out in the wrong order)."""
        return "\u2067" + text + PDI if self.rtl else text

    def entry(self, x, decimals: int = 4) -> str:
        """A score, a weight or a value: "masked" for a masked score's -inf, a vector as (a ; b); a number isolated
        left to right where the page is right to left, as a vector is (:meth:`ltr`)."""
        if hasattr(x, "__len__") and len(x) != 1:
            return self.vec(x, decimals)
        x = float(x[0] if hasattr(x, "__len__") else x)
        return self._("masked") if x == float("-inf") else self.ltr(self.num(x, decimals))

    @staticmethod
    def minus_sign(text: str) -> str:
        """``text`` (numbers as written) with the minus sign, U+2212, for each hyphen-minus: how the page's tables and
        sentences write a negative number, as its plots and formulas do (the readout keeps "-", the character its
        in-page mirror writes, link/shared.js).

        >>> Translator.minus_sign("(-0.7071, 1)")
        '(−0.7071, 1)'
        """
        return text.replace("-", "\u2212")

    def _mark(self, text: str) -> str:
        return text.replace(".", self.decimal) if self.decimal != "." else text

    def mark(self, number: str) -> str:
        """A number already written with a point (``"0.731"``, a question's answer) with this language's mark."""
        return self._mark(number)

    def number_format(self) -> dict:
        """What the page's own scripts need to write numbers the same way (link/drag.js)."""
        return {"decimal": self.decimal, "vector_sep": self.vector_sep, "list_sep": self.list_sep,
                "isolate": self.rtl}


@functools.cache
def translator(lang: str) -> Translator:
    """The shared :class:`Translator` of ``lang`` (English for a code the page does not offer)."""
    return Translator(lang if lang in languages() else DEFAULT_LANGUAGE)


def from_accept_language(header: str | None) -> str:
    """The best of :data:`LANGUAGES` for an ``Accept-Language`` header, English if none fits.

    >>> from_accept_language("de-CH,de;q=0.9,en;q=0.8")
    'de'
    >>> from_accept_language("zh-TW, ar;q=0.5")
    'zh'
    >>> from_accept_language("FR, EN-US;q=0.5")
    'fr'
    """
    wanted = []
    for i, part in enumerate((header or "").split(",")[:20]):  # a header is the browser's, but any client sends one
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        # tags are case-insensitive (BCP 47) and Babel hands back the tag as the client wrote it: "FR" must not
        # reach a lookup keyed by our lower-case codes
        tag = tag.strip().replace("-", "_").lower()
        if tag and tag != "*" and q > 0:
            wanted.append((-q, i, tag))
    preferred = [tag for _, _, tag in sorted(wanted)]
    # a regional or script variant means its language (zh_TW: the Chinese we have is Simplified)
    preferred = [p for tag in preferred for p in (tag, tag.split("_")[0])]
    return negotiate_locale(preferred, list(LANGUAGES), sep="_") or DEFAULT_LANGUAGE
