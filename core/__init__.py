"""Pure-NumPy attention core. Never imports Panel or Bokeh."""

from core.attention import AttentionResult, scaled_dot_product_attention, softmax
from core.examples import I_LOVE_NLP, MODULE_2, PRESETS, Example
from core.scaling import Saturation, ScalingExperiment, saturation, scaling_experiment
from core.trap import scores_against_values

__all__ = ["AttentionResult", "Example", "I_LOVE_NLP", "MODULE_2", "PRESETS", "Saturation", "ScalingExperiment",
           "saturation", "scaled_dot_product_attention", "scaling_experiment", "scores_against_values", "softmax"]
