"""Exact enumeration for `marginalize z : G <- Categorical(probs) [over=..]` scopes.

The scope's discrete value is summed out: for each value k of the family's finite
support, the scope's steps run with z = k, and the scope contributes

    sum over groups g of  log sum_k exp( log p(z_g = k) + sum of the scope's terms in g )

The annotation names the values z takes (`z : Component`); the groups are the
`over=G` axis, one z per entry of G (with an observe on G itself, the per-row
mixture), or, without `over`, one z for everything (the global mixture). A term inside the scope is
put into its group by its own plate when that is the group plate, by the
observe's `[via=idx]` map from its rows to the groups, or summed when there are no
groups. Scopes nest: an inner scope's contribution is a term of the outer one,
so a chain of scopes is an exact enumeration; the runtime reuses a scope's sum for
every path that agrees on the values it depends on (`program._Pass._sum_key`), which
makes a chain where each scope reads the one before cost what the forward algorithm
costs.

A discrete `sample` site without data is summed out the same way for NUTS and SVI
(`enumerate.py`): a scope over the steps that read it, its plates the groups; the
runs of such a sum are bounded (`admit_runs`, `MAX_RUNS`).

A run is sized before it starts (`qvr_core.sizing.model_resources`); a support only the
run's arguments size (a Binomial's `total_count` from the data) is guarded here: a
sum whose enumeration would keep more than the memory budget is refused before
its values are made, never left to end in `std::bad_alloc`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
from torch import distributions as D

from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.markov import MarkovChain
from qvr_core.sizing.model_resources import enumeration_bytes
from qvr_core.sizing.resources import default_budget
from qvr_core.text.units import format_bytes


@lru_cache(maxsize=1)
def enumeration_budget() -> int:
    """The most one sum may keep: the default memory budget, read once per process."""
    return default_budget()


def support_values(dist: D.Distribution, where: str) -> torch.Tensor:
    """The K values of a finite family, shape (K, 1, ...) against its batch axes.

    Refused (QvrRuntimeError) when summing over them would keep more than
    `enumeration_budget()`: the scope runs once per value, over its groups."""
    count = _support_count(dist)
    if count is not None:
        _admit(count, dist, where)
    try:
        values = dist.enumerate_support(expand=False)
    except NotImplementedError:
        raise QvrRuntimeError(
            f"{where}: only a family with finitely many values (Categorical, Bernoulli, "
            "Binomial) can be summed out exactly"
        ) from None
    if count is None:
        _admit(int(values.shape[0]), dist, where)
    return values


def _support_count(dist: D.Distribution) -> int | None:
    """How many values a finite family has, read from its arguments (None: not known
    before its support is made)."""
    if isinstance(dist, D.Independent):
        return _support_count(dist.base_dist)
    if isinstance(dist, D.Bernoulli):
        return 2
    if isinstance(dist, D.Categorical | D.OneHotCategorical):
        return int(dist.param_shape[-1])
    if isinstance(dist, MarkovChain):
        return dist.states
    if isinstance(dist, D.Binomial):
        count = dist.total_count
        return int(count.max()) + 1 if count.numel() else 1
    return None


def _admit(count: int, dist: D.Distribution, where: str) -> None:
    groups = math.prod(dist.batch_shape)
    need = enumeration_bytes(count, groups)
    budget = enumeration_budget()
    if need > budget:
        raise QvrRuntimeError(
            f"{where}: summing it out runs its scope once for each of {count:,} values"
            + (f" in each of {groups:,} groups" if groups > 1 else "")
            + f", which needs about {format_bytes(need)}, over the memory budget of "
            f"{format_bytes(budget)}"
        )


def to_groups(
    term: torch.Tensor, groups: tuple[int, ...], via: torch.Tensor | None, where: str
) -> torch.Tensor:
    """One scope term, per element, reduced to the scope's group shape."""
    if not groups:
        return term.sum()
    (m,) = groups if len(groups) == 1 else (None,)
    if via is not None:
        if m is None:
            raise QvrRuntimeError(f"{where}: `via` needs a marginalize over one plate axis")
        rows = via.reshape(-1)
        if rows.is_floating_point():
            rows = rows.round().long()
        if rows.numel() and (int(rows.min()) < 0 or int(rows.max()) >= m):
            raise QvrRuntimeError(f"{where}: the `via` map holds a group outside 0..{m - 1}")
        per_row = (
            term.reshape(rows.shape[0], -1).sum(-1) if term.dim() else term.expand(rows.shape[0])
        )
        if per_row.shape[0] != rows.shape[0]:
            raise QvrRuntimeError(
                f"{where}: the `via` map has {rows.shape[0]} rows but the observed value has "
                f"{per_row.shape[0]}"
            )
        return torch.zeros(m, dtype=per_row.dtype).index_add(0, rows, per_row)
    n = len(groups)
    if tuple(term.shape[:n]) == groups:
        return term.reshape(*groups, -1).sum(-1) if term.dim() > n else term
    raise QvrRuntimeError(
        f"{where}: a term of shape {tuple(term.shape)} inside a marginalize over groups "
        f"{groups}: give the observe the group plate, or `[via=idx]` mapping its rows to groups"
    )


