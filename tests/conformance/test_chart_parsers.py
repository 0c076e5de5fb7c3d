"""`parser(rules=[...], terminal=T, start=S)` computes what quivers 0.25.2 computes.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/expressions.py`
(`_compile_parser_schemas`) takes the atoms from `categories=`, else the `category`
declarations, else the one `FreeResiduated` universe, closes them with the parser's own
`depth` (`CategorySystem.from_atoms_and_slash_depth`), instantiates every schema on every
category or ordered pair of categories (`stochastic/schema.py`: `PatternBinarySchema`,
the built-in schemas of `SCHEMA_REGISTRY`), keeps each rule once when the schemas are
joined (`_rule_system.py`, `RuleSystem.__add__`), and builds `stochastic/parsers.py`'s
`ChartParser`: a lexicon of logits N(0, 0.1^2) read through a log-softmax, rule log
weights starting at 0, binary rules log-summed over splits, three unary rounds per cell
(`span.py`, `UnarySpanDeduction(iterations=3)`), the goal the start category over the
whole sentence. The scores below are worked out by hand from that code, and checked
against a plain-Python recursion written from it; the programs are our own, written like
the gallery's schema chart parser and parsed by quivers' grammars.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.builtins.schemas import SCHEMAS
from qvr_core.check import check
from qvr_core.check.chart_grammar import ChartGrammar, rules_of
from qvr_core.check.residuated import Category, inventory
from qvr_core.dsl import loads
from qvr_core.ide.hover import hover_at
from qvr_core.runtime.chart_parser import ChartParser
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import QvrError
from tests.conformance import oracle
from tests.conftest import ROOT

LP = """object Atoms : {N, S}
object Cat : FreeResiduated(Atoms)
object Word : {a, b}

schema fwd (X, Y : Cat) : (X / Y) * Y -> X
schema bwd (X, Y : Cat) : Y * (X \\ Y) -> X
schema swap (X, Y : Cat) : X / Y -> X \\ Y

bundle lp : [fwd, bwd, swap]

define g = parser(rules=[lp], terminal=Word, start=S, depth=1)

export g
"""


def _parser(source: str = LP) -> ChartParser:
    parser = loads(source)["g"]
    assert isinstance(parser, ChartParser)
    return parser


def _grammar(source: str, name: str = "g") -> ChartGrammar:
    module = check(source)
    assert not module.errors, module.errors
    grammar = module.lets[name].grammar
    assert grammar is not None
    return grammar


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(LP)


def test_the_rules_are_the_schemas_instantiated_on_the_inventory() -> None:
    g = _grammar(LP)
    assert g.categories == ("N", "S", "N/N", "N\\N", "N/S", "N\\S", "S/N", "S\\N", "S/S", "S\\S")

    def text(rule: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(g.categories[i] for i in rule)

    binary = {text(r) for r in g.binary}
    # X/Y, Y => X and Y, X\Y => X for the atoms X, Y: the conclusion is the result
    assert binary == {
        *((x, f"{x}/{y}", y) for x in "NS" for y in "NS"),
        *((x, y, f"{x}\\{y}") for x in "NS" for y in "NS"),
    }
    assert {text(r) for r in g.unary} == {(f"{x}\\{y}", f"{x}/{y}") for x in "NS" for y in "NS"}
    assert (g.terminal, g.terminals, g.categories[g.start]) == ("Word", 2, "S")


def test_a_two_word_sentence_scores_what_quivers_computes() -> None:
    """Uniform lexicon (logits 0: each of the 10 categories 1/10). Over "a b", S comes from
    S/Y, Y (forward: 2 x 1/10 x 1/10 = 0.02) and from Y, S\\Y (backward). The swap rule's
    three unary rounds each add S/Y's 1/10 to S\\Y's cell: 1/10 + 3/10 = 0.4, so backward
    gives 2 x 1/10 x 0.4 = 0.08; in all log 0.1."""
    parser = _parser()
    with torch.no_grad():
        for p in parser.parameters():
            p.zero_()
    score = parser(torch.tensor([0, 1])).detach()
    assert score.shape == ()
    assert float(score) == pytest.approx(math.log(0.1), rel=1e-6)
    batch = parser(torch.tensor([[0, 1], [1, 1]]))
    assert batch.shape == (2,)
    assert torch.allclose(batch, torch.full((2,), math.log(0.1)))


def _reference(
    g: ChartGrammar,
    logits: list[list[float]],
    bw: list[float],
    uw: list[float],
    sentence: list[int],
) -> float:
    """quivers' chart, cell by cell, in plain Python floats (probabilities, not logs)."""
    n_cat = len(g.categories)

    def unary(cell: list[float]) -> list[float]:
        for _ in range(g.iterations):
            added = [0.0] * n_cat
            for (c, p), w in zip(g.unary, uw, strict=True):
                added[c] += cell[p] * math.exp(w)
            cell = [a + b for a, b in zip(cell, added, strict=True)]
        return cell

    chart: dict[tuple[int, int], list[float]] = {}
    for i, tok in enumerate(sentence):
        z = sum(math.exp(v) for v in logits[tok])
        chart[(i, i + 1)] = unary([math.exp(v) / z for v in logits[tok]])
    n = len(sentence)
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span
            cell = [0.0] * n_cat
            for (c, left, right), w in zip(g.binary, bw, strict=True):
                for k in range(i + 1, j):
                    cell[c] += chart[(i, k)][left] * chart[(k, j)][right] * math.exp(w)
            chart[(i, j)] = unary(cell)
    return math.log(chart[(0, n)][g.start])


