"""`f.marginalize(A)` sums factors of a codomain out, as quivers 0.25.2 does.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/expressions.py` compiles
`ExprMarginalize` as `inner.marginalize(*sets)`, naming declared objects only, and
`core/morphisms.py`'s `MarginalizedMorphism` join-reduces the tensor over those codomain
components under the morphism's algebra. For qvr's kernels (no composition rule) the
join is the sum of probabilities: the marginal law. The programs are our own, written
like the guide's (`dsl-declarations.md`) and parsed by quivers' grammars.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.runtime.combinators import Definition
from qvr_core.runtime.morphisms import Morphism
from qvr_core.runtime.relations import Marginalized, relation
from tests.conformance import oracle

KERNELS = """object X : FinSet 3
object Y : FinSet 4
object Z : FinSet 2

morphism f : X -> Y [role=latent]
morphism g : X -> Z [role=latent]

define joint = fan(f, g)
define marginal = joint.marginalize(Y)
define direct = g

export marginal
export direct
"""

RELATIONS = """composition real [level=algebra]
object X : FinSet 3
object Y : FinSet 4
object Z : FinSet 2

morphism r : X -> Y * Z [role=latent]

define summed = r.marginalize(Y)

export summed
"""


def test_quivers_grammars_parse_them() -> None:
    oracle.require_head(KERNELS)
    oracle.require_head(RELATIONS)


def test_the_codomain_loses_the_factors_summed_out() -> None:
    for source, name, label in ((KERNELS, "marginal", "X -> Z"), (RELATIONS, "summed", "X -> Z")):
        module = check(source)
        assert [d.code for d in module.diagnostics] == []
        t = module.lets[name].type
        assert t is not None and t.label == label


def test_a_kernel_marginal_is_the_law_of_the_other_factors() -> None:
    """fan(f, g) draws Y and Z independently given X: summing Y out leaves g's law."""
    program = loads(KERNELS)
    marginal, direct = program["marginal"], program["direct"]
    assert isinstance(marginal, Morphism) and isinstance(direct, Morphism)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in marginal.parameters():
            p.normal_()
    x = torch.tensor([0, 1, 2, 2])
    z = torch.tensor([1, 0, 1, 0])
    assert torch.allclose(marginal.log_prob(x, z), direct.log_prob(x, z), atol=1e-6)
    assert marginal.rsample(x).shape == (4,)


def test_a_relation_is_join_reduced_under_the_rule() -> None:
    """Under `real` the join is the sum over the Y axis of r's tensor."""
    program = loads(RELATIONS)
    summed = program["summed"]
    assert isinstance(summed, Definition) and isinstance(summed.body, Marginalized)
    whole = relation(summed.body.inner, program.module)
    assert whole.shape == (3, 4, 2)
    assert torch.allclose(relation(summed, program.module), whole.sum(dim=1))


@pytest.mark.parametrize(
    ("before", "after", "code", "says"),
    [
        ("joint.marginalize(Y)", "joint.marginalize(X)", "QVR307", "X is not a factor"),
        ("joint.marginalize(Y)", "joint.marginalize(Y, Z)", "QVR307", "every factor"),
        ("joint.marginalize(Y)", "joint.marginalize(W)", "QVR101", "undefined object 'W'"),
        ("joint.marginalize(Y)", "joint.marginalize(1)", "QVR407", "objects of the codomain"),
        ("joint.marginalize(Y)", "f.marginalize(Y)", "QVR307", "every factor of its codomain Y:"),
    ],
)
def test_what_quivers_refuses_is_reported(before: str, after: str, code: str, says: str) -> None:
    found = [(d.code, d.message) for d in check(KERNELS.replace(before, after)).diagnostics]
    assert any(c == code and says in m for c, m in found), found
