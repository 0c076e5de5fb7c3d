"""Arithmetic as a family's argument (`Normal(a + 1.0, s)`): the syntax error says to bind
it with a let, and its fix does, above the step, leaving a program that checks clean."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.text.edits import apply_edits
from tests.conformance import oracle

PROGRAM = """\
object Row : FinSet 5

program p : Row -> Row
    sample a <- Normal(0.0, 1.0)
    sample s <- HalfNormal(1.0)
{step}
    return a

export p
"""


@pytest.mark.parametrize(
    ("step", "argument", "name", "fixed_step"),
    [
        (
            "    observe y : Row <- Normal(a + 1.0, s)",
            "a + 1.0",
            "y_arg1",
            "    observe y : Row <- Normal(y_arg1, s)",
        ),
        (  # the second argument, brackets inside it kept whole
            "    observe y : Row <- Normal(0.5, a * (s + 1.0))",
            "a * (s + 1.0)",
            "y_arg2",
            "    observe y : Row <- Normal(0.5, y_arg2)",
        ),
        (
            "    sample b <- Normal(a - 2.0, s) [over=Row]",
            "a - 2.0",
            "b_arg1",
            "    sample b <- Normal(b_arg1, s) [over=Row]",
        ),
    ],
)
def test_the_error_names_the_argument_and_its_fix_binds_a_let(
    step: str, argument: str, name: str, fixed_step: str
) -> None:
    text = PROGRAM.format(step=step)
    [error] = [d for d in check(text).diagnostics if d.code == "QVR001"]
    assert error.message.endswith(
        "a family's arguments are names, numbers and calls (`sigmoid(eta)`); compute "
        f"'{argument}' in a `let` first"
    )
    [fix] = error.fixes
    assert fix.title == f"Bind '{argument}' to a let"
    fixed = apply_edits(text, fix.edits)
    assert f"    let {name} = {argument}\n{fixed_step}\n" in fixed
    after = check(fixed)
    assert after.ok, [(d.code, d.message) for d in after.diagnostics]
    assert oracle.accepted_by(fixed), "the fixed program is quivers' grammar too"


def test_other_syntax_errors_keep_their_message_without_the_hint() -> None:
    for step in (
        "    observe y : Row <- Normal(a, s) + 1.0",  # after the call: no argument to bind
        "    let m = a + * s",  # not a family step
    ):
        [error] = [d for d in check(PROGRAM.format(step=step)).diagnostics if d.code == "QVR001"]
        assert "compute" not in error.message and error.fixes == ()
