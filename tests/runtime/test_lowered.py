"""The morphism runtime compiles the checker's lowered module (`check/lowered.py`), no syntax."""

from __future__ import annotations

import dataclasses
import pickle
import textwrap
from pathlib import Path

import pytest
import torch

from qvr_core.check import check
from qvr_core.check import lowered as ir
from qvr_core.dsl import loads
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import QvrError
from qvr_core.runtime.program import ProgramModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def values_under(root: object) -> list[object]:
    """Every value reachable from `root` through dataclass fields, tuples and mappings."""
    found, stack = [], [root]
    while stack:
        value = stack.pop()
        found.append(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            stack += [getattr(value, f.name) for f in dataclasses.fields(value)]
        elif isinstance(value, tuple | list | frozenset):
            stack += list(value)
        elif isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
    return found


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.qvr")))
def test_the_lowered_examples_hold_no_syntax_node(name: str) -> None:
    module = check((EXAMPLES / name).read_text(encoding="utf-8"))
    lowered = ir.lower_module(module)
    assert lowered.lets or lowered.programs
    kinds = {type(v).__module__ for v in values_under(lowered)}
    assert "qvr_core.syntax.ast" not in kinds, kinds


def test_a_bidirectional_fan_is_lowered_with_the_checkers_facts() -> None:
    module = check((EXAMPLES / "bidirectional_rnn_lm.qvr").read_text(encoding="utf-8"))
    lowered = ir.lower_module(module)
    calls = [v for v in values_under(lowered) if isinstance(v, ir.Combinator)]
    fans = [c for c in calls if c.reversed_branches]
    assert fans and all(c.type is not None for c in calls)
    assert all(c.label in module.source for c in calls)
    assert {c.name for c in calls} >= {"fan", "scan"}


def test_stacks_are_numbered_in_source_order_and_give_their_counts() -> None:
    source = textwrap.dedent(
        """
        object X : Real 4
        morphism blk : X -> X [role=kernel, param_source=linear, scale=0.1] ~ Normal
        let two = stack(blk, 2)
        let three = stack(blk, 3)
        let loop = repeat(blk, 4)
        """
    )
    lowered = ir.lower_module(check(source))
    two, three, loop = (lowered.lets[n] for n in ("two", "three", "loop"))
    assert isinstance(two, ir.Combinator) and (two.ordinal, two.counts) == (0, (2,))
    assert isinstance(three, ir.Combinator) and (three.ordinal, three.counts) == (1, (3,))
    assert isinstance(loop, ir.Combinator) and (loop.ordinal, loop.counts) == (None, (4,))
    assert loop.parts == (ir.Named("blk", "blk"),)


def test_a_long_chain_is_lowered_without_recursion(monkeypatch: pytest.MonkeyPatch) -> None:
    import qvr_core.syntax.parser as parser

    monkeypatch.setattr(parser, "MAX_DEPTH", 10**6)  # as long as the parser may one day accept
    chain = " >> ".join(["f"] * 3000)
    source = f"object A : Real 2\nmorphism f : A -> A [role=kernel] ~ Normal\nlet g = {chain}\n"
    lowered = ir.lower_module(check(source))
    node = lowered.lets["g"]
    depth = 0
    while isinstance(node, ir.Composed):
        node, depth = node.left, depth + 1
    assert depth == 2999 and node == ir.Named("f", "f")


LETS = """
    object Token : FinSet 5
    object Emb : Real 3
    morphism e : Token -> Emb [role=embed]
    program p : Token -> Emb
        sample h <- e
        let a = 2 * h + 1 / 4
        let b = max(a, 1) - softplus(-a)
        return b
    export p
"""


def test_program_lets_run_the_checked_terms_with_numbers_broadcast() -> None:
    torch.manual_seed(0)
    model = loads(textwrap.dedent(LETS)).morphism
    assert isinstance(model, ProgramModule)
    x = torch.randint(0, 5, (4,))
    h = torch.randn(4, 3)
    result = model.run(x, values={"h": h})
    a = 2 * h + 0.25
    expected = torch.maximum(a, torch.tensor(1.0)) - torch.nn.functional.softplus(-a)
    assert torch.allclose(result.output, expected)
    assert result.output.dtype == torch.get_default_dtype()


def test_a_compiled_program_carries_no_syntax_node() -> None:
    torch.manual_seed(0)
    model = loads(textwrap.dedent(LETS)).morphism
    assert b"qvr_core.syntax.ast" not in pickle.dumps(model)


def test_a_let_the_checker_did_not_type_is_refused_when_compiling() -> None:
    module = check(textwrap.dedent(LETS))
    compiler = Compiler(module)
    program = compiler.lowered.programs["p"]
    steps = tuple(
        dataclasses.replace(s, value=None) if isinstance(s, ir.LetValue) else s
        for s in program.steps
    )
    programs = {**compiler.lowered.programs, "p": dataclasses.replace(program, steps=steps)}
    assert program.sites == tuple(s for s in steps if isinstance(s, ir.Site))
    compiler.lowered = dataclasses.replace(compiler.lowered, programs=programs)
    with pytest.raises(QvrError, match="let at line 7 computes a value that cannot run"):
        compiler.export("p")
