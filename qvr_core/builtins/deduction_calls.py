"""What a Bayesian program calls on a `deduction`, each described once.

`let chart = parse(D, sentence)` runs deduction D over the words of a data name, and
the chart's `goal_weight()` is its goal's weight, a real number (quivers 0.25.2,
`dsl/program_elaboration.py`, `_parse_call`; its reference machine binds `chart` to that
weight, which `goal_weight()` reads). The checker (`check/deduction_calls.py`) types
them, the runtime (`runtime/deduction.py`) computes them.
"""

from __future__ import annotations

#: `parse(D, sentence)`: a let's whole value.
PARSE = "parse"
PARSE_DOC = (
    "parse(D, sentence): runs deduction D over the words of the data name `sentence` "
    "(word ids, as D's lexicon lists its words) and binds its chart; a let's whole value"
)
#: `chart.goal_weight()`: the chart's goal weight.
GOAL_WEIGHT = "goal_weight"
GOAL_WEIGHT_DOC = (
    "chart.goal_weight(): the weight of the deduction's goal over the whole sentence, "
    "the plus over its derivations in the deduction's semiring (-inf with no parse in "
    "LogProb)"
)
