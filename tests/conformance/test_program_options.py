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

from qvr_core.check import check
from qvr_core.plan.runnable import runnability
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
