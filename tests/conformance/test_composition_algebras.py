"""`composition NAME` means what quivers 0.25.2 computes for it: `f >> g` of two latents.

Read from quivers' source (the 0.25.2 wheel): the registry is `_ALGEBRA_REGISTRY` in
`dsl/compiler/_prelude.py`; each rule's `tensor_op`, `join`, `unit` and `zero` are in
`core/algebras.py`; a `role=latent` morphism is a `LatentMorphism` (`core/morphisms.py`)
whose tensor is `sigmoid(raw)` under every rule, and `f >> g` is a `ComposedMorphism`
whose tensor is `rule.compose(f.tensor, g.tensor, 1)`, i.e.
`(f >> g)[i, k] = join_j tensor_op(f[i, j], g[j, k])` (`CompositionRule.compose`).
`dsl/compiler/declarations.py` (`_compile_composition`) says what the compiler refuses.

What is compared: for every registered rule, the tensor qvr computes for `f >> g` from
fixed parameters against the formula written out entry by entry below from those
definitions; that a file without a declaration keeps qvr's reading (row-stochastic
latents, `markov`); and what qvr refuses, each where quivers fails too or where qvr
cannot give the file quivers' meaning (a de Morgan dual's `>>`, which quivers' own
`DualAlgebra.tensor_op` fails on; an inline body; draws from a relation).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from qvr_core.builtins.algebras import ALGEBRAS
from qvr_core.check import check
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.morphisms import Latent
from qvr_core.runtime.relations import Relation
from qvr_core.text import rules
from qvr_core.text.diagnostics import Rule
from tests.conformance import oracle

COMPOSED = """composition {rule}{level}

object A : FinSet 3
object B : FinSet 4
object C : FinSet 2

morphism f : A -> B [role=latent]
morphism g : B -> C [role=latent]

define h = f >> g

