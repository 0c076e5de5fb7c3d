"""quivers' top-level categorial grammar (`category`, `rule`, `schema`, `bundle`) is
checked as quivers 0.25.2's compiler checks it.

Read from quivers' compiler (the 0.25.2 wheel, `dsl/compiler/declarations.py`:
`_compile_category`, `_compile_rule`, `_compile_schema`, `_compile_bundle`, and
`stochastic/schema.py`'s `SCHEMA_REGISTRY`): a rule takes one or two premises; no rule,
schema or bundle may be named like a built-in schema; a bundle lists rules, schemas or
built-in schemas (looked up where a parser uses it). A pattern's name that is no
variable is compared by name with the categories. The programs are our own, in quivers
0.11+ syntax, each parsed by quivers' HEAD grammar first.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from tests.conformance import oracle
from tests.conformance.shared import corpus

GRAMMAR = """category S, NP, VP, N
object Cat : FinSet 4

rule combine(X, Y) : NP, VP |- S
rule lift(X) : NP |- S
schema compose (X, Y, Z : Cat) : (X / Y) * (Y / Z) -> X / Z
bundle lexical_rules : [combine, lift, compose, evaluation]

object Resp : FinSet 4

program coin : Resp -> Resp
    sample x <- Bernoulli(0.5)
    return x

export coin
"""


def _codes(source: str) -> list[tuple[str, str]]:
    """(code, the text under it) of each error and warning."""
    return [
        (d.code, source[d.span.start : d.span.end])
        for d in check(source).diagnostics
        if d.severity.value in ("error", "warning")
    ]


def test_quivers_grammars_parse_the_program() -> None:
    oracle.require_head(GRAMMAR)


def test_a_well_formed_grammar_is_checked_whole() -> None:
    module = check(GRAMMAR)
    assert not [d for d in module.diagnostics if d.code != "QVR103"], module.diagnostics
    # the patterns' categories and the schema's variable type are uses
    assert not [d for d in module.diagnostics if "'NP'" in d.message or "Cat" in d.message]


def test_a_rule_of_three_premises_is_refused() -> None:
    source = GRAMMAR.replace("NP, VP |- S", "NP, VP, N |- S")
    assert _codes(source) == [("QVR801", "combine")]
    assert "3 premises" in check(source).errors[0].message


def test_a_built_in_schema_name_cannot_be_taken() -> None:
    source = GRAMMAR.replace("rule lift(X)", "rule evaluation(X)").replace(
        "lift, compose, evaluation]", "compose, evaluation]"
    )
    assert _codes(source) == [("QVR102", "evaluation")]


def test_a_bundle_member_names_a_rule_or_a_built_in_schema() -> None:
    source = GRAMMAR.replace("[combine, lift,", "[combine, lifts,")
    assert _codes(source) == [("QVR101", "lifts")]
    found = check(source).errors[0]
    assert "did you mean 'lift'" in found.message and found.fixes


def test_an_undeclared_pattern_name_is_a_constant_no_category_is() -> None:
    source = GRAMMAR.replace("NP, VP |- S", "Np, VP |- S")
    assert _codes(source) == [("QVR802", "Np")]
    assert "did you mean 'NP'" in check(source).diagnostics[0].message


def test_the_fixtures_of_the_shared_corpus_are_checked_whole() -> None:
    fixtures = ("category_decl", "rule_decl", "bundle_decl", "schema_decl")
    files = [f for f in corpus() if f.name.rsplit("/", 1)[-1].split("@")[0] in fixtures]
    if not files:
        pytest.skip("no shared corpus (../shared/corpus)")
    for f in files:
        module = check(f.text())
        assert not module.errors, (f.name, module.errors)
        assert not [d for d in module.diagnostics if d.code == "QVR011"], f.name
    assert len(files) >= 5
