"""Pure-NumPy attention core. Never imports Panel or Bokeh."""

from core.attention import AttentionResult, scaled_dot_product_attention, softmax
from core.examples import I_LOVE_NLP, Example

__all__ = ["AttentionResult", "Example", "I_LOVE_NLP", "scaled_dot_product_attention", "softmax"]
