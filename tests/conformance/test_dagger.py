"""`f.dagger` means what quivers 0.25.2 computes for it.

Read from quivers (the 0.25.2 wheel, `core/morphisms.py`, `Morphism.dagger`): for
`f : A -> B` between finite sets the dagger is the morphism `B -> A` whose tensor is
`f`'s with the domain and codomain axes swapped, under every rule; quivers' guide
(`dsl-declarations.md`, "Algebra") compiles it only under a rule at the algebra level.
qvr types it the same way, and only under a declared rule: without one a latent is a
kernel to draw from, whose transpose is none. The program is our own, written like the
gallery's probabilistic matrix factorisation, and parsed by quivers' HEAD grammar.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.graph import build_graph
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.relations import Relation
from tests.conformance import oracle

SOURCE = """composition RULE [level=algebra]

object Factor : FinSet 2
object User : FinSet 3
object Movie : FinSet 4

morphism U : Factor -> User [role=latent]
morphism V : Factor -> Movie [role=latent]

define affinity = U.dagger >> V

export affinity
"""

RAW_U = [[0.3, -1.2, 0.5], [2.0, 0.1, -0.7]]
RAW_V = [[-0.4, 0.9, 1.5, 0.0], [0.2, -2.0, 0.6, 1.1]]


def _source(rule: str = "real") -> str:
    return SOURCE.replace("RULE", rule)


def _compiled(rule: str = "real") -> Compiler:
    checked = check(_source(rule))
    assert checked.ok, [d.message for d in checked.diagnostics]
    compiler = Compiler(checked)
    let = compiler.let("affinity").double()
    with torch.no_grad():
        leaves = {m.key: m for m in let.modules() if isinstance(m, Relation)}
        leaves["U"].raw.copy_(torch.tensor(RAW_U, dtype=torch.float64))
        leaves["V"].raw.copy_(torch.tensor(RAW_V, dtype=torch.float64))
    return compiler


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(_source())


def test_the_dagger_reverses_the_type() -> None:
    module = check(_source())
    assert not module.diagnostics, module.diagnostics
    assert module.lets["affinity"].type is not None
    assert module.lets["affinity"].type.label == "User -> Movie"


@pytest.mark.parametrize(
    ("rule", "by_hand"),
    [
        ("real", lambda u, v: u.T @ v),
        ("tropical", lambda u, v: (u.T[:, :, None] + v[None, :, :]).amin(dim=1)),
        ("max_plus", lambda u, v: (u.T[:, :, None] + v[None, :, :]).amax(dim=1)),
    ],
)
def test_its_tensor_is_the_transpose_composed_under_the_rule(rule: str, by_hand: object) -> None:
    u = torch.sigmoid(torch.tensor(RAW_U, dtype=torch.float64))
    v = torch.sigmoid(torch.tensor(RAW_V, dtype=torch.float64))
    got = _compiled(rule).relation("affinity")
    assert got.shape == (3, 4)
    torch.testing.assert_close(got, by_hand(u, v), rtol=0, atol=1e-12)  # type: ignore[operator]  # a formula


def test_it_has_no_draws() -> None:
    let = _compiled().let("affinity")
    with pytest.raises(QvrRuntimeError, match="relation"):
        let.rsample(torch.zeros(1, 1, dtype=torch.long))


def test_without_a_declared_algebra_it_is_refused_where_written() -> None:
    source = _source().replace("composition real [level=algebra]\n", "")
    (found,) = check(source).errors
    assert found.code == "QVR316" and "declares no composition rule" in found.message
    assert found.span.start == source.index("dagger")
    semi = _source().replace("real [level=algebra]", "material_impl [level=semigroupoid]")
    (found,) = check(semi).errors
    assert found.code == "QVR316" and "semigroupoid" in found.message


def test_a_continuous_morphism_has_no_dagger() -> None:
    source = _source().replace(
        "morphism U : Factor -> User [role=latent]",
        "object Hidden : Real 3\nmorphism U : Factor -> Hidden [role=embed]",
    )
    errors = check(source).errors
    assert [d.code for d in errors][:1] == ["QVR307"], errors
    assert "finite sets" in errors[0].message


def test_the_diagram_draws_it() -> None:
    graph = build_graph(check(_source()))
    labels = {data.get("label") for _, data in graph.nodes(data=True)}
    assert "U.dagger" in labels