@given(
    seed=st.integers(0, 2**16),
    sentence=st.lists(st.integers(0, 1), min_size=1, max_size=5),
)
@settings(max_examples=25, deadline=None)
def test_scores_agree_with_a_plain_recursion(seed: int, sentence: list[int]) -> None:
    torch.manual_seed(seed)
    parser = _parser()
    with torch.no_grad():
        parser.binary_weights.normal_()
        parser.unary_weights.normal_()
    got = float(parser(torch.tensor(sentence)).detach())
    want = _reference(
        parser.grammar,
        parser.lexicon_logits.tolist(),
        parser.binary_weights.tolist(),
        parser.unary_weights.tolist(),
        sentence,
    )
    assert got == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_the_gradient_is_finite_where_a_category_is_never_derived() -> None:
    """Over three words most categories of the longer spans have no derivation (-inf):
    quivers' logsumexp gives them a NaN gradient, qvr 0."""
    parser = _parser()
    score = parser(torch.tensor([[0, 1, 0], [1, 0, 1]])).sum()
    score.backward()
    for p in parser.parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all()
    grad = parser.lexicon_logits.grad
    assert grad is not None and float(grad.abs().sum()) > 0


# ---------------------------------------------------------------- built-in schemas


def _slash(r: Category, a: Category, d: str) -> Category:
    return ("slash", r, a, d)


