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

A chain starts where it is given unless the potential or its gradient is not finite
there, or the first step-size search finds the start numerically unstable: then, as
Stan does, it tries points drawn uniformly in (-2, 2) on the unconstrained space from
its own generator (`INIT_TRIES` of them), so a run stays reproducible from its seed
and a start that works is never moved.

The tree's arithmetic (momenta, the U-turn dot products, the weights) is done on
NumPy arrays and Python floats, not torch tensors: on a small model it is most of
a step, and a NumPy operation on a short vector costs a fraction of a torch one
(measured on eight schools: the sampler's own time per leapfrog step fell about
threefold). Positions and gradients cross to torch only at the potential.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
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
from qvr_core.inference.fisher import (
    FisherWindow,
    LowRankMetric,
    chosen_metric,
    initial_variance,
)
from qvr_core.plan.run_arguments import MASS_MATRICES

Potential = Callable[[torch.Tensor], tuple[float, torch.Tensor]]
T = TypeVar("T")
Vector = np.ndarray
#: A computation that yields positions and is sent (U, dU/dz) for each, returning a T.
Requests = Generator[Vector, tuple[float, Vector], T]
#: A chain's metric: M^-1's diagonal or matrix, its low-rank form, whether it is still the
#: identity, and the dense metric's factor for momenta (`NUTSChain._metric_state`).
_MetricState = tuple[Vector, "LowRankMetric | None", bool, "Vector | None"]
#: The Fisher metrics also close a window every EARLY_WINDOW draws of Stan's initial
#: buffer, as nutpie does early in its warmup: their estimate from a few draws is
#: already close where the identity may be far off, and the first of Stan's windows
#: closes only 100 draws in (measured on two 26-coordinate regressions: a quarter to a
#: half of the warmup's gradients, the same metric at its end).
EARLY_WINDOW = 10
#: Uniform draws taken from a chain's generator at a time (one torch call for many).
UNIFORM_BLOCK = 256
#: Random starts a chain tries after its given one fails (Stan's `MAX_INIT_TRIES`), each
#: drawn uniformly in (-INIT_RADIUS, INIT_RADIUS) on the unconstrained space (Stan's rule).
INIT_TRIES = 100
INIT_RADIUS = 2.0


class UnstableStartError(InferenceError):
    """The step-size search halved the step to nothing: the chain's position is in a
    numerically unstable region (`NUTSChain.begin` then tries another start)."""


def quiet_overflow() -> np.errstate:
    """numpy's error state while a driver (`answer`, `lockstep.run_together`) runs a
    chain's requests: a trajectory that runs off (a huge momentum after a leapfrog into
    a cliff) overflows to an infinite kinetic energy, which the tree takes as a
    divergence, so numpy's RuntimeWarning would only reach the user's console as noise.
    Set once per run rather than once per leapfrog point, where entering and leaving it
    cost several microseconds each of hundreds of thousands of times."""
    return np.errstate(over="ignore", invalid="ignore")


def answer(requests: Requests[T], potential: Potential) -> T:
    """Run `requests` to its end, answering each position from `potential`."""
    with quiet_overflow():
        try:
            z = next(requests)
            while True:
                u, g = potential(torch.from_numpy(z))
                z = requests.send((u, g.detach().numpy()))
        except StopIteration as done:
            return done.value


@dataclass(slots=True)  # made per leapfrog step: slots make it and its reads cheaper
class _Point:
    """A phase-space point: position, momentum, velocity M^-1 r, and U with its gradient."""

    z: Vector
    r: Vector
    p_sharp: Vector
    potential: float
    grad: Vector
    kinetic: float


@dataclass(slots=True)
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


