"""`morphism W : Real 8 -> Real 4` names its sides inline, as quivers 0.25.2 allows.

Read from quivers (the 0.25.2 wheel): a morphism's domain and codomain are resolved by
`_resolve_any_space` (`dsl/compiler/declarations.py`), which builds `Real 8` or
`FinSet 3` written in place as it builds a declared object. The program is our own,
written like the guide's (`dsl-declarations.md`) and parsed by quivers' grammars.
"""

from __future__ import annotations

import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.runtime.morphisms import Morphism
from tests.conformance import oracle

SOURCE = """object Word : FinSet 10

morphism embed : Word -> Real 8 [role=embed]
morphism W : Real 8 -> Real 4 [role=kernel] ~ Normal
morphism d : Real 4 -> FinSet 3 [role=kernel] ~ Categorical

define net = embed >> W >> d

export net
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_each_side_is_typed_as_written() -> None:
    module = check(SOURCE)
    assert [d.code for d in module.diagnostics] == []
    assert module.morphisms["W"].type.label == "Real 8 -> Real 4"
    net = module.lets["net"].type
    assert net is not None and net.label == "Word -> FinSet 3"


def test_it_runs() -> None:
    net = loads(SOURCE)["net"]
    assert isinstance(net, Morphism)
    draws = net.rsample(torch.tensor([1, 2, 3]))
    assert draws.shape == (3,) and bool(((draws >= 0) & (draws < 3)).all())


def test_a_mismatch_is_reported_with_its_dimensions() -> None:
    found = check(SOURCE.replace("Real 8 -> Real 4", "Real 6 -> Real 4"))
    assert any(d.code == "QVR201" and "8" in d.message and "6" in d.message for d in found.errors)
