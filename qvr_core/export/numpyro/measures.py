"""A step of quivers' measure algebra as a NumPyro distribution (`export/measures.py`'s form).

A mixture is `dist.MixtureGeneral(dist.Categorical(probs=w / sum(w)), [...], support=...)`
(components may differ in family; the support is the one the checker worked out), a
truncation `dist.TruncatedDistribution(base, low=..., high=...)` (NumPyro truncates the
families `_Truncatable` names, by their CDFs), a point mass `dist.Delta`, a pushforward
`dist.TransformedDistribution(base, transform)`. Any other family NumPyro has a CDF of
(`_CutByCdf`: Gamma, LogNormal, Poisson, ...) is truncated by a class the module
defines, `TruncatedByCDF` (`TRUNCATED_BY_CDF`): qvr's density, the support NUTS moves a
latent in, and draws by the inverse CDF, for `Predictive` and NumPyro's initialisation.
"""

from __future__ import annotations

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
    divided_weights,
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


class _CutByCdf:
    """The families truncated by the module's own `TruncatedByCDF` (`CUT_BY_CDF`): those
    whose NumPyro distribution has a CDF, and the Kumaraswamy, whose closed-form CDF the
    class writes. A draw is the inverse CDF of a uniform draw between the ends' CDFs:
    NumPyro's own inverse where this JAX computes it (Gamma's needs TensorFlow
    Probability), else by bisection; a count's is found by stepping up from its lower
    end."""

    Exponential = True
    Gamma = True
    InverseGamma = True
    Chi2 = True
    LogNormal = True
    Gumbel = True
    HalfNormal = True
    HalfCauchy = True
    Pareto = True
    Uniform = True
    Weibull = True
    Poisson = True
    NegativeBinomial = True
    Kumaraswamy = True  # NumPyro has no CDF of it: `TruncatedByCDF.cdf_of` writes one


CUT_BY_CDF = members(_CutByCdf, FAMILIES)

