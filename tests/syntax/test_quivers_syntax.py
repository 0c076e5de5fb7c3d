"""The syntax of quivers 0.11 - 0.25.2 beyond the seeds, node by node, and the older
surfaces (0.1 - 0.10) with their one diagnostic and its rewrite."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.syntax import ast
from qvr_core.syntax.parser import parse
from tests.syntax.helpers import assert_consistent


def clean(text: str) -> ast.Module:
    result = parse(text)
    assert_consistent(text, result)
    assert result.diagnostics == (), [(d.code, d.message) for d in result.diagnostics]
    return result.module


def test_define_with_a_where_block_keeps_its_keyword_and_definitions() -> None:
    text = "define model = encoder >> head where\n    define encoder = f >> g\n    let head = h\n"
    (decl,) = clean(text).decls
    assert isinstance(decl, ast.LetDecl)
    assert decl.keyword == "define"
    where = [(d.keyword, d.name.text) for d in decl.where]
    assert where == [("define", "encoder"), ("let", "head")]
    assert decl.span.end == len(text) - 1


def test_multi_name_declarations() -> None:
    obj, mor = clean("object A, B : Real 3\nmorphism f, g : A -> B ~ Normal\n").decls
    assert [n.text for n in obj.names] == ["A", "B"]
    assert [n.text for n in mor.names] == ["f", "g"]
    assert mor.options_span is None and mor.family.text == "Normal"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("{the, dog, cat}", ast.EnumSet),
        ("FreeResiduated(Atoms, depth=2, ops=[slash])", ast.ObjApply),
        ("FreeMonoid(Token, max_length=5)", ast.ObjApply),
        ("Real 3 {lower=0.0}", ast.ObjCtor),
        ("Stiefel 4 2", ast.ObjCtor),
        ("A + B", ast.ObjBinary),
        ("(X / Y) * Y", ast.ObjBinary),
        ("A * B * C", ast.TypeRef),
    ],
)
def test_object_expressions(body: str, kind: type) -> None:
    (decl,) = clean(f"object X : {body}\n").decls
    assert isinstance(decl.body, kind)


def test_family_steps_with_plates_options_and_arguments() -> None:
    text = (
        "program lda(alpha : Real, beta : Real) : Token -> Mix\n"
        "    sample theta : Doc <- Dirichlet(alpha) [over=Topic, iid_over=Doc]\n"
        "    marginalize z : Topic <- Categorical(probs=theta) [over=Doc]\n"
        "        observe w : Token <- Categorical(probs=phi[z]) [via=word_idx]\n"
        "    sample mu <- Normal(0.0, 10.0)\n"
        "    sample (a, b) <- pair(mu)\n"
        "    let c <- shift(a, 2.0)\n"
        "    score s = log(c) + x[0, 1] * y.sum(0)\n"
        "    return (mean: mu, draw: theta)\n"
    )
    (program,) = clean(text).decls
    assert [p.text for p in program.params] == ["alpha", "beta"]
    assert [k.factors[0].text for k in program.param_kinds] == ["Real", "Real"]
    theta, marg, mu, pair, call, score, ret = program.steps
    assert theta.plate.factors[0].text == "Doc"
    assert [o.key.text for o in theta.options] == ["over", "iid_over"]
    assert isinstance(marg, ast.MarginalizeStep)
    (observe,) = marg.steps
    (probs,) = observe.source.kwargs
    assert isinstance(probs.value, ast.IndexArg)
    assert [a.raw for a in mu.source.args] == ["0.0", "10.0"]
    assert [t.text for t in (pair.target, *pair.more_targets)] == ["a", "b"]
    assert isinstance(call, ast.CallStep) and call.callee.text == "shift"
    assert isinstance(score, ast.ScoreStep)
    assert [n.text for n in ret.labels] == ["mean", "draw"]


def test_arithmetic_beyond_the_seeds() -> None:
    text = (
        "program p : A -> B\n"
        "    let a = [1.0, 2.0]\n"
        "    let b = x -> x * 2.0\n"
        "    let c = not (u < v) && w >= 1.0\n"
        '    let d = "text"\n'
        "    let e = factor v : Verb in delta[v] + 1.0\n"
        "    return e\n"
    )
    (program,) = clean(text).decls
    values = [s.value for s in program.steps[:-1]]
    assert [type(v) for v in values] == [
        ast.ListExpr,
        ast.Lambda,
        ast.Binary,
        ast.Literal,
        ast.Factor,
    ]


def test_words_are_keywords_only_where_the_grammar_expects_them() -> None:
    module = clean(
        "object A : FinSet 3\nmorphism index, loss : A -> A\ndefine where = index >> loss\n"
    )
    assert [d.name.text for d in module.decls] == ["A", "index", "where"]


@pytest.mark.parametrize(
    ("text", "kind", "names"),
    [
        ("category S, NP", "category", ["S", "NP"]),
        ("bundle rules : [fwd, bwd]", "bundle", ["rules"]),
        ("rule fwd (X, Y) : X / Y, Y |- X", "rule", ["fwd"]),
        ("schema app (X, Y : Cat) : (X / Y) * Y -> X", "schema", ["app"]),
        ("instance ask : Ask", "instance", ["ask"]),
        ("index Nat = Zero | Succ(Nat)", "index", ["Nat"]),
        ("#[learnable]", "pragma", []),
        ("composition log_prob [level=algebra]", "composition", ["log_prob"]),
        ("composition real as algebra", "composition", ["real"]),
    ],
)
def test_other_declarations_are_clauses_with_their_names(
    text: str, kind: str, names: list[str]
) -> None:
    (decl,) = clean(text + "\n").decls
    assert isinstance(decl, ast.OtherDecl)
    assert decl.clause.kind == kind
    assert [n.text for n in decl.names] == names


def test_declarations_with_bodies_nest_their_lines() -> None:
    text = (
        "deduction CFG : Term -> Term [semiring=LogProb]\n"
        "    atoms S, NP\n"
        "    rule s : span(I, K, NP) |- span(I, K, S) #[learnable]\n"
        "    lexicon\n"
        '        "the", "a" : NP = the #[learnable]\n'
        "effect Ask\n"
        "    get : Unit -> Int\n"
        "define read() : Int !{ask} =\n"
        "    let value <- perform ask.get()\n"
        "    return value\n"
    )
    deduction, effect, computation = clean(text).decls
    assert [c.kind for c in deduction.clause.body] == ["atoms", "deduction_rule", "lexicon"]
    assert [c.kind for c in deduction.clause.body[2].body] == ["lexicon_entry"]
    assert [c.kind for c in effect.clause.body] == ["operation"]
    assert computation.clause.kind == "computation"
    assert [c.kind for c in computation.clause.body] == ["let_bind", "return"]


# ---------------------------------------------------------- older surfaces


@pytest.mark.parametrize(
    ("text", "rewritten"),
    [
        ("object Step : 200", "object Step : FinSet 200"),
        ("type Latent = Euclidean 64", "object Latent : Real 64"),
        (
            "continuous head[4] : Latent -> Out ~ Normal [scale=0.1]",
            "morphism head : Latent -> Out [role=kernel, replicate=4, scale=0.1] ~ Normal",
        ),
        ("output model", "export model"),
        ("quantale product_fuzzy", "composition product_fuzzy"),
        ("object Atoms = {NP, S}", "object Atoms : {NP, S}"),
        (
            "schema fwd[X, Y : Cat] : (X/Y) * Y -> X",
            "schema fwd (X, Y : Cat) : (X/Y) * Y -> X",
        ),
        (
            "program p : A -> A\n    y <- Normal(0.0, 1.0)\n    return y",
            "sample y <- Normal(0.0, 1.0)",
        ),
        ("program p : A -> A\n    draw y ~ f\n    return y", "sample y <- f"),
        (
            "program p (G : FinSet) : G -> 1\n    sample v : G <- Normal(0.0, 1.0)\n    return v",
            "FinSet 1",
        ),
        (
            "let g = parser(\n    rules=[a, b],\n    start=S,\n)\nexport g",
            "let g = parser(rules=[a, b], start=S)",
        ),
        (
            "program p : A -> A\n    let e = factor v : V in\n        d[v] + 1.0\n    return e",
            "let e = factor v : V in d[v] + 1.0",
        ),
        (
            "program p : A -> A\n    marginalize z : A <- Bernoulli(q) in {\n"
            "        observe y : A <- Poisson(z)\n    }\n    return y",
            "\n        observe y : A <- Poisson(z)",
        ),
        (
            "program p : A -> A\n    draw x : A -> 1 ~ prior\n    return x",
            "sample x : A <- prior",
        ),
        (
            "program p : A -> A\n    observe y[n] ~ Bernoulli(q) for n in R\n    return y",
            "observe y : R <- Bernoulli(q)",
        ),
        (
            "program p : A -> A\n    observe y ~ Normal(m, s)\n    return y",
            "observe y <- Normal(m, s)",
        ),
    ],
)
def test_older_surfaces_get_one_diagnostic_whose_fix_is_todays_syntax(
    text: str, rewritten: str
) -> None:
    result = parse(text)
    assert_consistent(text, result)
    (d,) = result.diagnostics
    assert d.code == "QVR010"
    assert "quivers 0." in d.message
    (edit,) = d.fixes[0].edits
    assert edit.new_text == rewritten
    fixed = text[: edit.span.start] + edit.new_text + text[edit.span.end :]
    assert parse(fixed).diagnostics == ()


def test_a_braced_deduction_block_is_one_older_surface_diagnostic() -> None:
    text = (
        "deduction AB : Term -> Term {\n"
        "    atoms {\n        S, NP\n    }\n"
        "    rule fwd\n        : span(I, K, S)\n        |- span(I, K, NP)\n"
        "}\n"
        "define p = parser(rules=[AB])\n"
    )
    result = parse(text)
    assert_consistent(text, result)
    assert [d.code for d in result.diagnostics] == ["QVR010"]
    deduction, _define = result.module.decls
    assert deduction.name.text == "AB"
    # AB is declared (no QVR101); quivers' parser takes no deduction among its rules
    assert [d.code for d in check(text).diagnostics if d.is_error] == ["QVR104"]


# ------------------------------------------------------- checker, no cascades


def codes(text: str) -> list[str]:
    return [d.code for d in check(text).diagnostics]


def test_a_chart_parser_and_its_grammar_are_checked_whole() -> None:
    text = (
        "object Atoms : {N, NP, S}\n"
        "object Cat : FreeResiduated(Atoms)\n"
        "schema fwd (X, Y : Cat) : (X / Y) * Y -> X\n"
        "bundle lp : [fwd]\n"
        "define lp_parser = parser(rules=[lp], terminal=Atoms, start=S)\n"
        "export lp_parser\n"
    )
    module = check(text)
    # the enumerated object, its FreeResiduated universe, the schema, the bundle and the
    # define (a chart parser, check/chart_parsers.py) are all checked whole
    assert [d.code for d in module.diagnostics] == []
    grammar = module.lets["lp_parser"].grammar
    assert grammar is not None and len(grammar.binary) == 9  # X/Y, Y => X over 3 atoms


def test_a_bayesian_program_is_typed_with_its_free_names_as_data_variables() -> None:
    text = (
        "object Obs : FinSet 4\n"
        "program reg : Obs -> Obs\n"
        "    sample mu <- Normal(0.0, 10.0)\n"
        "    sample sigma <- HalfNormal(1.0)\n"
        "    let m = mu + beta * x\n"
        "    observe y : Obs <- Normal(m, sigma)\n"
        "    return y\n"
        "export reg\n"
    )
    module = check(text)
    assert [d.code for d in module.diagnostics] == []
    # the sites are bound (navigation works), the free names are data
    names = {s.name for s in module.symbols.symbols if s.scope == "reg"}
    assert {"mu", "sigma", "m", "y", "beta", "x"} <= names
    model = module.models["reg"]
    assert {d.name for d in model.data} == {"beta", "x", "y"}


def test_a_family_is_a_family_of_the_registry_and_any_other_callee_is_undefined() -> None:
    text = (
        "object Obs : FinSet 4\n"
        "program reg : Obs -> Obs\n"
        "    sample mu <- Normall(0.0, 10.0)\n"
        "    sample tau <- Wobble(1.0)\n"
        "    observe y : Obs <- Normal(mu, tau)\n"
        "    return y\n"
        "export reg\n"
    )
    module = check(text)
    undefined = [d for d in module.diagnostics if d.code == "QVR101"]
    assert [d.message for d in undefined] == [
        "undefined family 'Normall': did you mean 'Normal'?",
        "undefined family 'Wobble'",
    ]
    assert undefined[0].fixes[0].title == "Change to 'Normal'"


def test_a_typo_in_a_seed_program_is_still_an_unbound_variable() -> None:
    text = (
        "object Token : FinSet 8\nobject Hidden : Real 4\n"
        "morphism encode : Token -> Hidden [role=embed]\n"
        "morphism head : Hidden -> Token [role=kernel] ~ Categorical\n"
        "program lm : Token -> Token\n"
        "    sample h <- encode\n"
        "    observe t : Token <- head(hidden)\n"
        "    return t\n"
        "export lm\n"
    )
    assert codes(text) == ["QVR401"]


def test_a_morphism_with_a_family_needs_no_role() -> None:
    text = (
        "object A : Real 2\nobject B : Real 3\nmorphism f : A -> B ~ Normal\nlet m = f\nexport m\n"
    )
    assert codes(text) == []


def test_each_name_of_a_multi_name_morphism_is_a_morphism() -> None:
    text = (
        "object A : Real 2\n"
        "morphism f, g : A -> A ~ Normal\n"
        "let m = g >> f\nlet n = g\nexport m\nexport n\n"
    )
    module = check(text)
    assert [d.code for d in module.diagnostics] == []
    assert set(module.morphisms) == {"f", "g"}
    assert module.lets["n"].type is not None
