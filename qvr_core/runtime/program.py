"""Compiled programs: `ProgramModule`, the runtime protocol inference relies on.

A program runs its steps in order. Each `sample`/`observe` step is a site
whose morphism is a submodule, both `steps[name]` and `_step_<name>`; its
input is the program input (`sample h <- backbone`) or the named values
packed side by side (`lm_head(h)`). `let` steps compute values,
`let (a, b) = v` splits one, `return` packs the result. The steps are the
checker's, lowered (`qvr_core.check.lowered.Program`): a let's value is a
checked term, run by `runtime.evaluate`.

Parameters are named after the declared morphisms: the `morphisms` table
is registered first, so `named_parameters()` yields
`morphisms.<name>.<parameter>` once per parameter however many sites share
the morphism (see `docs/runtime.md`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial

import torch
from torch.distributions import constraints as C

from qvr_core.check.lowered import Destructure, LetValue, Program, Return, Site
from qvr_core.check.terms import Gather, Num, Ref, Term
from qvr_core.check.types import Seq, ValueType
from qvr_core.runtime.combinators import Lift, seq_axis
from qvr_core.runtime.containers import NameTable
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.evaluate import evaluate
from qvr_core.runtime.morphisms import Leaf, Morphism, runtime_errors
from qvr_core.runtime.padding import Padded, lengths_of, real_positions, unpad
from qvr_core.runtime.tensors import (
    batch_shape,
    elem,
    event_shape,
    example,
    join,
    product_of,
    split,
    validate,
)
from qvr_core.runtime.value_checks import check_values, check_within

#: How many positions an example input's data name picks per example (BERT picks
#: about 15% of 20 positions).
EXAMPLE_PICKS = 3


@dataclass
class RunResult:
    """One run of a program: every site's value and `(B,)` log-density, and the output."""

    values: dict[str, torch.Tensor]
    log_probs: dict[str, torch.Tensor]
    output: torch.Tensor
    batch_shape: tuple[int, ...] = ()

    @property
    def log_joint(self) -> torch.Tensor:
        """The sum of the sites' log-densities (zeros for a program without sites)."""
        scores = list(self.log_probs.values())
        if not scores:
            return torch.zeros(self.batch_shape, device=self.output.device)
        return torch.stack(torch.broadcast_tensors(*scores)).sum(0)


#: Where a latent of each object kind lives (`site_support`'s names for a seed program):
#: the torch constraint inference moves it in when no step bounds it more tightly.
_OBJECT_SUPPORTS: dict[str, C.Constraint] = {
    "real": C.real,
    "positive": C.positive,
    "unit": C.unit_interval,
    "simplex": C.simplex,
    "finset": C.nonnegative_integer,
}