export h
"""

RAW_F = [[-2.0, -0.7, 0.3, 1.5], [0.9, -1.2, 2.2, 0.1], [-0.4, 0.6, -1.8, 1.1]]
RAW_G = [[0.5, -1.5], [1.9, 0.2], [-0.8, 1.3], [0.05, -0.3]]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


F = [[_sigmoid(x) for x in row] for row in RAW_F]
G = [[_sigmoid(x) for x in row] for row in RAW_G]

Entry = Callable[[list[float], list[float]], float]


def _pairs(a: list[float], b: list[float]) -> list[tuple[float, float]]:
    return list(zip(a, b, strict=True))


def _product(xs: list[float]) -> float:
    out = 1.0
    for x in xs:
        out *= x
    return out


#: (f >> g)[i, k] for each rule, from the f[i, j] (`a`) and g[j, k] (`b`), j = 0..3:
#: join over j of tensor_op(a_j, b_j), written out from quivers' core/algebras.py.
BY_HAND: dict[str, Entry] = {
    "product_fuzzy": lambda a, b: 1.0 - _product([1.0 - x * y for x, y in _pairs(a, b)]),
    "boolean": lambda a, b: max(x * y for x, y in _pairs(a, b)),
    "lukasiewicz": lambda a, b: min(1.0, sum(max(x + y - 1.0, 0.0) for x, y in _pairs(a, b))),
    "godel": lambda a, b: max(min(x, y) for x, y in _pairs(a, b)),
    "tropical": lambda a, b: min(x + y for x, y in _pairs(a, b)),
    "max_plus": lambda a, b: max(x + y for x, y in _pairs(a, b)),
    "log_prob": lambda a, b: math.log(sum(math.exp(x + y) for x, y in _pairs(a, b))),
    "real": lambda a, b: sum(x * y for x, y in _pairs(a, b)),
    "probability": lambda a, b: min(1.0, sum(min(1.0, x * y) for x, y in _pairs(a, b))),
    "counting": lambda a, b: sum(x * y for x, y in _pairs(a, b)),
    "markov": lambda a, b: sum(x * y for x, y in _pairs(a, b)),
    "material_impl": lambda a, b: _product([1.0 - x + x * y for x, y in _pairs(a, b)]),
}

#: quivers 0.25.2's de Morgan duals: `DualAlgebra.tensor_op` stacks its two operands,
#: which `compose` has broadcast to (3, 4, 1) and (1, 4, 2), so torch.stack fails there.
DUALS = ("reichenbach", "boolean_dual", "dual_lukasiewicz", "dual_godel")


def _level(rule: str) -> str:
    return " [level=semigroupoid]" if ALGEBRAS[rule].level == "semigroupoid" else ""


def _compiled(rule: str, level: str | None = None) -> Compiler:
    checked = check(COMPOSED.format(rule=rule, level=_level(rule) if level is None else level))
    assert checked.ok, [d.message for d in checked.diagnostics]
    compiler = Compiler(checked)
    h = compiler.let("h").double()
    with torch.no_grad():
        leaves = {m.key: m for m in h.modules() if isinstance(m, Relation)}
        leaves["f"].raw.copy_(torch.tensor(RAW_F, dtype=torch.float64))
        leaves["g"].raw.copy_(torch.tensor(RAW_G, dtype=torch.float64))
    return compiler


def test_every_rule_of_the_registry_has_its_formula_or_its_refusal() -> None:
    assert set(BY_HAND) | set(DUALS) == set(ALGEBRAS)
    assert not set(BY_HAND) & set(DUALS)


def test_quivers_grammars_parse_the_programs() -> None:
    try:
        accepted = oracle.accepted_by(COMPOSED.format(rule="real", level=" [level=algebra]"))
        plain = oracle.accepted_by(COMPOSED.format(rule="material_impl", level=""))
    except oracle.OracleUnavailable as exc:
        pytest.skip(f"quivers' parsers are unavailable: {exc}")
    assert oracle.modern(accepted) and "HEAD" in accepted, accepted
    assert "HEAD" in plain, plain


@pytest.mark.parametrize("rule", sorted(BY_HAND))
def test_f_then_g_is_the_join_of_the_tensor_products(rule: str) -> None:
    got = _compiled(rule).relation("h")
    assert got.shape == (3, 2)
    for i in range(3):
        for k in range(2):
            column = [G[j][k] for j in range(4)]
            expected = BY_HAND[rule](F[i], column)
            assert got[i, k].item() == pytest.approx(expected, rel=1e-12, abs=1e-12), (i, k)


def test_a_latent_under_a_rule_is_the_sigmoid_of_its_parameter() -> None:
    compiler = _compiled("real", " [level=algebra]")
    f = compiler.leaf(compiler.checked.morphisms["f"], None)
    assert isinstance(f, Relation)
    torch.testing.assert_close(f.tensor, torch.tensor(F, dtype=torch.float64))


def test_the_rule_is_looked_up_as_quivers_does_and_the_level_does_not_change_it() -> None:
    """`composition Real` is `real` (quivers lower-cases the name); `[level=rule]` and the
    0.11-0.14 spelling `as algebra` name the same rule."""
    expected = _compiled("real", "").relation("h")
    for written in ("Real", "real"):
        for level in (" [level=rule]", " as algebra", " [level=algebra]"):
            torch.testing.assert_close(_compiled(written, level).relation("h"), expected)


def test_without_a_declaration_latents_stay_row_stochastic_and_compose_as_markov() -> None:
    """qvr's reading of a file that declares no rule (quivers' default is product_fuzzy:
    docs/language.md says where the two differ)."""
    checked = check(COMPOSED.replace("composition {rule}{level}\n", ""))
    assert checked.ok and checked.algebra is None
    compiler = Compiler(checked)
    h = compiler.let("h")
    leaves = {m.key: m for m in h.modules() if isinstance(m, Latent)}
    with torch.no_grad():
        leaves["f"].logits.copy_(torch.tensor(RAW_F))
        leaves["g"].logits.copy_(torch.tensor(RAW_G))
    expected = torch.softmax(torch.tensor(RAW_F), -1) @ torch.softmax(torch.tensor(RAW_G), -1)
    torch.testing.assert_close(compiler.relation("h"), expected)
    assert h.rsample(torch.tensor([0, 2])).shape == (2,)  # still a chain of draws


@pytest.mark.parametrize("rule", DUALS)
def test_a_de_morgan_dual_is_refused_where_quivers_fails(rule: str) -> None:
    compiler = _compiled(rule)
    with pytest.raises(QvrError, match=rf"cannot compose under {rule} .*line 1"):
        compiler.relation("h")


def test_identity_needs_a_unit_as_in_quivers() -> None:
    source = COMPOSED.replace("define h = f >> g", "define h = f >> identity(B) >> g")
    checked = check(source.format(rule="real", level=""))
    assert checked.ok, checked.errors
    with_identity = Compiler(checked)
    with_identity.let("h").double()
    plain = _compiled("real", "")
    leaves = {m.key: m for m in with_identity.let("h").modules() if isinstance(m, Relation)}
    with torch.no_grad():
        leaves["f"].raw.copy_(torch.tensor(RAW_F, dtype=torch.float64))
        leaves["g"].raw.copy_(torch.tensor(RAW_G, dtype=torch.float64))
    torch.testing.assert_close(with_identity.relation("h"), plain.relation("h"))
    semi = check(source.format(rule="material_impl", level=" [level=semigroupoid]"))
    with pytest.raises(QvrError, match="identity needs a rule with a unit"):
        Compiler(semi).relation("h")


def test_an_inline_body_is_checked_but_not_computed() -> None:
    body = (
        " [level=algebra]\n    tensor_op(a, b) = a * b\n    join(t) = sum(t)\n"
        "    unit = 1.0\n    zero = 0.0"
    )
    checked = check(COMPOSED.format(rule="mine", level=body))
    assert checked.ok, checked.errors
    assert checked.algebra is not None and checked.algebra.rule is None
    with pytest.raises(QvrError, match=r"composition mine \(line 1\) defines its rule with an"):
        Compiler(checked).let("h")


def test_a_relation_has_no_draws() -> None:
    compiler = _compiled("log_prob", " [level=algebra]")
    with pytest.raises(QvrRuntimeError, match=r"relation valued in log_prob .*line 1"):
        compiler.let("h").rsample(torch.tensor([0, 1]))
    program = COMPOSED.format(rule="real", level="").replace(
        "export h\n",
        "program p : A -> C\n    sample y <- h\n    return y\n\nexport p\n",
    )
    checked = check(program)
    assert checked.ok, checked.errors
    with pytest.raises(QvrError, match=r"program p cannot run: f is a relation valued in real"):
        Compiler(checked).program("p")


@pytest.mark.parametrize(
    ("written", "rule", "message"),
    [
        # quivers: "unknown algebra 'reall'; available: ..."
        ("composition reall [level=algebra]", rules.UNDEFINED_NAME, "did you mean 'real'"),
        # quivers: "registered rule is a Semigroupoid, which is not at level 'algebra'"
        ("composition material_impl [level=algebra]", rules.COMPOSITION_RULE, "semigroupoid"),
        # no registered rule is a BilinearForm
        ("composition real [level=bilinear_form]", rules.COMPOSITION_RULE, "not at level"),
        # quivers' parser: "a composition option block carries only [level=...]"
        ("composition real [kind=algebra]", rules.UNKNOWN_OPTION, "takes one option"),
        # quivers' parser: "unknown composition level 'algebr'"
        ("composition real [level=algebr]", rules.INVALID_OPTION_VALUE, "did you mean"),
        # quivers: "missing required entries ['unit', 'zero']"
        (
            "composition mine [level=algebra]\n    tensor_op(a, b) = a * b\n    join(t) = sum(t)",
            rules.COMPOSITION_RULE,
            "unit, zero are missing",
        ),
    ],
)
def test_what_quivers_refuses_is_an_error(written: str, rule: Rule, message: str) -> None:
    checked = check(written + "\n\nobject A : FinSet 2\n")
    found = [d for d in checked.diagnostics if d.code == rule.code]
    assert found and message in found[0].message, checked.diagnostics
    assert not checked.ok
    assert checked.algebra is None
