"""The rule registry is the one place codes live, and every rule is real.

Each rule names an example that triggers exactly its code (the example tests
in test_examples.py check that); here: the registry's own consistency, that
no code is written as a string anywhere else in the packages, that every
rule is raised somewhere, and that a rule lists quick fixes exactly when its
example gets one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.text import rules
from qvr_core.text.diagnostics import Rule, Severity

ROOT = Path(__file__).resolve().parents[2]
ERRORS = ROOT / "examples" / "errors"
PACKAGES = [ROOT / "qvr_core", ROOT / "qvr_lsp"]
REGISTRY = ROOT / "qvr_core" / "text" / "rules.py"
CODE = re.compile(r"QVR\d{3}")


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in pkg.rglob("*.py") if p != REGISTRY)


def test_codes_and_names_are_unique_and_well_formed() -> None:
    assert len({r.code for r in rules.RULES}) == len(rules.RULES)
    assert len({r.name for r in rules.RULES}) == len(rules.RULES)
    for r in rules.RULES:
        assert re.fullmatch(r"QVR\d{3}", r.code), r.code
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", r.name), r.name
        assert r.summary and not r.summary.endswith("."), r.code
        assert r.explanation.endswith("."), r.code
        assert r.fixes, f"{r.code} says how to fix it"


def test_every_rule_is_a_named_constant_of_the_registry() -> None:
    constants = {v for v in vars(rules).values() if isinstance(v, Rule)}
    assert constants == set(rules.RULES)
    assert list(rules.RULES) == sorted(rules.RULES, key=lambda r: r.code)


def test_only_the_unused_rule_is_unnecessary_and_three_rules_hint() -> None:
    assert {r.code for r in rules.RULES if r.unnecessary} == {"QVR103"}
    hints = {r.code for r in rules.RULES if r.severity is Severity.HINT}
    assert hints == {"QVR012", "QVR103", "QVR203"}


def test_lookup_takes_a_code_a_number_or_a_name() -> None:
    assert rules.lookup("QVR101") is rules.UNDEFINED_NAME
    assert rules.lookup("qvr101") is rules.UNDEFINED_NAME
    assert rules.lookup("101") is rules.UNDEFINED_NAME
    assert rules.lookup("undefined-name") is rules.UNDEFINED_NAME
    assert rules.lookup("QVR999") is None


def test_each_rule_names_an_example_of_its_code_and_each_example_has_a_rule() -> None:
    named = {r.example: r for r in rules.RULES if r.example is not None}
    assert [r.code for r in rules.RULES if r.example is None] == ["QVR000"]
    for example, r in named.items():
        assert example.startswith(f"{r.code}_") and example.endswith(".qvr"), example
        assert (ERRORS / example).is_file(), f"{r.code}: examples/errors/{example} is missing"
    assert sorted(p.name for p in ERRORS.glob("*.qvr")) == sorted(named)


@pytest.mark.parametrize("rule", [r for r in rules.RULES if r.example], ids=lambda r: r.code)
def test_a_rule_lists_quick_fixes_exactly_when_its_example_gets_one(rule: Rule) -> None:
    module = check((ERRORS / str(rule.example)).read_text())
    fixed = any(d.fixes for d in module.diagnostics if d.code == rule.code)
    assert fixed == bool(rule.quick_fixes)


def bare_codes(path: Path, root: Path = ROOT) -> list[str]:
    """Code-like string literals of a module, docstrings excepted (prose may name a code)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and CODE.search(node.value)
    ]


def test_no_code_is_written_as_a_string_outside_the_registry() -> None:
    found = [hit for path in sources() for hit in bare_codes(path)]
    assert found == [], "raise diagnostics through their rule (qvr_core.text.rules), not a code"


def test_the_bare_code_check_sees_a_bare_code_but_not_a_docstring(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Docstrings may say QVR101."""\n\n\n'
        'def f():\n    """So may QVR102."""\n    report("QVR401", f"QVR402 {x}")\n'
    )
    assert bare_codes(sample, tmp_path) == [
        "sample.py:6: 'QVR401'",
        "sample.py:6: 'QVR402 '",
    ]


def test_every_rule_is_raised_somewhere() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in sources())
    constant = {id(v): k for k, v in vars(rules).items() if isinstance(v, Rule)}
    unused = [r.code for r in rules.RULES if not re.search(rf"\brules\.{constant[id(r)]}\b", text)]
    assert unused == []
