"""A Markov chain over a plate, and its exact sum: the forward algorithm of an HMM.

`MarkovChain(transition, initial)` on `marginalize z : S <- ... [over=Time]` is a chain
of values along the plate: z[0] from `initial`, z[t] from row z[t - 1] of `transition`.
Its distribution's last batch axis is the chain's (time); axes before it are
independent chains (sequences).

Summing z out of a scope is the forward algorithm. The scope's steps run once per
value k, which gives the log density `e[k, t]` of what step t adds with z[t] = k (the
emissions); the log marginal is the log-sum over all K**T paths of
`log initial[z0] + e[z0, 0] + sum_t (log transition[z(t-1), z(t)] + e[z(t), t])`.

That is a product, in the (logsumexp, +) semiring, of one K x K matrix per step. The
product is associative, so it is reduced pairwise (a tree of log2(T) levels, each
one batched operation over all pairs): O(T K^3) arithmetic in log2(T) dispatches, not a
loop of T steps of Python, which a gradient would pay twice and NUTS a thousand times
per draw. The reduction uses only shape-static tensor operations, so the chains'
batched potential (`torch.func.vmap`, `inference.record`) records it like any other.
"""

from __future__ import annotations

import math

import torch
from torch import distributions as D
from torch.distributions import constraints as C


