"""A marked text: a ``str`` that reads as its English message and remembers it, for a page to translate.

Standard library only, so that modules which must stay free of Panel, NumPy and Babel (``course/questions/``)
can mark their texts for the catalogs too; :mod:`session.i18n` translates them.
"""

from __future__ import annotations


class Text(str):
    """A message and its arguments, which reads as the English text until a page translates it.

    ``Translator.__call__`` renders it in the page's language; arguments may be Texts themselves, or lists
    of them (joined with spaces).
    """

    __slots__ = ("msgid", "plural", "n", "args")

    def __new__(cls, msgid: str, _plural: str | None = None, _n: int | None = None, **args):
        english = _plural if _plural is not None and _n != 1 else msgid
        self = super().__new__(cls, _format(english, args, _plain))
        self.msgid, self.plural, self.n, self.args = msgid, _plural, _n, args
        return self


def N_(msgid: str, **args) -> Text:  # noqa: N802 (gettext's own name for a marked, not yet translated text)
    """Mark ``msgid`` for the catalogs; translated where a page shows it."""
    return Text(msgid, **args)


def ngettext(singular: str, plural: str, n: int, **args) -> Text:
    """Mark a message with plural forms (the language's own rules choose the form for ``n``)."""
    return Text(singular, plural, n, n=n, **args)


def _format(template: str, args: dict, render) -> str:
    return template.format(**{k: render(v) for k, v in args.items()}) if args else template


def _plain(value) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(_plain(v) for v in value)
    return str(value)
