"""The page's languages: complete catalogs, matching placeholders, numbers written and read per language."""

from __future__ import annotations

import re
import string

import numpy as np
import panel as pn
import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from session.address import address_of, apply_address
from session.i18n import LANGUAGES, LOCALE_DIR, N_, from_accept_language, pseudo, read_catalog, translator
from session.state import AttentionState, parse_coordinate
from widgets.steps import Readout

TRANSLATED = [lang for lang in LANGUAGES if lang != "en"]
ROOT = LOCALE_DIR.parent


def _template():
    with open(LOCALE_DIR / "messages.pot", "rb") as f:
        return read_po(f)


def _ids(catalog) -> set:
    return {m.id for m in catalog if m.id}


def test_the_template_holds_exactly_the_messages_of_the_source():
    # what `pybabel extract -F babel.cfg` finds now: a new text not extracted, or an old one left over, fails
    with open(ROOT / "babel.cfg") as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found = {m[2] if isinstance(m[2], str) else tuple(m[2])
             for m in extract_from_dir(ROOT, method_map=method_map, options_map=options_map)}
    found = {m[0] if isinstance(m, tuple) and len(m) == 1 else m for m in found}
    assert found == _ids(_template()), "run the catalog commands of docs/architecture.md"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_each_catalog_translates_every_message_and_no_other(lang):
    catalog, template = read_catalog(lang), _template()
    assert _ids(catalog) == _ids(template), "missing or unused messages: pybabel update (docs/architecture.md)"
    for m in catalog:
        if not m.id:
            continue
        forms = m.string if isinstance(m.string, tuple) else (m.string,)
        assert all(forms) and len(forms) == (catalog.num_plurals if m.pluralizable else 1), m.id
        assert not m.fuzzy, m.id
    assert not catalog.obsolete


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@pytest.mark.parametrize("lang", TRANSLATED)
def test_placeholders_match_the_english(lang):
    for m in read_catalog(lang):
        if not m.id:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        wanted = set().union(*map(_fields, ids)) - {"n"}  # a plural form may spell the number out
        for form in (m.string if isinstance(m.string, tuple) else (m.string,)):
            assert _fields(form) - {"n"} <= wanted | set(), (lang, m.id, form)
            assert wanted <= _fields(form), (lang, m.id, form)


def test_french_sets_a_no_break_space_where_its_typography_does():
    # French sets a space before : ; ! ? and inside « », one that never breaks: a line never begins with
    # "» :" or ends with "«" (Imprimerie nationale's rules); a list of the characters themselves is the exception
    loose = []
    for m in read_catalog("fr"):
        for form in (m.string if isinstance(m.string, tuple) else (m.string,)):
            if m.id and "! ?" not in form and re.search(r" [:;!?»]|« ", form):
                loose.append(form)
    assert not loose, loose[:5]
    readout = translator("fr")._("Query of \"{token}\": q = {q}", token="love", q="(0 ; 1)")
    assert "«\u00a0love\u00a0»\u00a0:" in readout, readout


def test_chinese_and_arabic_lists_take_their_own_commas():
    # a list inside a sentence: Chinese's full-width comma 「，」, Arabic's 「،」; a vector keeps mathematics' comma
    state = AttentionState(lang="zh")
    text = Readout.text(state)
    assert "I 0.0000，love 1.0000，NLP 1.0000" in text and "q = (0.000, 1.000)" in text, text
    assert translator("ar").list_sep == "، " and translator("ar").vector_sep == ",\u00a0"


def test_an_arabic_readout_s_negative_numbers_read_left_to_right():
    """In a right-to-left sentence a hyphen-minus before digits takes the sentence's direction: "-1.5000" was drawn
    "1.5000-". Each number of the readout's lists and its output is isolated left to right (as its vectors are);
    q = (-1.5, -1.5): q·k = -1.5, -1.5, -3; scores ÷ √2 = -1.0607, -1.0607, -2.1213; output 4.0000."""
    lri, pdi = "\u2066", "\u2069"
    state = AttentionState(lang="ar")
    state.move_query(-1.5, -1.5)
    text = Readout.text(state)
    for number in ("-1.5000", "-3.0000", "-1.0607", "-2.1213", "0.4262", "0.1476", "4.0000", "4.00"):
        assert lri + number + pdi in text, (number, text)
    assert not re.search(r"(?<!\u2066)-\d", text.split("\n", 1)[1]), text  # no number left bare
    english = AttentionState()
    english.move_query(-1.5, -1.5)
    assert lri not in Readout.text(english) and "I -1.5000, love -1.5000, NLP -3.0000" in Readout.text(english)