def _brute(name: str, cats: list[Category]) -> set[tuple[int, ...]]:
    """Each built-in schema as quivers' `match` methods state it, tried on every pair."""
    index = {c: i for i, c in enumerate(cats)}
    out: set[tuple[int, ...]] = set()

    def add(made: Category | None, *premises: int) -> None:
        if made is not None and made in index:
            out.add((index[made], *premises))

    def sl(c: Category, d: str) -> bool:
        return c[0] == "slash" and c[3] == d

    for i, a in enumerate(cats):
        if name == "adjunction_units":
            for c in cats:
                add(_slash(c, _slash(c, a, "\\"), "/"), i)
                add(_slash(c, _slash(c, a, "/"), "\\"), i)
        if name == "modal_introduction":
            add(("modal", "◇", a), i)
        if name == "modal_elimination" and a[0] == "modal" and a[1] == "◇":
            add(a[2], i)  # type: ignore[arg-type]
        if name == "tensor_projection" and a[0] == "product":
            add(a[1], i)  # type: ignore[arg-type]
            add(a[2], i)  # type: ignore[arg-type]
        if name == "unit_elimination":
            add(("unit",), i)
        for j, b in enumerate(cats):
            if name == "evaluation":
                add(a[1] if sl(a, "/") and a[2] == b else None, i, j)  # type: ignore[arg-type]
                add(b[1] if sl(b, "\\") and b[2] == a else None, i, j)  # type: ignore[arg-type]
            forward = sl(a, "/") and len(b) > 1 and a[2] == b[1]
            if name in ("harmonic_composition", "generalized_composition") and forward:
                add(_slash(a[1], b[2], "/") if sl(b, "/") else None, i, j)  # type: ignore[arg-type]
            if name == "harmonic_composition" and sl(a, "\\") and sl(b, "\\") and b[2] == a[1]:
                add(_slash(b[1], a[2], "\\"), i, j)  # type: ignore[arg-type]
            if name in ("crossed_composition", "generalized_composition") and forward:
                add(_slash(a[1], b[2], "\\") if sl(b, "\\") else None, i, j)  # type: ignore[arg-type]
            if name == "crossed_composition" and sl(a, "/") and sl(b, "\\") and b[2] == a[1]:
                add(_slash(b[1], a[2], "/"), i, j)  # type: ignore[arg-type]
            if name == "commutative_evaluation":
                add(b[1] if sl(b, "/") and b[2] == a else None, i, j)  # type: ignore[arg-type]
                add(a[1] if sl(a, "\\") and a[2] == b else None, i, j)  # type: ignore[arg-type]
            if name == "tensor_introduction":
                add(("product", a, b), i, j)
            if name == "unit_introduction":
                add(b if a == ("unit",) else None, i, j)
                add(a if b == ("unit",) else None, i, j)
            if name == "modal_application" and a[0] == b[0] == "modal":
                x, y = a[2], b[2]
                assert isinstance(x, tuple) and isinstance(y, tuple)
                if sl(x, "/") and x[2] == y:
                    add(("modal", "◇", x[1]), i, j)
                elif sl(y, "\\") and y[2] == x:
                    add(("modal", "◇", y[1]), i, j)
    return out


@pytest.mark.parametrize("name", list(SCHEMAS))
@pytest.mark.parametrize("ops", [("slash",), ("slash", "product", "unit", "diamond")])
def test_each_built_in_schema_makes_the_rules_quivers_matches(
    name: str, ops: tuple[str, ...]
) -> None:
    depth = 2 if ops == ("slash",) else 1
    cats = inventory(("A", "B"), depth, ops)
    binary, unary = rules_of(cats, [SCHEMAS[name].rules])
    assert set(binary) | set(unary) == _brute(name, cats)
    assert len(binary) == len(set(binary)) and len(unary) == len(set(unary))


def test_a_built_in_schema_equals_the_same_rules_declared() -> None:
    declared = LP.replace("schema swap (X, Y : Cat) : X / Y -> X \\\\ Y\n", "").replace(
        "[fwd, bwd, swap]", "[fwd, bwd]"
    )
    built_in = declared.replace("rules=[lp]", "rules=[evaluation]")
    assert set(_grammar(built_in).binary) == set(_grammar(declared).binary)


def test_category_declarations_give_the_atoms() -> None:
    source = """category S, NP
object Token : FinSet 3
rule app(X, Y) : X/Y, Y => X
define g = parser(rules=[app, harmonic_composition], terminal=Token, start=S)
export g
"""
    g = _grammar(source)
    assert g.categories[:4] == ("S", "NP", "S/S", "S\\S")
    assert g.terminals == 3 and len(g.categories) == 10


# ---------------------------------------------------------------- what is refused


