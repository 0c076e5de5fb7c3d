"""`f.change_base(phi)` and `>>>` mean what quivers 0.25.2 computes for them.

Read from quivers (the 0.25.2 wheel: `dsl/compiler/expressions.py`,
`_compile_trans_expr`; `core/morphisms.py`, `Morphism.change_base`;
`core/algebra_morphisms.py` and `core/morphism_transformations.py` for each
transformation; `dsl/compiler/_prelude.py` for the names): a change of base applies a
transformation to the morphism's tensor, entry by entry (`expectation`, `log_prob`,
`threshold`, ...) or along the axis of a named object (`softmax(B)`, `l1_normalize`,
`l2_normalize`), or inverts a kernel under a prior (`bayes_invert(pi)`); `t1 >>> t2`
runs both, and refuses a seam where the rules differ; the first step's source must be
the morphism's rule. Each expected tensor below is written out by hand from those
definitions. The programs are our own, parsed by quivers' HEAD grammar.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.graph import build_graph
from qvr_core.graph.build import drawable_names
from qvr_core.ide.hover import hover_at
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.morphisms import Latent
from qvr_core.runtime.relations import Relation
from tests.conformance import oracle

FUZZY = """composition product_fuzzy [level=algebra]
object A : FinSet 3
object B : FinSet 4
object C : FinSet 2
morphism f : A -> B [role=latent]
morphism h : B -> C [role=latent]

define s    = softmax(B)
define pipe = s >>> expectation
define g    = f.change_base(pipe)
define logs = f.change_base(log_prob)
define crisp = f.change_base(threshold)
define cols = f.change_base(softmax(A))
define mixed = f.change_base(log_prob) >> h

export g
"""

REAL = """composition real [level=algebra]
object A : FinSet 3
object B : FinSet 4
morphism f : A -> B [role=latent]

define l1 = f.change_base(l1_normalize(B))
define l2 = f.change_base(l2_normalize(A))

export l1
"""

KERNELS = """object One : FinSet 1
object A : FinSet 3
object B : FinSet 2
morphism f : A -> B [role=latent]
morphism pi : One -> A [role=latent]

define post = f.change_base(bayes_invert(pi))

