"""`ModelProgram`: the checker's `Model` of a program as a log joint over named sites.

It compiles what was checked (`qvr_core.check.model`): the sites with their
families, bound arguments, plates and scopes, the `let`/`score` terms, the data
variables in the checker's order, and the programs it calls as templates
(`sample v <- random_intercepts(Subject, 1.0)`, their sites named `v$z`). It reads
no syntax; whatever the checker did not type never reaches it
(`qvr_core.plan.runnable` refuses the run with the checker's reason).

It speaks the runtime protocol inference uses (docs/architecture.md) with no
batch axis (`batch_shape(x) == ()`): the input `x` is the dict of data names,
`observations` holds the observed sites, and every site value is one tensor
shaped by its plates. `log_joint` returns a `(1,)` tensor: the sum of every
site's log-density, the `score` terms and each `marginalize` scope's enumerated
sum. Each site's support is its family's in the registry (bounds named by a
parameter read the arguments of the run), so inference reaches it from R^n
through `torch.distributions.biject_to`, with the log-det Jacobian.

A draw can leave its family's support in floating point (`LogNormal(0, s)`
under a heavy-tailed `s` underflows to 0 or overflows to inf). `run` treats it
as the samplers treat a point outside the support: the value is kept and its
log-density is -inf (a chain's start, a guide's sizes, synthetic latents and
predictive draws go on). Inside `draws_stay_in_support()` (the prior method)
such a draw is a `QvrRuntimeError` naming the site, its line, the value drawn
and the arguments; never torch's `ValueError`.

Every pass computes in float64 (`DTYPE`), as Stan does: its data, the values it
is given and the values it draws are float64, whatever dtype they came in.

`log_likelihood` is the same pass scoring instead of summing: each observed site's
log-density elementwise, and for the observations inside a top `marginalize` scope
(or a summed discrete site's) the scope's per-group marginal (`pointwise_likelihood`
says which terms), what PSIS-LOO needs after a fit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.distributions import Distribution
from torch.distributions import constraints as C

from qvr_core.check.model import Let, Model, Node, Site, axis_plates, axis_sizes
from qvr_core.check.module import CheckedModule
from qvr_core.plan.runnable import TEMPLATE_KINDS, runnability
from qvr_core.runtime.distributions import (
    bijection,
    into_support,
    torch_constraint,
    unvalidated,
    within_floats,
)
from qvr_core.runtime.errors import QvrError, QvrRuntimeError, first_line
from qvr_core.runtime.evaluate import evaluate, evaluate_let, gather
from qvr_core.runtime.model import marginal
from qvr_core.runtime.model.early import (
    ReadEarly,
    early_value,
    reading_early,
    settle,
    step_limit,
)
from qvr_core.runtime.model.families import LeftTheFloats, distribution, where
from qvr_core.runtime.model.observed_lets import computed_observations
from qvr_core.runtime.share import Share, current_share
from qvr_core.runtime.tensors import broadcast_shape, unconstrained_shape

#: How deep templates may call templates (a cycle is refused at this depth).
MAX_TEMPLATE_DEPTH = 16

_STRICT: ContextVar[bool] = ContextVar("qvr_draws_stay_in_support", default=False)
_TOGETHER: ContextVar[bool] = ContextVar("qvr_draws_together", default=False)

#: A forward run whose numbers left float64 is drawn again while such runs stay rare: at
#: most one, plus one for every `RARE` runs kept so far (`ModelProgram.run`).
RARE = 20

#: What a model program computes in, as Stan does: float64. Its tensors are small (a
#: plate of tens to thousands of numbers), where a step costs Python, not arithmetic
#: (NUTS on the gallery's models ran as fast), and float32 leaves what models write
#: every day: `exp(eta)` past eta = 88 is inf, a Weibull draw under a small shape
#: rounds to 0, a Logistic scored 17 scales out is -inf. Data, given values and the
#: values drawn are float64 too; a guide's float32 draws are widened as they arrive.
DTYPE = torch.float64


@contextmanager
def draws_stay_in_support() -> Iterator[None]:
    """In this block a model program's draw outside its family's support raises a
    `QvrRuntimeError` that names the site (the prior method reports it), instead of
    being kept with log-density -inf."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


@contextmanager
def drawing_together() -> Iterator[None]:
    """In this block a model program's forward run is one of many run together by
    `torch.func.vmap` (`runs.predictive`): each site is drawn with `sample()`, whose
    torch implementations draw out of place (which vmap can batch with a noise per
    draw, where `rsample`'s in-place noise it cannot), and nothing a draw or a given
    value holds is read into Python to be checked (vmap cannot follow that). The
    caller checks what comes out (a number past float64 is not set aside here)."""
    token = _TOGETHER.set(True)
    try:
        with unvalidated():
            yield
    finally:
        _TOGETHER.reset(token)