def test_a_right_to_left_name_keeps_its_number_after_it_in_a_left_to_right_readout():
    """In an English list "سلام 0.0000, love 1.0000", Unicode's bidi algorithm took the digits after an Arabic name for
    part of its run and drew "0.0000 سلام". A name with a right-to-left letter is isolated in any page; a Latin name
    in a left-to-right page is left as it is."""
    state = AttentionState()
    state.tokens = ["سلام", "love", "שלום"]
    text = Readout.text(state)
    assert "\u2068سلام\u2069 0.0000, love 1.0000, \u2068שלום\u2069 1.0000" in text, text
    assert 'Query of "love"' in text


def test_the_field_s_words_are_a_teacher_s():
    words = {"fr": ("requête", "clé", "valeurs"), "es": ("consulta", "clave", "valores"),
             "de": ("Anfrage", "Schlüssel", "Werte"), "zh": ("查询", "键", "值"),
             "ar": ("الاستعلام", "المفتاح", "القيم")}
    for lang, (query, key, values) in words.items():
        tr = translator(lang)
        assert query in tr._("query").lower() or query in tr._("query")
        assert key in tr._("key")
        assert values in tr._("values")


@pytest.mark.parametrize(("lang", "number", "vector"), [
    ("en", "0.5000", "(0.500, 1.000)"), ("fr", "0,5000", "(0,500\u00a0; 1,000)"), ("es", "0,5000", "(0,500; 1,000)"),
    ("de", "0,5000", "(0,500; 1,000)"), ("zh", "0.5000", "(0.500, 1.000)"),
    ("ar", "0.5000", "\u2066(0.500,\u00a01.000)\u2069"),
])
def test_numbers_are_written_as_the_language_writes_them(lang, number, vector):
    tr = translator(lang)
    assert tr.num(0.5) == number
    assert tr.vec([0.5, 1]) == vector
    assert tr.decimal not in tr.vector_sep.strip() and tr.decimal not in tr.list_sep.strip()


@pytest.mark.parametrize(("decimal", "text", "value"), [
    (".", "1.5", 1.5), (",", "1,5", 1.5), (",", "-0,25", -0.25), (",", ",5", 0.5), (",", "3e-2", 0.03),
    (",", "１，５", 1.5),
])
def test_typed_numbers_are_read_in_the_language(decimal, text, value):
    assert parse_coordinate(text, decimal) == value


@pytest.mark.parametrize(("decimal", "text"), [(".", "1,5"), (",", "1.5"), (",", "1.000"), (",", "1,5,0")])
def test_the_other_mark_is_refused_never_misread(decimal, text):
    with pytest.raises(ValueError):
        parse_coordinate(text, decimal)


def test_the_editor_reads_a_french_decimal_comma_and_explains_a_dot():
    s = AttentionState(lang="fr")
    assert s.set_key(0, 0, "0,5") and s.keys[0, 0] == 0.5
    assert not s.set_key(0, 0, "0.5") and s.keys[0, 0] == 0.5
    assert "'0.5' contient un point décimal\u00a0: cette page écrit les décimales avec une virgule, comme dans 0,5" in (
        s.tr(s.message))
    assert not s.set_key(0, 0, "abc") and "1,5\u00a0; -2 ou 3e-2" in s.tr(s.message)
    assert "refused" in s.message  # the state's own text stays English: each page shows it in its language


def test_a_message_follows_the_page_s_language():
    s = AttentionState()
    s.rename_token(0, "<b>")
    assert translator("de")(s.message).startswith("Name von Token 1 abgelehnt")
    assert translator("en")(s.message) == s.message


def test_the_address_stays_language_neutral():
    s = AttentionState(lang="fr")
    apply_address(s, {"q": [b"0.5,1"], "lang": [b"fr"]})
    assert s.query == (0.5, 1.0) and s.lang == "fr"
    assert address_of(s)["q"] == "0.5,1.0" and address_of(s)["lang"] == "fr"
    browser_only = AttentionState(lang="de")  # from Accept-Language: each reader of a link has their own
    assert "lang" not in address_of(browser_only)


