"""The questions, as data: Section 6's fourteen that count and its practice problems, the Train tab's and the
Real model tab's; every one checked at import (:class:`~course.questions.grading.Question`).
"""

from __future__ import annotations

import math
from types import MappingProxyType

from course.questions.grading import Choice, Question
from course.text import N_

# Section 6, "Check your understanding": the fourteen questions that count, in the course's order.
QUESTIONS: tuple[Question, ...] = (
    Question(
        "key-role", 1, "choice", N_("In the query / key / value picture, what is a key for?"),
        answer=1,
        choices=(
            Choice(N_("It is what its token hands over once the token is judged relevant."),
                   N_("That is a value's job: values are what gets retrieved, while keys are only compared.")),
            Choice(N_("It is compared with a query to score how relevant its token is, and is never handed over "
                   "itself.")),
            Choice(N_("It is what the current token is asking for."),
                   N_("That is the query: the request being made, not what a token offers to be matched against.")),
            Choice(N_("It keeps a running count of how often its token has been attended to."),
                   N_("Attention keeps no such count: a key exists only to be compared with a query.")),
        ),
        why=N_("A key is matched against a query to give a relevance score. It is never the result itself: "
            "what gets handed over is the value."),
    ),
    Question(
        "two-queries", 2, "choice",
        N_("Queries q_A and q_B are different, but both look at the very same keys and values. Can their attention "
        "outputs differ?"),
        answer=3,
        choices=(
            Choice(N_("No: the query has no effect on the output, only the keys and values do."),
                   N_("The query is what sets every key's relevance score, so it acts directly on the output.")),
            Choice(N_("No: attention gives the same output whatever its inputs are."),
                   N_("Attention responds to all three of its inputs, the query included: its output is not fixed.")),
            Choice(N_("Only if the keys or the values change as well."),
                   N_("Nothing else needs to change: with the keys and values left as they are, a new query alone "
                   "changes which of them are emphasised.")),
            Choice(N_("Yes: each key's relevance is judged from the query, so another query can weight the values "
                   "differently.")),
        ),
        why=N_("Relevance is judged from the query. In this section the queries of “I” and “love” used the same "
            "keys and values and still gave different outputs: 3.59 and 4.41."),
        hint=N_("Look back at the two worked examples, for “I” and for “love”: same keys, same values. What were "
             "their outputs?"),
    ),
    Question(
        "self-sources", 3, "choice", N_("In self-attention, what are a token's query, key and value computed from?"),
        answer=0,
        choices=(
            Choice(N_("All three are learned projections of the tokens of the same input sequence, and every position "
                   "attends back over that sequence, itself included.")),
            Choice(N_("The queries come from one sequence (a decoder), the keys and values from another (an encoder)."),
                   N_("That is cross-attention, where a decoder attends to a separate encoder's output, not "
                   "self-attention.")),
            Choice(N_("The queries come from the tokens, but the keys and values are constants shared by every token."),
                   N_("Keys and values are learned projections of each token too, not fixed constants shared by all.")),
            Choice(N_("The values come from the tokens, but the queries and keys are hyperparameters set by hand."),
                   N_("Nobody sets queries or keys by hand: both are learned projections of each token's embedding.")),
        ),
        why=N_("In self-attention the queries, keys and values are all derived from the same sequence, and each "
            "position attends over that whole sequence, including itself."),
        hint=N_("The word “self” tells you where all three vectors come from."),
    ),
    Question(
        "recipe-order", 4, "choice", N_("In which order does the attention recipe take its three steps?"),
        answer=2,
        choices=(
            Choice(N_("Normalise the values, combine the queries, then score the keys."),
                   N_("The order is scrambled, and which vector plays which part is mixed up as well.")),
            Choice(N_("Combine the keys with the values, score the result against the query, then normalise."),
                   N_("Nothing is combined before scoring: the query is scored against the keys first.")),
            Choice(N_("Score the query against every key, normalise the scores with softmax, then combine the values "
                   "using those weights.")),
            Choice(N_("Score the values against one another, normalise the queries, then combine the keys."),
                   N_("Values are not scored against each other and queries are not normalised: every part here is "
                   "given to the wrong vector.")),
        ),
        why=N_("Score (the query against each key), normalise (softmax turns the scores into weights), combine "
            "(add up the values, each multiplied by its weight)."),
    ),
    Question(
        "why-scale", 5, "choice",
        N_("Scaled dot-product attention divides every score by √d_k. Why not use the raw dot products as they are?"),
        answer=1,
        choices=(
            Choice(N_("Dividing turns the scores into a probability distribution, so no softmax is needed."),
                   N_("Softmax still has to follow: scaling on its own does not make the scores a probability "
                   "distribution.")),
            Choice(N_("As d_k grows, so does the variance of the raw dot product; dividing by √d_k holds the scores' "
                   "spread roughly constant, which keeps softmax from saturating where its gradients almost vanish.")),
            Choice(N_("It makes every attention weight equal."),
                   N_("Scaling narrows the spread of the scores without flattening them: differences in relevance "
                   "still come through after softmax.")),
            Choice(N_("It turns negative dot products into positive ones."),
                   N_("The sign of the entries has nothing to do with it: the factor is about the spread of the dot "
                   "product growing with d_k, whatever the signs.")),
        ),
        why=N_("With independent unit-variance entries, q·k has variance d_k. Dividing by √d_k brings the spread "
            "back to about 1 whatever d_k is, which keeps softmax out of its saturated region, where gradients "
            "are close to zero."),
        hint=N_("The formula card recalled in this section says what dividing by √d_k restores about the scores' "
             "variance."),
    ),
    Question(
        "softmax-guarantee", 6, "choice",
        N_("What does softmax guarantee about the attention weights a₁, …, aₙ it returns?"),
        answer=2,
        choices=(
            Choice(N_("They are all equal."),
                   N_("They are equal only when the scores are equal; in general they differ with relevance.")),
            Choice(N_("Exactly one of them is 1 and all the others are 0."),
                   N_("That one-hot result is only an extreme limit: ordinary softmax gives every candidate some "
                   "weight, in different amounts.")),
            Choice(N_("Each lies between 0 and 1, and together they add up to exactly 1: a probability distribution.")),
            Choice(N_("Some can be negative, when their scores are negative."),
                   N_("They are never negative: each is e^(s_i), which is positive, divided by a positive sum.")),
        ),
        why=N_("Softmax always returns a probability distribution: every weight lies between 0 and 1 (strictly, in "
            "practice) and the weights add up to exactly 1."),
    ),
    Question(
        "weighted-output", 7, "number",
        N_("Two keys carry the weights a₁ = 0.731 and a₂ = 0.269 (question 9 works out where 0.731 comes from), "
        "and their values are v₁ = 10 and v₂ = 2. What output does attention give? Round it to 2 decimal places."),
        answer="7.85", decimals=2, exact="7.848",  # 0.731 × 10 + 0.269 × 2, exactly
        why=N_("output = 0.731 × 10 + 0.269 × 2 = 7.31 + 0.538 = 7.848 ≈ 7.85."),
        hint=N_("Multiply each weight by its value, then add: a₁v₁ + a₂v₂."),
    ),
    Question(
        "row-sum", 8, "choice",
        N_("Take this section's 3 × 3 self-attention matrix. What do the three weights in any one of its rows add up "
        "to?"),
        answer=1,
        choices=(
            Choice(N_("3, the number of columns."),
                   N_("Each row is one query's softmax over all the keys, and a softmax totals 1 however many columns "
                   "there are.")),
            Choice(N_("1, in every row.")),
            Choice(N_("A different total in each row, depending on its query."),
                   N_("Adding up to 1 is guaranteed by softmax, so it holds for every row alike: the total does not "
                   "vary.")),
            Choice(N_("0."),
                   N_("Softmax weights are never negative and add up to 1; they could only total 0 if every weight "
                   "were 0, which softmax never gives.")),
        ),
        why=N_("Every row holds one query's softmax distribution over the keys, so softmax's guarantee makes each row "
            "add up to exactly 1."),
    ),
    Question(
        "two-key-softmax", 9, "number",
        N_("Two keys have the scaled scores s₁ = 1.0 and s₂ = 0.0. What is a₁, the softmax weight of key 1? "
        "Round to 3 decimal places."),
        answer="0.731", decimals=3, exact=repr(1 / (1 + math.exp(-1.0))),
        why=N_("Subtract the larger score (1.0): (0, −1.0). Exponentiate: (1, 0.3679). Add: 1.3679. "
            "a₁ = 1 / 1.3679 ≈ 0.731."),
        hint=N_("To keep the numbers small, subtract the larger score from both before exponentiating: (0, −1.0)."),
    ),
    Question(
        "dot-product", 10, "number",
        N_("q = (2, 0) and k = (3, 1); note that q's second entry is zero. What is the raw dot product q·k?"),
        answer="6", decimals=0, exact="6",
        why=N_("q·k = 2 × 3 + 0 × 1 = 6."),
        hint=N_("Multiply the entries that line up, then add: 2 × 3 + 0 × 1."),
    ),
    Question(
        "output-between", 11, "choice",
        N_("The worked example found the output of query “love” to be about 4.41, from the values 2, 6 and 4 "
        "(I, love and NLP). What is true of that output?"),
        answer=3,
        choices=(
            Choice(N_("It is the plain average of 2, 6 and 4."),
                   N_("Averaging 2, 6 and 4 without weights gives 4.0, not 4.41; and here the weights were not equal: "
                   "love and NLP each outweighed I.")),
            Choice(N_("It has to equal one of the three values."),
                   N_("A weighted sum blends the values; it does not have to land on any one of them.")),
            Choice(N_("It could just as well have come out above 6, the largest value."),
                   N_("A weighted average never goes past its largest input (6 here); 4.41 is well below it.")),
            Choice(N_("It lies between the smallest and the largest value, pulled towards 6 and 4, which carry most of "
                   "the weight, and away from 2.")),
        ),
        why=N_("A weighted sum of values, with weights that add up to 1, always lies between the smallest and the "
            "largest value. 4.41 lies between 2 and 6, pulled up by 6 and 4, which carry most of the weight, and "
            "held down only a little by 2, which carries the least."),
        hint=N_("Attention gives a weighted average. How does 4.41 compare with the unweighted average of 2, 6 and 4, "
             "which is 4.0?"),
    ),
    Question(
        "scaled-score", 12, "number",
        N_("q = (2, 0), k = (3, 1) and d_k = 2. What is the scaled score q·k / √d_k? Round to 3 decimal places."),
        answer="4.243", decimals=3, exact=repr(6 / math.sqrt(2)),
        why=N_("q·k = 6 and √2 ≈ 1.4142, so 6 / 1.4142 ≈ 4.243."),
        hint=N_("The raw dot product is 6 (question 10): divide it by √2."),
    ),
    Question(
        "values-trap", 13, "choice",
        N_("A student scores each key with q·vᵢ (against the values) instead of q·kᵢ (against the keys). What is "
        "wrong with that?"),
        answer=0,
        choices=(
            Choice(N_("Relevance would then depend on the very content to be retrieved instead of on a description "
                   "built for matching: keys and values do different jobs.")),
            Choice(N_("Nothing: keys and values are interchangeable, so the scores come out the same."),
                   N_("Keys and values are there for different jobs, so putting one in place of the other changes "
                   "what a score measures.")),
            Choice(N_("Values are always single numbers, so q·v can never be computed."),
                   N_("In general self-attention values can be vectors as easily as numbers; this section's example "
                   "only used single numbers to keep things simple.")),
            Choice(N_("Softmax only accepts scores that were computed from keys."),
                   N_("Softmax normalises whatever numbers it is given: what is wrong is what the score stands "
                   "for, and softmax itself sets no such limit.")),
        ),
        why=N_("Keys are built for matching and values for being retrieved. Scoring against the values makes "
            "relevance depend on the content that would be handed over, instead of on a description meant for "
            "comparison."),
    ),
    Question(
        "orthogonal-score", 14, "number",
        N_("q = (1, 1), k = (1, −1) and d_k = 2. What is the scaled score q·k / √d_k? Round to 3 decimal places."),
        answer="0.000", decimals=3, exact="0",
        why=N_("q·k = 1 × 1 + 1 × (−1) = 0, and 0 / √2 = 0: q and k are orthogonal, so their score is exactly zero, "
            "scaled or not."),
        hint=N_("Start with the raw dot product: 1 × 1 + 1 × (−1)."),
    ),
)

