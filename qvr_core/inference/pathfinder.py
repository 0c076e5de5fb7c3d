"""Starts for NUTS chains from multi-path Pathfinder (Zhang, Carpenter, Gelman and Vehtari
2022, "Pathfinder: parallel quasi-Newton variational inference").

Why: a chain started at a random point can spend its whole warmup far from the posterior's
mass. Posteriordb's Lotka-Volterra ODE is the case that made this module: from some prior
draws the equations are stiff (the step size falls to 1e-7 and the chain never leaves), and
from others the chain settles in a slower oscillation whose log density is some 40 lower,
so R-hat fails where Stan, whose solver rejects those starts, converges. Each path here is
a short L-BFGS run from one chain's own start; at every iterate the optimiser's inverse
Hessian and a Newton step give a normal approximation of the posterior, whose ELBO is
estimated from a few draws. Each path keeps its best approximation and its draws, and the
chains' starts are importance-resampled from all the paths' draws (weights p / q, each
draw under its own path's q, truncated as Ionides 2008 does), so a path stuck in a minor
mode or on a stiff ridge gives no start while a good one gives several.

Every step that needs the potential is a request (`nuts.Requests`): `lockstep` answers
one request of every path in one batched evaluation, exactly as it answers the chains'.
The arithmetic is NumPy over the dense inverse Hessian, so Pathfinder is used for models
of at most `MAX_COORDINATES` coordinates (beyond that the chains start where they would
have). It is an initialisation, not an inference: nothing reports its approximation, and
a path that fails (a start that is not finite, a line search that finds nothing finite)
simply gives no draws.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from qvr_core.inference.nuts import Requests, Vector

#: Pathfinder's arithmetic is dense (an inverse Hessian and its Cholesky factor per
#: iterate): above this many coordinates the chains keep their own starts.
MAX_COORDINATES = 400
LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class PathfinderSettings:
    """How long each path runs and how many draws it spends.

    Stan's Pathfinder defaults are 1,000 iterations, a history of 5 and 25 ELBO draws
    per iterate; a start for a chain needs less. `patience` ends a path whose ELBO has
    not improved for that many iterates (the optimiser going down a funnel's neck, where
    the density grows without bound and the approximations only get worse)."""

    max_iterations: int = 200
    history: int = 6
    elbo_draws: int = 5
    final_draws: int = 24
    patience: int = 20
    tolerance: float = 1e-8


@dataclass(frozen=True)
class Path:
    """One path's best normal approximation's draws and their log importance weights
    (log p - log q; -inf where the potential is not finite), with its ELBO."""

    draws: Vector
    log_weights: Vector
    elbo: float
    iterations: int


@dataclass(frozen=True)
class _Normal:
    mean: Vector
    factor: Vector  # lower Cholesky factor of the covariance
    log_det: float  # log |factor|


def single_path(
    start: Vector, rng: np.random.Generator, settings: PathfinderSettings = PathfinderSettings()
) -> Requests[Path | None]:
    """One Pathfinder path from `start` (L-BFGS on the potential U = -log p); None when
    the start or every line search fails before any approximation is formed."""
    x = np.asarray(start, dtype=np.float64).copy()
    u, g = yield x
    g = np.asarray(g, dtype=np.float64)
    if not (math.isfinite(u) and bool(np.isfinite(g).all())):
        return None
    pairs: deque[tuple[Vector, Vector]] = deque(maxlen=settings.history)
    best: tuple[float, _Normal, Vector, Vector] | None = None
    h: Vector | None = None  # the inverse Hessian at x (None before any curvature is known)
    stale = iterations = 0
    while iterations < settings.max_iterations:
        iterations += 1
        direction = _down(g) if h is None else -(h @ g)
        slope = float(g @ direction)
        if not slope < 0:  # not a descent direction: forget the history, go down the gradient
            pairs.clear()
            direction = _down(g)
            slope = float(g @ direction)
        found = yield from _line_search(x, u, direction, slope)
        if found is None:
            break
        x_new, u_new, g_new = found
        s, y = x_new - x, g_new - g
        if float(s @ y) > 1e-10 * float(y @ y):  # curvature: keeps the inverse Hessian positive
            pairs.append((s, y))
        change = abs(u - u_new) / max(abs(u_new), 1.0)
        x, u, g = x_new, u_new, g_new
        h = _inverse_hessian(x.size, pairs) if pairs else None
        normal = None if h is None else _approximation(x, g, h)
        if normal is not None:
            draws = _draw(normal, settings.elbo_draws, rng)
            log_w = yield from _log_weights(normal, draws)
            elbo = _mean(log_w)
            if best is None or elbo > best[0]:
                best, stale = (elbo, normal, draws, log_w), 0
            else:
                stale += 1
        if change < settings.tolerance or float(np.max(np.abs(g))) < 1e-8:
            break
        if stale >= settings.patience:
            break
    if best is None or not math.isfinite(best[0]):
        return None
    elbo, normal, draws, log_w = best
    more = _draw(normal, settings.final_draws, rng)
    more_w = yield from _log_weights(normal, more)
    return Path(np.vstack([draws, more]), np.concatenate([log_w, more_w]), elbo, iterations)


def resampled_starts(
    paths: list[Path | None], count: int, rng: np.random.Generator
) -> list[Vector]:
    """`count` starts drawn without replacement from every path's draws, each with
    probability proportional to its importance weight, the weights truncated at
    mean * sqrt(n) (Ionides 2008) so that one lucky draw cannot take every chain. Fewer
    than `count` when fewer draws have a finite weight."""
    kept = [p for p in paths if p is not None]
    if not kept:
        return []
    draws = np.vstack([p.draws for p in kept])
    log_w = np.concatenate([p.log_weights for p in kept])
    finite = np.isfinite(log_w)
    draws, log_w = draws[finite], log_w[finite]
    if not len(log_w):
        return []
    w = np.exp(log_w - log_w.max())
    w = np.minimum(w, w.mean() * math.sqrt(len(w)))
    chosen = rng.choice(len(w), size=min(count, len(w)), replace=False, p=w / w.sum())
    return [draws[i].copy() for i in chosen]


def _line_search(
    x: Vector, u: float, direction: Vector, slope: float
) -> Requests[tuple[Vector, float, Vector] | None]:
    """A backtracking line search to Armijo's sufficient decrease from a unit step, where
    the potential and its gradient are finite; None when 40 halvings find none."""
    step = 1.0
    for _ in range(40):
        x_new = x + step * direction
        u_new, g_new = yield x_new
        g_new = np.asarray(g_new, dtype=np.float64)
        if (
            math.isfinite(u_new)
            and bool(np.isfinite(g_new).all())
            and u_new <= u + 1e-4 * step * slope
        ):
            return x_new, u_new, g_new
        step *= 0.5
    return None


def _inverse_hessian(size: int, pairs: deque[tuple[Vector, Vector]]) -> Vector:
    """L-BFGS's inverse Hessian as a matrix: gamma I (gamma = s.y / y.y of the latest
    pair) updated by BFGS with each pair in turn. It is formed once an iterate and serves
    both the next direction and the iterate's normal approximation (the dense arithmetic
    is why `MAX_COORDINATES` bounds the models Pathfinder starts)."""
    s_last, y_last = pairs[-1]
    h = np.eye(size) * (float(s_last @ y_last) / float(y_last @ y_last))
    for s, y in pairs:
        rho = 1.0 / float(y @ s)
        hy = h @ y
        h = (
            h
            - rho * (np.outer(s, hy) + np.outer(hy, s))
            + (rho * rho * float(y @ hy) + rho) * np.outer(s, s)
        )
    return h


def _down(g: Vector) -> Vector:
    """Down the gradient, at most a unit step: the direction before any curvature is known."""
    return -g / max(1.0, float(np.linalg.norm(g)))


def _approximation(x: Vector, g: Vector, h: Vector) -> _Normal | None:
    """The normal approximation at an iterate: covariance the inverse Hessian h, mean its
    Newton step x - h g (g is U's gradient); None where h is not numerically positive
    definite."""
    h = 0.5 * (h + h.T)
    try:
        factor = np.linalg.cholesky(h)
    except np.linalg.LinAlgError:
        return None
    diagonal = np.diag(factor)
    if not bool(np.isfinite(factor).all()) or not bool((diagonal > 0).all()):
        return None
    return _Normal(x - h @ g, factor, float(np.log(diagonal).sum()))


def _mean(log_w: Vector) -> float:
    """The ELBO estimate: -inf unless every weight and their mean are finite (a density
    that grows without bound overflows the sum, which must not win as +inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(np.mean(log_w))
    return mean if bool(np.isfinite(log_w).all()) and math.isfinite(mean) else -math.inf


def _draw(normal: _Normal, count: int, rng: np.random.Generator) -> Vector:
    z = rng.standard_normal((count, normal.mean.size))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(normal.mean + z @ normal.factor.T)


def _log_weights(normal: _Normal, draws: Vector) -> Requests[Vector]:
    """log p - log q at each draw (p unnormalised, from the potential)."""
    with np.errstate(over="ignore", invalid="ignore"):  # a far draw: its weight is -inf
        z = np.linalg.solve(normal.factor, (draws - normal.mean).T).T
        log_q = -0.5 * np.sum(z * z, axis=1) - normal.log_det - 0.5 * z.shape[1] * LOG_2PI
    log_w = np.empty(len(draws))
    for i, point in enumerate(draws):
        u, _ = yield point
        log_w[i] = -u - log_q[i] if math.isfinite(u) and math.isfinite(log_q[i]) else -math.inf
    return log_w
