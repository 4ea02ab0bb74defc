"""The Model tab's part of a page's state: the learner's sentence, the layer, head and row they look at, and the
pretrained model's attention on that sentence (core/pretrained.py).

:class:`ModelState` is a mixin of :class:`session.state.AttentionState`, like :class:`session.heads.HeadsState`.
Nothing is computed until a view asks (:meth:`ModelState.require_model`): most pages never open the tab. A served
page computes off the server's loop, through the queue the √d_k draws use (services/train_queue.py: one sentence at a
time, on its worker thread, shown in the page's own turn); a sentence the process has run before is kept
(core/pretrained.py), so a class typing the same sentence, or a room's followers, cost one forward pass.
"""

from __future__ import annotations

import functools
import re
import unicodedata

import param

from core.checks import is_whole
from core.pretrained import HEADS, LAYERS, MAX_TOKENS, ModelUnavailable, SentenceAttention, SentenceTooLong
from core.pretrained import sentence_attention as _sentence_attention
from session.i18n import N_
from session.inputs import shown

#: The longest sentence (characters) a learner may type, and the address carries.
MAX_SENTENCE_CHARS = 300
DEFAULT_SENTENCE = "I love NLP"
#: The address's arguments: the sentence, and the layer, head (1-based, as the page names them) and row shown.
MODEL_ARGUMENTS = ("sentence", "model_layer", "model_head", "model_row")
#: The state's params those arguments hold.
MODEL_PARAMS = ("sentence", "model_layer", "model_head", "model_row")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@functools.cache
def one_blas_thread() -> None:
    """NumPy's BLAS on one thread, for the process (once). OpenBLAS starts a thread per core for a matrix product of a
    sentence's size, and its threads wait spinning: on a school's 2-core server a 16-token forward pass took 380 ms of
    CPU instead of 17, the other core's share of every other page (bench/RESULTS.md)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def compute(sentence: str):
    """``(sentence, result, message)``: the model's attention on ``sentence``, or None and why not (a marked text).
    Changes nothing, so it may run on another thread than the page's."""
    one_blas_thread()
    try:
        return sentence, _sentence_attention(sentence), None
    except SentenceTooLong as e:
        return sentence, None, N_("This sentence has {count} word pieces: the Real model tab takes at most {limit}. "
                                  "Shorten it.", count=e.count, limit=e.limit)
    except ModelUnavailable as e:  # the rest of the page runs: the tab says what is missing
        return sentence, None, N_("The model could not be loaded: {why}", why=str(e))


def clean_sentence(text) -> str:
    """What a typed sentence becomes: control characters (tabs, new lines, …) and lone surrogates (which no text box
    makes, and which UTF-8 cannot write: the page's address could not be written) as spaces, surrounding spaces
    gone."""
    return _CONTROL.sub(" ", unicodedata.normalize("NFC", text)).strip() if isinstance(text, str) else ""