def per_value(log_prior: list[torch.Tensor], terms: list[torch.Tensor]) -> torch.Tensor:
    """log p(k) + terms_k stacked over k, per group: shape (K, *groups)."""
    return torch.stack(
        torch.broadcast_tensors(*(lp + t for lp, t in zip(log_prior, terms, strict=True))), 0
    )


def weights(
    dist: D.Distribution, log_prior: list[torch.Tensor], terms: list[torch.Tensor]
) -> torch.Tensor:
    """What a summed site is drawn back from (K, *groups): log p(k) + terms_k per group;
    for a Markov chain its emissions alone, the terms_k of each step, which its
    backward draw combines with the transitions (`MarkovChain.draw_path`)."""
    if isinstance(dist, MarkovChain):
        return torch.stack(torch.broadcast_tensors(*terms), 0).expand(len(terms), *dist.batch_shape)
    return per_value(log_prior, terms)


def combine(
    dist: D.Distribution, log_prior: list[torch.Tensor], terms: list[torch.Tensor]
) -> torch.Tensor:
    """logsumexp over k of (log p(k) + terms_k), per group (the caller sums the groups);
    for a Markov chain, whose groups are its steps, the forward algorithm over them: one
    number per chain (`MarkovChain.log_marginal`)."""
    if isinstance(dist, MarkovChain):
        emissions = torch.stack(torch.broadcast_tensors(*terms), 0)
        return dist.log_marginal(emissions.expand(len(terms), *dist.batch_shape))
    return torch.logsumexp(per_value(log_prior, terms), 0)


#: The most times one log density may run the steps that read a summed discrete site:
#: its values times the values of the summed sites its sum depends on (2**10: ten coins
#: read by one observe, a 32-state HMM's K * K). Each run of the steps is Python, about
#: 0.3 ms (measured with its gradient), so at this bound one density takes about 0.35 s
#: and a NUTS iteration at the default tree depth (10: up to 1,024 densities) some 6 min: a sum
#: past it is a model to write another way (observe the site, fewer values, fewer sites
#: read together), not one to wait for. The sum is refused before it runs.
MAX_RUNS = 1024


def admit_runs(count: int, outer: dict[str, int], where: str) -> None:
    """Refuse (QvrRuntimeError, one line) a summed site whose steps would run more than
    `MAX_RUNS` times per log density: `count` values, for each of the values of the
    summed sites `outer` (name -> values) its sum depends on."""
    runs = count * math.prod(outer.values())
    if runs <= MAX_RUNS:
        return
    given = ""
    if outer:
        names = ", ".join(sorted(outer)[:4]) + (", ..." if len(outer) > 4 else "")
        given = f" for each of the {math.prod(outer.values()):,} values of {names} it depends on"
    raise QvrRuntimeError(
        f"{where}: summing out this discrete site runs the steps that read it {runs:,} times "
        f"per log density ({count:,} values{given}), over the limit of {MAX_RUNS:,}: observe "
        "it, give it fewer values, or make fewer summed sites depend on each other"
    )