class MarkovChain(D.Distribution):
    """Values 0 .. K-1 along the last batch axis, each drawn from the transition row of
    the one before it. `log_prob` is per entry: the first entry's log initial
    probability, then each step's log transition probability, so that their sum is the
    chain's log probability and a term lands on the plate entry it belongs to.

    The arguments' own batch axes line up with the chain's from the right, as torch's
    do: a transition of shape (T, K, K) is one matrix per step (entry t moves from
    t - 1 to t; entry 0 is not read), and only the first step's `initial` is read."""

    arg_constraints = {  # noqa: RUF012  # why: torch's own class attribute, read-only
        "transition": C.independent(C.simplex, 1),
        "initial": C.simplex,
    }
    has_enumerate_support = True

    def __init__(
        self,
        transition: torch.Tensor,
        initial: torch.Tensor | None = None,
        batch_shape: torch.Size | tuple[int, ...] | None = None,
        validate_args: bool | None = None,
    ) -> None:
        k = transition.shape[-1]
        if transition.dim() < 2 or transition.shape[-2] != k:
            raise ValueError(
                f"MarkovChain: the transition is a K x K matrix, not of shape "
                f"{tuple(transition.shape)}"
            )
        if initial is None:
            initial = torch.full((k,), 1.0 / k, dtype=transition.dtype, device=transition.device)
        if initial.dim() < 1 or initial.shape[-1] != k:
            raise ValueError(
                f"MarkovChain: the initial probabilities are {k} numbers (one per value), not "
                f"of shape {tuple(initial.shape)}"
            )
        self.transition, self.initial = transition, initial
        if batch_shape is None:
            batch_shape = torch.broadcast_shapes(transition.shape[:-2], initial.shape[:-1])
        super().__init__(torch.Size(batch_shape), torch.Size(), validate_args=validate_args)

    @property
    def states(self) -> int:
        return int(self.transition.shape[-1])

    @property
    def support(self) -> C.Constraint:
        return C.integer_interval(0, self.states - 1)

    def expand(
        self, batch_shape: torch.Size | list[int] | tuple[int, ...], _instance: object = None
    ) -> MarkovChain:
        """The same chain over other plates: the last axis is the chain's length."""
        return MarkovChain(
            self.transition, self.initial, torch.Size(batch_shape), validate_args=False
        )

    def enumerate_support(self, expand: bool = True) -> torch.Tensor:
        values = torch.arange(self.states, device=self.transition.device)
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1, *self.batch_shape)) if expand else values

    def _logs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """log initial (*batch, K) and log transition (*batch, K, K), at the chain's axes."""
        k, batch = self.states, self.batch_shape
        return self.initial.log().expand(*batch, k), self.transition.log().expand(*batch, k, k)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Per entry along the chain: log initial[z0], then log transition[z(t-1), z(t)]."""
        z = value.long()
        z = z.expand(torch.broadcast_shapes(z.shape, self.batch_shape))
        log_initial, log_transition = self._logs()
        if not self.batch_shape:  # no plate to run along: one value, the chain's first
            return _pick(log_initial.expand(*z.shape, self.states), z)
        first = _pick(log_initial[..., :1, :].expand(*z.shape[:-1], 1, self.states), z[..., :1])
        rows = log_transition[..., 1:, :, :]
        rows = rows.expand(*z.shape[:-1], *rows.shape[-3:])
        row = rows.gather(-2, z[..., :-1, None, None].expand(*rows.shape[:-2], 1, self.states))
        steps = _pick(row.squeeze(-2), z[..., 1:])
        return torch.cat((first, steps), -1)

    @torch.no_grad()
    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        """A path drawn forward: one categorical draw per step (a draw is not on the
        gradient's path, so the loop over T costs a run, never a density)."""
        k, batch = self.states, self.batch_shape or torch.Size((1,))  # no plate: one value
        initial = self.initial.expand(*batch, k)
        transition = self.transition.expand(*batch, k, k)
        shape = torch.Size(sample_shape) + batch[:-1]
        z = D.Categorical(probs=initial[..., 0, :].expand(*shape, k)).sample()
        path = [z]
        for t in range(1, batch[-1]):
            rows = transition[..., t, :, :].expand(*shape, k, k)
            probs = rows.gather(-2, z[..., None, None].expand(*shape, 1, k)).squeeze(-2)
            z = D.Categorical(probs=probs).sample()
            path.append(z)
        drawn = torch.stack(path, -1)
        return drawn if self.batch_shape else drawn.squeeze(-1)

    @torch.no_grad()
    def draw_path(self, emissions: torch.Tensor) -> torch.Tensor:
        """One path from the chain's posterior given the emissions (K, *batch): forward
        filtering, then backward sampling (the last step from its filtered weights, each
        one before from its weights times the transition into the step drawn after it),
        an exact draw of the whole path, as Stan's hmm_latent_rng makes. The loop over
        T runs once per posterior draw, never in a density."""
        alpha = _forward_filter(self, emissions)
        _, log_transition = self._logs()
        z = D.Categorical(logits=alpha[-1]).sample()
        path = [z]
        for t in range(len(alpha) - 2, -1, -1):
            into = log_transition[..., t + 1, :, :]  # [i, j]: from i at t to j at t + 1
            column = into.gather(-1, z[..., None, None].expand(*into.shape[:-1], 1))[..., 0]
            z = D.Categorical(logits=alpha[t] + column).sample()
            path.append(z)
        return torch.stack(path[::-1], -1)

    def log_marginal(self, emissions: torch.Tensor) -> torch.Tensor:
        """The forward algorithm: log p of what the scope adds, the chain summed out.

        `emissions` is (K, *batch): entry [k, ..., t] the log density step t adds when
        z[t] = k. The result has the batch shape less its last axis (one number per
        chain)."""
        log_initial, log_transition = self._logs()
        e = emissions.movedim(0, -1)  # (..., T, K)
        start = log_initial[..., 0, :] + e[..., 0, :]  # (..., K)
        # step t's matrix: [i, j] = log transition_t[i, j] + e[t, j]
        mats = log_transition[..., 1:, :, :] + e[..., 1:, None, :]  # (..., T - 1, K, K)
        total = _semiring_product(mats, self.states)  # (..., K, K)
        return torch.logsumexp(start[..., :, None] + total, dim=(-2, -1))


def _forward_filter(chain: MarkovChain, emissions: torch.Tensor) -> list[torch.Tensor]:
    """alpha[t][..., k]: log p(what steps 0..t add, z[t] = k), one step at a time."""
    log_initial, log_transition = chain._logs()
    e = emissions.movedim(0, -1)  # (..., T, K)
    alpha = [log_initial[..., 0, :] + e[..., 0, :]]
    for t in range(1, e.shape[-2]):
        step = alpha[-1][..., :, None] + log_transition[..., t, :, :]
        alpha.append(torch.logsumexp(step, -2) + e[..., t, :])
    return alpha


def _pick(rows: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """rows[..., z]: the entry of the last axis each value of z names."""
    return rows.gather(-1, z[..., None]).squeeze(-1)


def _semiring_product(mats: torch.Tensor, k: int) -> torch.Tensor:
    """The (logsumexp, +) product of the matrices along axis -3, in order; the identity
    (0 on the diagonal, -inf off it) for none. Adjacent pairs are multiplied together,
    level by level; an odd one out is carried to the next level by padding with the
    identity, so every level is one batched operation."""
    identity = torch.full((k, k), -math.inf, dtype=mats.dtype, device=mats.device)
    identity = identity.diagonal_scatter(torch.zeros(k, dtype=mats.dtype, device=mats.device))
    if mats.shape[-3] == 0:
        return identity.expand(*mats.shape[:-3], k, k)
    while mats.shape[-3] > 1:
        if mats.shape[-3] % 2:
            pad = identity.expand(*mats.shape[:-3], 1, k, k)
            mats = torch.cat((mats, pad), -3)
        left, right = mats[..., 0::2, :, :], mats[..., 1::2, :, :]
        # [i, j] = logsumexp over m of left[i, m] + right[m, j]
        mats = torch.logsumexp(left[..., :, :, None] + right[..., None, :, :], dim=-2)
    return mats[..., 0, :, :]
