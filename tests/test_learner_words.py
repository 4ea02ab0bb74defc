"""What the page says in words: the course's terms, never the code's, and the Q = K = V = X note's weights.

Expected numbers are worked by hand from the course's "I love NLP" embeddings
(x_I = (1, 0), x_love = (0, 1), x_NLP = (1, 1)) with Q = K = V = X and d_k = 2.
"""

from __future__ import annotations

import math
import re

import panel as pn
import pytest
from babel.messages.pofile import read_po

from core import measure_attention
from session.i18n import LOCALE_DIR
from session.state import AttentionState
from widgets.cost import CACHE_KEY, CostCache, CostView
from widgets.projections import ProjectionsView

S = 1 / math.sqrt(2)  # the score of I and NLP, both ways: (1, 0)·(1, 1) / √2
I_TO_NLP = math.exp(S) / (math.exp(S) + 1 + math.exp(S))  # row I: scores (s, 0, s)
NLP_TO_I = math.exp(S) / (math.exp(S) + math.exp(S) + math.exp(2 * S))  # row NLP: scores (s, s, 2s)
NLP_TO_NLP = math.exp(2 * S) / (2 * math.exp(S) + math.exp(2 * S))

#: What a pupil should not have to read: names from the code (an identifier with an underscore after a word,
#: as SECTION_6 or scaled_dot_product_attention; W_Q, d_k, x_NLP and d_model are the course's notation), markup
#: for code, the core, NumPy's array shapes and types, calls, and bytes as a formula.
DEVELOPER_WORDS = {
    "an identifier": re.compile(r"\b[A-Za-z]{2,}[A-Za-z0-9]*_\w+"),
    "code markup": re.compile(r"<code>"),
    "the core": re.compile(r"\bcore\b", re.IGNORECASE),
    "an array shape": re.compile(r"\(n, n\)"),
    "a type": re.compile(r"\bfloat64\b|\bint64\b|\bndarray\b|\barrays?\b"),
    "a call": re.compile(r"\bcalls?\b|\bfunction\b"),
    "bytes as a formula": re.compile(r"n² bytes|bytes per entry"),
    "tracing": re.compile(r"\btraced\b"),
}


def _english_texts():
    with open(LOCALE_DIR / "messages.pot", "rb") as f:
        for m in read_po(f):
            for text in (m.id if isinstance(m.id, tuple) else (m.id,)):
                if text:
                    yield re.sub(r"\{\w+\}", "", text)  # a placeholder's name is never shown


def test_the_pages_texts_use_the_courses_words_not_the_codes():
    found = [f"{what}: {text[:90]!r}" for text in _english_texts()
             for what, pattern in DEVELOPER_WORDS.items() if pattern.search(text)]
    assert not found, "\n".join(found)


def test_the_first_presets_note_says_its_weights_are_not_symmetric():
    assert (round(I_TO_NLP, 4), round(NLP_TO_I, 4), round(NLP_TO_NLP, 4)) == (0.4011, 0.2483, 0.5035)
    state = AttentionState()
    view = ProjectionsView(state=state)
    note = view._texts[1].object
    assert "the scores X Xᵀ are symmetric" in note
    assert "The weights are not symmetric: I gives NLP 0.4011, but NLP gives I only 0.2483 back." in note
    assert "The score is 0.7071 both ways, yet each row is normalised on its own, by its own softmax sum" in note
    assert "NLP's score for itself, 1.4142, the largest of all, which takes 0.5035 of that row" in note
    state.lang = "fr"
    note = view._texts[1].object
    assert "I donne 0,4011 à NLP, mais NLP ne rend que 0,2483 à I" in note and "sa propre somme du softmax" in note


def test_the_reachability_note_shows_the_sum_instead_of_a_name_from_the_code():
    view = ProjectionsView(state=AttentionState())
    text = view.reachable.text
    assert "SECTION_6" not in text and "core" not in text
    # x_NLP = (1, 1, 1) and W_V = (2, 6, −4): v_NLP = 1·2 + 1·6 + 1·(−4)
    assert "(then v<sub>NLP</sub> = 2 + 6 − 4 = 4)" in text


@pytest.mark.parametrize("lang, header", [("en", "memory (8 bytes a number)"), ("de", "Speicher (8 Byte pro Zahl)")])
def test_the_cost_table_and_legend_speak_of_tables_and_memory(monkeypatch, lang, header):
    cache = CostCache(sizes=(3, 8), measure=measure_attention)
    for n in cache.sizes:
        cache.measure(n).result(timeout=60)
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, cache)
    state = AttentionState(lang=lang, cost_n=8)
    view = CostView(state=state)
    figures, legend = view.figures.object, view.legend.object
    assert f"<th scope='col'>{header}</th>" in figures and "float64" not in figures
    assert "(n, n)" not in figures + legend and "scaled_dot_product_attention" not in legend
    if lang == "en":
        # five tables of 8-byte numbers and a mask of 1 byte an entry: 41 bytes for each pair, 41 × 8² = 2624 bytes
        assert "the memory of the 6 n × n tables it keeps" in legend and "41 bytes for each of the n² pairs" in legend
        assert "On this server, n = 8: computing attention once took " in figures
        assert "the 6 n × n tables it keeps take 2.62 kB, 41 bytes for each pair of tokens." in figures
        assert (view.time_fig.title.text, view.memory_fig.title.text) == ("Computing time", "Memory used")
