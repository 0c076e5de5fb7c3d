"""`contraction` declarations and their calls mean what quivers 0.25.2 computes.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/programs.py` `_compile_contraction`
(options `rule`, `wiring`, `share`; `rule=` required and looked up lower-cased in the
registry; the wiring inferred by `_infer_wiring_from_signature` unless written; the
wiring's inputs as many as the parameters), `_compile_morphism_call` (the arguments
looked up by name, their count checked, the result an `ObservedMorphism` of the
declared type) and `core/wiring.py` `EinsumWiring.apply` (broadcast to the axes in order
of first mention, fold the rule's tensor, join the axes the output drops). A
`LatentMorphism` has one axis per factor of its domain and codomain (`core/morphisms.py`).
The guide is `docs/guides/dsl-contractions.md`. The programs are our own, in the
gallery's style, and parsed by quivers' HEAD grammar; the expected tensors are the
einsums written out by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from qvr_core.check import check
from qvr_core.graph import build_graph
from qvr_core.ide.hover import hover_at
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.relations import Relation
from qvr_core.sizing.resources import estimate
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic
from tests.conformance import oracle
from tests.conformance.shared import corpus

SOURCE = """composition real [level=algebra]

object Item : FinSet 4
object PredDim : FinSet 2
object ArgDim : FinSet 3
object Judgment : FinSet 3

morphism pred_embed : Item -> PredDim [role=latent]
morphism arg_embed : Item -> ArgDim [role=latent]
morphism interaction : (PredDim * ArgDim) -> Judgment [role=latent]

contraction bilinear_score (
    p : Item -> PredDim,
    a : Item -> ArgDim,
    w : (PredDim * ArgDim) -> Judgment,
) : Item -> Judgment [rule=RULE]

define plausibility = bilinear_score(pred_embed, arg_embed, interaction)

export plausibility
"""

#: quivers' raw parameters have the shape (*domain.shape, *codomain.shape).
RAW = {
    "pred_embed": [[0.3, -1.2], [2.0, 0.1], [-0.7, 0.4], [1.1, -0.2]],
    "arg_embed": [[-0.4, 0.9, 1.5], [0.2, -2.0, 0.6], [1.0, 0.0, -0.3], [0.5, 0.8, -1.1]],
    "interaction": [
        [[0.1, -0.5, 0.9], [1.3, 0.2, -0.8], [-1.0, 0.7, 0.4]],
        [[0.6, 1.4, -0.3], [-0.2, -1.6, 0.5], [0.8, 0.0, -0.9]],
    ],
}

EXPLICIT = """composition real [level=algebra]

object A : FinSet 3
object B : FinSet 4

morphism f : A -> B [role=latent]
morphism g : A -> B [role=latent]

contraction swap (x : A -> B) : B -> A [rule=real, wiring="ab -> ba"]
contraction broadcast_add (x : A -> B, y : A -> B) : A -> B [rule=RULE]

define back = swap(f)
define both = broadcast_add(f, g)

