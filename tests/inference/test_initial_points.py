"""Where a NUTS chain starts: Stan's random starts when the given one does not work.

Each model below fails at its given start by construction (never by a seed's luck): a
log density of -inf there, a finite one whose gradient is NaN there (a square root's
cusp), or a point where any step however small jumps the energy by 1,000 (the
step-size search halves it to nothing). Random points in (-2, 2) work for each with
probability one. Models that fail everywhere check what the error says.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable

import pytest
import torch
from torch import distributions as D

from qvr_core.cli import run as cli_run
from qvr_core.inference import MCMC, InferenceError, NUTSKernel
from qvr_core.inference.chains import run_chains
from qvr_core.inference.nuts import INIT_RADIUS, INIT_TRIES, NUTSChain, Potential
from qvr_core.plan.run_arguments import MAX_TREE_DEPTH, RunArguments, validate_run_arguments
from qvr_core.runs.run import run_program

from .toy_models import Site, ToyProgram

X = torch.zeros(1, 1)
LogDensity = Callable[[torch.Tensor], torch.Tensor]


def potential_of(log_density: LogDensity) -> Potential:
    """U(z) = -log_density(z) with its autograd gradient, counting its evaluations."""

    def potential(z: torch.Tensor) -> tuple[float, torch.Tensor]:
        potential.calls += 1  # type: ignore[attr-defined]
        z = z.detach().requires_grad_(True)
        lp = log_density(z)
        (g,) = torch.autograd.grad(lp, z)
        return -float(lp.detach()), -g

    potential.calls = 0  # type: ignore[attr-defined]
    return potential


def normal(z: torch.Tensor) -> torch.Tensor:
    return -0.5 * (z * z).sum()


def minus_inf_outside(z: torch.Tensor) -> torch.Tensor:
    """-inf where any coordinate is 3 or more from 0: the start at 5 is outside."""
    inside = (z.abs() < 3).all()
    return torch.where(inside, torch.zeros(()), torch.tensor(-torch.inf, dtype=z.dtype))


def cusp(z: torch.Tensor) -> torch.Tensor:
    """-sqrt(|z|): finite everywhere, its gradient NaN at 0 (sqrt's inf times abs's 0)."""
    return -z.abs().sqrt().sum()


def jump(z: torch.Tensor) -> torch.Tensor:
    """-1,000 away from 0: a start at 0 finds no step size, however small."""
    return -1000.0 * (z != 0).any().to(z.dtype)


def chain_from(
    log_density: LogDensity, start: float, *, seed: int = 0, warmup: int = 10, size: int = 2
) -> NUTSChain:
    generator = torch.Generator().manual_seed(seed)
    z0 = torch.full((size,), start, dtype=torch.float64)
    return NUTSKernel(max_tree_depth=4).chain(
        potential_of(log_density), z0, warmup, generator, names=["a", "b"][:size]
    )


# ------------------------------------------------------------------ one chain, by hand


def test_a_start_that_works_is_kept_and_draws_nothing() -> None:
    generator = torch.Generator().manual_seed(0)
    before = generator.get_state()
    z0 = torch.tensor([0.7, -1.3], dtype=torch.float64)
    chain = NUTSKernel().chain(potential_of(normal), z0, 0, generator)
    assert torch.equal(chain.z, z0)
    assert torch.equal(generator.get_state(), before)  # no warmup: no momentum drawn


@pytest.mark.parametrize(
    ("extra", "start"),
    [(minus_inf_outside, 5.0), (cusp, 0.0), (jump, 0.0)],
    ids=["log density -inf", "gradient NaN", "step size unstable"],
)
def test_a_start_that_fails_is_redrawn_in_the_stan_box(extra: LogDensity, start: float) -> None:
    def density(z: torch.Tensor) -> torch.Tensor:
        return normal(z) + extra(z)

    chain = chain_from(density, start, seed=3)
    assert not torch.equal(chain.z, torch.full((2,), start, dtype=torch.float64))
    assert bool((chain.z.abs() < INIT_RADIUS).all())
    assert torch.isfinite(torch.tensor(chain.potential)) and bool(torch.isfinite(chain.z).all())
    again = chain_from(density, start, seed=3)
    assert torch.equal(chain.z, again.z) and chain.step_size == again.step_size
    for _ in range(5):
        assert torch.equal(chain.step().z, again.step().z)


def test_the_redraw_is_stan_s_uniform_from_the_chain_s_own_generator() -> None:
    """The first random point works here (all of (-2, 2) is finite): it is exactly the
    first uniform draw of the chain's generator, scaled to (-2, 2); torch's global
    stream is left alone."""
    before = torch.get_rng_state()
    chain = chain_from(lambda z: normal(z) + minus_inf_outside(z), 5.0, seed=11, warmup=0)
    expected = torch.rand(2, dtype=torch.float64, generator=torch.Generator().manual_seed(11))
    assert torch.equal(chain.z, (2 * expected - 1) * 2)
    assert torch.equal(torch.get_rng_state(), before)


def test_no_finite_log_density_anywhere_says_so() -> None:
    def density(z: torch.Tensor) -> torch.Tensor:
        return normal(z) + torch.tensor(-torch.inf, dtype=z.dtype)

    potential = potential_of(density)
    with pytest.raises(InferenceError) as info:
        NUTSKernel().chain(potential, torch.zeros(2, dtype=torch.float64), 10)
    message = str(info.value)
    assert message.startswith("the log density is not finite at the initial point")
    assert f"nor at any of {INIT_TRIES} random points in (-2, 2)" in message
    assert potential.calls == INIT_TRIES + 1  # type: ignore[attr-defined]


def test_a_gradient_that_is_never_finite_is_named_by_its_site() -> None:
    """sqrt(b - b) is 0 everywhere, its derivative NaN everywhere; a's is finite."""

    def density(z: torch.Tensor) -> torch.Tensor:
        return normal(z) - (z[1] - z[1]).sqrt()

    with pytest.raises(InferenceError) as info:
        chain_from(density, 0.5)
    message = str(info.value)
    assert message.startswith("the log density is finite but its gradient is not (NaN/inf in b)")
    assert "NaN/inf in a" not in message and "a, b" not in message


