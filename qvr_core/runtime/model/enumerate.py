"""Discrete latent sites summed out for NUTS and SVI, then drawn back from their posterior.

A `sample` site of a family with finitely many values (its support in the registry is
discrete and bounded: a Bernoulli, a Categorical, a Binomial) that has no data cannot
be reached from R^n, so gradient-based inference cannot move it. As Pyro's
enumeration does, it is summed out exactly instead, by the machinery of `marginalize`
scopes (`marginal`, `program._Pass.marginalize`): the site becomes a scope over the
steps that read it, directly or through other steps, and the steps after it that do
not read it move before it (nothing in them needs it). Its plates are the scope's
groups, one value per entry, so a plated site costs its values times the steps, not
its values to the power of its entries. Sites that read each other nest: an HMM's
chain of states is a chain of scopes, and the runtime's reuse of a scope's sum for
every value of what it does not read makes the log joint the forward algorithm. Each
sum is bounded (`marginal.admit_runs`).

After a fit the summed sites are drawn back, as Pyro's `infer_discrete` does
(`SummedModel.posterior`): one pass of the log joint keeps, for each summed site and
each values of the summed sites its sum depends on, log p(k) plus what its scope
adds; a second pass walks the steps in order and draws each site from those weights
given the values drawn for the sites before it. The weights already sum everything
after the site out, so this is an exact draw from the joint posterior of the
discrete sites given the continuous ones (backward sums, forward draws).

Not summed (refused with the site's line when it has no data): a discrete site inside
a `marginalize` scope (its posterior is conditional on a value that is itself summed
out, never drawn), one a template returns, and one whose sum would take in a call of
a template.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import nn
from torch.distributions import constraints as C

from qvr_core.check.model import Node, Site
from qvr_core.runtime.distributions import unvalidated
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.markov import MarkovChain
from qvr_core.runtime.model.families import distribution, where
from qvr_core.runtime.model.program import (
    ModelProgram,
    ModelRun,
    _Compiled,
    _data,
    _Pass,
    _Scope,
    pointwise_likelihood,
)

Trees = tuple[_Compiled, dict[str, _Compiled]]


def summed_names(program: ModelProgram, observed: Iterable[str]) -> tuple[str, ...]:
    """The sites NUTS and SVI sum out: summable sites without data, in step order."""
    given = set(observed)
    return tuple(n for n in program.site_names if n not in given and program.site(n).summable)


class SummedModel(nn.Module):
    """A model program whose discrete latent sites are summed out of its log joint.

    It speaks the runtime protocol (docs/architecture.md) as the program does, less the
    summed sites: they are not among `site_names`, `log_joint` sums them out, and
    `posterior` draws them given the others. `run` draws every site, as the program."""

    def __init__(self, program: ModelProgram, observed: Iterable[str]) -> None:
        super().__init__()
        self.program = program
        self.name = program.name
        self.summed = summed_names(program, observed)
        self.trees, problems = summed_trees(program)
        for n in self.summed:
            problem = problems.get(id(program.site(n)))
            if problem is not None:
                raise QvrRuntimeError(problem, site=n)
        summed = set(self.summed)
        self.site_names = tuple(n for n in program.site_names if n not in summed)
        self.data_names = program.data_names
        self.observed_names = program.observed_names

    # -- the protocol, as the program has it -----------------------------------

    def batch_shape(self, x: Any) -> tuple[int, ...]:
        return self.program.batch_shape(x)

    def site(self, name: str) -> Site:
        return self.program.site(name)

    def site_kind(self, name: str) -> str:
        return self.program.site_kind(name)

    def site_constraint(self, name: str) -> C.Constraint:
        return self.program.site_constraint(name)

    def site_support(self, name: str) -> str:
        return self.program.site_support(name)

    def site_event_shape(self, name: str) -> tuple[int, ...] | None:
        return self.program.site_event_shape(name)

    def site_dims(self, name: str) -> tuple[str, ...] | None:
        return self.program.site_dims(name)

    def run(
        self,
        x: Any = None,
        observations: Mapping[str, torch.Tensor] | None = None,
        values: Mapping[str, torch.Tensor] | None = None,
    ) -> ModelRun:
        return self.program.run(x, observations, values)

    def initial_values(
        self, x: Any, observations: Mapping[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        return self.program.initial_values(x, observations)

    def forward(self, x: Any = None) -> Any:
        return self.program.rsample(x)

    # -- summed out, drawn back ------------------------------------------------

    def log_joint(self, x: Any, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The log joint at `values` (every site but the summed ones), the summed sites
        summed out exactly; not validated, as `ModelProgram.log_joint`."""
        with unvalidated():
            return _Pass(self.program, _data(x), dict(values), False, self.trees).run().log_joint

    def log_likelihood(
        self,
        x: Any,
        observations: Mapping[str, torch.Tensor],
        values: Mapping[str, torch.Tensor],
    ) -> dict[str, torch.Tensor]:
        """Each observation's log-likelihood at `values` with the summed sites summed out
        (`program.pointwise_likelihood`): an observation a summed site reads gets its
        marginal, one term per entry of the site's plates. A value given for a summed
        site (a draw of it kept in the posterior) is left out: the marginal does not
        depend on one draw of it."""
        kept = {k: v for k, v in values.items() if k not in set(self.summed)}
        return pointwise_likelihood(self.program, x, observations, kept, self.trees)

    def posterior(self, x: Any, values: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One exact draw of every summed site from its posterior given `values` (every
        other site) under the current torch seed: `infer_discrete` at temperature 1."""
        data, given = _data(x), dict(values)
        with torch.no_grad(), unvalidated():
            summing = _Pass(self.program, data, given, False, self.trees)
            summing.weights = {}
            summing.run()
            walk = _Draws(self.program, data, given, self.trees, summing.weights)
            walk.run()
        return {n: walk.values[n] for n in self.summed}


class _Draws(_Pass):
    """A pass that draws each summed site from the weights a summing pass kept (by the
    same key, `_Pass._sum_key`), then runs the steps that read it with that value."""

    def __init__(
        self,
        program: ModelProgram,
        data: dict[str, torch.Tensor],
        given: dict[str, torch.Tensor],
        trees: Trees,
        weights: dict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor]],
    ) -> None:
        super().__init__(program, data, given, False, trees)
        self.kept = weights
        self.chosen: dict[str, torch.Tensor] = {}  # the value index drawn, per group

    def marginalize(self, node: Node, scope: _Scope | None) -> None:
        step = node.step
        assert isinstance(step, Site)
        if not node.summed or self.prefix + step.name in self.given:
            super().marginalize(node, scope)
            return
        dist = distribution(step, self.lookup, self.sizes, self._cache())
        deps = sorted(n for n in self._depends_on(node.outside) if n in self.enumerated)
        values, log_w = self._weights(node, deps)
        if isinstance(dist, MarkovChain):  # one path, each step given the ones after it
            k = dist.draw_path(log_w)
        else:
            k = torch.distributions.Categorical(logits=log_w.movedim(0, -1)).sample()
        value = _pick(values, k, tuple(dist.batch_shape), tuple(dist.event_shape))
        self.values[self.prefix + step.name] = value
        self.env[step.name] = value
        self.chosen[step.name] = k
        self.enumerated[step.name] = -1  # what reads it depends on it (`_depends_on`)
        self.steps(node.body, scope)
        del self.enumerated[step.name]  # as the summing pass ends its scope

    def _weights(self, node: Node, deps: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The site's values and its weights (K, *groups), each group's taken from the
        sum kept for the values the sites it depends on were drawn at in that group."""
        head = (id(node), self.prefix)
        if all(self.chosen[n].dim() == 0 for n in deps):
            return self.kept[(*head, tuple((n, int(self.chosen[n])) for n in deps))]
        columns = torch.stack(torch.broadcast_tensors(*(self.chosen[n] for n in deps)))
        flat = columns.reshape(len(deps), -1)
        values: torch.Tensor | None = None
        out: torch.Tensor | None = None
        for combo in torch.unique(flat, dim=1).T:
            values, log_w = self.kept[(*head, tuple(zip(deps, combo.tolist(), strict=True)))]
            rows = log_w.reshape(log_w.shape[0], -1)
            if out is None:
                out = torch.empty_like(rows)
            mask = (flat == combo[:, None]).all(0)
            out[:, mask] = rows[:, mask]
        assert values is not None and out is not None
        return values, out.reshape(out.shape[0], *columns.shape[1:])


def _pick(
    values: torch.Tensor, k: torch.Tensor, batch: tuple[int, ...], event: tuple[int, ...]
) -> torch.Tensor:
    """The value with index `k` in each entry: `values` is the support (K, ...)."""
    full = values.expand(values.shape[0], *batch, *event)
    index = k.reshape(1, *batch, *(1 for _ in event)).expand(1, *batch, *event)
    return full.gather(0, index).squeeze(0)


# ---------------------------------------------------------------- the trees


def summed_trees(program: ModelProgram) -> tuple[Trees, dict[int, str]]:
    """The program's and each template's trees with every summable site a summed scope,
    and why a summable site cannot be summed (by the id of its step), for those that
    cannot: the checked model's reasons (`Model.unsummable`, a template's
    `Model.returned_summed` first), in the words of a run's error."""
    problems: dict[int, str] = {}
    compiled = [(program.top, False), *((t, True) for t in program.templates.values())]
    for each, template in compiled:
        model = each.model
        reasons = {**model.unsummable, **model.returned_summed} if template else model.unsummable
        for name, why in reasons.items():
            site = model.site(name)
            assert site is not None
            problems[id(site)] = f"{where(site)}: {why.why}"
    top = _Compiled(program.top.model, program.top.model.summed)
    templates = {n: _Compiled(c.model, c.model.summed) for n, c in program.templates.items()}
    return (top, templates), problems


__all__ = ["SummedModel", "summed_names", "summed_trees"]
