"""bayesian_lift_parameters: turn a program's learnable parameters into latent sites.

A compiled program treats its network weights as point estimates. For full
Bayesian inference (NUTS over the weights) we build a *lifted* program-like
object whose latent sites are every learnable parameter, with a Normal(0,
prior_scale) prior, plus any of the program's own unobserved sites named in
`additional_latents`. Its log-density is

    log p(theta) + log_joint(x, {h, y} | theta)

where theta is put in place of the module's parameters for the duration of
each call and the originals are put back afterwards, even when the call fails
(so the module keeps its own weights; do not use it from another thread while
a lifted call runs). The spec describes a placeholder prior on each additional
latent that the score cancels; since it would appear once as a site term and
once as the cancellation, we leave out both and the density is exactly the
one above.

The lifted object has no batch axis: each of its sites is one tensor (a
parameter's shape, or the shape given in `additional_latents`), and
`log_joint` returns a `(1,)` tensor, the whole joint log-density.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from torch.distributions import constraints

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.sites import ProgramLike, check_site_names, latent_names, site_transform
from qvr_core.runtime.program import Observed

_LOG_2PI = math.log(2 * math.pi)


def _parameter_slots(model: nn.Module) -> dict[str, list[tuple[nn.Module, str]]]:
    """For each parameter (by its first name), every (module, attribute) that holds it.

    A compiled program reaches one leaf module by several paths (`morphisms.cell`,
    `steps.h...`, `_step_h...`); `torch.func.functional_call` treats those paths as
    tied *different* tensors and restores the wrong one afterwards, so the lifted
    program swaps each distinct slot once itself.
    """
    first_name: dict[int, str] = {}
    slots: dict[str, list[tuple[nn.Module, str]]] = {}
    seen: set[tuple[int, str]] = set()
    for path, p in model.named_parameters(remove_duplicate=False):
        name = first_name.setdefault(id(p), path)
        owner_path, _, attr = path.rpartition(".")
        owner = model.get_submodule(owner_path) if owner_path else model
        if (id(owner), attr) not in seen:
            seen.add((id(owner), attr))
            slots.setdefault(name, []).append((owner, attr))
    return slots


@dataclass
class LiftedRun:
    """What `LiftedProgram.run` returns (mirrors the runtime's RunResult)."""

    values: dict[str, torch.Tensor]
    log_probs: dict[str, torch.Tensor]
    output: Any


class LiftedProgram(nn.Module):
    """A program-like object over (parameters, additional latents) of `model`."""

    def __init__(
        self,
        model: nn.Module,
        additional_latents: Mapping[str, tuple[int, ...]],
        prior_scale: float,
    ) -> None:
        super().__init__()
        self.inner = model
        self._slots = _parameter_slots(model)
        self.prior_scale = float(prior_scale)
        self.param_names = tuple(n for n, p in model.named_parameters() if p.requires_grad)
        self._param_shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
        self.additional = {n: tuple(int(d) for d in s) for n, s in additional_latents.items()}
        clash = sorted(set(self.param_names) & set(self.additional))
        if clash:
            raise InferenceError(f"additional latent(s) {clash} share a name with a parameter")
        self.site_names = self.param_names + tuple(self.additional)

    # -- the program protocol ------------------------------------------------

    def site_kind(self, name: str) -> str:
        self._check(name)
        return "sample"

    def site_support(self, name: str) -> str:
        self._check(name)
        return self._program.site_support(name) if name in self.additional else "real"

    def site_constraint(self, name: str) -> constraints.Constraint:
        """Where each latent lives: a weight anywhere; an additional latent where the
        program's site does, exactly when the program says (`~ Pareto(1.0, 2.0)`: above
        1, not all of `positive`), so NUTS never proposes a value of density 0."""
        self._check(name)
        if name not in self.additional:
            return constraints.real
        return self._program.site_constraint(name)

    def site_event_shape(self, name: str) -> tuple[int, ...]:
        self._check(name)
        if name in self.additional:
            return self.additional[name]
        return self._param_shapes[name]

    def batch_shape(self, x: Any) -> tuple[int, ...]:
        return ()

    def _check(self, name: str) -> None:
        if name not in self.site_names:
            raise InferenceError(f"the lifted program has no site '{name}'")

    @property
    def _program(self) -> ProgramLike:
        return cast(ProgramLike, self.inner)  # a module that follows the program protocol

    def _split(
        self, values: Mapping[str, torch.Tensor]
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        theta = {n: values[n] for n in self.param_names if n in values}
        rest = {n: v for n, v in values.items() if n not in theta}
        return theta, rest

    @contextmanager
    def substituted(self, theta: Mapping[str, torch.Tensor]) -> Iterator[None]:
        """Run the inner module with `theta` in place of its parameters, then restore them."""
        saved: list[tuple[nn.Module, str, Any]] = []
        try:
            for name, value in theta.items():
                for owner, attr in self._slots[name]:
                    saved.append((owner, attr, owner._parameters[attr]))
                    owner._parameters[attr] = value  # type: ignore[assignment]  # restored below
            yield
        finally:
            for owner, attr, original in reversed(saved):
                owner._parameters[attr] = original

    def _call(self, theta: Mapping[str, torch.Tensor], method: str, *args: Any) -> Any:
        with self.substituted(theta):
            return getattr(self.inner, method)(*args)

    def log_prior(self, theta: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Sum of Normal(0, prior_scale) log-densities over every parameter."""
        s = self.prior_scale
        total = torch.zeros(())
        for name in self.param_names:
            v = theta[name]
            total = total + (-0.5 * (v / s).square() - math.log(s) - 0.5 * _LOG_2PI).sum()
        return total

    def log_joint(self, x: Any, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """log p(theta) + sum over the batch of the inner log_joint: shape `(1,)`."""
        theta, rest = self._split(values)
        missing = [n for n in self.param_names if n not in theta]
        if missing:
            raise InferenceError(f"lifted log_joint: no value for parameter(s) {missing[:5]}")
        inner = self._call(theta, "log_joint", x, rest).sum()
        return (self.log_prior(theta) + inner).reshape(1)

    def _prior_theta(self) -> dict[str, torch.Tensor]:
        ref = dict(self.inner.named_parameters())
        return {n: torch.randn_like(ref[n]) * self.prior_scale for n in self.param_names}

    def run(
        self,
        x: Any,
        observations: Mapping[str, Observed] | None = None,
        values: Mapping[str, torch.Tensor] | None = None,
    ) -> LiftedRun:
        """Draw missing parameters from the prior, then run the inner program under them."""
        given = dict(values or {})
        theta, rest = self._split(given)
        for name, v in self._prior_theta().items():
            theta.setdefault(name, v)
        inner = self._call(theta, "run", x, observations, rest)
        log_probs = {
            n: (
                -0.5 * (v / self.prior_scale).square() - math.log(self.prior_scale) - 0.5 * _LOG_2PI
            )
            .sum()
            .reshape(1)
            for n, v in theta.items()
        }
        for name in self.additional:
            log_probs[name] = inner.log_probs[name].sum().reshape(1)
        return LiftedRun({**theta, **inner.values}, log_probs, inner.output)

    def rsample(self, x: Any, observations: Mapping[str, Observed] | None = None) -> Any:
        """A draw of the program's output with parameters from the prior."""
        return self._call(self._prior_theta(), "rsample", x, observations)

    def initial_values(
        self, x: Any, observations: Mapping[str, Observed] | None = None
    ) -> dict[str, torch.Tensor]:
        """Where MCMC starts: the current parameters and a forward draw of the extra latents."""
        params = dict(self.inner.named_parameters())
        theta = {n: params[n].detach().clone() for n in self.param_names}
        drawn = self._program.run(x, observations).values
        for name, shape in self.additional.items():
            _check_shape(name, shape, tuple(drawn[name].shape))
        return {**theta, **{n: drawn[n].detach() for n in self.additional}}


def _check_shape(name: str, declared: tuple[int, ...], actual: tuple[int, ...]) -> None:
    if declared != actual:
        raise InferenceError(
            f"additional latent '{name}': declared shape {declared} but the program "
            f"produces {actual} for this input"
        )


def bayesian_lift_parameters(
    model: nn.Module,
    x: Any,
    observations: Mapping[str, Observed] | None = None,
    prior_scale: float = 1.0,
    additional_latents: Mapping[str, tuple[int, ...]] | None = None,
) -> tuple[LiftedProgram, Any, dict[str, Observed]]:
    """Return `(lifted, lx, lobs)` for `MCMC.run(lifted, lx, lobs)` or SVI on the weights.

    Every unobserved site of `model` must be in `additional_latents` (name -> shape
    of its value for this `x`, batch axis included): NUTS needs a log-density
    that is a deterministic function of its state, which a forward-sampled site
    would break.
    """
    if not prior_scale > 0:
        raise InferenceError(f"prior_scale must be positive, got {prior_scale}")
    observations = dict(observations or {})
    additional = dict(additional_latents or {})
    program = cast(ProgramLike, model)  # a module that follows the program protocol
    data = set(getattr(getattr(program, "info", None), "data", ()))  # `h[picks]`'s picks
    check_site_names(program, [n for n in observations if n not in data], "observed name")
    check_site_names(program, additional, "additional latent")
    both = sorted(set(observations) & set(additional))
    if both:
        raise InferenceError(
            f"{', '.join(repr(n) for n in both)} cannot be both observed and an additional latent"
        )
    for name in additional:
        site_transform(program, name)  # discrete latents are refused, by name
    with torch.no_grad():
        drawn = program.run(x, observations).values
    free = [n for n in latent_names(program, observations) if n not in additional]
    if free:
        hint = ", ".join(f"'{n}': {tuple(drawn[n].shape)}" for n in free if n in drawn)
        raise InferenceError(
            f"site(s) {', '.join(repr(n) for n in free)} are neither observed nor lifted; "
            f"NUTS needs every latent in its state: pass additional_latents={{{hint}}}"
        )
    for name, shape in additional.items():
        _check_shape(name, tuple(int(d) for d in shape), tuple(drawn[name].shape))
    lifted = LiftedProgram(model, additional, prior_scale)
    if not lifted.param_names and not additional:
        raise InferenceError("the program has no learnable parameters and no latents to lift")
    return lifted, x, observations