# Section 6, "Practice": five problems that do not count toward progress. The course gives only their answers
# and reasons; the wrong choices and their explanations here are this app's own.
PRACTICE: tuple[Question, ...] = (
    Question(
        "practice-blended", 1, "choice", N_("Which vectors are blended together to make the attention output?"),
        answer=2, counts=False,
        choices=(
            Choice(N_("The keys, weighted by the attention weights."),
                   N_("Keys are only compared with the query to give the scores; they are not part of the output.")),
            Choice(N_("The queries of every token."),
                   N_("The query makes the request; it is not mixed into the output.")),
            Choice(N_("The values, each in the proportion of its attention weight.")),
            Choice(N_("The raw scores q·kᵢ."),
                   N_("The scores only decide the weights; what gets mixed is the values.")),
        ),
        why=N_("Attention's output adds up the values, each in the proportion its softmax weight gives."),
    ),
    Question(
        "practice-dot", 2, "number", N_("q = (1, 2) and k = (2, 1). What is the raw dot product q·k?"),
        answer="4", decimals=0, exact="4", counts=False,
        why=N_("q·k = 1 × 2 + 2 × 1 = 4."),
        hint=N_("1 × 2 + 2 × 1."),
    ),
    Question(
        "practice-scale", 3, "number",
        N_("A raw dot product of 8, with d_k = 4: what is it after dividing by √d_k? Round to 3 decimal places."),
        answer="4.000", decimals=3, exact="4", counts=False,
        why=N_("√4 = 2, and 8 / 2 = 4."),
        hint=N_("√4 = 2: divide 8 by it."),
    ),
    Question(
        "practice-softmax", 4, "number",
        N_("Two scaled scores are s₁ = 2.0 and s₂ = 0.0. What is the softmax weight a₁? Round to 3 decimal places."),
        answer="0.881", decimals=3, exact=repr(1 / (1 + math.exp(-2.0))), counts=False,
        why=N_("Subtract the larger score: (0, −2.0). Exponentiate: (1, 0.1353). Add: 1.1353. "
            "a₁ = 1 / 1.1353 ≈ 0.881."),
        hint=N_("Subtract the larger score (2.0) from both first, then exponentiate and normalise."),
    ),
    Question(
        "practice-queries", 5, "choice",
        N_("Two queries differ, while the keys and values they attend over are the same. Can their outputs differ?"),
        answer=1, counts=False,
        choices=(
            Choice(N_("No: with the same keys and values, the output is fixed."),
                   N_("The query sets every score, so the same keys and values do not fix the output.")),
            Choice(N_("Yes: the query alone sets each key's relevance, so another query can move the weights, and "
                   "with them the output.")),
            Choice(N_("Only when d_k is larger than 2."),
                   N_("The size of the vectors has nothing to do with it: even this section's d_k = 2 example gives "
                   "different outputs for different queries.")),
        ),
        why=N_("Every score depends on the query: with the keys and values fixed, changing the query alone changes "
            "the output, as the worked examples for “I” and “love” show."),
    ),
)

