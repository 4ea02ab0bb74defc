"""BERT's tokenizer: text → the model's own tokens (``[CLS] i love nl ##p [SEP]``), from its ``vocab.txt``.

Two steps, as in Devlin et al. (2019, "BERT", section 3 and its released ``tokenization.py``), which all-MiniLM-L6-v2
keeps (an uncased BERT vocabulary of 30,522 pieces):

1. **Basic tokenization**: drop control characters and U+FFFD, turn every whitespace into a space, put spaces around
   CJK ideographs, lower-case, strip accents (Unicode NFD, combining marks removed), split off every punctuation
   character (ASCII symbols too: ``$``, ``^``, ``` ` ```...).
2. **WordPiece**: each word becomes the longest vocabulary piece that starts it, then the longest ``##`` piece that
   continues it, and so on; a word with no such split, or longer than 100 characters, is ``[UNK]``.

Standard library only. ``tests/test_pretrained.py`` holds it to the tokens the reference implementation gave
(``tests/data/minilm_reference.json``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = ["CLS", "SEP", "UNK", "basic_tokens", "read_vocab", "wordpiece", "tokenize"]

CLS, SEP, UNK = "[CLS]", "[SEP]", "[UNK]"
#: A word longer than this many characters is one ``[UNK]`` (BERT's ``max_input_chars_per_word``).
MAX_WORD_CHARS = 100


def read_vocab(lines: Iterable[str]) -> Mapping[str, int]:
    """``{piece: id}`` from ``vocab.txt``'s lines (one piece a line; its line number is its id), read-only.

    >>> read_vocab(["[PAD]", "a", "##b"])["##b"]
    2
    """
    return MappingProxyType({line.rstrip("\n"): i for i, line in enumerate(lines)})


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # every non-letter, non-digit ASCII character counts, as in BERT: "$" and "^" are symbols in Unicode
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    # the CJK Unified Ideographs blocks BERT names (not Hangul, Hiragana or Katakana, which are written with spaces)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokens(text: str) -> list[str]:
    """Step 1: lower-cased, accent-free words and punctuation marks, each its own token.

    >>> basic_tokens("Héllo, WORLD! 我爱")
    ['hello', ',', 'world', '!', '我', '爱']
    """
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            cleaned.append(" ")
        elif _is_cjk(cp):
            cleaned.append(f" {ch} ")
        else:
            cleaned.append(ch)
    words = []
    for word in unicodedata.normalize("NFC", "".join(cleaned)).split():
        word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
        start = 0
        for i, ch in enumerate(word):
            if _is_punctuation(ch):
                if start < i:
                    words.append(word[start:i])
                words.append(ch)
                start = i + 1
        if start < len(word):
            words.append(word[start:])
    return words


def wordpiece(word: str, vocab: Mapping[str, int]) -> list[str]:
    """Step 2 for one word: the longest pieces of ``vocab`` first, ``##`` before every piece but the first.

    >>> wordpiece("nlp", {"nl": 0, "##p": 1, "n": 2})
    ['nl', '##p']
    >>> wordpiece("xyz", {"x": 0})
    ['[UNK]']
    """
    if len(word) > MAX_WORD_CHARS:
        return [UNK]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [UNK]
        pieces.append(piece)
        start = end
    return pieces


def tokenize(text: str, vocab: Mapping[str, int]) -> list[str]:
    """The model's tokens for ``text``: ``[CLS]``, the word pieces, ``[SEP]``.

    >>> tokenize("I love NLP", {"i": 0, "love": 1, "nl": 2, "##p": 3})
    ['[CLS]', 'i', 'love', 'nl', '##p', '[SEP]']
    """
    return [CLS, *(piece for word in basic_tokens(text) for piece in wordpiece(word, vocab)), SEP]
