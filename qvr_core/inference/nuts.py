"""The No-U-Turn Sampler on a flat vector of unconstrained latent values.

This is multinomial NUTS as in Stan (Betancourt 2017, "A Conceptual Introduction
to Hamiltonian Monte Carlo", appendix A): the trajectory doubles forwards or
backwards at random; inside each new subtree a point is drawn with weight
exp(-H) (uniform progressive sampling), and across doublings the new subtree's
draw replaces the current one with probability min(1, W_new / W_old) (biased
progressive sampling, which favours points far from the start). Doubling stops
at the generalised U-turn criterion (with Stan's extra checks across the two
halves of every merge), at a divergence (energy error above
`max_delta_energy`), or at `max_tree_depth`.

The sampler knows nothing about programs: it sees a `potential(z) -> (U, dU/dz)`
with U = -log density. `qvr_core.inference.mcmc` builds that function from a
program with torch.autograd.

Every step that needs the potential is written as a generator that yields the
position and is sent back (U, dU/dz): `NUTSChain.step` answers it at once from
its own potential, while `qvr_core.inference.lockstep` answers the requests of
several chains with one batched evaluation. The algorithm, and each chain's
random stream (its own `torch.Generator`), is the same either way.

The tree's arithmetic (momenta, the U-turn dot products, the weights) is done on
NumPy arrays and Python floats, not torch tensors: on a small model it is most of
a step, and a NumPy operation on a short vector costs a fraction of a torch one
(measured on eight schools: the sampler's own time per leapfrog step fell about
threefold). Positions and gradients cross to torch only at the potential.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch

from qvr_core.inference.adapt import (
    DualAveraging,
    WarmupSchedule,
    WelfordCovariance,
    WelfordVariance,
)
from qvr_core.inference.errors import InferenceError

Potential = Callable[[torch.Tensor], tuple[float, torch.Tensor]]
T = TypeVar("T")
Vector = np.ndarray
#: A computation that yields positions and is sent (U, dU/dz) for each, returning a T.
Requests = Generator[Vector, tuple[float, Vector], T]
#: Uniform draws taken from a chain's generator at a time (one torch call for many).
UNIFORM_BLOCK = 256


def answer(requests: Requests[T], potential: Potential) -> T:
    """Run `requests` to its end, answering each position from `potential`."""
    try:
        z = next(requests)
        while True:
            u, g = potential(torch.from_numpy(z))
            z = requests.send((u, g.detach().numpy()))
    except StopIteration as done:
        return done.value


@dataclass
class _Point:
    """A phase-space point: position, momentum, velocity M^-1 r, and U with its gradient."""

    z: Vector
    r: Vector
    p_sharp: Vector
    potential: float
    grad: Vector
    kinetic: float


@dataclass
class _Tree:
    left: _Point
    right: _Point
    proposal: _Point
    log_weight: float
    rho: Vector
    sum_accept: float
    num_steps: int
    diverging: bool = False
    turning: bool = False


@dataclass(frozen=True)
class Transition:
    """What one NUTS iteration produced (position plus the statistics Stan reports)."""

    z: torch.Tensor
    potential: float
    accept_prob: float
    diverging: bool
    num_steps: int
    tree_depth: int
    step_size: float
    energy: float = math.nan  # the Hamiltonian at the chosen point (Stan's energy__)


def _log_add_exp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    hi = max(a, b)
    return hi + math.log1p(math.exp(-abs(a - b)))


def _no_u_turn(p_sharp_left: Vector, p_sharp_right: Vector, rho: Vector) -> bool:
    """Generalised criterion: both ends still move along the summed momentum."""
    return bool(p_sharp_left.dot(rho) > 0) and bool(p_sharp_right.dot(rho) > 0)


def _merge_keeps_going(left: _Tree, right: _Tree, rho: Vector) -> bool:
    """The U-turn test on a merged tree plus Stan's two checks across the seam."""
    return (
        _no_u_turn(left.left.p_sharp, right.right.p_sharp, rho)
        and _no_u_turn(left.left.p_sharp, right.left.p_sharp, left.rho + right.left.r)
        and _no_u_turn(left.right.p_sharp, right.right.p_sharp, right.rho + left.right.r)
    )