#: The class a module defines where it truncates a `CUT_BY_CDF` family: NumPyro's own
#: `TruncatedDistribution` takes the five symmetric families of `TRUNCATABLE` only. It
#: is qvr's truncation (the base's density rescaled by its mass between the ends, -inf
#: outside them; a count's ends read as the whole numbers inside them), with the support
#: NUTS moves a latent in and draws for `Predictive` and NumPyro's initialisation.
TRUNCATED_BY_CDF = (
    "class TruncatedByCDF(dist.Distribution):",
    '    """`base` restricted to [low, high] (either may be None) and rescaled to mass 1 by',
    "    its CDF, as qvr's Truncated is: NumPyro's TruncatedDistribution takes only five",
    "    families. A count keeps the whole numbers between the ends: its mass is",
    '    F(floor(high)) - F(ceil(low) - 1)."""',
    "",
    "    def __init__(self, base, low=None, high=None, *, validate_args=None):",
    "        self.base, self.low, self.high = base, low, high",
    "        self.count = base.support.is_discrete",
    "        ends = [jnp.shape(e) for e in (low, high) if e is not None]",
    "        batch_shape = jax.lax.broadcast_shapes(base.batch_shape, *ends)",
    "        super().__init__(batch_shape, base.event_shape, validate_args=validate_args)",
    "",
    "    @staticmethod",
    "    def cdf_of(base, x):",
    '        """The base\'s CDF at x: NumPyro\'s, or the closed form of one NumPyro gives',
    '        none (the Kumaraswamy\'s: F(x) = 1 - (1 - x^a)^b)."""',
    "        if isinstance(base, dist.Kumaraswamy):",
    "            a, b = base.concentration1, base.concentration0",
    "            return -jnp.expm1(b * jnp.log1p(-jnp.clip(x, 0.0, 1.0) ** a))",
    "        return base.cdf(x)",
    "",
    "    def _ends(self):",
    '        """The interval\'s ends: the ones given, moved into the base\'s support where',
    "        they lie outside it (a HalfNormal cut at -1 keeps [0, ...]), else the support's",
    '        own (None where it has none); a count\'s the whole numbers inside them."""',
    "        support = self.base.support",
    "        floor = getattr(support, 'lower_bound', None)",
    "        ceiling = getattr(support, 'upper_bound', None)",
    "        low, high = self.low, self.high",
    "        if low is None or floor is None:",
    "            low = floor if low is None else low",
    "        else:",
    "            low = jnp.maximum(low, floor)",
    "        if high is None or ceiling is None:",
    "            high = ceiling if high is None else high",
    "        else:",
    "            high = jnp.minimum(high, ceiling)",
    "        if self.count:",
    "            low = None if low is None else jnp.ceil(low)",
    "            high = None if high is None else jnp.floor(high)",
    "        return low, high",
    "",
    "    @property",
    "    def support(self):",
    "        low, high = self._ends()",
    "        if self.count:",
    "            if high is None:",
    "                return dist.constraints.integer_greater_than(low)",
    "            return dist.constraints.integer_interval(low, high)",
    "        if high is None:",
    "            return dist.constraints.greater_than(low)",
    "        if low is None:",
    "            return dist.constraints.less_than(high)",
    "        return dist.constraints.interval(low, high)",
    "",
    "    def _cdf_ends(self):",
    '        """F at the ends the mass is read between (the lower one, a count\'s less 1)."""',
    "        low, high = self._ends()",
    "        if self.low is None:",
    "            lower = 0.0",
    "        elif self.count:  # F(-1) is 0: a count's CDF is read from 0 on",
    "            lower = jnp.where(low >= 1, self.cdf_of(self.base, jnp.maximum(low - 1, 0)), 0.0)",
    "        else:",
    "            lower = self.cdf_of(self.base, low)",
    "        upper = 1.0 if self.high is None else self.cdf_of(self.base, high)",
    "        return lower, upper",
    "",
    "    def log_prob(self, value):",
    "        low, high = self._ends()",
    "        inside = self._inside(value)",
    "        # outside, the density is read at a point inside, so that neither it nor its",
    "        # gradient is NaN where the -inf is chosen",
    "        if low is not None and high is not None:",
    "            safe = low if self.count else 0.5 * (low + high)",
    "        elif low is not None:",
    "            safe = low if self.count else low + 1.0",
    "        else:",
    "            safe = high if self.count else high - 1.0",
    "        at = jnp.where(inside, value, safe)",
    "        lower, upper = self._cdf_ends()",
    "        density = self.base.log_prob(at) - jnp.log(upper - lower)",
    "        return jnp.where(inside, density, -jnp.inf)",
    "",
    "    def _inside(self, value):",
    "        low, high = self._ends()",
    "        inside = jnp.ones(jnp.shape(value), dtype=bool)",
    "        if low is not None:",
    "            inside = inside & (value >= low)",
    "        if high is not None:",
    "            inside = inside & (value <= high)",
    "        return inside",
    "",
    "    def sample(self, key, sample_shape=()):",
    "        shape = sample_shape + self.batch_shape",
    "        lower, upper = self._cdf_ends()",
    "        u = lower + jax.random.uniform(key, shape) * (upper - lower)",
    "        low, high = self._ends()",
    "        if self.count:  # the smallest whole k with F(k) >= u, stepped up to from low",
    "",
    "            def below(k):",
    "                return self.cdf_of(self.base, k) < u",
    "",
    "            start = jnp.broadcast_to(jnp.maximum(low, 0.0), shape)",
    "            step = lambda k: jnp.where(below(k), k + 1, k)  # noqa: E731",
    "            return jax.lax.while_loop(lambda k: jnp.any(below(k)), step, start)",
    "        try:",
    "            drawn = self.base.icdf(u)",
    "        except (ImportError, NotImplementedError):  # no inverse CDF here",
    "            drawn = self._bisected(u, low, high)",
    "        return jnp.clip(drawn, low, high)  # rounding at the ends",
    "",
    "    def _bisected(self, u, low, high):",
    '        """F^-1(u) by bisection between the ends (an open end pushed out until its CDF',
    '        passes u), for a base whose inverse CDF this JAX cannot compute."""',
    "        shape = jnp.shape(u)",
    "        cdf = lambda v: self.cdf_of(self.base, v)  # noqa: E731",
    "        if low is None:",
    "            far = jnp.broadcast_to(jnp.minimum(high, 0.0) - 1.0, shape)",
    "            step = lambda b: jnp.where(cdf(b) > u, 2.0 * b - high, b)  # noqa: E731",
    "            low = jax.lax.while_loop(lambda b: jnp.any(cdf(b) > u), step, far)",
    "        if high is None:",
    "            far = jnp.broadcast_to(jnp.maximum(low, 0.0) + 1.0, shape)",
    "            step = lambda b: jnp.where(cdf(b) < u, 2.0 * b - low, b)  # noqa: E731",
    "            high = jax.lax.while_loop(lambda b: jnp.any(cdf(b) < u), step, far)",
    "",
    "        def halve(_, ends):",
    "            a, b = ends",
    "            mid = 0.5 * (a + b)",
    "            left = cdf(mid) >= u",
    "            return jnp.where(left, a, mid), jnp.where(left, mid, b)",
    "",
    "        ends = (jnp.broadcast_to(low, shape), jnp.broadcast_to(high, shape))",
    "        a, b = jax.lax.fori_loop(0, 64, halve, ends)",
    "        return 0.5 * (a + b)",
)

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
    "restrict": "any family NumPyro has a CDF of, and the Kumaraswamy",
    "truncated": "any family NumPyro has a CDF of, and the Kumaraswamy",
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
        case Cut(base=base) if base.family not in TRUNCATABLE + CUT_BY_CDF:
            return [
                Unsupported(
                    part.span,
                    f"NumPyro has no CDF of {base.family} to truncate it by",
                )
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
        w = divided_weights(form, argument, number, "jnp", "jnp.asarray", "jnp.array")
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
            own = part.base.family in TRUNCATABLE
            by = "dist.TruncatedDistribution" if own else "TruncatedByCDF"
            return f"{by}({_dist(part.base, argument)}, {', '.join(ends)})"
        case Pushed(base=base, bijector=bijector):
            return f"dist.TransformedDistribution({_dist(base, argument)}, {TRANSFORMS[bijector]})"
    raise AssertionError(part)


def cut_by_cdf(site: Site) -> bool:
    """The step truncates a family by the module's `TruncatedByCDF` (which the module
    then defines)."""
    if site.measure is None:
        return False
    form = written_form(site.measure)
    if isinstance(form, Unsupported):
        return False
    parts = form.parts if isinstance(form, Mix) else (form,)
    return any(
        isinstance(cut, Cut) and cut.base.family not in TRUNCATABLE
        for part in parts
        for cut in (part.base if isinstance(part, Pushed) else part,)
    )


def _mass(cut: Cut, argument: ArgumentText) -> str:
    """The mass a truncation keeps, from NumPyro's CDF of its base, each end moved into
    the base's support first (NumPyro's CDFs are not 0 or 1 outside it: a HalfNormal's
    is negative below 0)."""
    base = _dist(cut.base, argument)

    def cdf(end: str) -> str:
        floor = f"getattr({base}.support, 'lower_bound', -jnp.inf)"
        ceiling = f"getattr({base}.support, 'upper_bound', jnp.inf)"
        at = f"jnp.clip({end}, {floor}, {ceiling})"
        if cut.base.family in TRUNCATABLE:
            return f"{base}.cdf({at})"
        return f"TruncatedByCDF.cdf_of({base}, {at})"  # the module defines it: `cut_by_cdf`

    return kept_mass(cut, cdf, argument)


def _support(c: Constraint) -> str:
    """NumPyro's constraint of the checker's support, for a mixture's `support=`."""
    if c.discrete:
        return "dist.constraints.nonnegative_integer"
    kind = {"positive": "positive", "unit_interval": "unit_interval"}.get(c.kind, "real")
    return f"dist.constraints.{kind}"


__all__ = [
    "CUT_BY_CDF",
    "TRANSFORMS",
    "TRUNCATABLE",
    "TRUNCATED_BY_CDF",
    "WRITES",
    "ArgumentText",
    "cut_by_cdf",
    "measure_call",
    "measure_problems",
]
