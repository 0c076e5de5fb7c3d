"""The memory estimate counts every kernel family's and every combinator's parameters as the
compiled module has them.

Both sides read the registry (`qvr_core.builtins`): the estimate its kernel forms
and combinator costs, the runtime its families and combinators. These tests run
over the whole registry, so a new family or combinator is checked the day it is
added (the estimate once counted a `~ StudentT` kernel at half its parameters).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from qvr_core.builtins import COMBINATORS, FAMILIES, KERNEL_FAMILIES, OBJECT_CONSTRUCTORS, Family
from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.sizing.resources import estimate


def _object_for(family: Family) -> tuple[str, int, int]:
    """The tightest object constructor the family's draws fit, with two sizes it fits."""
    for ctor in reversed(OBJECT_CONSTRUCTORS.values()):
        sizes = [n for n in (3, 2) if family.fits(ctor.kind, n)]
        if sizes:
            return ctor.name, sizes[0], sizes[-1]
    raise AssertionError(f"{family.name} fits no object")


def _options(family: Family) -> list[str]:
    """The option sets that change how many parameters a kernel has."""
    assert family.kernel is not None
    if family.kernel.outputs == "hyperparameters":  # no network: its own numbers only
        held = [o.name for o in family.kernel.options if isinstance(o.default, float)]
        return ["", f", {held[0]}=0.5"]  # a held number started elsewhere: still one
    if family.kernel.outputs == "flow":  # its coupling layers are its networks
        return ["", ", hidden_dim=5", ", n_layers=1", ", n_layers=3, hidden_dim=7"]
    options = ["", ", param_source=linear", ", param_source=linear, rank=1", ", hidden_dim=5"]
    if family.kernel.scale_option:
        options.append(", scale=0.5")
    if family.kernel.option("rank") is not None:  # the family's own rank (LowRankMVN)
        options.append(", rank=3")
    return options


CASES = [(name, options) for name in KERNEL_FAMILIES for options in _options(FAMILIES[name])]


#: The one Real object a whole-draw kernel fills, by its draw's layout, and its options.
_WHOLE = {
    "vector": ("Real 3", ""),
    "square_matrix": ("Real 9", ""),
    "axes": ("Real 6", ", over=[T, U]"),
}


def kernel_program(family: Family, options: str) -> str:
    """A program whose one site is a kernel `~ family` into a product of two objects (one
    Real object for a family whose one draw fills it)."""
    assert family.kernel is not None
    if family.kernel.whole_draw:
        ctor, over = _WHOLE[family.kernel.draw]
        if family.kernel.outputs == "hyperparameters":
            ctor = "Real 1"  # a GP: one location per number, the input's 7 features
        return f"""\
object X : Real 4
object T : FinSet 3
object U : FinSet 2
object YZ : {ctor}

morphism k : X * T -> YZ [role=kernel{over}{options}] ~ {family.name}

program p (x, t) : X * T -> YZ
    sample y <- k(x, t)
    return y

export p
"""
    ctor, first, second = _object_for(family)
    return f"""\
object X : Real 4
object T : FinSet 3
object Y : {ctor} {first}
object Z : {ctor} {second}
object YZ : Y * Z

morphism k : X * T -> YZ [role=kernel{options}] ~ {family.name}

program p (x, t) : X * T -> YZ
    sample y <- k(x, t)
    return y

export p
"""


def torch_parameters(source: str, name: str) -> int:
    return sum(p.numel() for p in loads(source)[name].parameters())


@pytest.mark.parametrize(("family", "options"), CASES)
def test_the_estimate_counts_a_kernels_parameters_as_compiled(family: str, options: str) -> None:
    source = kernel_program(FAMILIES[family], options)
    module = check(source)
    assert module.ok, module.errors
    assert estimate(module, "p").parameters == torch_parameters(source, "p")


def test_every_kernel_family_is_covered() -> None:
    assert {name for name, _ in CASES} == {n for n, f in FAMILIES.items() if f.kernel is not None}


#: A use of each combinator around kernels that have parameters (two morphisms `f`, `g`:
#: A -> A, and a cell `c` : A * A -> A), so that how a call makes or shares its
#: arguments' parameters shows in the count.
COMBINATOR_USES = {
    "fan": "fan(f, g, f)",
    "scan": "scan(c, init=learned)",  # the learned first state is the scan's own
    "scanl": "scanl(c)",
    "multihead": "multihead(f, g, f) >> f",  # one head each: f is shared, g is not
    "causal_multihead": "causal_multihead(f, g, f) >> f",
    "cross_multihead": "cross_multihead(f, g, f) >> f",  # queries and memory of type A
    "stack": "stack(f >> g, 3)",
    "repeat": "repeat(f >> g, 3)",
    "identity": "f >> identity(A) >> g",
}
_RESULTS = {"fan": "A * A * A", "scanl": "A", "multihead": "A"}
_INPUTS = {"cross_multihead": "AA"}  # a query and a memory per position


def combinator_program(name: str) -> str:
    """A program with one site, the let; its input type is the let's (a sequence for scan)."""
    result, given = _RESULTS.get(name, "A"), _INPUTS.get(name, "A")
    return f"""\
object A : Real 3
object AA : A * A

morphism f : A -> A [role=kernel, hidden_dim=4] ~ Normal
morphism g : A -> A [role=kernel, param_source=linear] ~ StudentT
morphism c : AA -> A [role=kernel, hidden_dim=3] ~ Normal

let body = {COMBINATOR_USES[name]}

program p : {given} -> {result}
    sample y <- body
    return y

export p
"""


def test_every_combinator_has_a_use_here() -> None:
    assert set(COMBINATOR_USES) == set(COMBINATORS)


@pytest.mark.parametrize("name", sorted(COMBINATORS))
def test_the_estimate_counts_a_combinators_parameters_as_compiled(name: str) -> None:
    source = combinator_program(name)
    module = check(source)
    assert module.ok, module.errors
    assert estimate(module, "p").parameters == torch_parameters(source, "p")


HOLDING = """\
object A : Real 3
object AAA : A * A * A

morphism f : A -> A [role=kernel, hidden_dim=4] ~ Normal
morphism join : AAA -> A [role=kernel, param_source=linear] ~ Normal

let block = fan(f, f, f) >> join >> fan(f, f, f) >> join
let body = stack(block, 3)

program p : A -> A
    sample y <- body
    return y

export p
"""


def test_parameters_a_combinator_holds_itself_are_counted_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """None holds any today; one that does is counted from its registry entry, per call and
    per copy of a `stack` around it."""
    module = check(HOLDING)
    assert module.ok, module.errors
    before = estimate(module, "p").parameters
    fan = COMBINATORS["fan"]
    monkeypatch.setitem(COMBINATORS, "fan", replace(fan, cost=replace(fan.cost, parameters=7)))
    assert estimate(check(HOLDING), "p").parameters == before + 3 * 2 * 7