# Module 2 on the Train tab: what training gives each W, and what one head cannot learn. They earn credit, scored
# on their own (Progress.score(TRAIN_QUESTIONS)): Section 6's score stays its fourteen questions'.
TRAIN_QUESTIONS: tuple[Question, ...] = (
    Question(
        "train-roles", 1, "choice",
        N_("On the Train tab, train “Attend to the previous token” to the end, then tick Swap W_Q and W_K. What "
           "happens to the loss?"),
        answer=1,
        choices=(
            Choice(N_("It stays about the same: W_Q and W_K were drawn from the same random distribution, so they "
                      "are interchangeable."),
                   N_("That holds at the random start only (1.6102 → 1.6088). Training gave each its specialty: "
                      "after it, the swap makes every token look for the next token instead of the previous one.")),
            Choice(N_("It jumps back up: W_Q learned what each token looks for and W_K what each token exposes; "
                      "swapped, every token attends to the next token instead of the previous one.")),
            Choice(N_("It falls further: the swap adds what W_K learned to what W_Q learned."),
                   N_("A swap trains nothing: it exchanges the two learned matrices, and the scores become their "
                      "transpose (token i scores j as j scored i).")),
        ),
        why=N_("A score is x_i W_Q W_Kᵀ x_jᵀ. Swapping W_Q and W_K transposes every score: token i now scores j as "
               "j scored i, so “the previous token” becomes “the next token”, and the loss goes from 0.0013 to "
               "about 19 (seed 0)."),
    ),
    Question(
        "train-floor", 2, "choice",
        N_("On the Train tab, paint “attend to the previous token” on “I love NLP” (I → I, love → I, "
           "NLP → love) and train one head. Why does the loss stop at log 2 = 0.6931 instead of reaching 0?"),
        answer=2,
        choices=(
            Choice(N_("The learning rate is too small: with more steps the loss would reach 0."),
                   N_("No number of steps and no learning rate helps: 0.6931 is the lowest loss any W_Q and W_K "
                      "give one head on these embeddings.")),
            Choice(N_("Softmax weights are never exactly 0 or 1, so no loss can go below log 2."),
                   N_("Weights only approach 0 and 1, but the loss can come as close to 0 as you like: the "
                      "presets train to 0.001. This floor comes from the embeddings.")),
            Choice(N_("x_NLP = x_I + x_love, so whatever W_Q and W_K are, NLP's scores are the sum of I's and "
                      "love's: the three rows cannot all be what the target asks.")),
        ),
        why=N_("One head scores token j for token i by x_i W_Q W_Kᵀ x_jᵀ, linear in x_i. With x_NLP = x_I + "
               "x_love, NLP's row of scores is I's plus love's, whatever the W's. Two heads average two patterns "
               "and go below it."),
    ),
)

