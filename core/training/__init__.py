"""Training W_Q, W_K, W_V (and W_O) on a tiny attention task, in plain NumPy.

Module 2 of the course: "At initialisation they are random and the three roles are
indistinguishable; after training, each has learned its specialty." A task says what
attention should do on a short sentence with 2-D embeddings X : (n, 2) (d_model = 2,
d_k = 2 per head); :func:`train` starts W_Q, W_K, W_V from the same random
distribution and learns the task in one call, every step kept for a page to replay.

The model, head h of H (Vaswani et al., 2017, Eq. (1) and Sec. 3.2.2)::

    Q_h = X W_Q[h],  K_h = X W_K[h],  V_h = X W_V[h]
    scores_h = Q_h K_h^T * s / T        s = 1/sqrt(d_k) with scaling on, 1 with it off; T the temperature
    weights_h = softmax(scores_h)       row by row; a masked cell has weight 0
    output = Concat(weights_h V_h) W_O  (one head: weights_0 V_0, no W_O)

Two kinds of target, two losses, both averaged over the n rows:

* **weights** (an attention pattern P : (n, n), rows summing to 1): the cross-entropy
  ``-(1/n) sum_ij P_ij log Abar_ij`` where ``Abar = (1/H) sum_h weights_h``, the heads'
  average. It equals ``KL(P || Abar) + H(P)``: the KL divergence plus the target's own
  entropy H(P), a constant, so the loss can reach H(P) (0 for a one-hot target) and no
  lower (``TrainingRun.entropy``). Only W_Q and W_K are trained; W_V is drawn and kept.
  Why the average: when every head reads the same values and W_O averages the heads,
  the layer's output is ``Abar V``, so Abar is the attention the layer really pays. A
  mixture of heads meets rows no single head can: a head's row is a softmax of a linear
  function of the keys' embeddings, one peak on the circle of directions; two heads can
  put half a row on each of two opposite tokens (see :func:`loss_floor`).
* **outputs** (a target per token, Y : (n,) or (n, d_out)): the mean squared distance
  ``(1/n) sum_i |output_i - Y_i|^2``; W_Q, W_K, W_V and W_O are trained.

Gradients are written out by hand (no autograd): through the softmax row by row,
``dS_ij = A_ij sum_k A_ik (dA_ij - dA_ik)`` (:func:`_softmax_backward`), then ``dQ = dS K``,
``dK = dS^T Q`` (times s/T) and ``dW_Q = X^T dQ``, ``dW_K = X^T dK``, ``dW_V = X^T (A^T dO)``. They
match central finite differences to 1e-6 (``tests/test_core_training.py``). The softmax's Jacobian is
more often written ``A * (dA - rowsum(dA * A))``, the same sum with ``sum_k A_ik = 1`` taken out; but
where a row saturates (one weight within rounding of 1, as a low temperature makes them) that form takes
``dA_ij - rowsum`` of two nearly equal numbers and keeps none of the small difference the other weights
make, which is all the gradient there is; Adam then scales what is left up to a full step. Each
difference ``dA_ij - dA_ik`` is taken before it is weighted, so every entry keeps its relative precision.

The optimiser is Adam (Kingma & Ba, 2015; the one Vaswani et al. trained with, Sec. 5.3): it moves
each entry by about the learning rate a step, whatever the size of its gradient, so one rate learns
both losses. Plain gradient descent was tried on the four presets below, one and two heads, seeds 0 to
9, 500 steps: no single rate served them all. At 0.1 the attention targets ended as high as 0.63; at
0.3 the previous token with two heads ended at 0.198 and the outputs with two heads at 0.223; at 1
every attention target ended under 0.01, but the outputs' gradient, about 20 times larger, made them
oscillate (0.11 with one head, 3.1 with two). Adam at 0.05 ended every one under 0.003.

The presets (``TRAINING_PRESETS``), each learnable by one head. With the defaults
(``learning_rate=0.05``, one head, scaling on, T = 1, no mask) every seed from 0 to 9 brings
the loss under the goal by the step stated (``tests/test_core_training.py``):

============================ =========================== =========================================== ===== =====
preset                       sentence, X                 target                                      goal  step
============================ =========================== =========================================== ===== =====
attend to the previous token "attention is all you       token p attends to p - 1, the first to      0.01  300
                             need", x_p at 45° x p       itself
attend to yourself           "I love NLP", Section 6     each token attends to itself                0.01  200
everyone attends to NLP      "I love NLP", Section 6     every token attends to NLP                  0.01  150
retrieve the value           "I love NLP", Section 6     outputs 2, 6, 4 (Section 6's values)        0.05  400
============================ =========================== =========================================== ===== =====

Section 6's embeddings are x_I = (1, 0), x_love = (0, 1), x_NLP = (1, 1). Why one head can learn
each: its scores are ``x_i M x_j^T`` with M = W_Q W_K^T s / T, and with d_k = 2 every 2 x 2 matrix
M is reachable (W_Q = M T / s, W_K = I), so a target is learnable when some M puts each row's
target on top:

* previous token: each embedding is its position p on a half circle, x_p = (cos 45°p, sin 45°p),
  as the sinusoidal positional encodings (Vaswani et al., 2017, Sec. 3.5) let a linear map
  reach a fixed offset: the rotation by -45° turns x_p onto x_{p-1}, and M = c R(-45°) points
  every query at the previous token. The five tokens span 180°, not a whole circle, so the
  first token's turned query (at -45°) lies nearest to itself; on a whole circle it would
  reach the last token. With "I love NLP"'s embeddings one head cannot learn it:
  x_NLP = x_I + x_love makes NLP's scores the sum of I's and love's (:func:`loss_floor`: log 2).
* yourself: M = [[2, -1], [-1, 2]] gives each token's own key the top score, by 1.
* everyone attends to NLP: every embedding lies in the quadrant x, y >= 0, so
  M = c (1, 1)^T (1, 1) gives every query the direction (1, 1), along which x_NLP is the longest.
* retrieve the value: no W_V gives the values 2, 6, 4 (v_NLP = v_I + v_love, see
  :func:`core.projections.linear_values_reachable`), but an output is a weighted average of
  values, so the values need only reach from 2 to 6: W_V and the attention learn together
  which token each output reads (seed 0: values 4, 2, 6; I reads love's 2, love reads NLP's 6,
  NLP mixes them into 4).
"""

from core.training.analysis import Learned, learned, swapped_loss
from core.training.floor import LossFloor, RowConflict, loss_floor, loss_floor_reason
from core.training.model import Gradients, loss_and_gradients
from core.training.run import INIT_STD, MAX_LEARNING_RATE, MAX_STEPS, TrainingRun, adam_step_bound, train
from core.training.tasks import (
    MAX_HEADS,
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    TRAINING_PRESETS,
    TrainingTask,
    outputs_task,
    weights_task,
)

__all__ = ["INIT_STD", "MAX_HEADS", "MAX_LEARNING_RATE", "MAX_STEPS", "MAX_TEMPERATURE", "MIN_TEMPERATURE",
           "TRAINING_PRESETS", "Gradients", "Learned", "LossFloor", "RowConflict", "TrainingRun", "TrainingTask",
           "adam_step_bound", "learned", "loss_and_gradients", "loss_floor", "loss_floor_reason", "outputs_task",
           "swapped_loss", "train", "weights_task"]