export back
"""


def _source(rule: str = "real") -> str:
    return SOURCE.replace("RULE", rule)


def _fixed(compiler: Compiler, let: str, raw: dict[str, object]) -> torch.Tensor:
    """The let's tensor with its latents' `raw` set (the same values for every rule)."""
    module = compiler.let(let).double()
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, Relation):
                m.raw.copy_(torch.tensor(raw[m.key], dtype=torch.float64))
    return compiler.relation(let)


def _latents() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    p, a, w = (torch.sigmoid(torch.tensor(RAW[k], dtype=torch.float64)) for k in RAW)
    return p, a, w


def _at(text: str, needle: str, nth: int = 0) -> int:
    start = -1
    for _ in range(nth + 1):
        start = text.index(needle, start + 1)
    return start


def _only(text: str, code: str) -> Diagnostic:
    errors = [d for d in check(text).diagnostics if d.code == code]
    assert len(errors) == 1, check(text).diagnostics
    return errors[0]


# ------------------------------------------------------------------ the grammar


@pytest.mark.parametrize("text", [_source(), EXPLICIT.replace("RULE", "tropical")])
def test_quivers_grammars_parse_them(text: str) -> None:
    oracle.require_head(text)


# ------------------------------------------------------------------ types and wiring


def test_the_call_has_the_declared_type() -> None:
    module = check(_source())
    assert not module.diagnostics, module.diagnostics
    assert module.lets["plausibility"].type is not None
    assert module.lets["plausibility"].type.label == "Item -> Judgment"
    found = module.contractions["bilinear_score"]
    assert found.rule == "real" and [p.name for p in found.params] == ["p", "a", "w"]


@pytest.mark.parametrize(
    ("signature", "spec"),
    [
        # the guide's standard composition: B is in both inputs, not in the output
        ("(f : A -> B, g : B -> C) : A -> C", "ab, bc -> ac"),
        # a shared kept axis: both A and B are in the output, so nothing is joined
        ("(f : A -> B, g : A -> B) : A -> B", "ab, ab -> ab"),
        # the bilinear score: B and C are contracted, A and D kept
        ("(p : A -> B, a : A -> C, w : (B * C) -> D) : A -> D", "ab, ac, bcd -> ad"),
    ],
)
def test_the_wiring_is_inferred_from_the_signature(signature: str, spec: str) -> None:
    text = (
        "object A : FinSet 2\nobject B : FinSet 3\nobject C : FinSet 4\nobject D : FinSet 5\n"
        f"contraction op {signature} [rule=Real]\n"
    )
    module = check(text)
    assert not module.errors, module.errors
    found = module.contractions["op"]
    assert found.wiring.spec == spec and found.inferred
    assert found.rule == "real"  # looked up lower-cased, as quivers does


def test_hover_shows_the_signature_and_the_wiring() -> None:
    text = _source()
    module = check(text)
    for offset in (_at(text, "bilinear_score"), _at(text, "bilinear_score", 1)):
        found = hover_at(module, offset)
        assert found is not None
        assert "ab, ac, bcd -> ad" in found.plain and "joins over PredDim, ArgDim" in found.plain
        assert "w : PredDim * ArgDim -> Judgment" in found.plain


# ------------------------------------------------------------------ what it computes


BY_HAND: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "real": lambda p, a, w: torch.einsum("ib,ic,bcs->is", p, a, w),
    "tropical": lambda p, a, w: (p[:, :, None, None] + a[:, None, :, None] + w[None, :, :, :]).amin(
        dim=(1, 2)
    ),
    "log_prob": lambda p, a, w: torch.logsumexp(
        p[:, :, None, None] + a[:, None, :, None] + w[None, :, :, :], dim=(1, 2)
    ),
}


@pytest.mark.parametrize("rule", sorted(BY_HAND))
def test_its_tensor_is_the_einsum_under_its_rule(rule: str) -> None:
    """The file composes under `real`; the contraction under its own `rule=`."""
    checked = check(_source(rule))
    assert checked.ok, checked.diagnostics
    got = _fixed(Compiler(checked), "plausibility", RAW)
    assert got.shape == (4, 3)
    torch.testing.assert_close(got, BY_HAND[rule](*_latents()), rtol=0, atol=1e-12)


def test_a_latent_over_a_product_has_an_axis_per_factor() -> None:
    checked = check(_source() + "define inter = interaction\n")
    got = _fixed(Compiler(checked), "inter", RAW)
    assert got.shape == (2, 3, 3)
    torch.testing.assert_close(got, _latents()[2], rtol=0, atol=0)


def test_a_latent_over_a_product_is_sized_by_its_axes() -> None:
    """|Item| x |PredDim| x |ArgDim| entries of `raw`, not a column per factor's value."""
    text = _source() + (
        "morphism pair : Item -> (PredDim * ArgDim) [role=latent]\n\n"
        "program pairs (i) : Item -> PredDim * ArgDim\n"
        "    sample (b, c) <- pair(i)\n"
        "    return (b, c)\n"
    )
    checked = check(text)
    assert checked.ok, checked.errors
    found = estimate(checked, "pairs", method="prior", batch=1, seq_len=1, steps=1)
    assert found.parameters == 4 * 2 * 3


