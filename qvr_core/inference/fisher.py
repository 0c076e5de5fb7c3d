"""Mass matrices fitted to draws *and* their gradients (nutpie's adaptation).

Seyboldt, Carlson & Carpenter ("Preconditioning Hamiltonian Monte Carlo by
minimising Fisher divergence", the sampler nutpie) choose the metric whose
linear transform makes the target closest to a standard normal in Fisher
divergence, estimated from a window's draws x and the gradients g of their log
density. Among diagonal metrics the minimiser has, per coordinate, the variance

    D_i = sqrt(Var[x_i] / Var[g_i])

the geometric mean of the draw variance and the inverse gradient variance. For a
Gaussian the gradients are a linear function of the draws, so the noise of the
two estimates cancels: D is the exact variance from any window, where Stan's
draw variance is off by its Monte Carlo error (an order of magnitude more draws
for the same accuracy, and nothing learnt at all from the curvature).

`LowRankMetric` adds the correlations that matter most. After scaling by D, the
covariances of the scaled draws, Cx, and scaled gradients, Cg, are projected on
the space their rows span (the whole space when there are at least half as many
draws as coordinates); the Fisher-optimal matrix there is the one A with
A Cg A = Cx, the SPD geometric mean of Cx and Cg^-1 (for a Gaussian, again the
exact covariance). Its eigen-directions whose eigenvalue is far from 1 (outside
[1/CUTOFF, CUTOFF]), at most MAX_RANK of them, the farthest first, make

    M^-1 = D^1/2 (I + U (Λ - I) U^T) D^1/2

whose product with a momentum, and whose square root for drawing one, cost
O(d r) (`velocity`, `momentum`): a diagonal metric plus r rank-one corrections.

That matrix is exact for a Gaussian, whose gradients are a linear function of its
draws, so that Cx Cg = I. A posterior whose curvature changes across it (a funnel: a
Gaussian process's magnitude and its latent values, a hierarchical scale) breaks
that: its gradients vary far more than its draws' spread implies, in some direction.
There one linear transform fitted to the bulk takes steps the tails cannot bear, and
the chains mix the scale slowly: posteriordb's gp_pois_regr, with the correction,
left R-hat above 1.01 at four of six seeds (nutpie's own low-rank metric at four of
four), and converged at every seed with the diagonal alone. So a window whose
eigenvalues of Cx^1/2 Cg Cx^1/2 lie further from 1 than sampling noise explains
(`far_from_gaussian`) keeps a diagonal; that is judged only where the window has
many draws per coordinate (`ROWS_PER_COORDINATE`), since with few the noise alone
spreads them. Its diagonal is the draws' own variance, shrunk as Stan's is, not the
Fisher one: the same argument turned on D. Where the curvature changes, the gradients
vary most where it is highest (a funnel's neck), so Var[g] overstates the curvature of
the bulk, and D = sqrt(Var[x] / Var[g]) makes the coordinates that cross the neck
narrower than the spread the chains must cover. On gp_pois_regr (seeds 1 to 3, 4 x
(1,000 + 1,000)) the draws' variance gave trees of 164 to 177 steps against 140 to 160,
10 to 33% more ESS, 2 to 14% more ESS a second, and 3, 10 and 4 divergences against
15, 17 and 3.

`initial_variance` is nutpie's metric for the first iterations, before any
window has closed: 1/|g| at the start, which has the scale of the variance of a
Gaussian coordinate for a start a unit away from its mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from qvr_core.inference.adapt import RunningMoments, shrunk_variance
from qvr_core.plan.run_arguments import MASS_MATRICES

Vector = np.ndarray

#: Eigenvalues of the scaled Fisher-optimal matrix inside [1/CUTOFF, CUTOFF] count as 1.
CUTOFF = 2.0
#: At most this many directions corrected beyond the diagonal.
MAX_RANK = 10
#: Up to this many coordinates a low-rank metric is applied as a d x d matrix.
DENSE_SIZE = 64
#: Ridge added to the projected covariances of the scaled draws and gradients (whose
#: diagonals are at least about 1 there), for directions the window barely saw.
RIDGE = 1e-3
#: Fisher variances are kept within these bounds (a coordinate that never moved, or
#: whose gradient never changed, would give 0 or infinity).
LIMITS = (1e-10, 1e10)
#: The start's 1/|g| is kept within these bounds: a gradient that is nearly 0 at the
#: start says little about the scale, and an extreme metric would stall the first window.
INITIAL_LIMITS = (1e-4, 1e4)
#: The numbers (rows times coordinates) a window keeps of its draws and of its
#: gradients for the low-rank fit; beyond it every other row is dropped (and every other
#: later one skipped), so a long window costs bounded memory.
ROW_BUDGET = 1 << 22
MIN_ROWS = 64
#: A window far from Gaussian (`far_from_gaussian`) has an eigenvalue of Cx^1/2 Cg Cx^1/2
#: this factor beyond the range sampling noise gives a Gaussian's (at most about 1.6 on
#: posteriordb's regressions, time series and ODE; 8 to 30 on its Gaussian process)
NON_GAUSSIAN = 6.0
#: ... judged only where a window has at least this many draws per coordinate, where
#: that noise is small (a factor of 1.8 at most) and the draws' autocorrelation matters
#: little, and at least `JUDGED_ROWS` (the first, short windows are still on their way)
ROWS_PER_COORDINATE = 16
JUDGED_ROWS = 100


def initial_variance(grad: Vector) -> Vector:
    """nutpie's first metric: 1/|g| per coordinate (1 where the gradient is 0)."""
    size = np.abs(np.asarray(grad, dtype=np.float64))
    var = np.ones_like(size)
    np.divide(1.0, size, out=var, where=size > 0)
    return np.clip(var, *INITIAL_LIMITS)


