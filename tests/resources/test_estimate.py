"""The resource model against the runtime: parameter counts, the declaration blamed, no torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.sizing.resources import (
    MemoryBudgetError,
    check_budget,
    estimate,
    exported_programs,
    parse_size,
)
from qvr_core.text.units import format_bytes

from .hostile import HUGE, REPEAT, SMALL, STACK

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.qvr"))

# Every way the runtime makes parameters: replicate groups and members, nested stacks,
# repeat (shared), latent matrices, linear and low-rank networks, fixed and learned scales,
# Bernoulli and Categorical heads, a program used as a scan cell.
EVERYTHING = """\
object T : FinSet 5
object S : FinSet 3
object B : FinSet 2
object A : Real 6
object H : Real 4
object Ctx : A * H

morphism emb : T -> A [role=embed]
morphism lat : T -> S [role=latent]
morphism f : A -> A [role=kernel, param_source=linear] ~ Normal
morphism g : A -> A [role=kernel, param_source=linear, rank=2, scale=0.3] ~ Normal
morphism k : A -> A [role=kernel, hidden_dim=7, replicate=3] ~ Normal
morphism cellk : Ctx -> H [role=kernel, hidden_dim=5] ~ Normal
morphism coin : H -> B [role=kernel] ~ Bernoulli
morphism pick : S -> T [role=kernel] ~ Categorical

program cellp (a, h) : A * H -> H
    sample z <- cellk(a, h)
    return z

let body = stack(stack(f >> k_1, 2) >> g, 3) >> repeat(f, 4) >> fan(k)
let seq = emb >> stack(g, 2) >> scan(cellp)

program everything : T -> B
    sample s <- lat
    sample t <- pick(s)
    sample h <- seq
    observe c : B <- coin(h)
    return c

