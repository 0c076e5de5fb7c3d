"""`object Word : {the, dog, runs}`: a finite set given by its elements.

quivers 0.25.2 (`dsl/compiler/declarations.py`, `_compile_type`) builds it as an
`EnumSet` of that many elements; qvr types it as a FinSet of that size, so it is a
plate, a Categorical's support and a Dirichlet's `over=` like any finite object, and
hover names its elements. The program is our own, parsed by quivers' HEAD grammar.
"""

from __future__ import annotations

import torch

from qvr_core.check import check
from qvr_core.check.types import ObjectType
from qvr_core.ide.hover import hover_at
from qvr_core.runtime.model import compile_model
from tests.conformance import oracle

SOURCE = """object Word : {the, dog, runs}
object Row : FinSet 6

program tokens : Row -> Row
    sample p <- Dirichlet(1.0) [over=Word]
    observe w : Row <- Categorical(p)
    return p

export tokens
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_it_is_a_finite_set_of_its_elements() -> None:
    module = check(SOURCE)
    assert not module.diagnostics, module.diagnostics
    assert module.objects["Word"] == ObjectType("Word", "finset", 3, ("the", "dog", "runs"))
    found = hover_at(module, SOURCE.index("Word]"))
    assert found is not None and "its elements {the, dog, runs}" in found.plain


def test_the_model_over_it_is_the_model_over_finset_3() -> None:
    model = compile_model(check(SOURCE), "tokens")
    sized = compile_model(check(SOURCE.replace("{the, dog, runs}", "FinSet 3")), "tokens")
    values = {
        "p": torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64),
        "w": torch.tensor([0, 1, 1, 2, 0, 1]),
    }
    torch.testing.assert_close(model.log_joint({}, values), sized.log_joint({}, values))


def test_an_element_listed_twice_is_reported_where_it_is() -> None:
    source = SOURCE.replace("{the, dog, runs}", "{the, dog, the}")
    (found,) = check(source).errors
    assert found.code == "QVR102"
    assert found.span.start == source.index("the}")