class ProgramModule(Morphism):
    """A compiled `program`; also a morphism, so programs can be scan cells."""

    def __init__(
        self,
        info: Program,
        sites: Mapping[str, Morphism],
        leaves: Mapping[str, Leaf],
    ) -> None:
        assert info.type is not None, "compile only checked programs"
        super().__init__(info.type, info.name)
        self.info = info
        self._sites: dict[str, Site] = {s.name: s for s in info.sites}
        self.morphisms = NameTable(dict(sorted(leaves.items())))
        self.steps = NameTable(dict(sites))
        for name, module in sites.items():
            self.add_module(f"_step_{name}", module)

    def __repr__(self) -> str:
        """The declared morphisms in full and one line per step (the `_step_` aliases
        and the steps' module trees repeat those morphisms, so they are left out)."""
        lines = [f"ProgramModule({self.label} : {self.dom.label} -> {self.cod.label}"]
        for key, module in self.morphisms.items():
            body = repr(module).replace("\n", "\n  ")
            lines.append(f"  morphisms.{key}: {body}")
        for s in self.info.sites:
            step: Morphism = self.steps[s.name]  # type: ignore[assignment]  # steps: Morphisms
            args = "" if s.args is None else f" applied to ({', '.join(s.args)})"
            lines.append(f"  {s.kind} {s.name} <- {step.label}{args} : {step.cod.label}")
        lines.append(")")
        return "\n".join(lines)

    # ------------------------------------------------------------ protocol

    @property
    def site_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.info.sites)

    def site_kind(self, name: str) -> str:
        return self._site(name).kind

    def site_type(self, name: str) -> ValueType:
        """The checker's type of the site's value (`Token`, `[Embedded]`, ...)."""
        t = self._site(name).value_type
        assert t is not None
        return t

    def site_support(self, name: str) -> str:
        """`real`, `positive`, `unit`, `simplex` or `finset`; `mixed` for mixed products."""
        kinds = {f.kind for f in elem(self.site_type(name)).factors}
        if kinds == {"real"}:  # a family narrower than its Real object (`~ LogNormal`)
            return self.steps[name].value_support() or "real"  # type: ignore[operator]  # a Morphism
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def site_constraint(self, name: str) -> C.Constraint:
        """Where inference moves the site: exactly the interval its declaration's numbers
        bound (`~ Pareto(1.0, 2.0)`: x >= 1, narrower than the `positive` that
        `site_support` names), else the set its object's kind names."""
        step: Morphism = self.steps[name]  # type: ignore[assignment]  # steps: Morphisms
        exact = step.value_constraint()
        if exact is not None:
            return exact
        support = self.site_support(name)
        if support not in _OBJECT_SUPPORTS:
            raise QvrRuntimeError(
                f"site '{name}' mixes discrete and continuous factors and has no data: only "
                "its continuous part could be inferred; split it into two sites or observe it",
                site=name,
            )
        return _OBJECT_SUPPORTS[support]

    def site_event_shape(self, name: str) -> tuple[int, ...] | None:
        """Shape without the batch axis; None when it depends on the sequence length."""
        t = self.site_type(name)
        return None if isinstance(t, Seq) else event_shape(elem(t))

    def example_input(
        self, batch: int, seq_len: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """A random valid input of the program's (inferred) input type."""
        return example(self.dom, batch, seq_len, generator)

    def example_data(
        self, batch: int, seq_len: int, generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """Random positions for each data name that picks them (`h[picks]`): `(batch, P)`
        whole numbers below `seq_len`, P = min(seq_len, EXAMPLE_PICKS); a random value of
        its type for each data name a morphism reads (`net(x)`: one per example)."""
        picks = min(seq_len, EXAMPLE_PICKS)
        return {
            name: example(self.info.values[name], batch, seq_len, generator)
            if name in self.info.values
            else torch.randint(0, max(seq_len, 1), (batch, picks), generator=generator)
            for name in self.info.data
        }

    @property
    def stochastic(self) -> bool:
        return any(m.stochastic for m in self.steps.values())

    # ------------------------------------------------------------ running

    def run(
        self,
        x: torch.Tensor | Padded,
        observations: Mapping[str, Observed] | None = None,
        values: Mapping[str, Observed] | None = None,
    ) -> RunResult:
        """Run once: sites in `values` or `observations` are scored at the given value
        (observations win), the others drawn and scored. Data names (`h[picks]`) are
        read from `observations` too; `Padded(x, lengths)` marks padded positions."""
        x, lengths = unpad(x)
        x = self.check_input(x)
        clamp, data = self._clamp(x, values, observations)
        with lengths_of(x, lengths, self._seq_axis(x)):
            return self._execute(x, clamp, mean=False, score=True, data=data)

    def rsample(
        self, x: torch.Tensor | Padded, observations: Mapping[str, Observed] | None = None
    ) -> torch.Tensor:
        """The returned value(s), packed by the product convention; observations clamped."""
        x, lengths = unpad(x)
        x = self.check_input(x)
        clamp, data = self._clamp(x, None, observations)
        with lengths_of(x, lengths, self._seq_axis(x)):
            return self._execute(x, clamp, mean=False, score=False, data=data).output

    def forward(
        self, x: torch.Tensor | Padded, observations: Mapping[str, Observed] | None = None
    ) -> torch.Tensor:
        return self.rsample(x, observations)

    def _seq_axis(self, x: torch.Tensor) -> int:
        return seq_axis(x, self.dom) if isinstance(self.dom, Seq) else x.ndim

    def log_joint(self, x: torch.Tensor | Padded, values: Mapping[str, Observed]) -> torch.Tensor:
        """Sum over sites of each site's canonical-path log-density at `values`, `(B,)`.

        Sites missing from `values` are drawn, so pass every stochastic site
        for a deterministic result.
        """
        return self.run(x, values=values).log_joint

    def check_input(self, x: torch.Tensor) -> torch.Tensor:
        readers = [s.name for s in self.info.sites if s.args is None]
        by = f" (read by site{'s' if len(readers) > 1 else ''} {', '.join(readers)})"
        return validate(x, self.dom, f"{self.label}: input{by if readers else ''}")

    # ------------------------------------------------- morphism protocol

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self._execute(x, {}, mean=False, score=False).output

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self._execute(x, {}, mean=True, score=False).output

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """Score the returned value: returned sites at their part of `value`, every other
        site at its mean; returned `let` values are deterministic and score 0."""
        returns = self.info.returns
        parts = (
            [value]
            if len(returns) == 1
            else split(value, [self.info.values[r] for r in returns], self.cod)
        )
        clamp = {r: v for r, v in zip(returns, parts, strict=True) if r in self._sites}
        result = self._execute(x, clamp, mean=True, score=True)
        scores = [result.log_probs[r] for r in clamp]
        if not scores:
            return self._zeros(x)
        return torch.stack(torch.broadcast_tensors(*scores)).sum(0)

    # ------------------------------------------------------------ internals

    def _site(self, name: str) -> Site:
        if name not in self._sites:
            raise QvrRuntimeError(
                f"{self.label} has no site '{name}'; its sites are {', '.join(self.site_names)}",
                site=name,
            )
        return self._sites[name]

    def _clamp(
        self,
        x: torch.Tensor,
        values: Mapping[str, Observed] | None,
        observations: Mapping[str, Observed] | None,
    ) -> tuple[dict[str, Observed], dict[str, torch.Tensor]]:
        """The given sites' values, checked against their types, and the data names'."""
        batch = batch_shape(x, self.dom)
        given = {**(values or {}), **(observations or {})}
        out: dict[str, Observed] = {}
        data: dict[str, torch.Tensor] = {}
        for name, v in given.items():
            if name in self.info.data and name not in self._sites:
                typed = self.info.values.get(name)  # a morphism's per-example data
                what = f"{self.label}: data '{name}'"
                data[name] = (
                    _positions(v, name, self.label)
                    if typed is None
                    else validate(v, typed, what, batch=batch, site=name)
                )
                continue
            t = self.site_type(self._site(name).name)
            what = f"{self.label}: site '{name}'"
            if isinstance(v, Masked):
                out[name] = replace(v, values=validate(v.values, t, what, batch=batch, site=name))
                self._check_mask(name, out[name])  # type: ignore[arg-type]  # a Masked
            else:
                out[name] = validate(v, t, what, batch=batch, site=name)
        missing = [n for n in self.info.data if n not in data]
        if missing:
            name = missing[0]
            typed = self.info.values.get(name)
            what = (
                "whole numbers, one row of positions per example"
                if typed is None
                else f"one {typed.label} per example"
            )
            reads = "picks positions by" if typed is None else "reads"
            raise QvrRuntimeError(
                f"{self.label} {reads} the data name {name}: pass it with the observations "
                f"({what})",
                site=name,
            )
        return out, data

    def _check_mask(self, name: str, given: Masked) -> None:
        """A mask marks which positions of a per-position site are observed."""
        if not isinstance(self.site_type(name), Seq) or not isinstance(self.steps[name], Lift):
            raise QvrRuntimeError(
                f"{self.label}: site '{name}' has one value per example, not one per "
                "position: a mask applies to a site observed at every position",
                site=name,
            )
        values, mask = given.values, torch.as_tensor(given.mask)
        axis = seq_axis(values, self.site_type(name))
        if mask.dtype != torch.bool or tuple(mask.shape) != tuple(values.shape[: axis + 1]):
            raise QvrRuntimeError(
                f"{self.label}: the mask of site '{name}' must be booleans of shape "
                f"{tuple(values.shape[: axis + 1])} (one per position), got {mask.dtype} of "
                f"shape {tuple(mask.shape)}",
                site=name,
            )
        if given.weights is not None:
            _check_weights(self.label, name, given.weights, mask)

    def _execute(
        self,
        x: torch.Tensor,
        clamp: Mapping[str, Observed],
        *,
        mean: bool,
        score: bool,
        data: Mapping[str, torch.Tensor] | None = None,
    ) -> RunResult:
        env: dict[str, torch.Tensor] = dict(data or {})
        if self.info.params:
            names = [n for n, _ in self.info.params]
            env.update(
                zip(names, split(x, [t for _, t in self.info.params], self.dom), strict=True)
            )
        values: dict[str, torch.Tensor] = {}
        log_probs: dict[str, torch.Tensor] = {}
        output: torch.Tensor | None = None
        for step in self.info.steps:
            match step:
                case Site(name=name, parts=parts):
                    with runtime_errors(f"{self.label}: site '{name}'", site=name):
                        v, lp = self._site_step(name, x, env, clamp, mean, score)
                    env[name] = values[name] = v
                    if lp is not None:
                        log_probs[name] = lp
                    if parts:  # a tuple site: its value split into its names
                        env.update(zip(parts, self._split(v, parts), strict=True))
                case LetValue(target=target, value=value):
                    assert value is not None, "the compiler refuses a let that cannot run"
                    with runtime_errors(f"{self.label}: let {target}"):
                        env[target] = self._let(target, value, env)
                case Destructure(targets=targets, value=value):
                    assert value is not None, "the compiler refuses a let that cannot run"
                    with runtime_errors(f"{self.label}: let ({', '.join(targets)})"):
                        whole = _evaluate(value, env)
                        env.update(zip(targets, self._split(whole, targets), strict=True))
                case Return(names=returned):
                    output = self._pack(list(returned), env)
                    break
        assert output is not None, "the checker guarantees a return"
        return RunResult(values, log_probs, output, batch_shape(x, self.dom))

    def _site_step(
        self,
        name: str,
        x: torch.Tensor,
        env: Mapping[str, torch.Tensor],
        clamp: Mapping[str, Observed],
        mean: bool,
        score: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        site = self._sites[name]
        module: Morphism = self.steps[name]  # type: ignore[assignment]  # steps: Morphisms
        inp = x if site.args is None else self._pack(list(site.args), env)
        given = clamp.get(name)
        if isinstance(given, Masked):  # only the marked positions are observed and scored
            assert isinstance(module, Lift)  # _check_mask
            drawn = module._mean(inp) if mean else module._rsample(inp)
            mask = given.mask.to(drawn.device)
            where = mask.reshape(*mask.shape, *([1] * (drawn.ndim - mask.ndim)))
            value = torch.where(where, given.values, drawn)
            if not score:
                return value, None
            per_position = real_positions(module.inner._log_prob(inp, value))
            if given.weights is None:
                return value, (per_position * mask).sum(-1)
            weights = torch.where(mask, given.weights.to(drawn.device), 0.0)  # only the marked
            return value, (per_position * weights).sum(-1)
        if given is None:
            given = module._mean(inp) if mean else module._rsample(inp)
        return given, (module._log_prob(inp, given) if score else None)

    def _let(self, target: str, value: Term, env: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """A let's value; `h[0]` and `h[picks]` read positions of a sequence."""
        if isinstance(value, Gather) and len(value.indices) == 1:
            base_type = self.info.values.get(value.base)
            if isinstance(base_type, Seq):
                index = value.indices[0]
                assert isinstance(index, Num | Ref)  # the checker types no other
                return at_positions(env[value.base], base_type, index, env, value.base)
        return _evaluate(value, env)

    def _split(self, whole: torch.Tensor, names: tuple[str, ...]) -> list[torch.Tensor]:
        """One packed value cut into the parts the checker typed for `names`."""
        types = [self.info.values[n] for n in names]
        return split(whole, types, product_of(types))

    def _pack(self, names: list[str], env: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return join([env[n] for n in names], [self.info.values[n] for n in names])


@dataclass(frozen=True)
class Masked:
    """Observations of a per-position site at some positions only: `values` `(B, L)`
    (anything at unmarked positions), `mask` `(B, L)` booleans, True where observed.
    Only the marked positions are scored (BERT's masked tokens, padded batches).

    `weights` `(B, L)`, when given, multiplies each marked position's log-likelihood,
    as a weighted regression weighs its rows (brms' `weights()`, Pyro's `scale`): a
    training objective that averages a loss over the marked positions, rather than
    summing it, is the likelihood with every weight 1 / (marked positions).
    """

    values: torch.Tensor
    mask: torch.Tensor
    weights: torch.Tensor | None = None

    @classmethod
    def averaged(cls, values: torch.Tensor, mask: torch.Tensor) -> Masked:
        """Observed where `mask` is True, each marked position weighted (examples) /
        (marked positions): minus the mean log-likelihood over the examples is then the
        loss averaged over the batch's marked positions (d2l's masked-token loss)."""
        return cls(values, mask, mask.float() * (mask.shape[0] / mask.sum().clamp(min=1)))


Observed = torch.Tensor | Masked


def _positions(v: object, name: str, label: str) -> torch.Tensor:
    """A data name's positions: whole numbers."""
    if not isinstance(v, torch.Tensor) or v.is_floating_point() or v.dtype == torch.bool:
        got = v.dtype if isinstance(v, torch.Tensor) else type(v).__name__
        raise QvrRuntimeError(
            f"{label}: data '{name}' picks positions, so it must hold whole numbers "
            f"(an integer tensor), got {got}",
            site=name,
        )
    return v.long()


def _check_weights(label: str, name: str, weights: torch.Tensor, mask: torch.Tensor) -> None:
    """A masked observation's weights: real numbers, one per position, finite and not
    negative (a negative weight would reward a poor fit)."""
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point():
        got = weights.dtype if isinstance(weights, torch.Tensor) else type(weights).__name__
        raise QvrRuntimeError(
            f"{label}: the weights of site '{name}' must be real numbers (a floating-point "
            f"tensor), got {got}",
            site=name,
        )
    if tuple(weights.shape) != tuple(mask.shape):
        raise QvrRuntimeError(
            f"{label}: the weights of site '{name}' must have the mask's shape "
            f"{tuple(mask.shape)} (one per position), got shape {tuple(weights.shape)}",
            site=name,
        )
    bad = ((~torch.isfinite(weights) | (weights < 0)) & mask.to(weights.device)).flatten()
    first = bad.to(torch.uint8).argmax()  # the first bad entry, where there is one
    # a declared check, so a recorded SVI step runs it on each replay's weights
    check_values(
        partial(_weights_within, label, name, int(mask.shape[-1])),
        bad.any(),
        first,
        torch.take(weights, first),
    )


def _weights_within(
    label: str, name: str, width: int, any_bad: int, first: int, weight: float
) -> None:
    if any_bad:
        raise QvrRuntimeError(
            f"{label}: site '{name}' is weighted {weight} at example {first // width}, "
            f"position {first % width}; a weight is finite and not negative",
            site=name,
        )


def _bad_position(data: str, name: str, size: int, bad: int) -> QvrRuntimeError:
    return QvrRuntimeError(
        f"data '{data}' holds position {bad}, outside 0..{size - 1} for '{name}'", site=data
    )


def at_positions(
    base: torch.Tensor, t: Seq, index: Num | Ref, env: Mapping[str, torch.Tensor], name: str
) -> torch.Tensor:
    """`h[0]`: position 0 of each sequence; `h[picks]` with `picks` `(B, P)` (or `(P,)`
    for every example): the P positions of each sequence, in order, `(B, P, ...)`."""
    axis = seq_axis(base, t)
    size = base.shape[axis]
    if isinstance(index, Num):
        i = int(index.value)
        if not 0 <= i < size:
            raise QvrRuntimeError(f"position {i} of '{name}' is outside 0..{size - 1}", site=name)
        return base.select(axis, i)
    picks = env[index.name].to(base.device)
    check_within(picks, 0, size - 1, partial(_bad_position, index.name, name, size))
    batch = base.shape[:axis]
    if picks.dim() == 1:
        picks = picks.expand(*batch, picks.shape[0])
    if tuple(picks.shape[:-1]) != tuple(batch):
        raise QvrRuntimeError(
            f"data '{index.name}' has shape {tuple(picks.shape)}: one row of positions per "
            f"example of '{name}' needs {tuple(batch)} + (P,)",
            site=index.name,
        )
    event = base.shape[axis + 1 :]
    expanded = picks.reshape(*picks.shape, *([1] * len(event))).expand(*picks.shape, *event)
    return torch.gather(base, axis, expanded)


def _evaluate(term: Term, env: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """A let's value: its names read from the values computed so far."""
    return evaluate(term, lambda name, _line: env[name])
