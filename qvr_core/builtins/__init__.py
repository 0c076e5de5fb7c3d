"""The builtins of QVR, each described once and without torch.

Composition rules (`algebras.ALGEBRAS`), families (`families.FAMILIES`), object
constructors (`objects.OBJECT_CONSTRUCTORS`), combinators (`combinators.COMBINATORS`)
and the arithmetic builtin functions (`functions.FUNCTIONS`). The checker, runtime,
graph, editor features and the TextMate grammar (`scripts/gen_grammar.py`) read these tables;
`tests/builtins/test_agreement.py` checks that their name sets agree.
This package imports nothing else of qvr, so every layer may read it.
"""

from qvr_core.builtins.algebras import ALGEBRAS, Algebra
from qvr_core.builtins.combinators import COMBINATORS, Combinator, CombinatorCost
from qvr_core.builtins.constraints import Constraint
from qvr_core.builtins.families import (
    FAMILIES,
    KERNEL_FAMILIES,
    Axis,
    Family,
    KernelForm,
    Param,
    bind,
    resolved,
)
from qvr_core.builtins.functions import FUNCTIONS, METHODS, OPERATORS, Function, Operator
from qvr_core.builtins.keywords import RESERVED, STEP_KEYWORDS, TOP_KEYWORDS, Keyword
from qvr_core.builtins.objects import BY_KIND, OBJECT_CONSTRUCTORS, ObjectConstructor
from qvr_core.builtins.param_sources import LAYER_NORM, PARAM_SOURCES, ParamSource

__all__ = [
    "ALGEBRAS",
    "BY_KIND",
    "COMBINATORS",
    "FAMILIES",
    "FUNCTIONS",
    "KERNEL_FAMILIES",
    "LAYER_NORM",
    "METHODS",
    "OBJECT_CONSTRUCTORS",
    "OPERATORS",
    "PARAM_SOURCES",
    "RESERVED",
    "STEP_KEYWORDS",
    "TOP_KEYWORDS",
    "Algebra",
    "Axis",
    "Combinator",
    "CombinatorCost",
    "Constraint",
    "Family",
    "Function",
    "KernelForm",
    "Keyword",
    "ObjectConstructor",
    "Operator",
    "Param",
    "ParamSource",
    "bind",
    "resolved",
]