export post
"""

RAW_F = torch.tensor(
    [[0.3, -1.2, 0.5, 2.0], [0.1, -0.7, 1.4, -0.2], [-2.1, 0.8, 0.0, 0.6]], dtype=torch.float64
)


def _compiled(source: str) -> Compiler:
    checked = check(source)
    assert checked.ok, [d.message for d in checked.diagnostics]
    compiler = Compiler(checked)
    for name in checked.lets:
        if checked.lets[name].transformation is None:
            compiler.let(name).double()
    return compiler


def _set_f(compiler: Compiler, name: str, raw: torch.Tensor) -> None:
    with torch.no_grad():
        for m in compiler.let(name).modules():
            if isinstance(m, Relation) and m.key == "f":
                m.raw.copy_(raw)
            if isinstance(m, Latent) and m.key == "f":
                m.logits.copy_(raw)


@pytest.mark.parametrize("source", [FUZZY, REAL, KERNELS])
def test_quivers_grammars_parse_it(source: str) -> None:
    oracle.require_head(source)


def test_the_pipeline_of_the_guide() -> None:
    """`softmax(B) >>> expectation` on a product_fuzzy relation: the softmax of its
    entries (sigmoid(raw)) along B, then clamped to [0, 1]."""
    compiler = _compiled(FUZZY)
    _set_f(compiler, "g", RAW_F)
    want = torch.softmax(torch.sigmoid(RAW_F), dim=1).clamp(0.0, 1.0)
    torch.testing.assert_close(compiler.relation("g"), want, rtol=0, atol=1e-12)
    module = compiler.checked
    assert module.lets["g"].type is not None and module.lets["g"].type.label == "A -> B"
    assert [s.name for s in module.lets["pipe"].transformation or ()] == ["softmax", "expectation"]


@pytest.mark.parametrize(
    ("name", "by_hand"),
    [
        ("logs", lambda t: torch.log(t.clamp(min=1e-30))),
        ("crisp", lambda t: (t > 0.5).to(t.dtype)),
        ("cols", lambda t: torch.softmax(t, dim=0)),
    ],
)
def test_each_transformation_is_its_formula(name: str, by_hand: object) -> None:
    compiler = _compiled(FUZZY)
    _set_f(compiler, name, RAW_F)
    want = by_hand(torch.sigmoid(RAW_F))  # type: ignore[operator]  # a formula
    torch.testing.assert_close(compiler.relation(name), want, rtol=0, atol=1e-12)


def test_the_normalisations_under_real() -> None:
    compiler = _compiled(REAL)
    for name in ("l1", "l2"):
        _set_f(compiler, name, RAW_F)
    t = torch.sigmoid(RAW_F)
    torch.testing.assert_close(compiler.relation("l1"), t / t.sum(1, keepdim=True))
    torch.testing.assert_close(compiler.relation("l2"), t / t.pow(2).sum(0, keepdim=True).sqrt())


def test_bayes_inversion_of_a_kernel_under_its_prior() -> None:
    """`post[b, a] = pi[a] f(b | a) / sum_a' pi[a'] f(b | a')`, a kernel B -> A."""
    compiler = _compiled(KERNELS)
    raw = torch.tensor([[0.4, -1.0], [1.2, 0.3], [-0.5, 0.9]], dtype=torch.float64)
    prior_logits = torch.tensor([[0.2, -0.3, 1.1]], dtype=torch.float64)
    with torch.no_grad():
        for m in compiler.let("post").modules():
            if isinstance(m, Latent):
                m.logits.copy_(raw if m.key == "f" else prior_logits)
    kernel, prior = torch.softmax(raw, dim=1), torch.softmax(prior_logits[0], dim=0)
    joint = prior[:, None] * kernel
    want = (joint / joint.sum(0, keepdim=True)).T
    got = compiler.relation("post")
    assert compiler.checked.lets["post"].type is not None
    assert compiler.checked.lets["post"].type.label == "B -> A"
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(got.sum(1), torch.ones(2, dtype=torch.float64))


def test_it_has_no_draws_and_keeps_its_rule_apart() -> None:
    compiler = _compiled(FUZZY)
    with pytest.raises(QvrRuntimeError, match="valued in product_fuzzy"):
        compiler.let("g").rsample(torch.zeros(1, dtype=torch.long))
    with pytest.raises(QvrError, match="two rules"):
        compiler.relation("mixed")


@pytest.mark.parametrize(
    ("phi", "code", "says"),
    [
        ("softmax", "QVR104", "needs its axis"),
        ("nothing", "QVR101", "undefined transformation 'nothing'"),
        ("expectation", "QVR316", "takes markov relations, and f's entries are product_fuzzy"),
        ("log_prob >>> expectation", "QVR316", "log_prob gives log_prob relations"),
        ("softmax(C)", "QVR307", "C is no factor of A -> B"),
        ("softmax(f)", "QVR101", "takes an object, and 'f' is none"),
        ("h", "QVR104", "h is no transformation"),
    ],
)
def test_quivers_refusals_are_errors_where_written(phi: str, code: str, says: str) -> None:
    source = FUZZY.replace("f.change_base(pipe)", f"f.change_base({phi})")
    found = [d for d in check(source).errors if d.code == code]
    assert found and says in found[0].message, check(source).errors


def test_without_a_rule_softmax_is_refused_with_why() -> None:
    source = KERNELS.replace("bayes_invert(pi)", "softmax(B)")
    (found,) = check(source).errors
    assert found.code == "QVR316" and "declares no composition rule" in found.message


def test_a_transformation_is_no_morphism() -> None:
    source = FUZZY.replace("define mixed = f.change_base(log_prob) >> h", "define mixed = s >> h")
    (found,) = check(source).errors
    assert found.code == "QVR104" and "f.change_base(s)" in found.message


def test_the_diagram_draws_it() -> None:
    graph = build_graph(check(FUZZY))
    found = {data.get("label"): data for _, data in graph.nodes(data=True)}
    assert found["f.change_base(pipe)"].get("detail") == "change of base"


def test_hover_says_what_a_transformation_does() -> None:
    module = check(FUZZY)
    found = hover_at(module, FUZZY.index("softmax(B)") + 1)
    assert found is not None and "product_fuzzy relations to markov" in found.markdown
    found = hover_at(module, FUZZY.index("expectation") + 1)
    assert found is not None and "markov relations to product_fuzzy" in found.markdown


def test_a_transformation_let_is_no_diagram_of_its_own() -> None:
    """`define pipe = softmax(B) >>> expectation` is drawn where it is applied, not as a
    flow of values."""
    module = check(FUZZY)
    graph = build_graph(module)
    labels = {data.get("label") for _, data in graph.nodes(data=True)}
    assert "softmax(B)" not in labels and "expectation" not in labels
    assert "pipe" not in drawable_names(module) and "g" in drawable_names(module)


def test_a_prior_of_another_size_is_refused_where_written() -> None:
    """quivers' BayesInvert needs one prior entry per row of the kernel."""
    source = KERNELS.replace("morphism pi : One -> A", "morphism pi : One -> B")
    found = [d for d in check(source).errors if d.code == "QVR307"]
    assert found and "has 2 entries" in found[0].message and "(3)" in found[0].message