def test_a_step_size_that_is_never_found_says_the_start_is_unstable() -> None:
    """A curvature of 1e30: every step from 0.1 down to 1e-12 blows the energy up."""

    def density(z: torch.Tensor) -> torch.Tensor:
        return -0.5e30 * (z * z).sum()

    with pytest.raises(InferenceError, match="numerically unstable at the initial point"):
        chain_from(density, 1.0)


def test_an_improper_posterior_is_not_redrawn() -> None:
    potential = potential_of(lambda z: 0.0 * z.sum())
    with pytest.raises(InferenceError, match=r"improper \(flat\)"):
        NUTSKernel().chain(potential, torch.zeros(2, dtype=torch.float64), 10)
    assert potential.calls < INIT_TRIES  # type: ignore[attr-defined]


# ------------------------------------------------------------------ programs, chains


class Started(ToyProgram):
    """a, b ~ Normal(0, 1) plus `extra(a, b)` in the log density, started at `start`."""

    def __init__(self, start: float, extra: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]):
        super().__init__()
        self.start, self.extra = start, extra
        self.sites = (Site("a", "sample", "real", (1,), 1), Site("b", "sample", "real", (1,), 1))
        self.returns = "b"

    def dist(self, name, x, values):
        return D.Normal(torch.zeros(x.shape[0], 1), 1.0, validate_args=False)

    def log_joint(self, x, values):
        return super().log_joint(x, values) + self.extra(values["a"], values["b"]).sum(-1)

    def initial_values(self, x, observations):
        return {name: torch.full((x.shape[0], 1), self.start) for name in ("a", "b")}


def outside(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(b.abs() < 3, torch.zeros_like(b), torch.full_like(b, -torch.inf))


def b_cusp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return -b.abs().sqrt()


def b_jump(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return -1000.0 * (b != 0).to(b.dtype)


STARTS = [(outside, 5.0), (b_cusp, 0.0), (b_jump, 0.0)]
IDS = ["log density -inf", "gradient NaN", "step size unstable"]


@pytest.mark.parametrize(("extra", "start"), STARTS, ids=IDS)
def test_one_chain_of_a_program_starts_and_repeats_its_draws(extra, start) -> None:
    def draws() -> torch.Tensor:
        torch.manual_seed(7)
        result = MCMC(NUTSKernel(max_tree_depth=3), 10, 10).run(Started(start, extra), X, {})
        return torch.cat([result.samples["a"], result.samples["b"]], dim=-1)

    first = draws()
    assert first.shape == (1, 10, 1, 2) and bool(torch.isfinite(first).all())
    assert torch.equal(first, draws())


@pytest.mark.parametrize(("extra", "start"), STARTS, ids=IDS)
def test_chains_advanced_together_start_on_their_own_streams(extra, start) -> None:
    def draws() -> torch.Tensor:
        kernel = NUTSKernel(max_tree_depth=3)
        result = run_chains(
            Started(start, extra), X, {}, kernel, 10, 10, chains=3, seed=4, processes=1
        )
        return torch.cat([result.samples["a"], result.samples["b"]], dim=-1)

    first = draws()
    assert first.shape == (3, 10, 1, 2) and bool(torch.isfinite(first).all())
    assert not torch.equal(first[0], first[1])  # each chain its own random start
    assert torch.equal(first, draws())


def test_chains_of_a_program_whose_gradient_is_never_finite_name_the_site() -> None:
    never = Started(0.5, lambda a, b: -(b - b).sqrt())
    with pytest.raises(InferenceError, match=r"gradient is not \(NaN/inf in b\)"):
        run_chains(never, X, {}, NUTSKernel(max_tree_depth=3), 5, 5, chains=2, processes=1)


# ------------------------------------------------------------------ Stan's defaults


def test_the_default_maximum_tree_depth_is_stan_s_ten() -> None:
    assert RunArguments().max_tree_depth == 10
    assert validate_run_arguments({"method": "nuts"}).max_tree_depth == 10
    assert inspect.signature(run_program).parameters["max_tree_depth"].default == 10
    parser = argparse.ArgumentParser(prog="qvr run")
    cli_run.add_arguments(parser)
    assert parser.parse_args(["m.qvr", "--method", "nuts"]).max_tree_depth == 10
    assert "default 10" in parser.format_help()
    assert MAX_TREE_DEPTH >= 10
    assert validate_run_arguments({"max_tree_depth": MAX_TREE_DEPTH}).max_tree_depth == 15


def test_the_sampler_s_defaults_are_stan_s() -> None:
    kernel = NUTSKernel()
    assert (kernel.max_tree_depth, kernel.target_accept) == (10, 0.8)
