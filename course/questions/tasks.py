"""The tasks a learner does on the explorer itself, and the rule that ticks task "nlp"."""

from __future__ import annotations

from dataclasses import dataclass

from course.text import N_

#: The Section 6 example's tokens, in matrix order (``core.I_LOVE_NLP``; the tests hold the two together).
SECTION_TOKENS = ("I", "love", "NLP")
#: v_NLP, which the output of a query dragged onto k_NLP moves towards.
NLP_VALUE = 4.0


@dataclass(frozen=True)
class Task:
    """A check done on the explorer itself; it ticks when the learner has done ``prompt`` there."""

    id: str
    number: int
    prompt: str


TASKS: tuple[Task, ...] = (
    Task("nlp", 1, N_("Start from the query of “love”, q = (0, 1). Drag q towards k_NLP = (1, 1) until NLP's weight is "
                      "clearly the largest of the three (ahead of each other weight by at least 0.05) and the "
                      "output has moved at least 0.05 towards v_NLP = 4.")),
    Task("rows", 2, N_("Select each row of the attention matrix (click it, or press 1, 2, 3) and compare it with the "
                    "worked examples: row “love” reads about (0.20, 0.40, 0.40), and every row's weights add up "
                    "to 1.")),
    Task("train", 3, N_("On the Train tab, paint a target that one head cannot learn (the tab says so and why), "
                     "then train two heads on it: the loss goes below one head's floor.")),
)
#: The tasks' ids, as a stored record names them.
TASK_IDS = tuple(t.id for t in TASKS)
#: When the tasks count: on the numbers the course gives and the page shows, done by the learner.
TASK_RULE = N_("The tasks tick themselves as you work on the explorer, on the Section 6 example as the course gives "
             "it: its keys and values unedited, scaling by √d_k on, no causal mask, the numbers shown (not hidden "
             "by the step-through), and not while your page follows a presenter.")
#: Decimals the page shows weights and outputs with: a task is judged on the numbers as the learner reads them.
TASK_DECIMALS = 4
#: Task "nlp": how far NLP's weight must lead each other weight, and how much nearer v_NLP = 4 the output must have
#: come, for a learner to see it happen. At q_love love and NLP tie at 0.4011 (output 4.4067), so any move
#: would do without them; along the drag the course describes (q = (x, 1) towards k_NLP) the lead reaches 0.05
#: at x ≈ 0.18 (output 4.33), a fifth of the way, and at k_NLP it is 0.2552 (output 4.0000).
NLP_LEAD = NLP_MOVED = 0.05


def nlp_task_met(weights, output: float, start_output: float) -> bool:
    """Task "nlp": NLP's weight (the last of the three) leads each other weight by at least :data:`NLP_LEAD`,
    and the output is at least :data:`NLP_MOVED` nearer v_NLP = 4 than where the query started
    (``start_output``), all as the page shows them (4 decimals).

    >>> nlp_task_met([0.2246, 0.3199, 0.4555], 4.1905, 4.4067), nlp_task_met([0.1989, 0.3977, 0.4034], 4.3976, 4.4067)
    (True, False)
    """
    w = [round(float(x), TASK_DECIMALS) for x in weights]
    out, start = round(float(output), TASK_DECIMALS), round(float(start_output), TASK_DECIMALS)
    eps = 0.5 * 10 ** -TASK_DECIMALS  # the shown numbers' own rounding: a lead of exactly 0.0500 is enough
    return (len(w) == 3 and w[2] - max(w[:2]) >= NLP_LEAD - eps
            and abs(out - NLP_VALUE) <= abs(start - NLP_VALUE) - NLP_MOVED + eps)