@dataclass
class _StartFailure:
    """How far the best of a chain's failed starts got, for the message when none works:
    0 the log density not finite, 1 its gradient not finite, 2 the step size unstable."""

    stage: int = -1
    potential: float | None = None  # the given start's, when its log density is not finite
    sites: list[str] = field(default_factory=list)  # where gradients were not finite
    tries: int = 0

    def density(self, potential: float) -> None:
        if self.tries == 0:
            self.potential = potential
        self._reached(0)

    def gradient(self, sites: list[str]) -> None:
        self.sites.extend(s for s in sites if s not in self.sites)
        self._reached(1)

    def unstable(self) -> None:
        self._reached(2)

    def _reached(self, stage: int) -> None:
        self.stage, self.tries = max(self.stage, stage), self.tries + 1

    def message(self) -> str:
        random = (
            f"{INIT_TRIES} random points in (-{INIT_RADIUS:g}, {INIT_RADIUS:g}) "
            "on the unconstrained space"
        )
        if self.stage == 2:
            return (
                "could not find a usable NUTS step size: the posterior is numerically "
                f"unstable at the initial point of the chain and at {random}; check the "
                "model for steep or discontinuous terms"
            )
        if self.stage == 1:
            shown = ", ".join(self.sites[:5]) + (", ..." if len(self.sites) > 5 else "")
            return (
                f"the log density is finite but its gradient is not (NaN/inf in {shown}) "
                f"at the starts tried (the initial point of the chain and {random}); "
                "check the model for terms without a derivative there (a square root or "
                "a power at 0, a value at the edge of its support)"
            )
        energy = "" if self.potential is None else f" (potential energy {self.potential})"
        return (
            f"the log density is not finite at the initial point of the chain{energy} "
            f"nor at any of {random}; check the data against the model's supports"
        )


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
    windows, as `mass_matrix` names it (`run_arguments.MASS_MATRICES`): their variances
    (`diag`, Stan's `diag_e`), their covariance (`dense`, Stan's `dense_e`, which
    removes linear correlations at the cost of a matrix-vector product per leapfrog
    step), or nutpie's metrics from the draws and their gradients (`fisher`, its
    diagonal; `low-rank`, the diagonal and the directions most off it; `auto`, one of
    the two by the number of coordinates: `fisher.chosen_metric`). The Fisher
    metrics start from the gradient at the start (`fisher.initial_variance`) rather
    than the identity and are also re-estimated every `EARLY_WINDOW` draws of the
    initial buffer. `dense_mass=True` is `mass_matrix="dense"`.
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
        mass_matrix: str | None = None,
    ) -> None:
        if not step_size > 0:
            raise InferenceError(f"step_size must be positive, got {step_size}")
        if int(max_tree_depth) < 1:
            raise InferenceError(f"max_tree_depth must be at least 1, got {max_tree_depth}")
        if not 0 < target_accept < 1:
            raise InferenceError(f"target_accept must be in (0, 1), got {target_accept}")
        if mass_matrix is None:
            mass_matrix = "dense" if dense_mass else "diag"
        if mass_matrix not in MASS_MATRICES or (dense_mass and mass_matrix != "dense"):
            raise InferenceError(
                f"mass_matrix must be one of {', '.join(MASS_MATRICES)}"
                f" (dense with dense_mass), got {mass_matrix!r}"
            )
        self.step_size = float(step_size)
        self.max_tree_depth = int(max_tree_depth)
        self.target_accept = float(target_accept)
        self.adapt_step_size = bool(adapt_step_size)
        self.adapt_mass_matrix = bool(adapt_mass_matrix)
        self.max_delta_energy = float(max_delta_energy)
        self.mass_matrix = mass_matrix
        self.dense_mass = mass_matrix == "dense"

    def chain(
        self,
        potential: Potential | None,
        z0: torch.Tensor,
        num_warmup: int,
        generator: torch.Generator | None = None,
        *,
        names: Sequence[str] | None = None,
    ) -> NUTSChain:
        return NUTSChain(self, potential, z0, num_warmup, generator, names=names)