def test_an_explicit_wiring_reorders_the_axes() -> None:
    checked = check(EXPLICIT.replace("RULE", "tropical"))
    assert checked.ok, checked.diagnostics
    assert not checked.contractions["swap"].inferred
    raw = {"f": [[0.1 * (i - j) for j in range(4)] for i in range(3)]}
    got = _fixed(Compiler(checked), "back", raw)
    want = torch.sigmoid(torch.tensor(raw["f"], dtype=torch.float64)).T
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_kept_shared_axis_is_combined_entry_by_entry() -> None:
    checked = check(EXPLICIT.replace("RULE", "tropical"))
    raw = {
        "f": [[0.1 * (i + j) for j in range(4)] for i in range(3)],
        "g": [[0.2 * (i - j) for j in range(4)] for i in range(3)],
    }
    got = _fixed(Compiler(checked), "both", raw)
    f, g = (torch.sigmoid(torch.tensor(raw[k], dtype=torch.float64)) for k in "fg")
    torch.testing.assert_close(got, f + g, rtol=0, atol=1e-12)  # tropical's tensor is +


def test_it_has_no_draws() -> None:
    let = Compiler(check(_source())).let("plausibility")
    with pytest.raises(QvrRuntimeError, match="contraction bilinear_score"):
        let.rsample(torch.zeros(1, 1, dtype=torch.long))


def test_a_de_morgan_dual_contracts_only_equal_shapes() -> None:
    """quivers' DualAlgebra.tensor_op stacks its operands: equal shapes only."""
    same = check(EXPLICIT.replace("RULE", "reichenbach"))
    f = Compiler(same).relation("both")
    assert f.shape == (3, 4)
    broadcast = check(_source("reichenbach"))
    with pytest.raises(QvrError, match="cannot contract under reichenbach"):
        Compiler(broadcast).relation("plausibility")


def test_composing_with_another_rules_relation_is_refused() -> None:
    text = _source("tropical").replace(
        "export plausibility",
        "morphism back : Judgment -> Item [role=latent]\n"
        "define loop = plausibility >> back\nexport loop",
    )
    with pytest.raises(QvrError, match="two rules"):
        Compiler(check(text)).relation("loop")


def test_the_diagram_draws_one_box_fed_by_its_arguments() -> None:
    graph = build_graph(check(_source()))
    boxes = [n for n, d in graph.nodes(data=True) if "contraction under real" in d["detail"]]
    assert len(boxes) == 1
    fed = {graph.nodes[s]["label"] for s, _ in graph.in_edges(boxes[0])}
    assert {"pred_embed", "arg_embed", "interaction"} <= fed


# ------------------------------------------------------------------ refusals


def test_the_declaration_refusals_are_located() -> None:
    text = _source().replace("[rule=real]", "")
    d = _only(text, rules.COMPOSITION_RULE.code)
    assert d.span.start == _at(text, "bilinear_score") and "rule=" in d.message
    text = _source("reall")
    d = _only(text, rules.UNDEFINED_NAME.code)
    assert d.span.start == _at(text, "reall") and "real" in d.message
    text = _source('real, wirring="ab -> ba"')
    d = _only(text, rules.UNKNOWN_OPTION.code)
    assert d.span.start == _at(text, "wirring") and "wiring" in d.message
    text = _source('"real"')
    d = _only(text, rules.INVALID_OPTION_VALUE.code)
    assert d.span.start == _at(text, '"real"')


