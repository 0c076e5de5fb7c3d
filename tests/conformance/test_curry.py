"""`f.curry_right` and `f.curry_left` mean what quivers 0.25.2 computes for them.

Read from quivers (the 0.25.2 wheel, `core/morphisms.py`, `CurriedMorphism`, and its
`ExprCurry` docstring): for `f : X * Y -> Z`, `f.curry_right` is `X -> Z/Y` and
`f.curry_left` is `Y -> X\\Z`; the tensor is `f`'s, unchanged (the residuation is the
identity on the entries); a domain that is not a product of two or more factors is a
compile error. qvr reads a value of the residual as a pair (the moved factor's, then
the codomain's), so the curried relation composes with a morphism from `Y * Z`. The
program is our own, parsed by quivers' HEAD grammar.
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

SOURCE = """composition real [level=algebra]

object X : FinSet 2
object Y : FinSet 3
object Z : FinSet 4
object W : FinSet 2

morphism f : X * Y -> Z [role=latent]
morphism h : Y * Z -> W [role=latent]

define g = f.curry_right
define k = f.curry_left
define gh = f.curry_right >> h

export gh
"""

torch.manual_seed(7)
RAW_F = torch.randn(2, 3, 4, dtype=torch.float64)
RAW_H = torch.randn(3, 4, 2, dtype=torch.float64)


def _compiled(source: str = SOURCE) -> Compiler:
    checked = check(source)
    assert checked.ok, [d.message for d in checked.diagnostics]
    compiler = Compiler(checked)
    let = compiler.let("gh").double()
    with torch.no_grad():
        leaves = {m.key: m for m in let.modules() if isinstance(m, Relation)}
        leaves["f"].raw.copy_(RAW_F)
        leaves["h"].raw.copy_(RAW_H)
    compiler.let("g").double()
    compiler.let("k").double()
    return compiler


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_the_moved_factor_crosses_the_arrow() -> None:
    module = check(SOURCE)
    types = {n: module.lets[n].type for n in ("g", "k", "gh")}
    assert {n: t.label for n, t in types.items() if t is not None} == {
        "g": "X -> Z/Y",
        "k": "Y -> X\\Z",
        "gh": "X -> W",
    }


def test_the_entries_are_the_inner_relations() -> None:
    """curry_right's tensor is quivers' (the inner one, axis for axis); curry_left's has
    the same entries with X's axis moved behind the domain."""
    compiler = _compiled()
    f = torch.sigmoid(RAW_F)
    torch.testing.assert_close(compiler.relation("g"), f, rtol=0, atol=0)
    torch.testing.assert_close(compiler.relation("k"), f.permute(1, 0, 2), rtol=0, atol=0)


def test_it_composes_with_a_morphism_from_the_pair() -> None:
    """Under `real`, `(f.curry_right >> h)[x, w] = sum_{y, z} f[x, y, z] h[y, z, w]`."""
    got = _compiled().relation("gh")
    want = torch.einsum("xyz,yzw->xw", torch.sigmoid(RAW_F), torch.sigmoid(RAW_H))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_it_has_no_draws() -> None:
    with pytest.raises(QvrRuntimeError, match="curried relation"):
        _compiled().let("g").rsample(torch.zeros(1, dtype=torch.long))


def test_without_a_rule_the_kernel_probabilities_are_curried() -> None:
    """No composition declared: `f` is qvr's kernel, and the curried relation holds its
    probabilities: each x's entries sum to |Y|, one per row of f."""
    source = SOURCE.replace("composition real [level=algebra]\n", "").replace(
        "define gh = f.curry_right >> h\n\nexport gh", "export g"
    )
    module = check(source)
    assert not module.errors, module.errors
    got = Compiler(module).relation("g")
    assert got.shape == (2, 3, 4)
    torch.testing.assert_close(got.sum(dim=(1, 2)), torch.full((2,), 3.0))


@pytest.mark.parametrize(
    ("before", "after", "says"),
    [
        ("morphism f : X * Y -> Z", "morphism f : X -> Z", "product of two or more objects"),
        (
            "morphism f : X * Y -> Z [role=latent]",
            "object H : Real 2\nmorphism f : X * Y -> H ~ Normal",
            "between finite sets",
        ),
    ],
)
def test_quivers_refusals_are_errors_at_the_receiver(before: str, after: str, says: str) -> None:
    source = SOURCE.replace(before, after)
    errors = [d for d in check(source).errors if d.span.start == source.index("f.curry")]
    assert errors and errors[0].code == "QVR307", check(source).errors
    assert says in errors[0].message
    assert errors[0].span.start == source.index("f.curry_right")


def test_the_diagram_draws_it() -> None:
    graph = build_graph(check(SOURCE))
    found = {data.get("label"): data for _, data in graph.nodes(data=True)}
    assert "f.curry_right" in found
    assert found["f.curry_right"].get("detail") == "curried relation"