export everything
"""


def torch_parameters(source: str, name: str) -> int:
    return sum(p.numel() for p in loads(source)[name].parameters())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_parameters_match_the_compiled_examples(path: Path) -> None:
    source = path.read_text()
    module = check(source)
    for name in exported_programs(module):
        assert estimate(module, name).parameters == torch_parameters(source, name)


def test_parameters_match_every_way_of_making_them() -> None:
    module = check(EVERYTHING)
    assert module.ok, module.errors
    assert estimate(module, "everything").parameters == torch_parameters(EVERYTHING, "everything")


# Random lets of `>>`, nested `stack` and `repeat` over kernels with random options.
_kernel_options = st.sampled_from(
    [
        "[role=kernel] ~ Normal",
        "[role=kernel, scale=0.2] ~ Normal",
        "[role=kernel, hidden_dim=3] ~ Normal",
        "[role=kernel, param_source=linear] ~ Normal",
        "[role=kernel, param_source=linear, rank=1] ~ Normal",
        "[role=kernel] ~ Deterministic",
    ]
)


def _exprs(n_morphisms: int) -> st.SearchStrategy[str]:
    atoms = st.integers(0, n_morphisms - 1).map(lambda i: f"m{i}")
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda ab: f"({ab[0]} >> {ab[1]})"),
            st.tuples(inner, st.integers(1, 3)).map(lambda en: f"stack({en[0]}, {en[1]})"),
            st.tuples(inner, st.integers(1, 3)).map(lambda en: f"repeat({en[0]}, {en[1]})"),
        ),
        max_leaves=6,
    )


@st.composite
def programs(draw: st.DrawFn) -> str:
    width = draw(st.integers(2, 5))
    options = draw(st.lists(_kernel_options, min_size=1, max_size=4))
    body = draw(_exprs(len(options)))
    second = draw(_exprs(len(options)))
    lines = [f"object T : FinSet {draw(st.integers(2, 6))}", f"object A : Real {width}"]
    lines += ["morphism emb : T -> A [role=embed]"]
    lines += [f"morphism m{i} : A -> A {o}" for i, o in enumerate(options)]
    lines += [f"let body = {body}", f"let again = body >> {second}"]
    lines += ["program p : T -> A", "    sample h <- emb >> again", "    observe y : A <- body(h)"]
    lines += ["    return y", "export p"]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(programs())
def test_parameters_match_random_programs(source: str) -> None:
    module = check(source)
    assert module.ok, module.errors
    assert estimate(module, "p").parameters == torch_parameters(source, "p")


@pytest.mark.parametrize(
    ("source", "blamed", "line"),
    [
        (HUGE, "morphism head", 8),
        (REPEAT, "repeat(step, 1000000000)", 10),
        (STACK, "stack(step, 100000)", 10),
    ],
    ids=["huge-dimension", "repeat", "stack"],
)
def test_an_absurd_program_is_refused_naming_the_declaration(
    source: str, blamed: str, line: int
) -> None:
    need = estimate(check(source), "lm")
    budget = 8 << 30
    with pytest.raises(MemoryBudgetError) as info:
        check_budget(need, budget)
    message = str(info.value)
    assert f"{blamed} (line {line})" in message
    assert "over the memory budget of 8.59 GB" in message and "\n" not in message
    check_budget(estimate(check(SMALL), "lm"), budget)  # a small one passes


def test_sizes_are_exact_integers_however_large() -> None:
    need = estimate(check(HUGE), "lm")
    assert need.parameters > 10**13 and isinstance(need.total, int)
    assert format_bytes(need.total) == "888 TB"


def test_more_batch_or_length_needs_more() -> None:
    module = check(SMALL)
    base = estimate(module, "lm", batch=4, seq_len=8).total
    assert estimate(module, "lm", batch=64, seq_len=8).total > base
    assert estimate(module, "lm", batch=4, seq_len=512).total > base
    nuts = estimate(module, "lm", method="nuts", steps=2000).total
    assert nuts > estimate(module, "lm", method="nuts", steps=20).total


def test_a_chain_of_twenty_thousand_lets_is_sized_without_recursion() -> None:
    """The chain holds f's parameters once, as a program of f alone does (the program
    compared has no lets at all, so lets it does not use cannot count on both sides)."""
    head = "object A : Real 2\nmorphism f : A -> A [role=kernel] ~ Normal\n"
    lets = "\n".join(f"let l{i} = l{i - 1} >> f" for i in range(1, 20_000))
    program = "program p : A -> A\n    observe y : A <- {}\n    return y\nexport p\n"
    module = check(f"{head}let l0 = f\n{lets}\n{program.format('l19999')}")
    assert module.ok, module.errors[:1]
    need = estimate(module, "p")
    alone = check(head + program.format("f"))
    assert alone.ok, alone.errors[:1]
    assert need.parameters == estimate(alone, "p").parameters > 0


def test_the_resource_model_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom qvr_core.check import check\n"
        "from qvr_core.sizing.resources import estimate\n"
        f"estimate(check({SMALL!r}), 'lm')\nassert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@given(st.integers(1, 1 << 30), st.sampled_from(["", "b", "k", "KB", "MiB", "mb", "G", "gb"]))
def test_parse_size_reads_what_it_is_told(n: int, unit: str) -> None:
    scale = {"": 1 << 20, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit[:1].lower()]
    size = n * scale
    if not (1 << 20) <= size <= (1 << 50):
        with pytest.raises(ValueError):
            parse_size(f"{n}{unit}")
    else:
        assert parse_size(f"{n}{unit}") == size


@given(st.one_of(st.text(max_size=12), st.floats(), st.booleans(), st.none(), st.integers()))
def test_parse_size_refuses_with_a_message_never_a_crash(value: object) -> None:
    try:
        size = parse_size(value)
    except ValueError as exc:
        assert "memory size" in str(exc)
    else:
        assert (1 << 20) <= size <= (1 << 50)


def test_the_runtime_uses_four_byte_floats_as_the_model_assumes() -> None:
    assert torch.get_default_dtype() == torch.float32


def test_a_chain_of_stacks_deeper_than_the_recursion_limit_is_sized_exactly() -> None:
    def chain(n: int) -> str:
        lines = ["object A : Real 4", "morphism f : A -> A [role=kernel] ~ Normal", "let l0 = f"]
        lines += [f"let l{i} = stack(l{i - 1}, 2)" for i in range(1, n)]
        lines += ["program p : A -> A", f"    sample h <- l{n - 1}", "    return h", "export p"]
        return "\n".join(lines) + "\n"

    one = estimate(check(chain(1)), "p").parameters  # f alone
    assert estimate(check(chain(500)), "p").parameters == one * 2**499


def test_counts_past_what_a_float_holds_are_written_in_scientific_notation() -> None:
    from qvr_core.text.units import format_bytes

    assert format_bytes(2**1000) == "1.07e+301 bytes"
    assert format_bytes(3 * 10**20) == "300 EB"
    assert format_bytes(999_999 * 10**20) == "1e+26 bytes"
    assert format_bytes(2**70_000).endswith("e+21072 bytes")  # more digits than str() prints
