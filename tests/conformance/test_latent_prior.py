"""A prior on a latent morphism is checked as quivers 0.25.2 checks it, and not used.

Read from quivers (the 0.25.2 wheel, `dsl/compiler/declarations.py`,
`_compile_latent_role` and `_validate_family_axes`; `dsl/compiler/_prelude.py`,
`_available_axes_for` and `_validate_axis_spec`): `[role=latent, over=..., iid=...] ~
Family(...)` has its axes checked (each a side written as one object, `dom`/`cod`, or a
factor named; `over` as many as a draw of the family has; no axis in both lists), and
the latent is then built from its domain and codomain alone, so the prior adds nothing
to the fit and its arguments are never read. qvr checks the same, warns at the family
(QVR317), and runs the latent as it runs one without a prior. Our own programs, parsed
by quivers' HEAD grammar.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.runtime.morphisms import Morphism
from tests.conformance import oracle

SOURCE = """object State : FinSet 3
object Obs : FinSet 4

morphism transition : State -> State [role=latent, over=cod, iid=dom] ~ Dirichlet(alpha)
morphism emission : State -> Obs [role=latent]

define step = transition >> emission

export step
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_it_is_checked_and_the_prior_is_said_unused() -> None:
    module = check(SOURCE)
    assert module.errors == [], module.errors
    (warning,) = [d for d in module.diagnostics if d.code == "QVR317"]
    assert warning.span.start == SOURCE.index("Dirichlet")
    assert "not used" in warning.message
    info = module.morphisms["transition"]
    assert info.role == "latent" and info.type.label == "State -> State"


def test_it_runs_as_the_latent_without_a_prior() -> None:
    """The same parameters as the file without the prior, and the same draws."""
    with_prior = loads(SOURCE)["step"]
    without = loads(SOURCE.replace(", over=cod, iid=dom] ~ Dirichlet(alpha)", "]"))["step"]
    assert isinstance(with_prior, Morphism) and isinstance(without, Morphism)
    names = sorted(n for n, _ in with_prior.named_parameters())
    assert names == sorted(n for n, _ in without.named_parameters())
    x = torch.tensor([0, 1, 2, 0])
    torch.manual_seed(3)
    a = with_prior.rsample(x)
    torch.manual_seed(3)
    b = without.rsample(x)
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("axes", "says"),
    [
        ("over=[dom, cod]", "a draw of Dirichlet has 1 axis, and over= names 2"),
        ("iid=dom", "over= names 0"),
        ("over=Topic", "Topic is no axis of morphism transition"),
        ("over=cod, iid=cod", "cod is in both over= and iid="),
    ],
)
def test_quivers_axis_refusals_are_errors(axes: str, says: str) -> None:
    source = SOURCE.replace("over=cod, iid=dom", axes)
    found = [d for d in check(source).errors if d.code == "QVR304"]
    assert found and says in found[0].message, check(source).diagnostics


def test_a_factor_is_an_axis_by_name() -> None:
    source = SOURCE.replace("over=cod, iid=dom", "over=State")
    assert check(source).errors == []


def test_a_continuous_side_is_refused_as_for_every_latent() -> None:
    source = "object H : Real 3\n" + SOURCE.replace(
        "transition : State -> State", "transition : H -> H"
    ).replace("define step = transition >> emission\n\nexport step\n", "")
    codes = [d.code for d in check(source).errors]
    assert codes and set(codes) == {"QVR307"}, check(source).errors
