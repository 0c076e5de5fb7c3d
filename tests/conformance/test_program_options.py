"""A program's `effects=` and `over=` options mean what quivers 0.25.2 makes of them.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/programs.py` accepts the keys
`effects` and `over` on a program and no other (`_PROGRAM_OPTION_KEYS`), checks the
body's effects (`_infer_effects`: a draw is Sample, an observed draw Score, a
marginalize Marginal) against the declared ones, refusing any effect under `Pure`
(`_verify_effects`), and registers a program with `over=M` among M's posteriors rather
than its morphisms, refusing an undeclared M. The programs are our own, written like the
guide's (`dsl-programs-and-lets.md`) and parsed by quivers' grammars.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.plan.runnable import runnability
from qvr_core.runtime.model import ModelProgram
from tests.conformance import oracle

SOURCE = """object X : FinSet 3
object Y : FinSet 2

program model : X -> Y [effects=[Sample, Score]]
    sample mu <- Normal(0.0, 1.0)
    observe y <- Normal(mu, 1.0)
    return mu

program guide : X -> Y [effects=[Sample], over=model]
    sample mu <- Normal(0.0, 2.0)
    return mu

export model
export guide
"""


def _found(source: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check(source).diagnostics if d.code != "QVR103"]


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_both_programs_are_typed() -> None:
    module = check(SOURCE)
    assert _found(SOURCE) == []
    assert "model" in module.models and "guide" in module.models


def test_a_posterior_block_is_not_run_but_its_model_is() -> None:
    module = check(SOURCE)
    assert runnability(module, "model").ok
    refused = runnability(module, "guide")
    assert not refused.ok and "posterior block over model" in (refused.reason or "")


@pytest.mark.parametrize(
    ("before", "after", "code", "says"),
    [
        ("[effects=[Sample, Score]]", "[effects=[Sample]]", "QVR410", "this step is Score"),
        ("[effects=[Sample, Score]]", "[effects=Pure]", "QVR410", "declared Pure"),
        ("over=model", "over=modl", "QVR101", "no declared model"),
        ("[effects=[Sample], over=model]", "[effect=[Sample]]", "QVR303", "no option 'effect'"),
        ("[effects=[Sample, Score]]", "[effects=[Sample, Scor]]", "QVR802", "'Scor'"),
    ],
)
def test_what_quivers_refuses_is_reported(before: str, after: str, code: str, says: str) -> None:
    found = _found(SOURCE.replace(before, after, 1))
    assert any(c == code and says in m for c, m in found), found


PURE = """object X : Real 2

program double : X -> X [effects=[Pure]]
    let y = x * 2.0
    return y

export double
"""


def test_a_pure_program_of_lets_is_typed_and_computes_its_return() -> None:
    """quivers binds the free name `x` from the data, and a `Pure` program has no step
    with an effect: it computes its return from the data."""
    oracle.require_head(PURE)
    module = check(PURE)
    assert _found(PURE) == []
    assert "double" in module.models and runnability(module, "double").ok
    program = loads(PURE)["double"]
    assert isinstance(program, ModelProgram)
    out = program.rsample({"x": torch.tensor([1.0, -3.0])})
    assert torch.equal(
        torch.as_tensor(out).double(), torch.tensor([2.0, -6.0], dtype=torch.float64)
    )
