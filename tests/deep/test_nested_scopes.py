"""Statements nest (`marginalize` inside `marginalize`) only so deep (issue 24).

About 500 nested scopes used to end in QVR000 (a recursion failure in the
parser); now the parser refuses the first line past `MAX_DEPTH` indented
levels with one located QVR001, and a program within the limit goes through
every command without a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.syntax.parser import MAX_DEPTH, parse
from tests.deep.test_every_command import assert_answered, run_cli


def nested_hmm(levels: int) -> str:
    """An HMM whose states are `levels` nested `marginalize` scopes (the body is level 1)."""
    lines = [
        "object State : FinSet 2",
        "object Symbol : FinSet 3",
        "object Sequence : FinSet 4",
        "program hmm : Sequence -> Sequence",
        "    sample start <- Dirichlet(1.0) [over=State]",
        "    sample trans : State <- Dirichlet(1.0) [over=State, iid_over=State]",
        "    sample emit : State <- Dirichlet(1.0) [over=Symbol, iid_over=State]",
        "    marginalize s0 : State <- Categorical(start) [over=Sequence]",
    ]
    for i in range(1, levels):
        indent = "    " * (i + 1)
        lines.append(f"{indent}observe o{i - 1} : Sequence <- Categorical(emit[s{i - 1}])")
        lines.append(
            f"{indent}marginalize s{i} : State <- Categorical(trans[s{i - 1}]) [over=Sequence]"
        )
    indent = "    " * (levels + 1)
    lines.append(f"{indent}observe o{levels - 1} : Sequence <- Categorical(emit[s{levels - 1}])")
    lines += ["    return trans", "", "export hmm"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [MAX_DEPTH, 500, 5000])
def test_scopes_nested_past_the_limit_are_one_located_error(levels: int) -> None:
    result = parse(nested_hmm(levels))
    errors = [d for d in result.diagnostics if d.code != "QVR012"]
    assert [d.code for d in errors] == ["QVR001"], errors
    (error,) = errors
    assert error.message.startswith(f"statements nested too deeply (more than {MAX_DEPTH}")
    # the first line one level too deep: the program's body is level 1 and the body of
    # scope s{k} level k + 2, so the body of s{MAX_DEPTH - 1} (its first line) is refused
    assert error.span.start_line == 8 + 2 * (MAX_DEPTH - 1)
    assert "\n" not in error.message


def test_scopes_within_the_limit_check() -> None:
    checked = check(nested_hmm(MAX_DEPTH - 1))
    assert checked.ok, checked.errors
    assert len(checked.models["hmm"].sites) == 3 + 2 * (MAX_DEPTH - 1)


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, 500])
@pytest.mark.parametrize("command", ["check", "fmt", "diagram"])
def test_every_command_answers_deep_scopes(tmp_path: Path, levels: int, command: str) -> None:
    path = tmp_path / "deep.qvr"
    path.write_text(nested_hmm(levels), encoding="utf-8")
    assert_answered(*run_cli([command, str(path)]))
