"""Everything that knows builtin names reads one registry: their name sets agree.

Adding a family is one entry in `qvr_core.builtins.families` plus its torch factory in
`qvr_core.runtime.distributions`; these tests fail until both are there, and they
fail if a consumer keeps its own list.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from qvr_core.builtins import (
    COMBINATORS,
    FAMILIES,
    FUNCTIONS,
    KERNEL_FAMILIES,
    OBJECT_CONSTRUCTORS,
    OPERATORS,
)
from qvr_core.builtins.families import FLOW
from qvr_core.check import check, context, types
from qvr_core.ide.builtins_info import describe
from qvr_core.ide.rename import BUILTIN_NAMES
from qvr_core.ide.signature import signature_help
from qvr_core.ide.tokens import TokenType, semantic_tokens
from qvr_core.syntax import builder
from qvr_core.syntax.layout import (
    CONTROL_KEYWORDS,
    DECLARATION_KEYWORDS,
    DECLARATION_KINDS,
    KEYWORDS,
    SOFT_KEYWORDS,
    TOP_WORDS,
)

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = ROOT / "vscode-extension" / "syntaxes" / "qvr.tmLanguage.json"
EVERY_NAME = [*FAMILIES, *OBJECT_CONSTRUCTORS, *COMBINATORS, *FUNCTIONS]


def test_runtime_has_a_torch_factory_for_every_family_and_no_other() -> None:
    from qvr_core.runtime.distributions import TORCH_FAMILIES

    assert set(TORCH_FAMILIES) == {n for n, f in FAMILIES.items() if f.has_distribution}


def test_runtime_has_a_morphism_form_for_every_kernel_family_and_no_other() -> None:
    from qvr_core.runtime.families import KERNELS

    # a flow's kernel is built apart, from its coupling layers (`runtime/flows.py`)
    assert set(KERNELS) | {FLOW} == set(KERNEL_FAMILIES)
    assert FLOW not in KERNELS
    assert tuple(n for n, f in FAMILIES.items() if f.kernel is not None) == KERNEL_FAMILIES


def test_runtime_compiles_every_combinator_and_evaluates_every_function() -> None:
    from qvr_core.runtime.compile import COMBINATOR_BUILDERS
    from qvr_core.runtime.functions import (
        FUNCTION_IMPLEMENTATIONS,
        OPERATOR_FUNCTIONS,
        Implementations,
    )

    assert set(COMBINATOR_BUILDERS) == set(COMBINATORS)
    assert set(FUNCTION_IMPLEMENTATIONS) == set(FUNCTIONS)
    defined = {n for n in vars(Implementations) if not n.startswith("_")}
    assert defined == set(FUNCTIONS)  # no implementation the registry does not name
    assert set(OPERATOR_FUNCTIONS) == set(OPERATORS)


def test_every_function_runs_on_a_plate_shaped_value_as_its_shape_says() -> None:
    import torch

    from qvr_core.runtime.functions import FUNCTION_IMPLEMENTATIONS

    x = torch.rand(4, 3) * 0.5 + 0.25
    square = x[:, :, None] * x[:, None, :] + torch.eye(3)  # 4 positive-definite 3 x 3
    for name, fn in FUNCTIONS.items():
        args = [x] * fn.arity if not fn.reduces_alone else [x]
        want: tuple[int, ...] = () if fn.shape == "reduce" or fn.reduces_alone else (4, 3)
        if fn.shape == "gram":  # 3 points, a number each per row: a 3 x 3 matrix a row
            args, want = [x, x[:, 0], x[:, 1]], (4, 3, 3)
        elif fn.shape == "matrix":
            args, want = [square, *[x[:, 0]] * (fn.arity - 1)], (4, 3, 3)
        elif fn.shape == "matrix_vector":
            args = [square, x]
        elif fn.shape == "series":  # 4 series of 3 steps; a number per series, or a count
            count = torch.tensor(2.0)  # an object argument is its size (`lags(x, Lag)`)
            args = [
                count if p in (*fn.whole, *fn.objects) else x[:, 0] if p in fn.numbers else x
                for p in fn.params
            ]
            if fn.object_plate == "adds":
                want = (4, 3, 2)
            elif fn.object_plate == "replaces":
                want = (4, 2)
        elif fn.shape == "ode":  # 4 decays dz/dt = -theta z, each at 3 times: 4 x 3
            args, want = _decay(fn.params, x), (4, 3)
        got = FUNCTION_IMPLEMENTATIONS[name](*args)
        assert tuple(got.shape) == want, name


def _decay(params: tuple[str, ...], x: Any) -> list[Any]:
    """A solver's arguments: the right-hand side -theta z (a define's body), 4 states (a
    number each) from 0 to the times 1, 2, 3, their rates x's first column; tolerances."""
    import torch

    from qvr_core.check.terms import Body, Op, Ref, Unary
    from qvr_core.text.span import Span

    at = Span(0, 0, 0, 0, 0, 0)
    rhs = Unary("-", Op("*", Ref("theta", at), Ref("z", at), at), at)
    body = Body("decay", ("t", "z", "theta"), (0, 0, 0), (), rhs, at)
    given = {"z0": x[:, 1], "t0": torch.tensor(0.0), "ts": torch.tensor([1.0, 2.0, 3.0])}
    given |= {"theta": x[:, 0], "rtol": torch.tensor(1e-6), "atol": torch.tensor(1e-6)}
    given["max_num_steps"] = torch.tensor(1000.0)
    return [body if p == "f" else given[p] for p in params]


