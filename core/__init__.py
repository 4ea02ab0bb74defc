"""Pure-NumPy attention core. Never imports Panel or Bokeh."""

from core.attention import AttentionResult, TemperatureSweep, scaled_dot_product_attention, softmax, temperature_sweep
from core.cost import CostMeasurement, ScoreMatrixSize, downsample, measure_attention, random_qkv, score_matrix_size
from core.examples import I_LOVE_NLP, MODULE_2, PRESETS, Example
from core.multihead import (
    PREVIOUS_AND_SELF,
    PREVIOUS_AND_SELF_2D,
    MultiHeadPreset,
    MultiHeadResult,
    multi_head_attention,
)
from core.projections import (
    PROJECTION_PRESETS,
    SECTION_6_2D,
    ProjectionPreset,
    Projections,
    SelfAttention,
    ValueReachability,
    linear_values_reachable,
    project,
    random_projections,
    self_attention,
)
from core.scaling import Saturation, ScalingExperiment, saturation, scaling_experiment
from core.training import (
    TRAINING_PRESETS,
    Gradients,
    Learned,
    LossFloor,
    RowConflict,
    TrainingRun,
    TrainingTask,
    learned,
    loss_and_gradients,
    loss_floor,
    loss_floor_reason,
    outputs_task,
    swapped_loss,
    train,
    weights_task,
)
from core.trap import scores_against_values

__all__ = ["AttentionResult", "CostMeasurement", "Example", "I_LOVE_NLP", "MODULE_2", "MultiHeadPreset",
           "MultiHeadResult", "PRESETS", "PREVIOUS_AND_SELF", "PREVIOUS_AND_SELF_2D", "PROJECTION_PRESETS",
           "ProjectionPreset", "Projections", "SECTION_6_2D", "Saturation", "ScalingExperiment", "ScoreMatrixSize",
           "SelfAttention", "ValueReachability", "downsample",
           "linear_values_reachable", "measure_attention", "multi_head_attention", "project", "random_projections",
           "random_qkv", "saturation", "scaled_dot_product_attention", "scaling_experiment", "score_matrix_size",
           "scores_against_values", "self_attention", "softmax", "TemperatureSweep", "temperature_sweep",
           "TRAINING_PRESETS", "Gradients", "Learned", "LossFloor", "RowConflict", "TrainingRun", "TrainingTask",
           "learned", "loss_and_gradients", "loss_floor", "loss_floor_reason", "outputs_task", "swapped_loss",
           "train", "weights_task"]
