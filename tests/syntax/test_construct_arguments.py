"""`let x <- f(construct C(..) as T(..))` in a program: quivers HEAD's call step takes
values (`_qiec_value`: arithmetic or a constructor value) and static arguments, so qvr
reads them too, keeps them in the tree, leaves the program names-only (QVR011) and
formats and migrates the line as written."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.format.formatter import format_text
from qvr_core.migrate import migrate_text
from qvr_core.syntax import ast
from qvr_core.syntax.parser import parse
from tests.conformance import oracle
from tests.syntax.helpers import assert_consistent

HEAD = (
    "index Nat = Z | S(Nat)\n\n"
    "object Obs : FinSet 4\n\n"
    "define g(a : Real, n : Nat) : Real !{} =\n"
    "    return a\n\n"
    "program p : Obs -> Obs\n"
    "    sample a <- Normal(0.0, 1.0)\n"
)
TAIL = "    observe y <- Normal(c, 0.5)\n    return y\n\nexport p\n"

#: call steps quivers HEAD accepts, with the constructor names each construct holds
CALLS = [
    ("let c <- g(a, construct Z() as Nat)", [["Z", "Nat"]]),
    ("let c <- g(a, construct S(construct Z() as Nat) as Nat)", [["S", "Z", "Nat", "Nat"]]),
    ("let c <- g[Real](a, construct Z() as Nat)", [["Z", "Nat"]]),
    ("let c <- g(\n        a,\n        construct S(a) as Nat,\n    )", [["S", "a", "Nat"]]),
    ("let c <- g(construct Z() as Nat, construct Z() as Nat)", [["Z", "Nat"], ["Z", "Nat"]]),
]


def _program(call: str) -> str:
    return HEAD + "    " + call + "\n" + TAIL


def _call(module: ast.Module) -> ast.CallStep:
    program = next(d for d in module.decls if isinstance(d, ast.ProgramDecl))
    return next(s for s in program.steps if isinstance(s, ast.CallStep))


def _names(node: object) -> list[str]:
    """The names of a clause's parts in source order (a Var's name included)."""
    out: list[str] = []
    for part in getattr(node, "parts", ()):
        if isinstance(part, ast.Name):
            out.append(part.text)
        elif isinstance(part, ast.Var):
            out.append(part.name.text)
        else:
            out += _names(part)
    return out


@pytest.mark.parametrize(("call", "constructs"), CALLS, ids=range(len(CALLS)))
def test_a_construct_argument_is_read_and_kept(call: str, constructs: list[list[str]]) -> None:
    text = _program(call)
    result = parse(text)
    assert_consistent(text, result)
    assert result.diagnostics == (), [(d.code, d.message) for d in result.diagnostics]
    step = _call(result.module)
    assert step.callee.text == "g"
    assert [c.kind for c in step.constructs] == ["construct"] * len(constructs)
    assert [_names(c) for c in step.constructs] == constructs
    assert all(isinstance(a, ast.Var) and a.name.text == "a" for a in step.args)
    assert (step.static is not None) == ("[Real]" in call)


@pytest.mark.parametrize(("call", "constructs"), CALLS, ids=range(len(CALLS)))
def test_quivers_head_accepts_the_same_call(call: str, constructs: list[list[str]]) -> None:
    try:
        accepted = oracle.accepts("HEAD", _program(call))
    except oracle.OracleUnavailable as exc:
        pytest.skip(f"quivers' parsers are unavailable: {exc}")
    assert accepted


@pytest.mark.parametrize(("call", "constructs"), CALLS, ids=range(len(CALLS)))
def test_a_program_with_one_is_names_only_not_an_error(
    call: str, constructs: list[list[str]]
) -> None:
    checked = check(_program(call))
    codes = [d.code for d in checked.diagnostics]
    assert "QVR001" not in codes
    assert checked.ok, [(d.code, d.message) for d in checked.diagnostics]
    notes = [d.message for d in checked.diagnostics if d.code == "QVR011"]
    assert "program p (its call step) is not checked yet (names only)" in notes


@pytest.mark.parametrize(("call", "constructs"), CALLS, ids=range(len(CALLS)))
def test_formatting_and_migrating_keep_the_call_as_written(
    call: str, constructs: list[list[str]]
) -> None:
    text = _program(call)
    formatted = format_text(text)
    assert formatted.ok, formatted.refused
    assert call in formatted.text
    migrated = migrate_text(text, "current")
    assert migrated.ok, migrated.refused
    assert call in migrated.text


def test_a_call_step_without_them_still_prints_canonically() -> None:
    text = _program("let c <- g(a,   1.0)")
    formatted = format_text(text)
    assert formatted.ok, formatted.refused
    assert "    let c <- g(a, 1.0)\n" in formatted.text