@dataclass(frozen=True)
class LowRankMetric:
    """M^-1 = S (I + U (Λ - I) U^T) S with S = diag(scale) and orthonormal U (d x r).

    In at most `DENSE_SIZE` dimensions both products are one matrix times the vector,
    with the two d x d matrices formed once: numpy's cost there is per call, not per
    number, and the factored form's five calls per product were a tenth of a small
    model's sampling time (kidiq: 6 us of about 60 per leapfrog step)."""

    scale: Vector
    vectors: Vector
    values: Vector

    @cached_property
    def _dense(self) -> tuple[Vector, Vector] | None:
        """M^-1 and the momentum's factor as d x d matrices, in at most `DENSE_SIZE`
        dimensions (formed on the first product: `astype` makes the metric the chain
        keeps, and only that one is applied)."""
        if not self.values.size or self.scale.size > DENSE_SIZE:
            return None
        shrink = 1.0 / np.sqrt(self.values) - 1.0
        inner = np.eye(self.scale.size) + (self.vectors * shrink) @ self.vectors.T
        dtype = self.scale.dtype
        return self.matrix().astype(dtype), (inner / self.scale[:, None]).astype(dtype)

    @property
    def rank(self) -> int:
        return int(self.values.size)

    @property
    def variance(self) -> Vector:
        """The diagonal part D = S^2."""
        return np.asarray(self.scale * self.scale)

    def velocity(self, r: Vector) -> Vector:
        """M^-1 r."""
        if self._dense is not None:
            return np.asarray(self._dense[0] @ r)
        y = self.scale * r
        y = y + self.vectors @ ((self.values - 1.0) * (self.vectors.T @ y))
        return np.asarray(self.scale * y)

    def momentum(self, noise: Vector) -> Vector:
        """A momentum N(0, M) from standard normal `noise`: S^-1 (I + U (Λ^-1/2 - I) U^T) n,
        since (I + U (Λ^-1/2 - I) U^T)^2 = I + U (Λ^-1 - I) U^T = S M S."""
        if self._dense is not None:
            return np.asarray(self._dense[1] @ noise)
        shrink = 1.0 / np.sqrt(self.values) - 1.0
        y = noise + self.vectors @ (shrink * (self.vectors.T @ noise))
        return np.asarray(y / self.scale)

    def matrix(self) -> Vector:
        """M^-1 as a d x d array (in more than `DENSE_SIZE` dimensions the sampler never
        forms it)."""
        inner = np.eye(self.scale.size) + (self.vectors * (self.values - 1.0)) @ self.vectors.T
        return np.asarray(self.scale[:, None] * inner * self.scale[None, :])

    def astype(self, dtype: np.dtype[np.floating]) -> LowRankMetric:
        return LowRankMetric(
            self.scale.astype(dtype), self.vectors.astype(dtype), self.values.astype(dtype)
        )


