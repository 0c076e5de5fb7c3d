"""A step of quivers' measure algebra as a NumPyro distribution (`export/measures.py`'s form).

A mixture is `dist.MixtureGeneral(dist.Categorical(probs=w / sum(w)), [...], support=...)`
(components may differ in family; the support is the one the checker worked out), a
truncation `dist.TruncatedDistribution(base, low=..., high=...)` (NumPyro truncates the
families `_Truncatable` names, by their CDFs), a point mass `dist.Delta`, a pushforward
`dist.TransformedDistribution(base, transform)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from qvr_core.builtins import FAMILIES
from qvr_core.builtins.constraints import Constraint
from qvr_core.check.model import Argument, Site
from qvr_core.export.measures import (
    Cut,
    Leaf,
    Mix,
    Part,
    Point,
    Pushed,
    kept_mass,
    weighed,
    weighed_weights,
    written_form,
)
from qvr_core.export.named import members
from qvr_core.export.numpyro.families import CALLS, family_call
from qvr_core.export.numpyro.terms import number
from qvr_core.export.plan import Unsupported

#: How the lowering writes one argument of the measure (a number, a name, a gather).
ArgumentText = Callable[[Argument], str]


class _Truncatable:
    """The families NumPyro's TruncatedDistribution takes as its base."""

    Normal = True
    Cauchy = True
    Laplace = True
    Logistic = True
    StudentT = True


TRUNCATABLE = members(_Truncatable, FAMILIES)

#: NumPyro's transform of each bijection a Pushforward names (`builtins/bijectors.py`).
TRANSFORMS = {
    "Identity": "dist.transforms.IdentityTransform()",
    "Exp": "dist.transforms.ExpTransform()",
    "Log": "dist.transforms.ExpTransform().inv",
    "Sigmoid": "dist.transforms.SigmoidTransform()",
    "Logit": "dist.transforms.SigmoidTransform().inv",
    "Softplus": "dist.transforms.SoftplusTransform()",
}


#: What NumPyro writes of each operator of the measure algebra (docs/export.md's table).
WRITES: dict[str, str] = {
    "mixture": "yes",
    "restrict": "Normal, Cauchy, Laplace, Logistic, StudentT",
    "truncated": "Normal, Cauchy, Laplace, Logistic, StudentT",
    "rescaled": "of a truncation",
    "point": "yes",
    "pushforward": "yes",
    "independent": "as its base",
}


def measure_problems(site: Site) -> list[Unsupported]:
    """What NumPyro cannot write of the measure `site` draws from (none: it writes it)."""
    assert site.measure is not None
    form = written_form(site.measure)
    if isinstance(form, Unsupported):
        return [form]
    out = []
    for part in form.parts if isinstance(form, Mix) else (form,):
        out += _part_problems(part)
    if site.kind == "sample" and site.support is not None and site.support.discrete:
        out.append(
            Unsupported(
                site.step.span,
                "a latent count has infinitely many values, which NUTS cannot move nor "
                "enumeration sum; observe it",
            )
        )
    return out


def _part_problems(part: Part) -> list[Unsupported]:
    match part:
        case Leaf(family=family, span=span) if family not in CALLS:
            return [Unsupported(span, f"NumPyro has no {family} distribution as qvr's")]
        case Cut(base=base) if base.family not in TRUNCATABLE:
            hint = (
                " (a point mass at 0 beside a Poisson above 0 is the registry's HurdlePoisson)"
                if FAMILIES[base.family].discrete
                else ""
            )
            names = ", ".join(TRUNCATABLE)
            return [
                Unsupported(part.span, f"NumPyro truncates {names} only, not {base.family}{hint}")
            ]
        case Cut(base=base) | Pushed(base=base):  # the base's own problems
            return _part_problems(base)
        case _:
            return []


def measure_call(site: Site, argument: ArgumentText) -> str:
    """The NumPyro distribution the step draws from; `argument` writes one argument."""
    assert site.measure is not None
    form = written_form(site.measure)
    assert not isinstance(form, Unsupported)  # measure_problems said so first
    if isinstance(form, Mix):
        comps = ", ".join(_dist(p, argument) for p in form.parts)
        support = site.support or Constraint("real")
        w = _weights(form.weights, argument)
        if weighed(form):  # w_k m_k / sum_j w_j m_j (export/measures.py, Cut.kept)
            w = weighed_weights(form, w, "jnp", "jnp.asarray", lambda cut: _mass(cut, argument))
        return (
            f"dist.MixtureGeneral(dist.Categorical(probs={w}), "
            f"[{comps}], support={_support(support)})"
        )
    return _dist(form, argument)


def _dist(part: Part, argument: ArgumentText) -> str:
    match part:
        case Leaf(family=family, args=args):
            call = family_call(family, {a.param: argument(a) for a in args})
            if call is None:  # a family's parameters left to their defaults
                filled = {a.param: argument(a) for a in args}
                for p in FAMILIES[family].params:
                    if p.name not in filled and p.default is not None:
                        filled[p.name] = number(p.default)
                call = family_call(family, filled)
            assert call is not None  # measure_problems refused the others
            return call
        case Point(value=value):
            return f"dist.Delta({argument(value)})"
        case Cut(low=low, high=high):
            ends = [f"{k}={argument(a)}" for k, a in (("low", low), ("high", high)) if a]
            return f"dist.TruncatedDistribution({_dist(part.base, argument)}, {', '.join(ends)})"
        case Pushed(base=base, bijector=bijector):
            return f"dist.TransformedDistribution({_dist(base, argument)}, {TRANSFORMS[bijector]})"
    raise AssertionError(part)


def _mass(cut: Cut, argument: ArgumentText) -> str:
    """The mass a truncation keeps, from NumPyro's CDF of its base."""
    return kept_mass(cut, f"{_dist(cut.base, argument)}.cdf({{}})".format, argument)


def _weights(w: Argument, argument: ArgumentText) -> str:
    """The weights divided by their sum: written out where they are numbers."""
    if isinstance(w.literal, tuple):
        total = math.fsum(w.literal)
        return f"jnp.array([{', '.join(number(v / total) for v in w.literal)}])"
    text = argument(w)
    return f"{text} / jnp.sum({text}, axis=-1, keepdims=True)"


def _support(c: Constraint) -> str:
    """NumPyro's constraint of the checker's support, for a mixture's `support=`."""
    if c.discrete:
        return "dist.constraints.nonnegative_integer"
    kind = {"positive": "positive", "unit_interval": "unit_interval"}.get(c.kind, "real")
    return f"dist.constraints.{kind}"


__all__ = [
    "TRANSFORMS",
    "TRUNCATABLE",
    "WRITES",
    "ArgumentText",
    "measure_call",
    "measure_problems",
]