@contextmanager
def computing_in(dtype: torch.dtype) -> Iterator[None]:
    """torch's default dtype set to `dtype` for the block (then as it was): the numbers
    a model program makes (literals, `let` arithmetic, zeros) take it."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _wide(value: torch.Tensor) -> torch.Tensor:
    """A floating tensor in `DTYPE` (differentiably: a guide's float32 draw keeps its
    gradient); integers stay as they are."""
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != DTYPE:
        return value.to(DTYPE)
    return value


def compile_model(checked: CheckedModule, name: str) -> ModelProgram:
    """The model program `name` of a checked module (refused with the checker's reason)."""
    verdict = runnability(checked, name)
    if verdict.kind != "model":
        raise QvrError(verdict.reason or f"'{name}' is not a model program")
    return ModelProgram(checked, checked.models[name])


@dataclass
class ModelRun:
    """One run: every site's value, each term's `(1,)` log-density, the output, the sum."""

    values: dict[str, torch.Tensor]
    log_probs: dict[str, torch.Tensor]
    output: Any
    log_joint: torch.Tensor
    redrawn: int = 0  # runs drawn before this one and set aside: their numbers left float64


@dataclass(frozen=True)
class _Compiled:
    """One model (the program or a template it calls) ready to run."""

    model: Model
    nodes: tuple[Node, ...]


def _compiled(model: Model) -> _Compiled:
    return _Compiled(model, model.tree)


class ModelProgram(nn.Module):
    """A compiled model program (see the module docstring)."""

    def __init__(self, checked: CheckedModule, model: Model) -> None:
        super().__init__()
        self.model = model
        self.name = model.name
        self.sizes = {n: o.size for n, o in checked.objects.items() if o.size > 0}
        self.top = _compiled(model)
        self.templates: dict[str, _Compiled] = {}
        self._sites: dict[str, Site] = {}
        #: observed sites whose value is a let of the data: the site -> its model, the let
        self._observed_lets: dict[str, tuple[Model, str]] = {}
        data: dict[str, None] = {}
        observed: list[str] = []
        self._expand(checked, model, "", data, observed, 0)
        self.site_names = tuple(self._sites)
        self.data_names = tuple(data)
        self.observed_names = tuple(observed)
        #: the observed sites the run computes from the data names (observed `let`s), not
        #: data keys: `computed_observations` gives their values
        self.computed_names = tuple(self._observed_lets)
        self._kinds = {n: s.kind for n, s in self._sites.items()}
        # the registry's support where it has no bounds named by a parameter; the others
        # are recorded by each run (`_Pass.site`)
        self._static = {n: c for n, s in self._sites.items() if (c := _static_support(s))}
        # the checker's shape where it sizes every axis; the others are recorded by each run
        self._static_shapes = {
            n: shape
            for n, s in self._sites.items()
            if "$" not in n and (shape := s.value_shape(self.sizes)) is not None
        }
        self._constraints: dict[str, C.Constraint] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}
        # per template call prefix (and rows of a subsampled plate): each site's batch
        # shape and event size
        self._cache: dict[object, dict[object, object]] = {}
        # forward runs kept and set aside for leaving float64 (`run`)
        self._kept = 0
        self._set_aside = 0
        #: observed series a draw has read before their observe (`early.settle`): what a
        #: batch of draws run together settles (`runs.predictive`)
        self.early_names: set[str] = set()

    def _expand(
        self,
        checked: CheckedModule,
        model: Model,
        prefix: str,
        data: dict[str, None],
        observed: list[str],
        depth: int,
    ) -> None:
        """Sites (a template's under `v$`), data names and observed sites, in step order."""
        if depth > MAX_TEMPLATE_DEPTH:
            raise QvrError(
                f"templates call each other more than {MAX_TEMPLATE_DEPTH} deep (a cycle?)"
            )
        if not prefix:
            for p in model.params:
                data.setdefault(p.name)  # a value parameter is a number the data gives
        for d in model.data:
            if not d.observed:
                data.setdefault(d.name)
        for step in model.steps:
            if not isinstance(step, Site) or step.kind == "marginalize":
                continue
            if step.callee is None:
                self._sites[prefix + step.name] = step
                if step.kind == "observe":
                    observed.append(prefix + step.name)
                    if step.name in model.observed_lets:
                        self._observed_lets[prefix + step.name] = (model, step.name)
                continue
            callee = checked.models.get(step.callee)
            if callee is None:
                raise QvrError(f"{where(step)}: {step.callee} is not a model program")
            if callee.name not in self.templates:
                self.templates[callee.name] = _compiled(callee)
            self._expand(checked, callee, f"{prefix}{step.name}$", data, observed, depth + 1)

    # -- the protocol ---------------------------------------------------------

    def batch_shape(self, x: Any) -> tuple[int, ...]:
        return ()

    def site(self, name: str) -> Site:
        """The checked site behind a site name (a template's as `v$z`)."""
        return self._sites[name]

    def site_kind(self, name: str) -> str:
        return self._kinds[name]

    def top_level_priors(self) -> tuple[str, ...]:
        """The sampled sites of this program whose priors read no other sampled site
        (`Model.latent_reads`); a site a called program draws is not one of them."""
        own = {s.name for s in self.model.sites}
        return tuple(
            n
            for n in self.site_names
            if self._kinds[n] == "sample" and n in own and not self.model.latent_reads(n)
        )

    def site_constraint(self, name: str) -> C.Constraint:
        """The family's support from the registry; one whose bounds are parameters
        (`Uniform(low, high)`, a `Categorical`'s K) is the last run's."""
        static = self._static.get(name)
        if static is not None:
            return static
        if name not in self._constraints:
            raise QvrRuntimeError(
                f"the support of site '{name}' depends on its arguments, known after a run",
                site=name,
            )
        return self._constraints[name]

    def site_bounds(
        self, name: str, x: Any, values: Mapping[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The ends of site `name`'s interval support at the latents `values` and the
        data `x`: its bound arguments, and the lets they read, evaluated here alone. What
        NUTS maps a latent onto at each evaluation when another latent moves its bounds
        (`BoundedFlat(0.0, beta_max)`, `let beta_max = 1.0 - alpha1`); a site of this
        program, not of a template it calls."""
        site = self._sites[name]
        support = site.support
        if support is None or not any(s is site for s in self.model.sites):
            raise QvrRuntimeError(f"site '{name}' has no bounds of its own to evaluate", site=name)
        data = _data(x)
        lets: dict[str, torch.Tensor] = {}

        def lookup(n: str, line: int) -> torch.Tensor:
            if n in values:
                return values[n]
            if n in data:
                return data[n]
            if n not in lets:
                let = self.model.lets.get(n)
                if let is None:
                    raise QvrRuntimeError(
                        f"line {line}: the bound of '{name}' reads '{n}', which is no latent, "
                        "data name or let",
                        site=name,
                    )
                lets[n] = evaluate(let.term, lookup, self.sizes)
            return lets[n]

        def end(bound: float | str | None) -> torch.Tensor:
            if bound is None:
                raise QvrRuntimeError(f"site '{name}' has an unbounded support", site=name)
            if not isinstance(bound, str):
                return torch.tensor(float(bound))
            arg = next(a for a in site.args if a.param == bound)
            if arg.literal is not None:
                return torch.tensor(arg.literal)
            if arg.name is None or arg.index:
                raise QvrRuntimeError(
                    f"line {site.line}: the {bound} of '{name}' is a gather, which a moving "
                    "bound cannot be yet",
                    site=name,
                )
            return lookup(arg.name, site.line)

        with computing_in(DTYPE):
            return end(support.low), end(support.high)

    def site_support(self, name: str) -> str:
        """The support's short name for a run's summary (`positive`, `interval`); what
        inference moves a latent in is `site_constraint`, the object itself."""
        support = self._sites[name].support
        assert support is not None  # a call's draws are its callee's sites
        return support.label

    def site_event_shape(self, name: str) -> tuple[int, ...] | None:
        """The value's shape (no batch axis here): the checker's when it sizes it, else the
        last run's (an axis only the data sizes), else None (a guide then sizes it)."""
        return self._static_shapes.get(name, self._shapes.get(name))

    def site_dims(self, name: str) -> tuple[str, ...] | None:
        """The names of the value's axes, its plates' (`theta : School` -> `("School",)`),
        so saved draws are labelled as the program names them; None where an axis has no
        plate to name it (a draw's own axes, one the data sizes)."""
        site = self._sites.get(name)
        if site is None or name not in self._static_shapes or site.type is None:
            return None
        if site.type.element.event:
            return None
        return axis_plates((p.name for p in site.type.plates), self.sizes)

    def run(
        self,
        x: Any = None,
        observations: Mapping[str, torch.Tensor] | None = None,
        values: Mapping[str, torch.Tensor] | None = None,
    ) -> ModelRun:
        """Sites in `values` or `observations` are scored there; the others are drawn.

        A run whose numbers leave float64 (`LeftTheFloats`: a scale `exp(0.5 * h)` that
        is inf) is drawn again while such runs are rare (`RARE`), else refused with its
        reason; `ModelRun.redrawn` counts the runs set aside. Such a run is no draw of
        the model (its numbers are not the model's, which are finite); set aside when
        rare (a heavy-tailed prior's far tail: a prior summary over the others is the
        prior given that its numbers fit in float64), reported when not (a prior whose
        draws mostly leave float64 is one to change)."""
        given = {**(values or {}), **(observations or {})}
        data = _data(x)
        redrawn = 0
        while True:
            try:
                out = self._drawn(data, given)
            except LeftTheFloats as e:
                self._set_aside += 1
                if self._set_aside > 1 + self._kept // RARE:
                    total = self._kept + self._set_aside
                    raise LeftTheFloats(
                        f"{e} ({self._set_aside} of {total} runs so far left float64)",
                        site=e.site,
                    ) from None
                redrawn += 1
                continue
            self._kept += 1
            out.redrawn = redrawn
            return out

    def _drawn(self, data: dict[str, torch.Tensor], given: dict[str, torch.Tensor]) -> ModelRun:
        """One forward run; one that reads an observed series before drawing it is run
        again from the same random state until the series settles (`early.settle`)."""
        try:
            return _Pass(self, data, given, draw=True).run()
        except ReadEarly as e:
            if self._together():  # vmap cannot repeat runs: the caller settles them
                raise
            first = {e.name: self.series_zeros(e.name)}

        def again(guess: dict[str, torch.Tensor]) -> tuple[ModelRun, dict[str, torch.Tensor]]:
            try:
                with reading_early(guess):
                    out = _Pass(self, data, given, draw=True).run()
            except ReadEarly as e:  # another series read early: read zeros of it too
                return ModelRun({}, {}, None, torch.zeros(1)), {
                    **guess,
                    e.name: self.series_zeros(e.name),
                }
            return out, {n: out.values[n] for n in guess}

        self.early_names |= set(first)
        return settle(again, first, step_limit(first) * 2, self.name)

    @staticmethod
    def _together() -> bool:
        return _TOGETHER.get()

    def series_zeros(self, name: str) -> torch.Tensor:
        """Zeros of the shape of observed site `name` (its plates): what a run reads of a
        series read before its observe before any draw of it."""
        site = self.site(name)
        return torch.zeros(axis_sizes(site.plates, self.sizes), dtype=DTYPE)

    def log_joint(self, x: Any, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The log joint at `values` (every site); marginalized scopes summed exactly.

        Arguments and values are not validated here (a run validates them first): this
        is the function NUTS and SVI call thousands of times."""
        with unvalidated():
            return _Pass(self, _data(x), dict(values), draw=False).run().log_joint

    def log_likelihood(
        self,
        x: Any,
        observations: Mapping[str, torch.Tensor],
        values: Mapping[str, torch.Tensor],
    ) -> dict[str, torch.Tensor]:
        """Each observed site's log-density at `values` (every other site), elementwise:
        what PSIS-LOO and WAIC need, one term per observation (`pointwise_likelihood`)."""
        return pointwise_likelihood(self, x, observations, values)

    def log_prior(
        self,
        x: Any,
        observations: Mapping[str, torch.Tensor],
        values: Mapping[str, torch.Tensor],
    ) -> dict[str, torch.Tensor]:
        """Each sampled site's log-density at `values` (every site given), summed over its
        elements: the terms of the log joint that are the latent sites' (`log_prior`)."""
        with torch.no_grad(), unvalidated():
            run = _Pass(self, _data(x), {**values, **observations}, draw=False).run()
        return {
            n: run.log_probs[n].reshape(())
            for n in values
            if n in run.log_probs and n not in observations and self._kinds.get(n) == "sample"
        }

    def observed_let(self, name: str) -> Let | None:
        """The `let` whose value the observed site `name` observes, if it observes one."""
        found = self._observed_lets.get(name)
        return found[0].observed_let(found[1]) if found is not None else None

    def computed_observations(self, x: Any) -> dict[str, torch.Tensor]:
        """The observations the program computes from its data names (`computed_names`,
        its observed `let`s: `let log_earn = log(earn)`), once, before a run is scored."""
        data = {k: _wide(v) for k, v in _data(x).items()}
        with computing_in(DTYPE):
            return computed_observations(self._observed_lets, data, self.sizes)

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
                t = bijection(name, c)
                shape = unconstrained_shape(t, drawn[name].shape)
                drawn[name] = t(torch.rand(shape, dtype=drawn[name].dtype) * 4 - 2)
        return drawn

    def forward(self, x: Any = None) -> Any:
        return self.rsample(x)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cache"] = {}  # keyed by identity: meaningless in another process
        return state


def _data(x: Any) -> dict[str, torch.Tensor]:
    if x is None:
        return {}
    if not isinstance(x, Mapping):
        raise QvrRuntimeError("a model program takes its data as a dict of named tensors")
    return {k: v if isinstance(v, torch.Tensor) else torch.as_tensor(v) for k, v in x.items()}


def pointwise_likelihood(
    program: ModelProgram,
    x: Any,
    observations: Mapping[str, torch.Tensor],
    values: Mapping[str, torch.Tensor],
    trees: tuple[_Compiled, Mapping[str, _Compiled]] | None = None,
) -> dict[str, torch.Tensor]:
    """The log-likelihood of each observation at `values`, by observed site.

    The pass the log joint runs, scoring instead of summing: a site outside any scope
    gives its elementwise log-density, shaped as its value less a draw's own axes
    (its plates). The observations inside a top `marginalize` scope (or a summed
    discrete site's, `trees`) give that scope's per-group marginal, log-sum-exp over
    the values summed out, one term per group: per point of a mixture over `Point`,
    per sequence of an HMM (its observed sites then share one term, named
    `o0+o1+...`), one for everything in a scope without groups. The terms summed
    are the log joint less every latent site's and `score`'s term."""
    terms: dict[str, torch.Tensor] = {}
    with torch.no_grad(), unvalidated():
        scoring = _Pass(program, _data(x), {**values, **observations}, False, trees)
        scoring.pointwise, scoring.observed = terms, frozenset(observations)
        scoring.run()
    return terms


@dataclass
class _Scope:
    """A marginalize scope while it runs: its groups and the terms of the current value."""

    name: str
    groups: tuple[int, ...]
    terms: list[torch.Tensor] = field(default_factory=list)
    drawn: torch.Tensor | None = None  # the drawn value, when the run draws
    # a pointwise pass: the terms of what is not observed (latent sites, scores, inner
    # scopes without their observations), whose sum the likelihood is divided by
    latent: list[torch.Tensor] = field(default_factory=list)

    def total(self, terms: list[torch.Tensor] | None = None) -> torch.Tensor:
        out = torch.zeros(self.groups)
        for t in self.terms if terms is None else terms:
            out = out + t
        return out


class _Pass:
    """One evaluation of the steps (draw: sites without a value are drawn; else scored).

    `trees`: the program's and its templates' trees to run instead of the compiled ones
    (their discrete sites summed out, `qvr_core.runtime.model.enumerate`)."""

    def __init__(
        self,
        program: ModelProgram,
        data: dict[str, torch.Tensor],
        given: dict[str, torch.Tensor],
        draw: bool,
        trees: tuple[_Compiled, Mapping[str, _Compiled]] | None = None,
    ) -> None:
        self.program, self.draw = program, draw
        self.data = {k: _wide(v) for k, v in data.items()}
        self.given = {k: _wide(v) for k, v in given.items()}
        self.strict = draw and _STRICT.get()  # a draw outside its support raises
        self.together = draw and _TOGETHER.get()  # one of many runs under vmap
        self.compiled, self.templates = trees or (program.top, program.templates)
        self.env: dict[str, torch.Tensor] = {}
        self.prefix = ""  # `v$` inside `sample v <- template(...)`
        self.sizes: dict[str, int] = dict(program.sizes)  # plates, template objects too
        # minibatch or data-parallel SVI: the rows of a plate this step scores, whose terms
        # are scaled to stand for the whole plate (`runtime.share`)
        share = current_share()
        self.share: Share | None = None
        if share is not None and share.plate is not None and share.plate in self.sizes:
            self.share = share
            self.sizes[share.plate] = share.scored
        self.values: dict[str, torch.Tensor] = {}
        self.log_probs: dict[str, torch.Tensor] = {}
        self.output: Any = None
        # Summing scopes out: the value index each enumerated name has now, the
        # enumerated names each name bound inside a scope depends on, and each
        # scope's sum by the enumerated values it depends on (see `_sum_key`).
        self.enumerated: dict[str, int] = {}
        self.scoped: dict[str, frozenset[str]] = {}
        self.sums: dict[tuple[Any, ...], torch.Tensor] = {}
        # a summed site's values and, per value, log p(k) + what its scope adds (its
        # posterior, before normalising), by its sum's key: kept when not None
        self.weights: dict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor]] | None = None
        self.counts: dict[str, int] = {}  # how many values each enumerated name has
        # A pointwise pass (`ModelProgram.log_likelihood`, never a drawing one): the
        # elementwise log-density of each site in `observed` (a scope's per-group
        # likelihood for the observations inside it), and each scope's sum without them.
        self.pointwise: dict[str, torch.Tensor] | None = None
        self.observed: frozenset[str] = frozenset()
        self.latent_sums: dict[tuple[Any, ...], torch.Tensor] = {}
        self.in_scope: list[str] = []  # observed sites met inside the top scope running

    def lookup(self, name: str, line: int) -> torch.Tensor:
        if name in self.env:
            return self.env[name]
        if name in self.data:
            return self.data[name]
        if name in self.program.observed_names:
            # an observation read before its `observe` (GARCH's variance reads y[t - 1]):
            # it is data the run was given, as Stan's `data` block is read anywhere
            if name in self.given:
                return self.given[name]
            drawn = early_value(name)  # the draw of the run before (`early.settle`)
            if drawn is not None:
                return drawn
            raise ReadEarly(
                f"program {self.program.name} reads the observed '{name}' (line {line}) "
                f"before its observe: give it as data, or draw it step by step "
                "(`runtime.model.early`)",
                name,
            )
        raise QvrRuntimeError(
            f"program {self.program.name} needs data '{name}' (line {line}): "
            f"give it in the data with the observed sites",
            site=name,
        )

    def run(self) -> ModelRun:
        with computing_in(DTYPE):
            return self._run()

    def _run(self) -> ModelRun:
        self.steps(self.compiled.nodes, None)
        if self.draw:  # a log joint returns no value (a summed site's is not one value)
            self.ret(self.compiled.model)
        total = torch.zeros(())
        for name, lp in self.log_probs.items():
            total = total + (lp if self.share is None else lp * self.share.factor(name))
        log_probs = {k: v.reshape(1) for k, v in self.log_probs.items()}
        return ModelRun(self.values, log_probs, self.output, total.reshape(1))

    def steps(self, nodes: tuple[Node, ...], scope: _Scope | None) -> None:
        for node in nodes:
            step = node.step
            if not self.draw and (scope is not None or self.enumerated):  # only summing needs
                self.scoped[step.name] = self._depends_on(node.reads)  # what depends on what
            if isinstance(step, Let):
                value = self.arith(step)
                self.env[step.name] = value
                if step.kind == "score":  # a factor of the joint, never a likelihood term
                    self.term(self.prefix + step.name, value, scope, None, step.line)
            elif step.kind == "marginalize" or node.summed:
                self.marginalize(node, scope)
            elif step.callee is not None:
                self.call(step, scope)
            else:
                self.site(step, scope)

    def arith(self, step: Let) -> torch.Tensor:
        return evaluate_let(
            step, self.lookup, self.sizes, lambda n: self.env.get(n, self.data.get(n))
        )

    def term(
        self,
        name: str,
        value: torch.Tensor,
        scope: _Scope | None,
        via: torch.Tensor | None,
        line: int,
    ) -> None:
        """Add one log-density term (elementwise) to the joint or to the scope it is in;
        a pointwise pass keeps an observed site's terms elementwise too."""
        observed = self.pointwise is not None and name in self.observed
        if scope is None or self.draw:
            self.log_probs[name] = self.log_probs.get(name, 0) + value.sum()
            if observed and scope is None and self.pointwise is not None:
                self.pointwise[name] = self.pointwise.get(name, 0) + value
            return
        grouped = marginal.to_groups(value, scope.groups, via, f"line {line}")
        scope.terms.append(grouped)
        if observed:
            if name not in self.in_scope:
                self.in_scope.append(name)
        elif self.pointwise is not None:
            scope.latent.append(grouped)

    def _cache(self) -> dict[object, object]:
        key = self.prefix if self.share is None else (self.prefix, self.share.scored)
        return self.program._cache.setdefault(key, {})

    def site(self, step: Site, scope: _Scope | None) -> None:
        name = self.prefix + step.name
        via = self.lookup(step.via, step.line) if step.via is not None else None
        saved = None
        if scope is not None and scope.drawn is not None and via is not None:
            saved = self.env[scope.name]  # each row reads its group's drawn value
            one_entry = (not scope.groups,)  # one-entry groups have no axis, as in a gather
            self.env[scope.name] = gather(
                scope.drawn, scope.name, (via.long(),), lambda v: v, one_entry
            )
        try:
            dist = distribution(step, self.lookup, self.sizes, self._cache())
        finally:
            if saved is not None and scope is not None:
                self.env[scope.name] = saved
        value = self.given.get(name)
        if value is None and not self.draw and name in self.program._observed_lets:
            value = self.env[step.name]  # an observed let: its value, computed just above
        if value is None:
            if not self.draw:
                observed = step.kind == "observe"
                raise QvrRuntimeError(
                    f"program {self.program.name}: no value for the "
                    f"{'observed site' if observed else 'site'} '{name}' (line {step.line})"
                    + ("; give it in the data" if observed else ""),
                    site=name,
                )
            if self.together:
                value = into_support(dist.sample(), dist.support)
                log_prob = dist.log_prob(value)
            else:
                try:
                    with torch.no_grad() if not dist.has_rsample else nullcontext():
                        value = dist.rsample() if dist.has_rsample else dist.sample()
                except QvrRuntimeError:
                    raise  # it says where and why already (a measure's draw, measures.py)
                except (RuntimeError, IndexError) as e:  # torch finds the shapes off only here
                    raise _unfit(step, dist, e) from None
                value = into_support(value, dist.support)  # a draw rounded onto a bound
                log_prob = self._drawn_log_prob(step, name, dist, value)
        else:
            value = self._conform(value, dist, step)
            dist = self._fit(dist, value)
            try:
                log_prob = dist.log_prob(value)
            except (RuntimeError, IndexError) as e:
                raise _unfit(step, dist, e) from None
            except ValueError as e:  # a nested family refused what its transforms made of it
                if self.strict:
                    raise QvrRuntimeError(
                        f"{where(step)}: {step.family} cannot score '{name}' with the "
                        f"arguments drawn: {first_line(e)}",
                        site=name,
                    ) from None
                log_prob = torch.full(dist.batch_shape, -torch.inf)  # as a sampler treats it
        self.program._constraints[name] = dist.support  # type: ignore[assignment]  # why: every family sets its support; the stub's base allows None
        self.program._shapes[name] = tuple(value.shape)
        self.values[name] = value
        self.env[step.name] = value
        self.term(name, log_prob, scope, via, step.line)

    def _conform(self, value: torch.Tensor, dist: Any, step: Site) -> torch.Tensor:
        """A given value checked against the site's shape (exactly, when the step writes
        its plates; else it may be wider than the arguments) and its support."""
        name = self.prefix + step.name
        value = torch.as_tensor(value)
        if not value.is_floating_point():
            value = value.to(torch.get_default_dtype())
        expected = tuple(dist.batch_shape) + tuple(dist.event_shape)
        got = tuple(value.shape)
        ok = got == expected
        if not ok and not step.annotated:
            try:
                ok = broadcast_shape(got, expected) == got
            except RuntimeError:
                ok = False
        if not ok:
            raise QvrRuntimeError(
                f"program {self.program.name}: '{name}' (line {step.line}) has "
                f"shape {got} but the model gives it shape {expected}",
                site=name,
                expected=str(expected),
                received=str(got),
            )
        try:
            inside = dist.support.check(value) if self.draw and not self.together else None
        except NotImplementedError:
            inside = None
        if inside is not None and not bool(torch.as_tensor(inside).all()):
            bad = _first_outside(value, torch.as_tensor(inside))  # a vector family: a row
            raise QvrRuntimeError(
                f"program {self.program.name}: '{name}' (line {step.line}) holds "
                f"{bad}, outside {_support_words(step, dist)}",
                site=name,
            )
        return value

    def _drawn_log_prob(
        self, step: Site, name: str, dist: Any, value: torch.Tensor
    ) -> torch.Tensor:
        """The log-density of a value just drawn; -inf where the draw left the family's
        support (torch's check would raise a ValueError), or under `draws_stay_in_support`
        a QvrRuntimeError that says which value left which support at which site."""
        try:
            inside = torch.as_tensor(dist.support.check(value)).to(torch.bool)
        except NotImplementedError:
            return dist.log_prob(value)
        inside = within_floats(value, inside)  # an overflow to inf left it too
        if bool(inside.all()):
            try:
                return dist.log_prob(value)
            except ValueError:  # a nested family's own check (a Pareto's Exponential):
                inside = torch.zeros_like(inside)  # the value left its support in there
        if not self.strict:
            for d in _nested(dist):  # made for this draw: its value is not checked again
                d._validate_args = False
            try:
                log_prob = dist.log_prob(value)
            except ValueError:  # a check this does not reach: the sum is -inf either way
                log_prob = torch.full(dist.batch_shape, -torch.inf)
            return torch.where(inside, log_prob, torch.full_like(log_prob, -torch.inf))
        assert step.family is not None
        past = not bool(torch.isfinite(value.detach()).all())  # past float64, not a bound
        raise (LeftTheFloats if past else QvrRuntimeError)(
            f"{where(step)}: a draw of {step.family} left its support "
            f"({_described(step)}): it drew {_first_outside(value, inside)}"
            f"{self._arguments(step)}. A heavy-tailed prior above it (HalfCauchy, StudentT, "
            "Cauchy) can draw arguments this far out; a lighter-tailed one, or a bound on "
            "the scale, keeps the draws finite",
            site=name,
        )

    def _arguments(self, step: Site) -> str:
        """`, with s = 3.1e+04`: the named arguments of a site as this run has them."""
        parts = []
        for a in step.args:
            if a.name is None or a.index:
                continue
            v = self.env.get(a.name, self.data.get(a.name))
            if not isinstance(v, torch.Tensor) or not v.numel():
                continue
            f = v.detach().to(torch.float64)
            if f.numel() == 1:
                parts.append(f"{a.name} = {float(f):.4g}")
            else:
                parts.append(f"{a.name} in [{float(f.min()):.4g}, {float(f.max()):.4g}]")
        return f" with {', '.join(parts)}" if parts else ""

    def _fit(self, dist: Any, value: torch.Tensor) -> Any:
        """A distribution whose arguments are narrower than its data (no plate)."""
        batch = value.shape[: value.dim() - len(dist.event_shape)]
        if tuple(batch) != tuple(dist.batch_shape):
            return dist.expand(batch)
        return dist

    def marginalize(self, node: Node, scope: _Scope | None) -> None:
        step = node.step
        assert isinstance(step, Site)
        if node.summed and self.prefix + step.name in self.given:
            self.site(step, scope)  # a summed site given a value: scored, then what reads it
            self.steps(node.body, scope)
            return
        dist = distribution(step, self.lookup, self.sizes, self._cache(), step.summed_family)
        # `z : K` names the values z takes (as the checker reads it); `over=G` the groups,
        # one z per entry of G; without it, one z for the whole scope. A family whose
        # values the annotation does not name has one z per entry of it (`z : Resp <-
        # ContinuousBernoulli(p)`): the checker's plates say which. A summed site has one
        # value per entry of its plates: its draws' axes are the groups.
        groups = tuple(dist.batch_shape) if node.summed else axis_sizes(step.plates, self.sizes)
        name = step.name
        here = f"{where(step)}"
        if self.draw and step.name not in self.given:
            z = dist.sample()
            self.env[name] = z
            inner = _Scope(name, groups, drawn=z)
            self.term(self.prefix + name, dist.log_prob(z), scope, None, step.line)
            self.steps(node.body, inner)
            return
        key = self._sum_key(node)
        if scope is None:
            self.in_scope = []
        contribution = self.sums.get(key)
        if contribution is None:
            values = marginal.support_values(dist, here)
            if node.summed:  # its steps run once per value and values of what it reads
                marginal.admit_runs(values.shape[0], {n: self.counts[n] for n, _ in key[2]}, here)
            priors, totals, latents = [], [], []
            self.counts[name] = values.shape[0]
            for k in range(values.shape[0]):
                inner = _Scope(name, groups)
                self.env[name], self.enumerated[name] = values[k], k
                self.steps(node.body, inner)
                priors.append(dist.log_prob(values[k]))
                totals.append(inner.total())
                latents.append(inner.total(inner.latent))
            del self.env[name], self.enumerated[name]
            contribution = self.sums[key] = marginal.combine(dist, priors, totals)
            if self.pointwise is not None:  # the same sum with the observations left out
                self.latent_sums[key] = marginal.combine(dist, priors, latents)
            if node.summed and self.weights is not None:
                self.weights[key] = (values, marginal.weights(dist, priors, totals))
        if scope is None:
            self.log_probs[self.prefix + name] = contribution.sum()
            if self.pointwise is not None and self.in_scope:
                self._scope_likelihood(contribution - self.latent_sums[key])
        else:
            scope.terms.append(marginal.to_groups(contribution, scope.groups, None, here))
            if self.pointwise is not None:
                latent = self.latent_sums[key]
                scope.latent.append(marginal.to_groups(latent, scope.groups, None, here))

    def _scope_likelihood(self, per_group: torch.Tensor) -> None:
        """The likelihood of the observations inside a top scope, one term per group: its
        sum less the same sum without them, log p(y, latents) - log p(latents), so a
        latent or `score` inside the scope stays out of it. One observed site is named as
        itself; several share one term per group, named `a+b+...` (an HMM's emissions:
        one term per sequence)."""
        assert self.pointwise is not None
        label = "+".join(self.in_scope)
        self.pointwise[label] = self.pointwise.get(label, 0) + per_group
        self.in_scope = []

    def _depends_on(self, reads: frozenset[str]) -> frozenset[str]:
        """The enumerated names a value computed from `reads` depends on."""
        deps: set[str] = set()
        for n in reads:
            if n in self.enumerated:
                deps.add(n)
            elif n in self.scoped:
                deps |= self.scoped[n]
        return frozenset(deps)

    def _sum_key(self, node: Node) -> tuple[Any, ...]:
        """What a scope's sum depends on: the current values of the enumerated names it
        reads, directly or through names bound in the scopes around it.

        A nested scope that depends only on the scope just outside it (an HMM's
        step reads the previous state) is then summed once per value of that
        state, not once per path: K * K per level instead of K ** depth, the
        forward algorithm's saving."""
        deps = self._depends_on(node.outside)
        now = sorted(n for n in deps if n in self.enumerated)  # a scope that ended is no key
        return (id(node), self.prefix, tuple((n, self.enumerated[n]) for n in now))

    def call(self, step: Site, scope: _Scope | None) -> None:
        """`sample v <- template(args)`: its steps in place, its sites named `v$z`, its
        objects bound to the objects given, and `v` its returned value."""
        assert step.callee is not None
        template = self.templates[step.callee]
        env: dict[str, torch.Tensor] = {}
        sizes = dict(self.sizes)
        for param, arg in zip(template.model.params, step.call_values, strict=True):
            if param.kind in TEMPLATE_KINDS:
                obj = getattr(arg, "name", None)
                if obj is None or obj not in self.sizes:
                    raise QvrRuntimeError(
                        f"{where(step)}: '{param.name}' of {step.callee} needs a declared object"
                    )
                sizes[param.name] = self.sizes[obj]
            else:
                env[param.name] = evaluate(arg, self.lookup, self.sizes)
        saved = (self.env, self.prefix, self.sizes, self.output, self.compiled)
        self.env, self.prefix, self.sizes = env, f"{self.prefix}{step.name}$", sizes
        self.compiled = template
        try:
            self.steps(template.nodes, scope)
            self.ret(template.model)
            result = self.output
        finally:
            self.env, self.prefix, self.sizes, self.output, self.compiled = saved
        if not isinstance(result, torch.Tensor):
            raise QvrRuntimeError(
                f"{where(step)}: {step.callee} returns more than one value; a template used "
                "by `sample` returns one"
            )
        self.env[step.name] = result

    def ret(self, model: Model) -> None:
        if not model.returns:
            return
        vals = [self.lookup(n, model.line) for n in model.returns]
        labels = model.return_labels
        if labels:
            self.output = dict(zip(labels, vals, strict=True))
        else:
            self.output = vals[0] if len(vals) == 1 else tuple(vals)


def _static_support(site: Site) -> C.Constraint | None:
    """The torch constraint of a site's family support, when no argument bounds it."""
    assert site.support is not None
    try:
        return torch_constraint(site.support)
    except ValueError:  # a bound named by a parameter: known once the arguments are
        return None


def _support_words(site: Site, dist: Distribution) -> str:
    """The set a given value must lie in, for the message refusing one outside it: the
    step's `constraint=` where it writes one (a set of its own, not its family's)."""
    c = site.constraint
    if c is not None:
        return f"its constraint={c.kind} ({c.describe()})"
    return f"the support of its family ({dist.support})"


def _described(site: Site) -> str:
    """A site's support in words (`a number >= scale`), for the message of a draw outside it."""
    assert site.support is not None
    return site.support.describe()


def _unfit(step: Site, dist: Distribution, e: Exception) -> QvrRuntimeError:
    """torch's shape error on drawing or scoring, as the site's line with its shapes."""
    shapes = f"batch {tuple(dist.batch_shape)}, event {tuple(dist.event_shape)}"
    return QvrRuntimeError(
        f"{where(step)}: the arguments of {step.family or step.callee} do not fit together "
        f"({shapes}): {first_line(e)}",
        site=step.name,
    )


def _nested(dist: Distribution) -> Iterator[Distribution]:
    """A distribution and those it is made of (base, components, mixture)."""
    yield dist
    for attr in ("base_dist", "component_distribution", "mixture_distribution"):
        inner = getattr(dist, attr, None)
        if isinstance(inner, Distribution):
            yield from _nested(inner)


def _first_outside(value: torch.Tensor, inside: torch.Tensor) -> str:
    """The first value (or draw of a vector family) outside the support, in words."""
    outside = ~inside.to(torch.bool)
    if tuple(outside.shape) == tuple(value.shape):
        return f"{float(value[outside].reshape(-1)[0]):g}"
    rows = value.reshape(*outside.shape, -1) if outside.dim() else value.reshape(1, -1)
    row = rows[outside.reshape(rows.shape[:-1])][0] if outside.dim() else rows[0]
    shown = ", ".join(f"{float(v):g}" for v in row[:6]) + (", ..." if row.numel() > 6 else "")
    return f"[{shown}]"


__all__ = [
    "ModelProgram",
    "ModelRun",
    "compile_model",
    "draws_stay_in_support",
    "pointwise_likelihood",
]