class FisherWindow:
    """A warmup window's draws and gradients: running moments of both (float64) and,
    with `keep_rows`, the rows themselves for the low-rank fit."""

    def __init__(self, size: int, keep_rows: bool = False) -> None:
        self.n = 0
        self._draws = RunningMoments(size)
        self._grads = RunningMoments(size)
        self.keep_rows = keep_rows
        self._max_rows = max(MIN_ROWS, ROW_BUDGET // max(size, 1))
        self._stride = 1
        self._rows: list[tuple[Vector, Vector]] = []

    def add(self, z: Vector, grad: Vector) -> None:
        """One draw and the gradient of the potential (or of the log density: the sign
        changes neither variance nor the fit) there."""
        z = np.asarray(z, dtype=np.float64)
        grad = np.asarray(grad, dtype=np.float64)
        if not (np.isfinite(z).all() and np.isfinite(grad).all()):
            return
        if self.keep_rows and self.n % self._stride == 0:
            self._rows.append((z.copy(), grad.copy()))
            if len(self._rows) >= self._max_rows:
                self._rows = self._rows[::2]
                self._stride *= 2
        self.n += 1
        self._draws.add(z)
        self._grads.add(grad)

    def variance(self, previous: Vector) -> Vector:
        """The Fisher-optimal diagonal sqrt(Var[x] / Var[g]); Var[x] where the gradient
        never changed, `previous` where the draws never moved."""
        previous = np.asarray(previous, dtype=np.float64)
        if self.n < 2:
            return previous
        var_x, var_g = self._draws.variance(), self._grads.variance()
        with np.errstate(divide="ignore", invalid="ignore"):
            fisher = np.sqrt(var_x / var_g)
        # a gradient that never changed (a flat or linear potential): the draws' variance
        var = np.where(var_g > 0, fisher, var_x)
        # a coordinate that never moved (every proposal refused): the window says nothing
        var = np.where((var_x > 0) & np.isfinite(var), var, previous)
        return np.clip(var, *LIMITS)

    def draw_variance(self, previous: Vector) -> Vector:
        """The draws' own variance, shrunk as Stan's diagonal metric is; `previous` where
        the draws never moved."""
        previous = np.asarray(previous, dtype=np.float64)
        if self.n < 2:
            return previous
        var_x = self._draws.variance()
        var = np.where(var_x > 0, shrunk_variance(var_x, self.n), previous)
        return np.clip(var, *LIMITS)

    def low_rank(self, previous: Vector) -> LowRankMetric:
        """The diagonal `variance` plus the directions where the Fisher-optimal matrix of
        the scaled window differs most from the identity (no rows kept: none). A window
        far from Gaussian (`far_from_gaussian`) gets the draws' variance alone (see the
        module)."""
        scale = np.sqrt(self.variance(previous))
        size = scale.size
        if len(self._rows) < 3:
            return LowRankMetric(scale, np.zeros((size, 0)), np.zeros(0))
        draws = np.stack([z for z, _ in self._rows])
        grads = np.stack([g for _, g in self._rows])
        x, g = (draws - draws.mean(0)) / scale, (grads - grads.mean(0)) * scale
        try:
            if far_from_gaussian(x, g):  # the correction would fit the bulk alone
                spread = np.sqrt(self.draw_variance(previous))
                return LowRankMetric(spread, np.zeros((size, 0)), np.zeros(0))
            vectors, values = fisher_directions(x, g)
        except np.linalg.LinAlgError:  # a decomposition that did not converge: the diagonal
            return LowRankMetric(scale, np.zeros((size, 0)), np.zeros(0))
        return LowRankMetric(scale, vectors, values)


def fisher_directions(x: Vector, g: Vector) -> tuple[Vector, Vector]:
    """Orthonormal directions U (d x r) and eigenvalues Λ of the Fisher-optimal matrix
    of centred, scaled draws `x` and gradients `g` (rows), those outside
    [1/CUTOFF, CUTOFF], at most MAX_RANK, farthest from 1 first."""
    n, size = x.shape
    basis: Vector | None = None
    if 2 * n < size:  # few draws: the space their rows and gradients span
        basis, _ = np.linalg.qr(np.concatenate([x, g]).T)
        x, g = x @ basis, g @ basis
    eye = np.eye(x.shape[1])
    cov_x = x.T @ x / n + RIDGE * eye
    cov_g = g.T @ g / n + RIDGE * eye
    vectors, values = _eigen(spd_mean_factor(cov_x, cov_g))
    distance = np.abs(np.log(values))
    order = [int(i) for i in np.argsort(-distance, kind="stable") if distance[i] > np.log(CUTOFF)]
    chosen = order[:MAX_RANK]
    vectors = vectors[:, chosen]
    if basis is not None:
        vectors = basis @ vectors
    return vectors, values[chosen]


def far_from_gaussian(x: Vector, g: Vector) -> bool:
    """Whether centred, scaled draws `x` and their gradients `g` (rows) are further from
    a Gaussian's than sampling noise explains: an eigenvalue k of Cx^1/2 Cg Cx^1/2 (all 1
    for a Gaussian) with |log k| more than log(NON_GAUSSIAN) beyond the noise. For n
    independent draws of a Gaussian in d coordinates the eigenvalues of a sample
    covariance over the true one lie within (1 +- sqrt(d/n))^2 (Marchenko and Pastur),
    and k is about the square of those, so the noise reaches 2 |log(1 - sqrt(d/n))|.
    Only judged with `ROWS_PER_COORDINATE` draws a coordinate or more, and `JUDGED_ROWS`:
    False below."""
    n, size = x.shape
    if n < max(ROWS_PER_COORDINATE * size, JUDGED_ROWS):
        return False
    eye = np.eye(size)
    lower = np.linalg.cholesky(x.T @ x / n + RIDGE * eye)
    k = np.linalg.eigvalsh(lower.T @ (g.T @ g / n + RIDGE * eye) @ lower)
    noise = 2.0 * abs(np.log(1.0 - np.sqrt(size / n)))
    return bool(np.abs(np.log(np.clip(k, 1e-300, None))).max() > noise + np.log(NON_GAUSSIAN))


def spd_mean_factor(cov_x: Vector, cov_g: Vector) -> Vector:
    """B with B B^T = A, the symmetric positive definite A with A cov_g A = cov_x (the
    geometric mean of cov_x and cov_g^-1). With cov_x = L L^T and L^T cov_g L = V K V^T,
    A = L V K^-1/2 V^T L^T, so B = L V K^-1/4: positive definite by construction, where
    forming A from square roots of ill-conditioned windows (an early one's draws still
    on their way to the typical set) gave it eigenvalues below zero."""
    lower = np.linalg.cholesky(cov_x)
    k, v = np.linalg.eigh(lower.T @ cov_g @ lower)
    return np.asarray((lower @ v) * np.clip(k, 1e-300, None) ** -0.25)


def _eigen(factor: Vector) -> tuple[Vector, Vector]:
    """The eigenvectors and eigenvalues of factor factor^T (its left singular vectors and
    squared singular values), the eigenvalues within `LIMITS`."""
    u, sv, _ = np.linalg.svd(factor, full_matrices=False)
    return u, np.clip(sv * sv, *LIMITS)


#: `auto` adds the low-rank correction up to this many coordinates.
LOW_RANK_UP_TO = 500


def chosen_metric(name: str, size: int) -> str:
    """The metric a chain of `size` coordinates adapts for `name`.

    `auto` is always a Fisher metric: the gradients at the draws come with the chain,
    and from them the diagonal is exact for Gaussian coordinates where Stan's is a
    noisy draw variance. Up to `LOW_RANK_UP_TO` coordinates it adds the low-rank
    correction, which turns the correlated directions of a regression or a
    hierarchical model round; it costs a window's rows (n x d) and an eigen-
    decomposition of a matrix up to min(d, 2n) square when a window closes, and two
    d x r products per leapfrog step, which for a few hundred coordinates is
    milliseconds a window. Beyond that size, the lifted networks and long latent
    sequences where they appear, a rank-10 correction covers a vanishing share of the
    directions while the window's rows and decompositions grow as d n and d^3: the
    diagonal alone. A window that finds no direction far from 1 leaves the metric
    diagonal, so a well-scaled model pays nothing per step."""
    if name not in MASS_MATRICES:
        raise ValueError(f"mass matrix must be one of {', '.join(MASS_MATRICES)}, got {name!r}")
    if name != "auto":
        return name
    return "low-rank" if size <= LOW_RANK_UP_TO else "fisher"