class ModelState(param.Parameterized):
    """The Model tab's choices (shared by a room, kept in the address) and what the model made of the sentence.

    A mixin: the class using it provides ``tr``.
    """

    sentence = param.String(default=DEFAULT_SENTENCE, doc=(
        "The sentence the Model tab runs: the last one typed that the model could run (the address's, a room's)."))
    model_layer = param.Integer(default=0, bounds=(0, LAYERS - 1), doc="The layer of the head shown (0-based).")
    model_head = param.Integer(default=0, bounds=(0, HEADS - 1), doc="The head shown, of its layer (0-based).")
    model_row = param.Integer(default=2, bounds=(0, MAX_TOKENS + 1), doc=(
        "The token whose query the inspector shows ([CLS] is 0); past the sentence's end, its last token."))
    model_result = param.ClassSelector(class_=SentenceAttention, allow_None=True, doc=(
        "Derived: the model's attention on `sentence`, once a view has asked for it (require_model); None before."))
    model_message = param.String(default="", doc=(
        "Why the last sentence typed is not shown (too long, empty, the model missing); empty when it is."))

    def __init__(self, **params):
        super().__init__(**params)
        #: Like ``experiment_scheduler``: called with (show, work) to run work() off the loop and show its result in
        #: the page's turn; None computes at once. Set by the Model tab's view in a served page.
        self.model_scheduler = None
        self._asked = None  # the sentence waiting to be computed (or being computed)
        self._model_waiting = False
        self._model_wanted = False

    @property
    def model_row_shown(self) -> int:
        """``model_row`` within the shown sentence's tokens."""
        r = self.model_result
        return self.model_row if r is None else min(self.model_row, len(r.tokens) - 1)

    def require_model(self) -> None:
        """Compute the model's attention on ``sentence`` from now on (the view that shows it asks, once)."""
        if not self._model_wanted:
            self._model_wanted = True
            self._ask(self.sentence)

    def set_sentence(self, text) -> bool:
        """Run the model on ``text`` (shown once computed); refuse an empty or over-long text with a message."""
        text = clean_sentence(text)
        if not text:
            self.model_message = N_("Type a sentence first (in English: the model was trained on English text).")
            return False
        if len(text) > MAX_SENTENCE_CHARS:
            self.model_message = N_("This sentence has {count} characters: the Real model tab takes at most {limit}.",
                                    count=len(text), limit=MAX_SENTENCE_CHARS)
            return False
        self._ask(text)
        return True

    @param.depends("sentence", watch=True)
    def _sentence_changed(self) -> None:  # the address's or a room's sentence
        r = self._model_shown_sentence
        if self._model_wanted and r != self.sentence:
            self._ask(self.sentence)

    _model_shown_sentence = None

    def _ask(self, text: str) -> None:
        self._asked = text
        if not self._model_wanted:
            return
        if self.model_scheduler is None:
            self.show_model(self.compute_model())
        elif not self._model_waiting:
            self._model_waiting = True
            self.model_scheduler(self.show_model, self.compute_model)

    def compute_model(self):
        """The outcome of the sentence asked for last (:func:`compute`); changes nothing."""
        return compute(self._asked)

    def show_model(self, outcome) -> None:
        """Show an outcome of :meth:`compute_model`; if another sentence was asked for meanwhile, compute it next."""
        self._model_waiting = False
        text, result, message = outcome
        if result is not None:
            self._model_shown_sentence = text
            self.param.update(sentence=text, model_result=result, model_message="")
        else:
            self.model_message = message
        if self._asked != text:
            self._ask(self._asked)

    def show_head(self, layer: int, head: int) -> bool:
        """Show head ``head`` of layer ``layer`` (0-based); refuse numbers outside the model."""
        if not (is_whole(layer) and is_whole(head) and 0 <= layer < LAYERS and 0 <= head < HEADS):
            self.model_message = N_("Layer {layer}, head {head} is not in the model: {layers} layers of {heads} "
                                    "heads.", layer=shown(layer), head=shown(head), layers=LAYERS, heads=HEADS)
            return False
        self.param.update(model_layer=int(layer), model_head=int(head))
        return True

    def show_row(self, row: int) -> bool:
        """Inspect the query of token ``row`` ([CLS] is 0)."""
        r = self.model_result
        if r is None or not (is_whole(row) and 0 <= row < len(r.tokens)):
            return False
        self.model_row = int(row)
        return True


def parse_model_address(values_of: dict[str, str]) -> tuple[dict, list]:
    """The Model tab's arguments (:data:`MODEL_ARGUMENTS`, text already decoded): state settings and one marked
    sentence per argument ignored.

    >>> parse_model_address({"sentence": "The cat sat.", "model_layer": "1", "model_head": "3"})[0]
    {'sentence': 'The cat sat.', 'model_layer': 0, 'model_head': 2}
    >>> parse_model_address({"model_head": "13"})[1]
    ["model_head = '13' ignored: choose 1 to 12."]
    """
    settings, problems = {}, []
    if "sentence" in values_of:
        text = clean_sentence(values_of["sentence"])
        if text and len(text) <= MAX_SENTENCE_CHARS:
            settings["sentence"] = text
        else:
            problems.append(N_("sentence = {value} ignored: up to {limit} characters of text.",
                               value=shown(values_of["sentence"]), limit=MAX_SENTENCE_CHARS))
    for name, count, first in (("model_layer", LAYERS, 1), ("model_head", HEADS, 1), ("model_row", MAX_TOKENS + 2, 0)):
        if name not in values_of:
            continue
        value = values_of[name]
        if value in {str(i) for i in range(first, count + first)}:
            settings[name] = int(value) - first
        else:
            problems.append(N_("{name} = {value} ignored: choose {low} to {high}.", name=name, value=shown(value),
                               low=first, high=count + first - 1))
    return settings, problems


def model_address(state: ModelState) -> dict[str, str]:
    """The Model tab's arguments that differ from the defaults.

    >>> model_address(ModelState(sentence="Hello there", model_head=4))
    {'sentence': 'Hello there', 'model_head': '5'}
    """
    out = {}
    if state.sentence != DEFAULT_SENTENCE:
        out["sentence"] = state.sentence
    if state.model_layer:
        out["model_layer"] = str(state.model_layer + 1)
    if state.model_head:
        out["model_head"] = str(state.model_head + 1)
    if state.model_row != ModelState.param.model_row.default:
        out["model_row"] = str(state.model_row)
    return out