def _codes(source: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check(source).diagnostics if d.code != "QVR103"]


@pytest.mark.parametrize(
    ("before", "after", "code", "says"),
    [
        ("rules=[lp]", "rules=[lpp]", "QVR101", "undefined rule, schema or bundle 'lpp'"),
        ("start=S", "start=VP", "QVR801", "start category VP is not among its atoms (N, S)"),
        ("terminal=Word, ", "", "QVR801", "needs terminal=<object>"),
        ("terminal=Word", "terminal=Wrd", "QVR101", "is no declared object"),
        ("depth=1", "depth=9", "QVR304", "more than 10,000 categories"),
        ("depth=1", "depth=1, semiring=viterbi", "QVR303", "no option 'semiring'"),
        ("start=S", "start=0", "QVR802", "reads a number there as S"),
        ("rules=[lp]", "rules=[lp, lp2]", "QVR101", "'lp2'"),
    ],
)
def test_what_quivers_refuses_is_reported_where_it_is(
    before: str, after: str, code: str, says: str
) -> None:
    found = _codes(LP.replace(before, after))
    assert any(c == code and says in m for c, m in found), found


def test_a_mix_of_morphism_and_schema_rules_is_refused() -> None:
    source = LP.replace("object Word", "morphism lex : Word -> Cat [role=latent]\nobject Word")
    found = _codes(source.replace("rules=[lp]", "rules=[lp, lex]"))
    assert any(c == "QVR801" and "not a mix" in m for c, m in found), found


def test_two_universes_need_the_atoms_named() -> None:
    source = LP.replace("object Word", "object Other : FreeResiduated(Atoms)\nobject Word")
    found = _codes(source)
    assert any(c == "QVR801" and "2 FreeResiduated universes" in m for c, m in found), found
    named = source.replace("depth=1", "depth=1, categories=[N, S]")
    assert not [c for c, _ in _codes(named) if c.startswith("QVR8") or c == "QVR011"]


def test_a_parser_is_not_composed() -> None:
    source = LP + "morphism f : Word -> Word [role=latent]\ndefine h = g >> f\n"
    found = _codes(source)
    assert any(c == "QVR104" and "chart parser" in m for c, m in found), found


def test_hover_says_what_the_parser_is() -> None:
    module = check(LP)
    at = LP.index("define g") + len("define ")
    shown = hover_at(module, at)
    assert shown is not None
    assert "[Word] -> Real" in shown.plain
    assert "10 in all" in shown.plain and "8 binary and 4 unary rules" in shown.plain


def test_the_example_grammar_learns_its_sentences() -> None:
    """The example as a user fits it: Adam on minus the log weight of its sentences. The
    loss is a smooth function of the lexicon and rule weights, so fifty small steps down
    its gradient from any start lower it."""
    source = (ROOT / "examples" / "grammars" / "chart_parser.qvr").read_text(encoding="utf-8")
    oracle.require_head(source)
    assert check(source).diagnostics == ()
    grammar = loads(source)["grammar"]
    assert isinstance(grammar, ChartParser)
    sentences = torch.tensor([[0, 1, 3], [0, 2, 3]])  # the dog sleeps, the cat sleeps
    optimiser = torch.optim.Adam(grammar.parameters(), lr=0.05)
    losses = []
    for _ in range(50):
        optimiser.zero_grad()
        loss = -grammar(sentences).sum()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0] - 1.0


def test_a_parser_beyond_the_memory_budget_is_refused_before_it_is_built() -> None:
    """10 categories x 2 tokens + 12 rule weights = 32 numbers, 128 bytes in float32."""
    compiler = Compiler(check(LP), memory_budget=100)
    with pytest.raises(QvrError, match=r"chart parser g has 32 parameters .* 2 tokens x 10"):
        compiler.export("g")
    assert isinstance(Compiler(check(LP), memory_budget=1000).export("g"), ChartParser)