# The Model tab: Section 6's recipe inside a real pretrained model (all-MiniLM-L6-v2). Scored on their own, like the
# Train tab's. The numbers are the model's, as the reference implementation gives them (tests/test_check_questions.py).
MODEL_QUESTIONS: tuple[Question, ...] = (
    Question(
        "model-previous", 1, "choice",
        N_("On the Real model tab, type “The cat sat on the mat.” Which head attends to the previous token: for "
           "each word, most of its weight on the word just before it?"),
        answer=1,
        choices=(
            Choice(N_("Layer 5, head 6."),
                   N_("That head puts 0.92 of each word’s weight on [CLS], the “no-op” where a head parks its "
                      "attention: press the [CLS] button to see it.")),
            Choice(N_("Layer 1, head 3.")),
            Choice(N_("Layer 2, head 9."),
                   N_("That head looks the other way: 0.68 of each word’s weight on the next word. Its queries match "
                      "the keys of the token after them.")),
        ),
        hint=N_("The tab’s “Previous token” button opens the head that does it most; its map has a bright line just "
                "below the diagonal."),
        why=N_("Layer 1, head 3 puts 1.00 of each word’s weight on the word before it (cat → the, sat → cat, …): "
               "the pattern the Train tab’s “Attend to the previous token” teaches one head, in a real model."),
    ),
    Question(
        "model-scale", 2, "number",
        N_("The model has d_model = 384 numbers per token and 12 heads per layer, so each head’s queries and keys "
           "have d_k = 384 / 12 = 32 numbers. By what number does every head divide q·k before the softmax? Round "
           "to 3 decimal places."),
        answer="5.657", decimals=3, exact="5.65685424949238",
        hint=N_("The scores are q·k/√d_k, as in Section 6."),
        why=N_("s = q·k/√d_k with d_k = 32: √32 ≈ 5.657. The inspector’s column s is its column q·k divided by it."),
    ),
)

ALL_QUESTIONS: tuple[Question, ...] = QUESTIONS + PRACTICE + TRAIN_QUESTIONS + MODEL_QUESTIONS
#: Every question by id; read-only, like all module-level data here (every learner's page shares it).
BY_ID = MappingProxyType({q.id: q for q in ALL_QUESTIONS})
if len(BY_ID) != len(ALL_QUESTIONS):
    raise ValueError("question ids must be unique")
