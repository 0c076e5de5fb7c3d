"""Property: deep and long programs never end in a traceback, from any command (issue 18).

Generated inputs: chains of lets longer than Python's recursion limit in any
declaration order, programs that use programs, expressions nested past the
parser's limit, long flat chains, deep arithmetic. Every command (`qvr check`, `qvr fmt`,
`qvr diagram` in each format, and the runtime's compile and a forward pass
as `qvr run --method prior` does) answers with an exit code of 0, 1 or 2
and no traceback; what is too deep to run is refused with one line that
says so (`nesting.MAX_INLINED_DEPTH`).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_cli.main import main
from qvr_core.check import check
from qvr_core.check.nesting import MAX_INLINED_DEPTH

HEAD = ["object A : Real 4", "morphism f : A -> A [role=kernel] ~ Normal"]
#: Python's recursion limit as a user's `qvr` runs under it, read at import: while a test
#: runs, Hypothesis raises it (to about 2,000 frames more than are in use), which would let
#: a walk that recurses get further in a test than for a user. See `users_stack`.
RECURSION_LIMIT = sys.getrecursionlimit()
#: Longer than that stack allows a walk that recurses once a level: a recursive walk of a
#: chain this long raises RecursionError, which is what the long inputs are here to catch.
#: (Not longer: the check of a long chain grows faster than its length, and every command
#: checks it again.)
PAST_THE_STACK = RECURSION_LIMIT + 500
BODIES = ["{prev} >> f", "f >> {prev}", "{prev} >> (f >> f)", "({prev})", "stack({prev}, 2)"]


@st.composite
def let_chains(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, PAST_THE_STACK))
    body = draw(st.sampled_from(BODIES))
    lets = ["let l0 = f"] + [f"let l{i} = " + body.format(prev=f"l{i - 1}") for i in range(1, n)]
    order = draw(st.sampled_from(["forward", "reverse", "shuffled"]))
    if order == "reverse":
        lets.reverse()
    elif order == "shuffled":
        lets = draw(st.permutations(lets))
    program = ["program p : A -> A", f"    sample h <- l{n - 1}", "    return h", "export p"]
    return "\n".join([*HEAD, *lets, *program]) + "\n"


@st.composite
def program_chains(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 400))
    lines = list(HEAD)
    for i in range(n):
        source = "f" if i == 0 else f"p{i - 1}"
        lines += [f"program p{i} : A -> A", f"    sample h <- {source}", "    return h"]
    if draw(st.booleans()):
        lines = lines[:2] + [
            line for k in reversed(range(n)) for line in lines[2 + 3 * k : 5 + 3 * k]
        ]
    return "\n".join([*lines, f"export p{n - 1}"]) + "\n"


@st.composite
def nested_expressions(draw: st.DrawFn) -> str:
    depth = draw(st.integers(1, 80))
    shape = draw(st.sampled_from(["parens", "stack", "fan", "flat", "scan"]))
    expr = "f"
    if shape == "parens":
        for _ in range(depth):
            expr = f"(f >> {expr})"
    elif shape == "stack":
        for _ in range(depth):
            expr = f"stack({expr}, 1)"
    elif shape == "fan":
        for _ in range(depth):
            expr = f"fan({expr}) >> f"
    elif shape == "flat":
        expr = " >> ".join(["f"] * depth)
    else:
        expr = "scan(g)"
        for _ in range(depth):
            expr = f"({expr} >> scan(g))"
    lines = [
        *HEAD,
        "morphism g : A * A -> A [role=kernel] ~ Normal",
        f"let deep = {expr}",
        "program p : A -> A",
        "    sample h <- deep",
        "    return h",
        "export p",
    ]
    return "\n".join(lines) + "\n"


@st.composite
def deep_arithmetic(draw: st.DrawFn) -> str:
    depth = draw(st.integers(1, 80))
    op = draw(st.sampled_from(["+", "*", "-"]))
    value = "h"
    for _ in range(depth):
        value = draw(st.sampled_from([f"({value} {op} h)", f"exp({value})", f"-({value})"]))
    lines = [*HEAD, "program p : A -> A", "    sample h <- f", f"    let y = {value}"]
    return "\n".join([*lines, "    return y", "export p"]) + "\n"


INPUTS = st.one_of(let_chains(), program_chains(), nested_expressions(), deep_arithmetic())
SMALL_BUDGET = 64 * 2**20  # bytes of parameters a generated program may allocate
COMMANDS = [
    ["check"],
    ["fmt", "--check"],
    ["diagram", "--format", "mermaid"],
    ["diagram", "--format", "dot"],
    *(["export", "--to", t] for t in ("stan", "numpyro", "pymc")),
    *(["check", "--target", t] for t in ("stan", "numpyro", "pymc")),
]


@contextlib.contextmanager
def users_stack() -> Iterator[None]:
    """Python's recursion limit as when a user runs `qvr` (`RECURSION_LIMIT`), not the
    raised one of a Hypothesis test; restored after."""
    raised = sys.getrecursionlimit()
    sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(raised)


def run_cli(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with users_stack(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


def assert_answered(code: int, output: str) -> None:
    assert code in (0, 1, 2), output[-2000:]
    assert "Traceback" not in output and "RecursionError" not in output, output[-2000:]
    assert "QVR000" not in output, output[-2000:]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(INPUTS)
def test_every_command_answers_deep_and_long_programs(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deep.qvr"
        path.write_text(text, encoding="utf-8")
        for command in COMMANDS:
            assert_answered(*run_cli([command[0], str(path), *command[1:]]))
        if text.count("\n") < 400:  # Graphviz is slow on very large drawings
            svg = ["diagram", str(path), "--format", "svg", "-o", str(Path(tmp) / "out.svg")]
            assert_answered(*run_cli(svg))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(INPUTS)
def test_the_runtime_compiles_and_runs_what_it_accepts_and_refuses_the_rest(text: str) -> None:
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.compile import Compiler
    from qvr_core.runtime.errors import QvrError

    with users_stack():  # the long inputs are past a user's stack, not Hypothesis's
        module = check(text)
        if not module.ok:
            return
        try:
            # stack(..., 2) chains double their parameters each level: a small budget keeps
            # the test's own memory bounded, and refusing over it is the other documented
            # answer.
            program = Compiler(module, memory_budget=SMALL_BUDGET).export()
        except QvrError as exc:
            message = str(exc)
            assert "\n" not in message
            if "memory budget" in message:
                assert "parameters" in message and "stack(" in message, message
                return
            assert "nested too deeply" in message, message
            assert str(MAX_INLINED_DEPTH) in message
            return
        with torch.no_grad():
            program.rsample(torch.randn(2, 4))  # type: ignore[operator]


def chain(n: int, reverse: bool = False) -> str:
    lets = ["let l0 = f"] + [f"let l{i} = l{i - 1} >> f" for i in range(1, n)]
    if reverse:
        lets.reverse()
    program = ["program p : A -> A", f"    sample h <- l{n - 1}", "    return h", "export p"]
    return "\n".join([*HEAD, *lets, *program]) + "\n"


def test_a_chain_of_20000_lets_is_checked_and_drawn_folded(tmp_path: Path) -> None:
    path = tmp_path / "chain.qvr"
    path.write_text(chain(20_000, reverse=True), encoding="utf-8")
    code, output = run_cli(["check", str(path)])
    assert code == 0, output[-2000:]
    code, output = run_cli(["diagram", str(path)])
    assert code == 0 and 'l19999["l19999"]' in output, output[-2000:]  # one folded node


def test_running_a_program_nested_past_the_limit_is_refused_in_one_line() -> None:
    pytest.importorskip("torch")
    from qvr_core.runtime.compile import Compiler
    from qvr_core.runtime.errors import QvrError

    with pytest.raises(QvrError, match="nested too deeply") as caught:
        Compiler(check(chain(MAX_INLINED_DEPTH + 1))).export()
    assert "\n" not in str(caught.value)
    Compiler(check(chain(MAX_INLINED_DEPTH // 2))).export()  # within the limit: compiles


@pytest.mark.parametrize("op", [">>", "@"])
def test_long_flat_chains_are_walked_without_recursion(monkeypatch, op: str) -> None:
    """Walks follow a chain's left spine in a loop: a flat chain as long as the parser
    may one day accept (its limit counts nesting) is checked, printed and drawn. The chain
    is `PAST_THE_STACK` terms: more than a recursive walk could follow (the check and the
    drawing of an `@` chain grow faster than its length, so no longer than that)."""
    import qvr_core.syntax.parser as parser
    from qvr_core.format.formatter import format_text
    from qvr_core.graph.build import build_graph

    monkeypatch.setattr(parser, "MAX_DEPTH", 10**6)
    chain = f" {op} ".join(["f"] * PAST_THE_STACK)
    arith = " + ".join(["h"] * PAST_THE_STACK)
    text = "\n".join(
        [
            *HEAD,
            f"let g = {chain}",
            "program p : A -> A",
            f"    sample h <- {chain if op == '>>' else 'f'}",
            f"    let y = {arith}",
            "    return y",
            "export p",
        ]
    )
    module = check(text + "\n")
    assert not any(d.code == "QVR000" for d in module.diagnostics)
    formatted = format_text(text)
    assert formatted.ok, formatted.refused
    assert f"let g = {chain}\n" in formatted.text
    build_graph(module)
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.compile import Compiler
    from qvr_core.runtime.errors import QvrError

    if op == ">>":  # the program puts the chain in place: too deep to run, said in one line
        with pytest.raises(QvrError, match="nested too deeply"):
            Compiler(module).export()
    else:  # the long sum is evaluated in a loop
        with torch.no_grad():
            Compiler(module).export().rsample(torch.randn(2, 4))  # type: ignore[operator]