class NUTSChain:
    """The state of one chain: position, step size, mass matrix and adaptation.

    With a `potential` the chain starts at once; without one (`lockstep`), `begin()`
    and `advance()` are its requests for the caller to answer. `generator` is the
    chain's own random stream (None: torch's global one). `names`, when given, is the
    site of each coordinate, for a message about a start whose gradient is not finite."""

    def __init__(
        self,
        kernel: NUTSKernel,
        potential: Potential | None,
        z0: torch.Tensor,
        num_warmup: int,
        generator: torch.Generator | None = None,
        *,
        names: Sequence[str] | None = None,
    ) -> None:
        self.kernel = kernel
        self.potential_fn = potential
        self.num_warmup = int(num_warmup)
        self.generator = generator
        self.names = None if names is None else list(names)
        self.iteration = 0
        #: whether `begin` has found the chain a start (a chain carried on in another
        #: process has, and does not look again)
        self.begun = False
        #: the potentials and gradients the chain has asked for, all told: what its trees
        #: cost, counted (`chains.worth_splitting` reads it)
        self.leapfrogs = 0
        self.dtype = z0.dtype
        self._z: Vector = z0.detach().cpu().numpy().copy()
        self.potential, self.grad = math.nan, np.zeros_like(self._z)
        self._inv_mass: Vector = np.ones_like(self._z)  # its diagonal, or the matrix (dense)
        self._unit_mass = True  # skips the products with M^-1 until it is adapted
        self.metric = chosen_metric(kernel.mass_matrix, self._z.size)  # `auto` resolved
        self._dense = self.metric == "dense"
        self._momentum_factor: Vector | None = None  # dense: r = factor @ n gives r ~ N(0, M)
        self._low_rank: LowRankMetric | None = None  # low-rank: a correction of rank > 0
        self._uniforms: list[float] = []
        self.step_size = kernel.step_size
        self.schedule = WarmupSchedule(self.num_warmup)
        self.welford = self._new_estimator()
        #: the Fisher metrics' short windows in Stan's initial buffer (`EARLY_WINDOW`)
        self._early = self._fisher_window() if self._fisher_warmup() else None
        self.dual = DualAveraging(self.step_size, kernel.target_accept)
        if potential is not None:
            answer(self.begin(), potential)

    @property
    def z(self) -> torch.Tensor:
        """The chain's current position (a tensor sharing the chain's array)."""
        return torch.from_numpy(self._z)

    @property
    def inv_mass(self) -> torch.Tensor:
        """The inverse mass matrix: its diagonal, or the whole matrix for the `dense` and
        `low-rank` metrics (formed here: the sampler applies the low-rank one in parts)."""
        if self._low_rank is not None:
            return torch.from_numpy(self._low_rank.matrix()).to(self.dtype)
        if self._unit_mass and self.metric in ("dense", "low-rank"):
            return torch.eye(self._z.size, dtype=self.dtype)
        if self.metric == "low-rank":
            return torch.diag(torch.from_numpy(self._inv_mass))
        return torch.from_numpy(self._inv_mass)

    def _fisher_window(self) -> FisherWindow:
        return FisherWindow(self._z.size, keep_rows=self.metric == "low-rank")

    def _new_estimator(self) -> WelfordVariance | WelfordCovariance | FisherWindow:
        size = self._z.size
        if self.metric in ("fisher", "low-rank"):
            return self._fisher_window()
        return WelfordCovariance(size) if self._dense else WelfordVariance(size)

    def _velocity(self, r: Vector) -> Vector:
        """M^-1 r: the position's rate of change for momentum r."""
        if self._unit_mass:
            return r
        if self._low_rank is not None:
            return self._low_rank.velocity(r)
        return self._inv_mass @ r if self._dense else self._inv_mass * r

    def begin(self) -> Requests[None]:
        """A start with a finite potential and gradient, and a first step size.

        The given start is kept when the potential and its gradient are finite there and
        (in warmup) the step-size search succeeds; otherwise, as Stan does, up to
        `INIT_TRIES` points drawn uniformly in (-2, 2) on the unconstrained space from the
        chain's own generator are tried in turn. When none works the error says how far
        the best of them got: a log density that is not finite, a finite one whose
        gradient is not (naming the sites), or a step-size search that found it unstable."""
        failure = _StartFailure()
        for attempt in range(INIT_TRIES + 1):
            if attempt:
                self._z = self._random_start()
            u0, g0 = yield self._z
            if not math.isfinite(u0):
                failure.density(u0)
                continue
            if not bool(np.isfinite(g0).all()):
                failure.gradient(self._sites(np.flatnonzero(~np.isfinite(g0))))
                continue
            self.potential, self.grad = u0, g0
            if self.num_warmup > 0 and self.kernel.adapt_step_size:
                try:
                    step_size = yield from self._reasonable_step_size(self.step_size)
                except UnstableStartError:
                    failure.unstable()
                    continue
                self.step_size = step_size
                self.dual.restart(self.step_size)
            self.begun = True
            return
        raise InferenceError(failure.message())

    def _random_start(self) -> Vector:
        """A point drawn uniformly in (-INIT_RADIUS, INIT_RADIUS) from the chain's stream."""
        u = torch.rand(self._z.shape, dtype=self.dtype, generator=self.generator, device="cpu")
        return ((2.0 * u - 1.0) * INIT_RADIUS).numpy()

    def _sites(self, coordinates: np.ndarray) -> list[str]:
        """The sites of `coordinates` (their indices without `names`), each once."""
        if self.names is None:
            return [f"coordinate {int(i)}" for i in coordinates]
        return list(dict.fromkeys(self.names[int(i)] for i in coordinates))

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
        if self._low_rank is not None:
            return self._low_rank.momentum(r)
        if self._momentum_factor is not None:
            return self._momentum_factor @ r
        return r / np.sqrt(self._inv_mass)

    def _point(self, z: Vector, r: Vector, potential: float, grad: Vector) -> _Point:
        # an overflow to an infinite kinetic energy is a divergence: the drivers hold
        # numpy's warnings of it back (`quiet_overflow`)
        p_sharp = self._velocity(r)
        kinetic = 0.5 * float(p_sharp.dot(r))
        return _Point(z, r, p_sharp, potential, grad, kinetic)

    def _leaf(self, start: _Point, eps: float, h0: float) -> Requests[_Tree]:
        """One leapfrog step of size `eps` from `start`, as a tree of one point whose log
        weight is h0 minus its energy. One generator, not a leapfrog's inside a leaf's
        inside `_build`'s: this is made for every point of every tree, most of the
        sampler's own time on a small model, where each generator showed in it."""
        half = 0.5 * eps
        r = start.r - half * start.grad
        z = start.z + eps * self._velocity(r)
        self.leapfrogs += 1
        u, g = yield z
        r -= half * g
        p = self._point(z, r, u, g)
        delta = h0 - self._energy(p)  # log weight of the new point
        diverging = -delta > self.kernel.max_delta_energy
        accept = 1.0 if delta > 0 else math.exp(delta)
        return _Tree(p, p, p, delta, r, accept, 1, diverging=diverging)

    def _energy(self, p: _Point) -> float:
        h = p.potential + p.kinetic
        return math.inf if math.isnan(h) else h

    # -- trajectory ---------------------------------------------------------

    def _subtree(self, start: _Point, direction: int, depth: int, h0: float) -> Requests[_Tree]:
        """A subtree of 2**depth leapfrog steps from `start` in `direction`: a leaf's own
        generator at depth 0, without one of `_build`'s around it."""
        if depth == 0:
            return self._leaf(start, direction * self.step_size, h0)
        return self._build(start, direction, depth, h0)

    def _build(self, start: _Point, direction: int, depth: int, h0: float) -> Requests[_Tree]:
        """A subtree of 2**depth leapfrog steps (depth >= 1; `_subtree`)."""
        first = yield from self._subtree(start, direction, depth - 1, h0)
        if first.diverging or first.turning:
            return first
        second = yield from self._subtree(
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
            sub = yield from self._subtree(
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
            return (yield from self._leaf(start, step, h0)).log_weight

        direction = 1 if (yield from delta_h(eps)) > log_target else -1
        for _ in range(100):
            d = yield from delta_h(eps)
            if (direction == 1 and not d > log_target) or (direction == -1 and not d < log_target):
                break
            eps = eps * 2.0 if direction == 1 else eps * 0.5
            if eps > 1e7:
                raise InferenceError(
                    "could not find a usable NUTS step size: the posterior is improper (flat)"
                )
            if eps < 1e-12:
                raise UnstableStartError(
                    "could not find a usable NUTS step size: the posterior is "
                    "numerically unstable at the start"
                )
        return eps

    def _adapt(self, i: int, t: Transition) -> Requests[None]:
        k = self.kernel
        if k.adapt_step_size:
            self.step_size = self.dual.update(t.accept_prob)
        if k.adapt_mass_matrix and self._early is not None and i < self.schedule.init_buffer:
            self._early.add(self._z, self.grad)
            if (i + 1) % EARLY_WINDOW == 0:
                yield from self._close_window(self._early)
                self._early = self._fisher_window()
        if k.adapt_mass_matrix and self.schedule.in_slow_window(i):
            if isinstance(self.welford, FisherWindow):
                self.welford.add(self._z, self.grad)  # the gradient at the draw comes free
            else:
                self.welford.add(self._z)
        if k.adapt_mass_matrix and i in self.schedule.window_ends:
            yield from self._close_window(self.welford)
            self.welford = self._new_estimator()
        if i == self.num_warmup - 1 and k.adapt_step_size:
            self.step_size = self.dual.final_step_size

    def _close_window(
        self, window: WelfordVariance | WelfordCovariance | FisherWindow
    ) -> Requests[None]:
        """The metric from a window's draws and a step size for it. A Fisher window's
        metric gives way to the one before it where no step size is found for it (a
        window whose draws were still on their way to the typical set); for Stan's
        metrics that is an error, as in Stan."""
        before = self._metric_state()
        self._set_mass(window)
        yield from self._retuned(before if isinstance(window, FisherWindow) else None)

    def _metric_state(self) -> _MetricState:
        return (self._inv_mass, self._low_rank, self._unit_mass, self._momentum_factor)

    def _retuned(self, before: _MetricState | None) -> Requests[None]:
        """A step size for the metric just set, from which dual averaging restarts. Where
        none is found the metric `before` is put back (or, with none, the error raised)."""
        if not self.kernel.adapt_step_size:
            return
        try:
            step_size = yield from self._reasonable_step_size(self.step_size)
        except InferenceError:
            if before is None:
                raise
            self._inv_mass, self._low_rank, self._unit_mass, self._momentum_factor = before
            return
        self.step_size = step_size
        self.dual.restart(step_size)

    def _set_mass(self, estimate: WelfordVariance | WelfordCovariance | FisherWindow) -> None:
        """M^-1 from a window's draws. Dense: M^-1 = C = L L^T, so momenta r = L^-T n
        have covariance (L L^T)^-1 = M. Fisher and low-rank: from the draws and their
        gradients (`fisher`); `_inv_mass` holds the diagonal, `_low_rank` the whole
        metric when the window found directions off it."""
        if isinstance(estimate, FisherWindow):
            dtype = self._inv_mass.dtype
            if self.metric == "low-rank":
                metric = estimate.low_rank(self._inv_mass)
                self._inv_mass = metric.variance.astype(dtype)
                self._low_rank = metric.astype(dtype) if metric.rank else None
            else:
                self._inv_mass = estimate.variance(self._inv_mass).astype(dtype)
            self._unit_mass = False
            return
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

    def _fisher_warmup(self) -> bool:
        """Whether warmup adapts a Fisher metric (`fisher`, `low-rank`)."""
        fisher_metric = self.metric in ("fisher", "low-rank")
        return self.kernel.adapt_mass_matrix and self.schedule.enabled and fisher_metric

    def _starts_from_gradient(self) -> bool:
        """Whether the metric starts as 1/|g| (the Fisher metrics, when warmup adapts one)."""
        return self._fisher_warmup() and bool(np.isfinite(self.grad).all())

    def _initial_metric(self) -> Requests[None]:
        """nutpie's first metric, 1/|g| at the start (`fisher.initial_variance`), and a step
        size for it; the identity, and `begin`'s step size, where none is found for it."""
        before = self._metric_state()
        self._inv_mass = initial_variance(self.grad).astype(self._z.dtype)
        self._unit_mass = False
        yield from self._retuned(before)

    def step(self) -> Transition:
        """One NUTS iteration; during warmup it also adapts."""
        assert self.potential_fn is not None, "a chain without a potential is advanced"
        return answer(self.advance(), self.potential_fn)

    def advance(self) -> Requests[Transition]:
        """One NUTS iteration as requests (`step` answers them here)."""
        if self.iteration == 0 and self._starts_from_gradient():
            yield from self._initial_metric()
        t = yield from self._transition()
        if self.iteration < self.num_warmup:
            yield from self._adapt(self.iteration, t)
        self.iteration += 1
        return t

    @property
    def warming_up(self) -> bool:
        return self.iteration < self.num_warmup