class NUTSKernel:
    """NUTS settings; `chain(potential, z0, num_warmup)` starts one adaptive chain.

    Warmup tunes the step size by dual averaging towards `target_accept` and, when
    the warmup holds Stan's windows, a mass matrix from the draws in its doubling
    windows: their variances (`dense_mass=False`, Stan's `diag_e`) or, with
    `dense_mass`, their covariance (`dense_e`), which removes linear correlations
    between coordinates at the cost of a matrix-vector product per leapfrog step.
    """

    def __init__(
        self,
        step_size: float = 0.1,
        max_tree_depth: int = 10,
        target_accept: float = 0.8,
        adapt_step_size: bool = True,
        adapt_mass_matrix: bool = True,
        max_delta_energy: float = 1000.0,
        dense_mass: bool = False,
    ) -> None:
        if not step_size > 0:
            raise InferenceError(f"step_size must be positive, got {step_size}")
        if int(max_tree_depth) < 1:
            raise InferenceError(f"max_tree_depth must be at least 1, got {max_tree_depth}")
        if not 0 < target_accept < 1:
            raise InferenceError(f"target_accept must be in (0, 1), got {target_accept}")
        self.step_size = float(step_size)
        self.max_tree_depth = int(max_tree_depth)
        self.target_accept = float(target_accept)
        self.adapt_step_size = bool(adapt_step_size)
        self.adapt_mass_matrix = bool(adapt_mass_matrix)
        self.max_delta_energy = float(max_delta_energy)
        self.dense_mass = bool(dense_mass)

    def chain(
        self,
        potential: Potential | None,
        z0: torch.Tensor,
        num_warmup: int,
        generator: torch.Generator | None = None,
    ) -> NUTSChain:
        return NUTSChain(self, potential, z0, num_warmup, generator)


