"""The page in each language, in a real browser: no text outside the catalogs, right to left, screenshots."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from session.i18n import pseudo
from tests.ui.conftest import SCREENSHOTS, pictures
from tests.ui.helpers import PATIENCE, READOUT, readout, show_tab, wait_for_drawn

#: The tabs whose every text comes from the catalogs, by their titles in the pseudo-language.
CHECKED_TABS = (*(pseudo(t) for t in ("Weights", "Matrix", "All steps", "Recipe", "Edit", "Trap")), "√d_k",
                pseudo("Projections"), pseudo("Heads · n²"), pseudo("Train"), pseudo("Real model"), pseudo("Check"),
                pseudo("Export"), pseudo("Keys"))

#: Visible text that is not a message (a paragraph read whole, so a subscript joins its letter: a<sub>i</sub> is
#: "ai"): token names, the maths' symbols, units, numbers, NumPy's float64 (letters of any script outside the ⟦…⟧ of
#: a message count as hard-coded text); the Real model tab's tokens of "I love NLP" as the model sees them.
ALLOWED = re.compile(r"^(?:I|love|NLP|attention|is|all|you|need|t\d|q|k|v|s|a|e|i|j|m|o|x|X|T|n|d|exp|max|softmax|"
                     r"d_k|d_v|Σ|PNG|CSV|JSON|CLS|SEP|nl|p|"
                     r"W_Q|W_K|W_V|W_O|WQ|WK|WV|WO|float|Q|K|V|H|x_I|x_love|x_NLP|bits?|xx|ai|ki|si|vi|dk|dv|"
                     r"English|Français|Español|Deutsch|简体中文|العربية|R)$")

#: The texts a page shows: visible text nodes (in shadow roots too, outside KaTeX's maths), form controls' labels,
#: and the Bokeh figures' own texts (drawn on a canvas: titles, axis labels and tick overrides, text glyphs).
_TEXTS = """() => {
  const out = [];
  const walk = (root) => {
    const it = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (let n = it.currentNode; n; n = it.nextNode()) {
      if (n.nodeType === Node.ELEMENT_NODE) {
        if (n.shadowRoot) walk(n.shadowRoot);
        continue;
      }
      const el = n.parentElement;
      if (!el || el.closest(".katex, script, style, .language-menu, select") || !n.textContent.trim()) continue;
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || getComputedStyle(el).visibility === "hidden") continue;
      // a message with markup (d<sub>k</sub>) is several text nodes: read its whole paragraph or cell
      const block = el.closest("p, h1, h2, h3, h4, li, td, th, caption, figcaption, label, button");
      out.push(block ? block.textContent : n.textContent);
    }
  };
  walk(document.body);
  for (const m of Bokeh.documents[0].all_models) {
    const t = m.type;
    if (t === "Title" || t === "ColorBar") out.push(m.text ?? m.title ?? "");
    if (t.endsWith("Axis")) { out.push(m.axis_label ?? ""); out.push(...Object.values(m.major_label_overrides ?? {})); }
    if (t === "FactorRange") out.push(...m.factors.flat().filter((f) => !/^(I|love|NLP|t\\d)$/.test(f)));
  }
  return out.filter((s) => typeof s === "string");
}"""


def _outside_messages(texts: list[str]) -> list[str]:
    bad = []
    for text in texts:
        if text.lstrip().startswith("$$"):  # a formula not typeset yet: maths, its words are \\text{⟦…⟧}
            text = " ".join(re.findall(r"\\text\{([^}]*)\}", text))
        # innermost first: a message may hold another (a size in the n² cost's sentence), ⟦… ⟦3,09 MB⟧; …⟧
        rest, before = text, None
        while rest != before:
            rest, before = re.sub(r"⟦[^⟦⟧]*⟧", " ", rest), rest
        for word in re.findall(r"[^\W\d_⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉]+(?:_[A-Za-z]+)?", rest):  # 10⁴, e₁: digits, not \d's
            if not ALLOWED.match(word):
                bad.append(f"{word!r} in {text[:80]!r}")
    return bad


def test_every_text_of_the_explorer_comes_from_the_catalogs(open_page):
    page = open_page("?lang=xx")
    problems = {}
    for title in CHECKED_TABS:
        show_tab(page, title)
        bad = _outside_messages(page.evaluate(_TEXTS))
        if bad:
            problems[title] = sorted(set(bad))
    assert not problems, problems


def test_arabic_reads_right_to_left_and_its_numbers_left_to_right(open_page):
    page = open_page("?lang=ar")
    page.wait_for_function("() => document.documentElement.dir === 'rtl' && document.documentElement.lang === 'ar'",
                           timeout=PATIENCE)
    text = readout(page)
    # the token isolated with its own direction, the formula and its vector left to right: the line reads right
    # to left, "q = (0.000, 1.000)" as one left-to-right piece, never broken inside its vector (a vector wrapped
    # onto two lines of right-to-left text came out with its closing parenthesis mirrored)
    assert text.startswith("استعلام «\u2068love\u2069»: \u2066q = \u2066(0.000,\u00a01.000)\u2069\u2069")
    assert page.locator(".bk-tab.bk-active").text_content() == "الأوزان"
    # the page's own preview of a key press writes the same text as the server (both from the catalog)
    page.locator(".ae-query-plot").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator(READOUT)).to_contain_text("(0.100, 1.000)", timeout=PATIENCE)
    # Arabic's comma between the entries of a list, each entry's token isolated: the entries read right to left
    assert "، \u2068love\u2069 " in readout(page)


def test_the_language_menu_rewrites_the_page_in_place(open_page):
    page = open_page("")
    page.evaluate("() => { window.notReloaded = true }")
    page.locator(".language-menu select").select_option(label="Deutsch")
    page.wait_for_function("() => document.documentElement.lang === 'de'", timeout=PATIENCE)
    expect(page.locator(".bk-tab", has_text="Gewichte")).to_be_visible(timeout=PATIENCE)
    page.wait_for_function("() => new URLSearchParams(location.search).get('lang') === 'de'", timeout=PATIENCE)
    expect(page.locator(READOUT)).to_contain_text("Anfrage von „love“: q = (0,000; 1,000)", timeout=PATIENCE)
    assert page.evaluate("() => window.notReloaded") is True


def test_a_language_asked_for_in_upper_case_gets_the_page_in_that_language(open_page):
    # a client may send any case (BCP 47 tags are case-insensitive); "FR" once built no page and logged a traceback
    page = open_page("", locale="FR")  # the browser sends its locale as it is written: Accept-Language: FR
    page.wait_for_function("() => document.documentElement.lang === 'fr'", timeout=PATIENCE)
    expect(page.locator(READOUT)).to_contain_text("Requête de « love » : q = (0,000 ; 1,000)", timeout=PATIENCE)
    assert page.locator(".bk-tab").first.text_content() == "Poids"
    # from the browser, not chosen: a shared link opens in each reader's own language
    assert "lang=" not in page.evaluate("() => location.search")


@pictures
@pytest.mark.parametrize("lang", ["en", "fr", "es", "de", "zh", "ar"])
def test_screenshot_per_language(open_page, lang):
    page = open_page(f"?lang={lang}&row=NLP", viewport={"width": 1024, "height": 768})
    page.wait_for_function(f"() => document.documentElement.lang === {lang!r}", timeout=PATIENCE)
    wait_for_drawn(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"language-{lang}-1024x768.png"))
    show_tab(page, {"en": "Edit", "fr": "Modifier", "es": "Editar", "de": "Bearbeiten", "zh": "编辑",
                    "ar": "تحرير"}[lang])
    page.screenshot(path=str(SCREENSHOTS / f"language-{lang}-edit-1024x768.png"))
    assert page.locator(READOUT).text_content()