@pytest.mark.parametrize(
    ("declaration", "at", "words"),
    [
        # an axis in one input, not kept: the inferred wiring cannot place it
        ("contraction c (x : A -> B, y : A -> C) : A -> C [rule=real]", "c (", "wiring="),
        # an output axis no input has (quivers 0.25.2 fails with a KeyError)
        ("contraction c (x : A -> B, y : B -> A) : A -> C [rule=real]", "c (", "in no input"),
        # a diagonal, which EinsumWiring refuses
        (
            'contraction c (x : (A * A) -> B) : A -> B [rule=real, wiring="aab -> ab"]',
            '"aab',
            "diagonal",
        ),
        # the wiring's inputs are not the parameters
        (
            'contraction c (x : A -> B) : A -> B [rule=real, wiring="ab, bc -> ac"]',
            '"ab,',
            "1 parameters",
        ),
        # a letter per axis, and the output's sizes the declared output's
        ('contraction c (x : A -> B) : A -> B [rule=real, wiring="a -> a"]', '"a ->', "has 2"),
        ('contraction c (x : A -> B) : A -> B [rule=real, wiring="ab -> ba"]', '"ab', "sizes"),
    ],
)
def test_a_wiring_quivers_refuses_is_located(declaration: str, at: str, words: str) -> None:
    text = "object A : FinSet 2\nobject B : FinSet 3\nobject C : FinSet 4\n" + declaration + "\n"
    d = _only(text, rules.COMPOSITION_RULE.code)
    assert d.span.start == _at(text, at)
    assert words in d.message


def test_a_continuous_object_is_no_axis() -> None:
    text = (
        "object A : FinSet 2\nobject H : Real 3\ncontraction c (x : A -> H) : A -> A [rule=real]\n"
    )
    d = _only(text, rules.ROLE_TYPE_MISMATCH.code)
    assert d.span.start == _at(text, "H) :")


def test_the_call_refusals_are_located() -> None:
    text = _source().replace("interaction)\n", ")\n", 1)
    d = _only(text, rules.ARGUMENT_COUNT.code)
    assert d.span.start == _at(text, "bilinear_score(") and "(p, a, w)" in d.message
    text = _source().replace("(pred_embed, arg_embed,", "(arg_embed, pred_embed,")
    errors = [d for d in check(text).errors if d.code == rules.DIMENSION_MISMATCH.code]
    assert [e.span.start for e in errors] == [
        _at(text, "arg_embed,"),
        _at(text, "pred_embed,"),
    ]
    text = _source().replace("(pred_embed,", "(identity(Item) >> pred_embed,")
    d = _only(text, rules.ARGUMENT_NOT_A_NAME.code)
    assert d.span.start == _at(text, "identity(Item)")


def test_an_argument_of_other_names_but_the_sizes_is_a_hint() -> None:
    text = (
        _source()
        .replace(
            "object Judgment : FinSet 3", "object Judgment : FinSet 3\nobject Other : FinSet 2"
        )
        .replace("pred_embed : Item -> PredDim", "pred_embed : Item -> Other")
    )
    module = check(text)
    assert module.ok, module.errors
    (d,) = [d for d in module.diagnostics if d.code == rules.MATCHED_BY_DIMENSION.code]
    assert d.span.start == _at(text, "pred_embed,") and "Other" in d.message
    assert not check(text, strict=True).ok


def test_without_a_declared_rule_the_call_is_refused() -> None:
    """The contraction call needs the file's rule; the product latent does not: without a
    rule it is qvr's kernel from the product's values."""
    text = _source().replace("composition real [level=algebra]\n", "")
    errors = check(text).errors
    assert [e.code for e in errors] == [rules.COMPOSITION_RULE.code]
    assert errors[0].span.start == _at(text, "bilinear_score(")


# ------------------------------------------------------------------ the corpus

FILES = (
    "tests__transpile__fixtures__statements/contraction_decl@c5079c6.qvr",
    "docs__examples__source/tensor_contraction@b589d94.qvr",
)


def test_the_corpus_files_check() -> None:
    files = {c.name: c for c in corpus()}
    if not files:
        pytest.skip("the shared corpus is not here")
    for name in FILES:
        module = check(files[name].text())
        assert not module.errors, (name, module.errors)
        codes = {d.code for d in module.diagnostics}
        assert rules.NOT_CHECKED.code not in codes, (name, module.diagnostics)
        assert rules.ROLE_TYPE_MISMATCH.code not in codes, (name, module.diagnostics)
        assert module.contractions, name
