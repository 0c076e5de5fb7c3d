"""`ModelProgram`: a model program as a log joint over named, plate-shaped sites.

It speaks the runtime protocol inference uses (docs/architecture.md) with no
batch axis (`batch_shape(x) == ()`): the input `x` is the dict of data names
(free names the data gives, such as `sigma` or `group`), `observations` holds the
observed sites, and every site value is one tensor shaped by its plates.
`log_joint` returns a `(1,)` tensor: the sum of every site's log-density, the
`score` factors and each `marginalize` scope's enumerated sum.

Each site's support is its distribution's (`site_constraint`, a torch
constraint read from the last run), so inference reaches it from R^n through
`torch.distributions.biject_to`, with the log-det Jacobian.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.distributions import Distribution, biject_to
from torch.distributions import constraints as C

from qvr_core.runnable import model_program
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.model import marginal
from qvr_core.runtime.model.families import argument, distribution, family_of
from qvr_core.runtime.model.plan import (
    OBJECT_KINDS,
    ModelPlan,
    plan,
    scope_reads,
    step_reads,
    template_params,
)
from qvr_core.runtime.model.plates import option_axes
from qvr_core.runtime.model.values import evaluate
from qvr_core.syntax import ast


def find_model(checked: Any, name: str) -> ast.ProgramDecl | None:
    """The program `name` when it is a model program (`qvr_core.runnable` decides)."""
    return model_program(checked, name)


def compile_model(checked: Any, name: str) -> ModelProgram:
    decl = find_model(checked, name)
    if decl is None:
        raise QvrError(f"'{name}' is not a model program")
    return ModelProgram(plan(checked, decl))


@dataclass
class ModelRun:
    """One run: every site's value, each term's `(1,)` log-density, the output, the sum."""

    values: dict[str, torch.Tensor]
    log_probs: dict[str, torch.Tensor]
    output: Any
    log_joint: torch.Tensor


def _support_name(c: C.Constraint) -> str:
    if c.is_discrete:
        return "finset"
    base = c.base_constraint if isinstance(c, C.independent) else c
    if isinstance(base, C._Real):
        return "real"
    if isinstance(base, C._GreaterThan | C._GreaterThanEq) and float(base.lower_bound) == 0.0:
        return "positive"
    if base is C.unit_interval:
        return "unit"
    if base is C.simplex:
        return "simplex"
    return type(base).__name__.lstrip("_").lower()


class ModelProgram(nn.Module):
    """A compiled model program (see the module docstring)."""

    def __init__(self, model_plan: ModelPlan) -> None:
        super().__init__()
        self.plan = model_plan
        self.name = model_plan.name
        self.site_names = model_plan.site_names
        self.data_names = model_plan.data_names
        self._kinds = {s.name: s.kind for s in model_plan.sites}
        self._constraints: dict[str, C.Constraint] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}
        # per template prefix, per step: binding and shape
        self._cache: dict[str, dict[Any, Any]] = {}
        self._reads: dict[tuple[int, bool], frozenset[str]] = {}  # per step (by identity)

    # -- the protocol ---------------------------------------------------------

    def batch_shape(self, x: Any) -> tuple[int, ...]:
        return ()

    def site_kind(self, name: str) -> str:
        return self._kinds[name]

    def site_constraint(self, name: str) -> C.Constraint:
        if name not in self._constraints:
            raise QvrRuntimeError(
                f"the support of site '{name}' is known after a first run of the program",
                site=name,
            )
        return self._constraints[name]

    def site_support(self, name: str) -> str:
        return _support_name(self.site_constraint(name))

    def site_event_shape(self, name: str) -> tuple[int, ...] | None:
        return self._shapes.get(name)

    def run(
        self,
        x: Any = None,
        observations: Mapping[str, torch.Tensor] | None = None,
        values: Mapping[str, torch.Tensor] | None = None,
    ) -> ModelRun:
        """Sites in `values` or `observations` are scored there; the others are drawn."""
        given = {**(values or {}), **(observations or {})}
        return _Pass(self, _data(x), given, draw=True).run()

    def log_joint(self, x: Any, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The log joint at `values` (every site); marginalized scopes summed exactly.

        Arguments and values are not validated here (a run validates them first): this
        is the function NUTS and SVI call thousands of times."""
        previous = Distribution._validate_args
        Distribution.set_default_validate_args(False)
        try:
            return _Pass(self, _data(x), dict(values), draw=False).run().log_joint
        finally:
            Distribution.set_default_validate_args(previous)

    def rsample(self, x: Any = None, observations: Mapping[str, torch.Tensor] | None = None) -> Any:
        return self.run(x, observations).output

    def initial_values(
        self, x: Any, observations: Mapping[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Where a chain starts: each latent uniform in (-2, 2) in unconstrained space, as
        Stan does (a prior draw of a heavy-tailed scale can start far out)."""
        observations = dict(observations or {})
        with torch.no_grad():
            drawn = self.run(x, observations).values
            for name in self.site_names:
                if name in observations or self.site_kind(name) != "sample":
                    continue
                c = self.site_constraint(name)
                if c.is_discrete:
                    continue
                t = biject_to(c)
                shape = t.inverse_shape(drawn[name].shape)
                drawn[name] = t(torch.rand(shape, dtype=drawn[name].dtype) * 4 - 2)
        return drawn

    def forward(self, x: Any = None) -> Any:
        return self.rsample(x)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_reads"] = {}  # keyed by identity: meaningless in another process
        return state

    def reads(self, step: ast.Step, whole: bool) -> frozenset[str]:
        """The names a step reads (`whole`: with its sub-steps, `plan.scope_reads`), once
        per step: a log joint asks for them every time it sums a scope out."""
        key = (id(step), whole)
        reads = self._reads.get(key)
        if reads is None:
            if whole and isinstance(step, ast.MarginalizeStep):
                reads = scope_reads(step)
            else:
                reads = step_reads(step)
            self._reads[key] = reads
        return reads


def _data(x: Any) -> dict[str, torch.Tensor]:
    if x is None:
        return {}
    if not isinstance(x, Mapping):
        raise QvrRuntimeError("a model program takes its data as a dict of named tensors")
    return {k: v if isinstance(v, torch.Tensor) else torch.as_tensor(v) for k, v in x.items()}


@dataclass
class _Scope:
    """A marginalize scope while it runs: its groups and the terms of the current value."""

    name: str
    groups: tuple[int, ...]
    terms: list[torch.Tensor] = field(default_factory=list)
    drawn: torch.Tensor | None = None  # the drawn value, when the run draws

    def total(self) -> torch.Tensor:
        out = torch.zeros(self.groups)
        for t in self.terms:
            out = out + t
        return out


class _Pass:
    """One evaluation of the steps (draw: sites without a value are drawn; else scored)."""

    def __init__(
        self,
        model: ModelProgram,
        data: dict[str, torch.Tensor],
        given: dict[str, torch.Tensor],
        draw: bool,
    ) -> None:
        self.model, self.plan, self.data, self.given, self.draw = (
            model,
            model.plan,
            data,
            given,
            draw,
        )
        self.env: dict[str, torch.Tensor] = {}
        self.prefix = ""  # `v$` inside `sample v <- template(...)`
        self.sizes: dict[str, int] = dict(model.plan.sizes)  # plates, template objects too
        self.values: dict[str, torch.Tensor] = {}
        self.log_probs: dict[str, torch.Tensor] = {}
        self.output: Any = None
        # Summing scopes out: the value index each enumerated name has now, the
        # enumerated names each name bound inside a scope depends on, and each
        # scope's sum by the enumerated values it depends on (see `_sum_key`).
        self.enumerated: dict[str, int] = {}
        self.scoped: dict[str, frozenset[str]] = {}
        self.sums: dict[tuple[Any, ...], torch.Tensor] = {}

    def lookup(self, name: ast.Name) -> torch.Tensor:
        n = name.text
        if n in self.env:
            return self.env[n]
        if n in self.data:
            return self.data[n]
        raise QvrRuntimeError(
            f"program {self.plan.name} needs data '{n}' (line {name.span.start_line + 1}): "
            f"give it in the data with the observed sites",
            site=n,
        )

    def run(self) -> ModelRun:
        self.steps(self.plan.decl.steps, None)
        total = torch.zeros(())
        for lp in self.log_probs.values():
            total = total + lp
        log_probs = {k: v.reshape(1) for k, v in self.log_probs.items()}
        return ModelRun(self.values, log_probs, self.output, total.reshape(1))

    def steps(self, steps: tuple[ast.Step, ...], scope: _Scope | None) -> None:
        for step in steps:
            if scope is not None and not self.draw:  # only summing needs what depends on what
                target = getattr(step, "target", None)
                if isinstance(target, ast.Name):
                    reads = self.model.reads(step, whole=False)
                    self.scoped[target.text] = self._depends_on(reads)
            if isinstance(step, ast.SampleStep) and _template(self.plan, step) is not None:
                self.call(step, scope)
            elif isinstance(step, ast.SampleStep | ast.ObserveStep):
                self.site(step, scope)
            elif isinstance(step, ast.LetStep):
                self.env[step.target.text] = self.arith(step.value, step)
            elif isinstance(step, ast.ScoreStep):
                value = self.arith(step.value, step)
                self.term(step.target.text, value, scope, None, step)
            elif isinstance(step, ast.MarginalizeStep):
                self.marginalize(step, scope)
            elif isinstance(step, ast.ReturnStep):
                self.ret(step)

    def arith(self, node: ast.Arith, step: ast.Step) -> torch.Tensor:
        try:
            return evaluate(node, self.lookup, frozenset(self.sizes))
        except RuntimeError as e:
            if isinstance(e, QvrRuntimeError):
                raise
            raise QvrRuntimeError(
                f"line {step.span.start_line + 1}: {_first_line(e)} ({self._shapes_of(node)})"
            ) from None

    def _shapes_of(self, node: object) -> str:
        from qvr_core.runtime.model.plan import _names

        seen = []
        for name, role in _names(node):
            if role == "use" and name.text not in seen:
                seen.append(name.text)
        parts = []
        for n in seen:
            v = self.env.get(n, self.data.get(n))
            if v is not None:
                parts.append(f"{n} {tuple(v.shape)}")
        return "shapes: " + ", ".join(parts) if parts else "no named values"

    def term(
        self,
        name: str,
        value: torch.Tensor,
        scope: _Scope | None,
        via: torch.Tensor | None,
        step: ast.Step,
    ) -> None:
        """Add one log-density term (elementwise) to the joint or to the scope it is in."""
        if scope is None or self.draw:
            self.log_probs[name] = self.log_probs.get(name, 0) + value.sum()
            return
        where = f"line {step.span.start_line + 1}"
        scope.terms.append(marginal.to_groups(value, scope.groups, via, where))

    def _via(self, step: ast.Step) -> torch.Tensor | None:
        for o in getattr(step, "options", ()):
            if o.key.text == "via" and isinstance(o.value, ast.Literal):
                return self.lookup(ast.Name(str(o.value.value), o.value.span))
        return None

    def site(self, step: ast.SampleStep | ast.ObserveStep, scope: _Scope | None) -> None:
        local = step.target.text
        name = self.prefix + local
        plate = step.plate if isinstance(step, ast.SampleStep) else step.declared
        via = self._via(step)
        saved = None
        if scope is not None and scope.drawn is not None and via is not None:
            saved = self.env[scope.name]  # each row reads its group's drawn value
            self.env[scope.name] = scope.drawn[via.long()]
        try:
            cache = self.model._cache.setdefault(self.prefix, {})  # a template call: its own plates
            dist = distribution(step, self.lookup, self.sizes, plate, cache=cache)
        finally:
            if saved is not None and scope is not None:
                self.env[scope.name] = saved
        value = self.given.get(name)
        if value is None:
            if not self.draw:
                observed = isinstance(step, ast.ObserveStep)
                raise QvrRuntimeError(
                    f"program {self.plan.name}: no value for the "
                    f"{'observed site' if observed else 'site'} '{name}' "
                    f"(line {step.span.start_line + 1})"
                    + ("; give it in the data" if observed else ""),
                    site=name,
                )
            with torch.no_grad() if not dist.has_rsample else nullcontext():
                value = dist.rsample() if dist.has_rsample else dist.sample()
        else:
            value = self._conform(value, dist, step, plate is not None)
            dist = self._fit(dist, value)
        self.model._constraints[name] = dist.support  # type: ignore[assignment]  # why: every family sets its support; the stub's base allows None
        self.model._shapes[name] = tuple(value.shape)
        self.values[name] = value
        self.env[local] = value
        self.term(name, dist.log_prob(value), scope, via, step)

    def _conform(
        self, value: torch.Tensor, dist: Any, step: ast.Step, strict: bool
    ) -> torch.Tensor:
        name = step.target.text  # type: ignore[union-attr]  # why: only sample and observe steps are conformed
        value = torch.as_tensor(value)
        if not value.is_floating_point():
            value = value.to(torch.get_default_dtype())
        expected = tuple(dist.batch_shape) + tuple(dist.event_shape)
        got = tuple(value.shape)
        ok = got == expected
        if not ok and not strict:
            try:
                ok = torch.broadcast_shapes(got, expected) == got
            except RuntimeError:
                ok = False
        if not ok:
            raise QvrRuntimeError(
                f"program {self.plan.name}: '{name}' (line {step.span.start_line + 1}) has "
                f"shape {got} but the model gives it shape {expected}",
                site=name,
                expected=str(expected),
                received=str(got),
            )
        try:
            inside = dist.support.check(value) if self.draw else None
        except NotImplementedError:
            inside = None
        if inside is not None and not bool(torch.as_tensor(inside).all()):
            bad = value.reshape(-1)[~torch.as_tensor(inside).reshape(-1).expand(value.numel())]
            raise QvrRuntimeError(
                f"program {self.plan.name}: '{name}' (line {step.span.start_line + 1}) holds "
                f"{float(bad[0]):g}, outside the support of its family ({dist.support})",
                site=name,
            )
        return value

    @staticmethod
    def _fit(dist: Any, value: torch.Tensor) -> Any:
        """Widen a distribution whose arguments are narrower than its data (no plate)."""
        batch = value.shape[: value.dim() - len(dist.event_shape)]
        if tuple(batch) != tuple(dist.batch_shape):
            return dist.expand(batch)
        return dist

    def marginalize(self, step: ast.MarginalizeStep, scope: _Scope | None) -> None:
        sizes = self.sizes
        # `z : K` names the values z takes (as the checker reads it); `over=G` the groups,
        # one z per entry of G; without it, one z for the whole scope.
        over = {o.key.text: o.value for o in step.options}.get("over")
        groups = tuple(n for _, n in option_axes(over, sizes))
        plate = None
        where = f"line {step.span.start_line + 1}, marginalize {step.target.text}"
        cache = self.model._cache.setdefault(self.prefix, {})
        dist = distribution(step, self.lookup, sizes, plate, opts={}, cache=cache)
        if tuple(dist.batch_shape) != groups:
            try:
                dist = dist.expand(torch.Size(torch.broadcast_shapes(dist.batch_shape, groups)))
            except RuntimeError:
                raise QvrRuntimeError(
                    f"{where}: its prior has shape {tuple(dist.batch_shape)}, not the groups "
                    f"{groups}"
                ) from None
        name = step.target.text
        if self.draw and step.target.text not in self.given:
            z = dist.sample()
            self.env[name] = z
            inner = _Scope(name, groups, drawn=z)
            self.term(name, dist.log_prob(z), scope, None, step)
            self.steps(step.steps, inner)
            return
        key = self._sum_key(step)
        contribution = self.sums.get(key)
        if contribution is None:
            values = marginal.support_values(dist, where)
            priors, totals = [], []
            for k in range(values.shape[0]):
                inner = _Scope(name, groups)
                self.env[name], self.enumerated[name] = values[k], k
                self.steps(step.steps, inner)
                priors.append(dist.log_prob(values[k]))
                totals.append(inner.total())
            del self.env[name], self.enumerated[name]
            contribution = self.sums[key] = marginal.combine(priors, totals)
        if scope is None:
            self.log_probs[name] = contribution.sum()
        else:
            scope.terms.append(marginal.to_groups(contribution, scope.groups, None, where))

    def _depends_on(self, reads: frozenset[str]) -> frozenset[str]:
        """The enumerated names a value computed from `reads` depends on."""
        deps: set[str] = set()
        for n in reads:
            if n in self.enumerated:
                deps.add(n)
            elif n in self.scoped:
                deps |= self.scoped[n]
        return frozenset(deps)

    def _sum_key(self, step: ast.MarginalizeStep) -> tuple[Any, ...]:
        """What a scope's sum depends on: the current values of the enumerated names it
        reads, directly or through names bound in the scopes around it.

        A nested scope that depends only on the scope just outside it (an HMM's
        step reads the previous state) is then summed once per value of that
        state, not once per path: K * K per level instead of K ** depth, the
        forward algorithm's saving."""
        deps = self._depends_on(self.model.reads(step, whole=True))
        now = sorted(n for n in deps if n in self.enumerated)  # a scope that ended is no key
        return (id(step), self.prefix, tuple((n, self.enumerated[n]) for n in now))

    def call(self, step: ast.SampleStep, scope: _Scope | None) -> None:
        """`sample v <- template(args)`: its steps in place, its sites named `v$z`, its
        objects bound to the objects given, and `v` its returned value."""
        decl = _template(self.plan, step)
        assert decl is not None and isinstance(step.source, ast.Call | ast.NameRef)
        args = step.source.args if isinstance(step.source, ast.Call) else ()
        env: dict[str, torch.Tensor] = {}
        sizes = dict(self.sizes)
        for (param, kind), arg in zip(template_params(decl), args, strict=True):
            if kind in OBJECT_KINDS:
                obj = arg.name.text if isinstance(arg, ast.NameRef) else str(arg.value)  # type: ignore[union-attr]  # an object argument is a name or a number
                sizes[param.text] = self.sizes[obj]
            else:
                env[param.text] = argument(
                    arg, self.lookup, self.sizes, f"line {step.span.start_line + 1}"
                )
        saved = (self.env, self.prefix, self.sizes, self.output)
        self.env, self.prefix, self.sizes = env, f"{self.prefix}{step.target.text}$", sizes
        try:
            self.steps(decl.steps, scope)
            result = self.output
        finally:
            self.env, self.prefix, self.sizes, self.output = saved
        if not isinstance(result, torch.Tensor):
            raise QvrRuntimeError(
                f"line {step.span.start_line + 1}: {decl.name.text} returns more than one value; "
                "a template used by `sample` returns one"
            )
        self.env[step.target.text] = result

    def ret(self, step: ast.ReturnStep) -> None:
        vals = [self.lookup(v) for v in step.values]
        if step.labels:
            self.output = {lab.text: v for lab, v in zip(step.labels, vals, strict=True)}
        else:
            self.output = vals[0] if len(vals) == 1 else tuple(vals)


def _template(model_plan: ModelPlan, step: ast.SampleStep) -> ast.ProgramDecl | None:
    src = step.source
    name = (
        src.callee.text
        if isinstance(src, ast.Call)
        else getattr(getattr(src, "name", None), "text", None)
    )
    return model_plan.templates.get(name) if name is not None else None


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


__all__ = ["ModelProgram", "ModelRun", "compile_model", "family_of", "find_model"]