def test_checker_parser_and_graph_read_the_registry() -> None:
    from qvr_core.check.expressions import COMBINATOR_RULES
    from qvr_core.graph.expressions import OPAQUE_COMBINATORS

    assert set(COMBINATOR_RULES) == set(COMBINATORS)
    assert set(context.FAMILIES) == set(FAMILIES)
    assert set(context.COMBINATORS) == set(COMBINATORS)
    morphism_functions = {n for n, f in FUNCTIONS.items() if f.in_morphisms}
    assert set(context.UNARY_FUNCS) | set(context.BINARY_FUNCS) == morphism_functions
    assert set(types.CONSTRUCTORS) == set(OBJECT_CONSTRUCTORS)
    assert set(OBJECT_CONSTRUCTORS) == builder.SIZED_CONSTRUCTORS
    assert set(COMBINATORS) > OPAQUE_COMBINATORS


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_checker_knows_every_family_and_tokens_classify_it(family: str) -> None:
    text = f"object H : Real 4\nmorphism f : H -> H [role=kernel] ~ {family}\n"
    module = check(text)
    assert not [d for d in module.diagnostics if d.code == "QVR101"], family
    start = text.index(family, text.index("~"))
    tokens = {t.span.start: t.type for t in semantic_tokens(module)}
    assert tokens.get(start) is TokenType.FAMILY


def test_every_builtin_name_is_documented_and_refused_by_rename() -> None:
    for name in EVERY_NAME:
        assert describe(name) is not None, name
        assert name in BUILTIN_NAMES, name


def test_signature_help_covers_every_combinator_function_and_family() -> None:
    for name in COMBINATORS:
        text = f"let x = {name}("
        assert signature_help(text, len(text), None) is not None, name
    for name in [*FUNCTIONS, *(f for f in FAMILIES if FAMILIES[f].params)]:
        text = f"program p : A -> A\n    let y = {name}("
        help_ = signature_help(text, len(text), None)
        assert help_ is not None, name
        assert help_.signature.label.startswith(f"{name}(")


# ---------------------------------------------------------------- the TextMate grammar


def _generator():
    spec = importlib.util.spec_from_file_location("gen_grammar", ROOT / "scripts/gen_grammar.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_grammar_is_fresh() -> None:
    assert _generator().main(["--check"]) == 0, "run .venv/bin/python scripts/gen_grammar.py"


def _match_of(scope: str) -> str:
    def visit(node: object):
        if isinstance(node, dict):
            if node.get("name") == scope and "match" in node:
                yield node["match"]
            for v in node.values():
                yield from visit(v)
        elif isinstance(node, list):
            for v in node:
                yield from visit(v)

    (found,) = list(visit(json.loads(GRAMMAR.read_text(encoding="utf-8"))))
    return found


@pytest.mark.parametrize(
    ("scope", "names"),
    [
        ("support.class.family.qvr", FAMILIES),
        ("support.type.constructor.qvr", OBJECT_CONSTRUCTORS),
        ("support.function.combinator.qvr", COMBINATORS),
        ("support.function.builtin.qvr", FUNCTIONS),
    ],
)
def test_grammar_regex_matches_exactly_the_registry_names(scope: str, names: dict) -> None:
    regex = re.compile(_match_of(scope))
    words = {*EVERY_NAME, "Normal2", "Foo", "fanout"}
    matched = {w for w in words if regex.fullmatch(w)}
    assert matched == set(names)


def test_grammar_keywords_are_the_lexers_keywords() -> None:
    """Every reserved or soft keyword that starts a declaration or a step is highlighted,
    each declaration kind only where it starts a line (it may name a morphism elsewhere)."""
    assert set(KEYWORDS) <= {*DECLARATION_KEYWORDS, *CONTROL_KEYWORDS}
    assert {*DECLARATION_KEYWORDS, *CONTROL_KEYWORDS} - set(KEYWORDS) <= set(SOFT_KEYWORDS)
    assert set(DECLARATION_KINDS) <= set(SOFT_KEYWORDS) and set(DECLARATION_KINDS) <= TOP_WORDS
    words = {*DECLARATION_KEYWORDS, *CONTROL_KEYWORDS, *DECLARATION_KINDS, "defined", "rules"}
    for scope, names in (
        ("storage.type.qvr", DECLARATION_KEYWORDS),
        ("keyword.control.qvr", CONTROL_KEYWORDS),
    ):
        regex = re.compile(_match_of(scope))
        assert {w for w in words if regex.fullmatch(w)} == set(names)
    (kinds,) = [
        p["match"]
        for p in json.loads(GRAMMAR.read_text(encoding="utf-8"))["repository"]["declarations"][
            "patterns"
        ]
        if p["captures"]["1"]["name"] == "storage.type.declaration.qvr"
    ]
    kind = re.compile(kinds)
    assert {w for w in words if kind.match(f"    {w} name")} == set(DECLARATION_KINDS)
    assert kind.match("loss >> head") is None


def test_the_family_catalogue_page_is_fresh() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_families_doc", ROOT / "scripts/gen_families_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run .venv/bin/python scripts/gen_families_doc.py"
    page = (ROOT / "docs" / "families.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in page for name in FAMILIES)
