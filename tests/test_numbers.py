"""One number rule for what a learner types, in the editor's boxes, the page address and the Check tab's answers
(``course/numbers.py``), in every language of the page.

Expected values are the typed numbers themselves; expected messages are the rule's own words: the language's
decimal mark, named, with the number written that way.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from course.questions import BY_ID, Progress, parse_number
from session.address import apply_address
from session.i18n import translator
from session.state import AttentionState, parse_coordinate

SOFTMAX = BY_ID["two-key-softmax"]  # 0.731, to 3 places
OUTPUT = BY_ID["weighted-output"]  # 7.85, to 2 places


def editor(lang: str, text: str):
    """What the Edit tab does with ``text`` typed as k_I[1] on a page in ``lang``: (the key's value, the message)."""
    s = AttentionState(lang=lang)
    s.set_key(0, 0, text)
    return float(s.keys[0, 0]), s.tr(s.message)


def check(lang: str, question, text: str):
    """What the Check tab does with ``text`` for ``question`` on a page in ``lang``: (status, tries, message)."""
    tr = translator(lang)
    p, outcome = Progress().answer(question, text, tr.decimal)
    return outcome.status, p.of(question.id).tries, tr(outcome.message)


@pytest.mark.parametrize(("lang", "point", "comma"), [
    ("fr", "'0.5' contient un point décimal", "comme dans 0,5"),
    ("es", "'0.5' tiene un punto decimal", "como en 0,5"),
    ("de", "'0.5' enthält einen Dezimalpunkt", "wie in 0,5"),
])
def test_a_decimal_point_on_a_comma_page_is_refused_with_the_comma_named_everywhere(lang, point, comma):
    value, message = editor(lang, "0.5")
    assert value == 1.0 and point in message and comma in message  # unchanged, and how to write it
    assert editor(lang, "0,5") == (0.5, "")
    status, tries, message = check(lang, OUTPUT, "7.85")
    assert status == "refused" and tries == 0 and comma.replace("0,5", "7,85") in message
    assert check(lang, OUTPUT, "7,85")[:2] == ("right", 1)


def test_a_comma_on_a_point_page_is_refused_with_the_point_named_everywhere():
    value, message = editor("en", "1,5")
    assert value == 1.0 and message == ("k_I[1] refused: '1,5' has a comma: this page writes a decimal point, as in "
                                        "1.5, and no thousands separator. The last good value stays.")
    status, tries, message = check("en", OUTPUT, "7,85")
    assert (status, tries) == ("refused", 0)
    assert message == "'7,85' has a comma: this page writes a decimal point, as in 7.85, and no thousands separator."
    assert "7.85" in check("zh", OUTPUT, "7,85")[2]  # Chinese writes a point too


def test_the_arabic_decimal_separator_and_arabic_indic_digits_are_read_everywhere():
    assert translator("ar").decimal == "."  # what the Arabic page writes (CLDR)
    assert editor("ar", "٠٫٥") == (0.5, "") and editor("ar", "0٫25") == (0.25, "")
    assert editor("ar", "١٫٥") == (1.5, "")  # ١ is 1
    assert check("ar", SOFTMAX, "٠٫٧٣١")[:2] == ("right", 1) and check("ar", SOFTMAX, "0٫731")[:2] == ("right", 1)
    s = AttentionState(lang="ar")
    apply_address(s, {"q": ["0٫5,١".encode()]})
    assert s.query == (0.5, 1.0)
    assert check("fr", SOFTMAX, "0٫731")[:2] == ("right", 1)  # U+066B is a decimal mark and nothing else


@pytest.mark.parametrize("lang", ["en", "fr", "zh"])
def test_full_width_numbers_are_read_everywhere(lang):
    mark = "．" if translator(lang).decimal == "." else "，"
    assert editor(lang, f"１{mark}５") == (1.5, "")
    assert check(lang, SOFTMAX, f"０{mark}７３１")[:2] == ("right", 1)
    s = AttentionState()
    apply_address(s, {"q": ["０．５,１".encode()]})
    assert s.query == (0.5, 1.0)


TEXTS = ["0.5", "0,5", ".5", ",5", "5.", "-2", "−2", "+3", "١٫٥", "٠٫٥", "１．５", "１，５", "1.000,5", "1,000.5",
         "1 5", "1_5", "abc", "0x10", "1.2.3", "nan", "", "  ", "٬5", "0.7310", "999999.5"]


@pytest.mark.parametrize("decimal", [".", ","])
@pytest.mark.parametrize("text", TEXTS)
def test_the_editor_and_the_check_tab_take_the_same_numbers(text, decimal):
    """The two readers are one (course.numbers.read_number): a text without an exponent is a number for both, with
    the same value, or for neither."""
    try:
        coordinate = parse_coordinate(text, decimal)
    except ValueError:
        coordinate = None
    try:
        answer = parse_number(text, decimal)[0]
    except ValueError:
        answer = None
    assert (coordinate is None) == (answer is None)
    if answer is not None:
        assert Decimal(repr(coordinate)) == answer