class NUTSChain:
    """The state of one chain: position, step size, mass matrix and adaptation.

    With a `potential` the chain starts at once; without one (`lockstep`), `begin()`
    and `advance()` are its requests for the caller to answer. `generator` is the
    chain's own random stream (None: torch's global one)."""

    def __init__(
        self,
        kernel: NUTSKernel,
        potential: Potential | None,
        z0: torch.Tensor,
        num_warmup: int,
        generator: torch.Generator | None = None,
    ) -> None:
        self.kernel = kernel
        self.potential_fn = potential
        self.num_warmup = int(num_warmup)
        self.generator = generator
        self.iteration = 0
        self.dtype = z0.dtype
        self._z: Vector = z0.detach().cpu().numpy().copy()
        self.potential, self.grad = math.nan, np.zeros_like(self._z)
        self._inv_mass: Vector = np.ones_like(self._z)  # its diagonal, or the matrix (dense)
        self._unit_mass = True  # skips the products with M^-1 until it is adapted
        self._dense = kernel.dense_mass
        self._momentum_factor: Vector | None = None  # dense: r = factor @ n gives r ~ N(0, M)
        self._uniforms: list[float] = []
        self.step_size = kernel.step_size
        self.schedule = WarmupSchedule(self.num_warmup)
        self.welford = self._new_estimator()
        self.dual = DualAveraging(self.step_size, kernel.target_accept)
        if potential is not None:
            answer(self.begin(), potential)

    @property
    def z(self) -> torch.Tensor:
        """The chain's current position (a tensor sharing the chain's array)."""
        return torch.from_numpy(self._z)

    @property
    def inv_mass(self) -> torch.Tensor:
        """The inverse mass matrix: its diagonal, or the whole matrix with `dense_mass`."""
        if self._dense and self._unit_mass:
            return torch.eye(self._z.size, dtype=self.dtype)
        return torch.from_numpy(self._inv_mass)

    def _new_estimator(self) -> WelfordVariance | WelfordCovariance:
        size = self._z.size
        return WelfordCovariance(size) if self._dense else WelfordVariance(size)

    def _velocity(self, r: Vector) -> Vector:
        """M^-1 r: the position's rate of change for momentum r."""
        if self._unit_mass:
            return r
        return self._inv_mass @ r if self._dense else self._inv_mass * r

    def begin(self) -> Requests[None]:
        """The potential at the start, and a first step size."""
        u0, g0 = yield self._z
        if not math.isfinite(u0) or not bool(np.isfinite(g0).all()):
            raise InferenceError(
                "the log density is not finite at the initial point of the chain "
                f"(potential energy {u0}); check the data against the model's supports"
            )
        self.potential, self.grad = u0, g0
        if self.num_warmup > 0 and self.kernel.adapt_step_size:
            self.step_size = yield from self._reasonable_step_size(self.step_size)
            self.dual.restart(self.step_size)

    # -- Hamiltonian pieces -------------------------------------------------

    def _uniform(self) -> float:
        if not self._uniforms:  # a block at a time: one torch call for many draws
            block = torch.rand(
                UNIFORM_BLOCK, dtype=torch.float64, generator=self.generator, device="cpu"
            )
            self._uniforms = block.tolist()[::-1]
        return self._uniforms.pop()

    def _momentum(self) -> Vector:
        # the tree lives in numpy on the CPU, whatever device the model runs on
        r = torch.randn(
            self._z.shape, dtype=self.dtype, generator=self.generator, device="cpu"
        ).numpy()
        if self._unit_mass:
            return r
        if self._momentum_factor is not None:
            return self._momentum_factor @ r
        return r / np.sqrt(self._inv_mass)

    def _point(self, z: Vector, r: Vector, potential: float, grad: Vector) -> _Point:
        p_sharp = self._velocity(r)
        return _Point(z, r, p_sharp, potential, grad, 0.5 * float(p_sharp.dot(r)))

    def _leapfrog(self, p: _Point, eps: float) -> Requests[_Point]:
        half = 0.5 * eps
        r = p.r - half * p.grad
        z = p.z + eps * self._velocity(r)
        u, g = yield z
        r -= half * g
        return self._point(z, r, u, g)

    def _energy(self, p: _Point) -> float:
        h = p.potential + p.kinetic
        return math.inf if math.isnan(h) else h

    # -- trajectory ---------------------------------------------------------

    def _leaf(self, start: _Point, direction: int, h0: float) -> Requests[_Tree]:
        p = yield from self._leapfrog(start, direction * self.step_size)
        delta = h0 - self._energy(p)  # log weight of the new point
        diverging = -delta > self.kernel.max_delta_energy
        accept = 1.0 if delta > 0 else math.exp(delta)
        return _Tree(p, p, p, delta, p.r, accept, 1, diverging=diverging)

    def _build(self, start: _Point, direction: int, depth: int, h0: float) -> Requests[_Tree]:
        """A subtree of 2**depth leapfrog steps from `start` in `direction`."""
        if depth == 0:
            return (yield from self._leaf(start, direction, h0))
        first = yield from self._build(start, direction, depth - 1, h0)
        if first.diverging or first.turning:
            return first
        second = yield from self._build(
            first.right if direction > 0 else first.left, direction, depth - 1, h0
        )
        sum_accept = first.sum_accept + second.sum_accept
        num_steps = first.num_steps + second.num_steps
        log_weight = _log_add_exp(first.log_weight, second.log_weight)
        left, right = (first, second) if direction > 0 else (second, first)
        if second.diverging or second.turning:
            return _Tree(
                left.left,
                right.right,
                first.proposal,
                log_weight,
                first.rho,
                sum_accept,
                num_steps,
                second.diverging,
                second.turning,
            )
        proposal = first.proposal
        if self._uniform() < math.exp(second.log_weight - log_weight):
            proposal = second.proposal
        rho = first.rho + second.rho
        turning = not _merge_keeps_going(left, right, rho)
        return _Tree(
            left.left,
            right.right,
            proposal,
            log_weight,
            rho,
            sum_accept,
            num_steps,
            turning=turning,
        )

    def _transition(self) -> Requests[Transition]:
        start = self._point(self._z, self._momentum(), self.potential, self.grad)
        h0 = self._energy(start)
        tree = _Tree(start, start, start, 0.0, start.r, 0.0, 0)
        sum_accept, num_steps, depth, diverging = 0.0, 0, 0, False
        while depth < self.kernel.max_tree_depth:
            direction = 1 if self._uniform() < 0.5 else -1
            sub = yield from self._build(
                tree.right if direction > 0 else tree.left, direction, depth, h0
            )
            sum_accept += sub.sum_accept
            num_steps += sub.num_steps
            depth += 1
            if sub.diverging:
                diverging = True
                break
            if sub.turning:
                break
            proposal = tree.proposal
            if sub.log_weight > tree.log_weight or self._uniform() < math.exp(
                sub.log_weight - tree.log_weight
            ):
                proposal = sub.proposal
            left, right = (tree, sub) if direction > 0 else (sub, tree)
            rho = tree.rho + sub.rho
            turning = not _merge_keeps_going(left, right, rho)
            tree = _Tree(
                left.left,
                right.right,
                proposal,
                _log_add_exp(tree.log_weight, sub.log_weight),
                rho,
                0.0,
                0,
            )
            if turning:
                break
        chosen = tree.proposal
        self._z, self.potential, self.grad = chosen.z, chosen.potential, chosen.grad
        return Transition(
            torch.from_numpy(chosen.z),
            chosen.potential,
            sum_accept / max(num_steps, 1),
            diverging,
            num_steps,
            depth,
            self.step_size,
            self._energy(chosen),
        )

    # -- adaptation ---------------------------------------------------------

    def _reasonable_step_size(self, eps: float) -> Requests[float]:
        """Stan's heuristic: double or halve until one step's acceptance crosses 0.8."""
        log_target = math.log(0.8)

        def delta_h(step: float) -> Requests[float]:
            start = self._point(self._z, self._momentum(), self.potential, self.grad)
            h0 = self._energy(start)
            return h0 - self._energy((yield from self._leapfrog(start, step)))

        direction = 1 if (yield from delta_h(eps)) > log_target else -1
        for _ in range(100):
            d = yield from delta_h(eps)
            if (direction == 1 and not d > log_target) or (direction == -1 and not d < log_target):
                break
            eps = eps * 2.0 if direction == 1 else eps * 0.5
            if eps > 1e7 or eps < 1e-12:
                raise InferenceError(
                    "could not find a usable NUTS step size: the posterior is "
                    + ("improper (flat)" if eps > 1e7 else "numerically unstable at the start")
                )
        return eps

    def _adapt(self, i: int, t: Transition) -> Requests[None]:
        k = self.kernel
        if k.adapt_step_size:
            self.step_size = self.dual.update(t.accept_prob)
        if k.adapt_mass_matrix and self.schedule.in_slow_window(i):
            self.welford.add(self.z)
        if k.adapt_mass_matrix and i in self.schedule.window_ends:
            self._set_mass(self.welford)
            self.welford = self._new_estimator()
            if k.adapt_step_size:
                self.step_size = yield from self._reasonable_step_size(self.step_size)
                self.dual.restart(self.step_size)
        if i == self.num_warmup - 1 and k.adapt_step_size:
            self.step_size = self.dual.final_step_size

    def _set_mass(self, estimate: WelfordVariance | WelfordCovariance) -> None:
        """M^-1 from a window's draws. Dense: M^-1 = C = L L^T, so momenta r = L^-T n
        have covariance (L L^T)^-1 = M."""
        if isinstance(estimate, WelfordCovariance):
            cov = estimate.regularised_covariance()
            lower, info = torch.linalg.cholesky_ex(cov)
            if int(info) == 0 and bool(torch.isfinite(lower).all()):
                eye = torch.eye(cov.shape[0], dtype=cov.dtype)
                factor = torch.linalg.solve_triangular(lower.T, eye, upper=True)
                self._inv_mass = cov.to(self.dtype).numpy()
                self._momentum_factor = factor.to(self.dtype).numpy()
                self._unit_mass = False
            # else (draws that were not finite): the window keeps the last metric
            return
        self._inv_mass = estimate.regularised_variance().to(self.dtype).numpy()
        self._unit_mass = False

    def step(self) -> Transition:
        """One NUTS iteration; during warmup it also adapts."""
        assert self.potential_fn is not None, "a chain without a potential is advanced"
        return answer(self.advance(), self.potential_fn)

    def advance(self) -> Requests[Transition]:
        """One NUTS iteration as requests (`step` answers them here)."""
        t = yield from self._transition()
        if self.iteration < self.num_warmup:
            yield from self._adapt(self.iteration, t)
        self.iteration += 1
        return t

    @property
    def warming_up(self) -> bool:
        return self.iteration < self.num_warmup
