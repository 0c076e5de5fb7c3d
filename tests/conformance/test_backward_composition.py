"""`g << f` is `f >> g`, as quivers 0.25.2 composes it.

Read from quivers (the 0.25.2 wheel): its parser accepts the composition operators `>>`
and `<<` (`dsl/parser/expressions.py`, `compose_expr`), and its compiler composes
`left << right` as `right >> left` (`dsl/compiler/expressions.py`, `_compose_with_op`).
The program is our own, written like the guide's (`dsl-declarations.md`) and parsed by
quivers' grammars.
"""

from __future__ import annotations

import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.format.formatter import format_source
from qvr_core.runtime.morphisms import Morphism
from tests.conformance import oracle

SOURCE = """object A : FinSet 3
object B : FinSet 4
object C : FinSet 2

morphism f : A -> B [role=latent]
morphism g : B -> C [role=latent]
morphism h : C -> A [role=latent]

define back = h << g << f
define forward = f >> g >> h
define mixed = g << f >> h
define grouped = h << (f >> g)

export back
export forward
export mixed
export grouped
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_it_is_typed_in_the_order_data_flows() -> None:
    module = check(SOURCE)
    assert [d.code for d in module.diagnostics] == []
    for name in ("back", "forward", "mixed", "grouped"):
        t = module.lets[name].type
        assert t is not None and t.label == "A -> A", name


def test_it_computes_the_forward_composition() -> None:
    program = loads(SOURCE)
    x = torch.tensor([0, 1, 2])
    values = torch.tensor([1, 0, 2])
    forward = program["forward"]
    assert isinstance(forward, Morphism)
    want = forward.log_prob(x, values)
    for name in ("back", "mixed", "grouped"):
        other = program[name]
        assert isinstance(other, Morphism)
        assert torch.equal(other.log_prob(x, values), want), name


def test_the_formatter_writes_it_as_written() -> None:
    assert format_source(SOURCE) == SOURCE
