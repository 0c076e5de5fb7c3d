"""A module's own QIEC effects are typed as quivers 0.25.2 types them.

Read from quivers (the 0.25.2 wheel): `dsl/ast_nodes/qiec.py` (`QiecEffectDecl`,
`QiecOperationDecl`: an operation's argument types and result type;
`QiecEffectInstanceDecl`), `qiec/types.py` (the base types Unit, Bool, Int, Real and
String) and `qiec/checking.py` (`_check_literal`: a whole-number literal is an Int or
a Real, the kernel never converts an Int to a Real). The module is our own, written
like the guide's `dsl-programs-and-lets.md` QIEC example, and parsed by quivers'
grammars; every mistake is reported where it is written.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.hover import hover_at
from tests.conformance import oracle

SOURCE = """effect Counter
    next : Unit -> Int
    step : Int * Real -> Real

instance counter : Counter

define tick(start : Int) : Int !{counter} =
    let seen <- perform counter.next()
    return seen

define drift(by : Real) : Real !{counter} =
    let moved <- perform counter.step(3, by)
    return moved

define answer() : Int !{} =
    return 42
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_it_is_typed_without_a_diagnostic() -> None:
    module = check(SOURCE)
    assert not module.diagnostics, [d.message for d in module.diagnostics]


@pytest.mark.parametrize(
    ("old", "new", "code", "says", "at"),
    [
        # the result's type: an operation's Real result is no Int
        (
            "(by : Real) : Real",
            "(by : Real) : Int",
            "QVR404",
            "returns Int, but moved is Real",
            "moved\n",
        ),
        # an argument of the wrong base type, and a number that is no whole number
        ("step(3, by)", "step(by, by)", "QVR404", "takes Int", "by, by"),
        ("step(3, by)", "step(3.5, by)", "QVR404", "but 3.5 is Real", "3.5"),
        ("step(3, by)", "step(3)", "QVR406", "takes 2 values", "perform counter.step"),
        ("counter.next()", "counter.last()", "QVR410", "no operation 'last'", "last"),
        ("Real !{counter}", "Real !{}", "QVR410", "does not list", "counter.step"),
    ],
)
def test_each_mistake_is_one_located_error(
    old: str, new: str, code: str, says: str, at: str
) -> None:
    source = SOURCE.replace(old, new)
    errors = check(source).errors
    assert [d.code for d in errors] == [code], [(d.code, d.message) for d in errors]
    assert says in errors[0].message
    assert errors[0].span.start == source.index(at, source.index("define tick"))


def test_an_operation_named_twice_is_reported_at_the_second() -> None:
    source = SOURCE.replace("    step : Int", "    next : Unit -> Int\n    step : Int")
    errors = check(source).errors
    assert [d.code for d in errors] == ["QVR102"], errors
    assert errors[0].span.start == source.index("next", source.index("next") + 1)


def test_what_it_does_not_type_keeps_the_names_only_check() -> None:
    source = SOURCE.replace("step : Int * Real -> Real", "step : List -> Real")
    notes = [d for d in check(source).diagnostics if d.code == "QVR011"]
    assert notes and "effect Counter" in notes[0].message


def test_a_program_cannot_call_a_computation_that_needs_a_handler() -> None:
    source = SOURCE + (
        "\nobject Row : FinSet 3\n"
        "program uses : Row -> Row\n"
        "    sample b <- Normal(0.0, 1.0)\n"
        "    let c <- drift(b)\n"
        "    observe y : Row <- Normal(c, 1.0)\n"
        "    return b\n"
    )
    found = [d for d in check(source).diagnostics if d.code == "QVR011"]
    assert found and "its call of drift" in found[0].message


def test_hover_lists_the_operations() -> None:
    module = check(SOURCE)
    effect = hover_at(module, SOURCE.index("Counter\n") + 1)
    assert effect is not None
    assert "operations: next : Unit -> Int; step : Int * Real -> Real" in effect.plain
    instance = hover_at(module, SOURCE.index("counter : Counter") + 1)
    assert instance is not None and "an instance of Counter" in instance.plain