def test_the_pseudo_language_is_offered_only_when_enabled(monkeypatch):
    s = AttentionState()
    apply_address(s, {"lang": [b"xx"]})
    assert s.lang == "en" and "lang = 'xx' ignored" in s.notice
    monkeypatch.setenv("EXPLORER_PSEUDO_LOCALE", "1")
    s = AttentionState()
    apply_address(s, {"lang": [b"xx"]})
    assert s.lang == "xx" and not s.notice
    assert pseudo("Query of {token} <b>x</b>") == "⟦Qúérý óf {token} <b>x</b>⟧"


@pytest.mark.parametrize(("header", "lang"), [
    ("fr-FR,fr;q=0.9,en;q=0.8", "fr"), ("de-CH", "de"), ("es-419,es;q=0.9", "es"), ("zh-CN,zh;q=0.9", "zh"),
    ("ar-EG", "ar"), ("pt-BR,pt;q=0.9", "en"), ("en;q=0.1,ar;q=0.9", "ar"), ("", "en"), ("garbage;q=x", "en"),
])
def test_the_browser_s_language_is_the_default(header, lang):
    assert from_accept_language(header) == lang


@pytest.mark.parametrize(("header", "lang"), [
    ("FR", "fr"), ("EN-US", "en"), ("ZH", "zh"), ("zh-Hans-CN", "zh"), ("ZH-HANT-TW;q=0.9, De-CH", "de"),
    ("Es-419,ES;q=0.9", "es"), ("AR", "ar"), ("PT-BR, FR;q=0.5", "fr"),
])
def test_a_language_tag_in_any_case_is_the_same_language(header, lang):
    # BCP 47: tags are case-insensitive; what comes back is one of the page's own codes, as the state takes it
    assert from_accept_language(header) == lang
    assert AttentionState(lang=from_accept_language(header)).lang == lang


def test_the_address_s_language_in_any_case():
    s = AttentionState()
    apply_address(s, {"lang": [b"FR"]})
    assert s.lang == "fr" and not s.notice
    assert address_of(s)["lang"] == "fr"


def test_plural_forms_follow_the_language():
    text = N_("x")  # a plain Text renders as itself anywhere
    assert translator("ar")(text) == "x"
    from session.i18n import ngettext
    heads = [translator("ar")(ngettext("head = {value} ignored: there is {n} head, 1.",
                                       "head = {value} ignored: choose one of the {n} heads, 1 to {n}.",
                                       n, value="'9'"))
             for n in (1, 2, 3)]
    assert len(set(heads)) == 3  # Arabic: one, two, few


def test_a_follower_keeps_their_language():
    presenter, follower = AttentionState(lang="fr"), AttentionState(lang="de")
    presenter.move_query(0.5, 0.5)
    follower.apply_snapshot(presenter.snapshot())
    assert follower.query == (0.5, 0.5) and follower.lang == "de"
    assert "lang" in AttentionState.LOCAL_PARAMS and "lang" not in AttentionState.SHARED_PARAMS


def test_switching_the_language_rewrites_the_page_in_place():
    from app import create_app
    page = create_app(args={})
    state = page.state
    readout = next(m for m in page.get_root().references() if getattr(m, "name", None) == "readout")
    assert readout.text.startswith('Query of "love"')
    state.lang = "es"
    assert readout.text.startswith("Consulta de «love»: q = (0,000; 1,000)")
    tabs = page.select(pn.Tabs)[0]  # the explorer's (widgets.tabs.LazyTabs)
    assert tabs._names[0] == "Pesos"
    inputs = next(m for m in page.get_root().references() if getattr(m, "name", None) == "drag-inputs")
    assert '"decimal": ","' in inputs.data["words"][0]  # the page's own drag preview writes numbers the same way
    assert np.isclose(state.query, (0, 1)).all()


@pytest.mark.parametrize(("lang", "name"), [("en", "Language"), ("de", "Sprache"), ("ar", "اللغة")])
def test_the_language_menu_is_named_in_the_page_s_language(lang, name):
    from app import _title
    assert f"<select aria-label='{name}'" in _title(lang)


def test_the_language_menu_s_choice_reaches_the_state_through_the_bridge():
    from link.browser import BrowserBridge
    s = AttentionState()
    bridge = BrowserBridge(state=s)
    bridge._handle_msg({"lang": "<script>"})  # what a page sends is only ever one of the menu's codes
    assert s.lang == "en" and not s.lang_chosen
    bridge._handle_msg({"lang": "de"})
    assert s.lang == "de" and s.lang_chosen and bridge.lang == "de"
    assert address_of(s)["lang"] == "de"  # chosen on the page: the address keeps it when shared
