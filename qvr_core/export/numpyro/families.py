"""How NumPyro spells each family, and what of it the export may use.

Each table is a namespace class named after the builtins registry's entries, read
through `qvr_core.export.named` (no family's name is written as a string outside
the registry: tests/rails/test_registry_closed.py). The lowering and the problems
both ask these tables, so a family is refused exactly where it would be written
wrongly.
"""

from __future__ import annotations

import string

from qvr_core.builtins import FAMILIES, Family
from qvr_core.builtins.quadrature import HORSESHOE_SCALES, HORSESHOE_WEIGHTS
from qvr_core.export.named import members, named


def _numbers(values: tuple[float, ...]) -> str:
    return f"jnp.array([{', '.join(repr(v) for v in values)}])"


#: The horseshoe as the mixture of 16 Normals its quadrature is (`builtins/quadrature.py`).
_HORSESHOE = (
    f"dist.MixtureSameFamily(dist.Categorical(probs={_numbers(HORSESHOE_WEIGHTS)}), "
    "dist.Normal(0.0, jnp.expand_dims(jnp.asarray({scale}), -1) * "
    f"{_numbers(HORSESHOE_SCALES)}))"
)


class _NumPyroCalls:
    """The numpyro.distributions call of each family, named after the registry's entry
    (`named`): one template per parameterisation, `{param}` its argument's text
    (`{dimension}`: a draw's size). Each has qvr's runtime meaning
    (`tests/export/test_numpyro.py` scores both)."""

    Normal = ("dist.Normal({loc}, {scale})",)
    Cauchy = ("dist.Cauchy({loc}, {scale})",)
    StudentT = ("dist.StudentT({df}, {loc}, {scale})",)
    Laplace = ("dist.Laplace({loc}, {scale})",)
    Logistic = ("dist.Logistic({loc}, {scale})",)
    Gumbel = ("dist.Gumbel({loc}, {scale})",)
    VonMises = ("dist.VonMises({loc}, {concentration})",)
    MixtureNormal = (
        "dist.MixtureSameFamily(dist.Categorical(probs={weights}), dist.Normal({loc}, {scale}))",
    )
    Uniform = ("dist.Uniform({low}, {high})",)
    # flat between the bounds (log density 0, as qvr's): NumPyro's ImproperUniform on the
    # interval, moved by the interval's map at the bounds of each evaluation
    BoundedFlat = ("dist.ImproperUniform(dist.constraints.interval({low}, {high}), (), ())",)
    TruncatedNormal = ("dist.TruncatedNormal({mu}, {sigma}, low={low}, high={high})",)
    HalfNormal = ("dist.HalfNormal({scale})",)
    HalfCauchy = ("dist.HalfCauchy({scale})",)
    Horseshoe = (_HORSESHOE,)
    HalfStudentT = ("dist.FoldedDistribution(dist.StudentT({df}, 0.0, {scale}))",)
    LogNormal = ("dist.LogNormal({loc}, {scale})",)
    Exponential = ("dist.Exponential({rate})",)
    Gamma = ("dist.Gamma({concentration}, {rate})",)
    InverseGamma = ("dist.InverseGamma({concentration}, {rate})",)
    Chi2 = ("dist.Chi2({df})",)
    Weibull = ("dist.Weibull({scale}, {concentration})",)
    Pareto = ("dist.Pareto({scale}, {alpha})",)
    Beta = ("dist.Beta({concentration1}, {concentration0})",)
    Kumaraswamy = ("dist.Kumaraswamy({concentration1}, {concentration0})",)
    LogitNormal = (
        "dist.TransformedDistribution(dist.Normal({mu}, {sigma}), "
        "dist.transforms.SigmoidTransform())",
    )
    RelaxedBernoulli = ("dist.RelaxedBernoulli({temperature}, probs={probs})",)
    Bernoulli = ("dist.Bernoulli(probs={probs})",)
    Categorical = ("dist.Categorical(probs={probs})", "dist.Categorical(logits={logits})")
    Poisson = ("dist.Poisson({rate})",)
    Binomial = ("dist.Binomial({total_count}, probs={probs})",)
    BetaBinomial = ("dist.BetaBinomial({concentration1}, {concentration0}, {total_count})",)
    NegativeBinomial = ("dist.NegativeBinomialProbs({total_count}, {probs})",)
    Geometric = ("dist.Geometric(probs={probs})",)
    OrderedLogistic = ("dist.OrderedLogistic({predictor}, {cutpoints})",)
    ZeroInflatedPoisson = ("dist.ZeroInflatedPoisson({zero_prob}, {rate})",)
    HurdlePoisson = ("dist.HurdlePoisson({zero_prob}, {rate})",)
    Dirichlet = ("dist.Dirichlet({concentration})",)
    MultivariateNormal = ("dist.MultivariateNormal({loc}, scale_tril={scale_tril})",)
    LowRankMVN = ("dist.LowRankMultivariateNormal({loc}, {cov_factor}, {cov_diag})",)
    LKJCholesky = ("dist.LKJCholesky({dimension}, {concentration})",)
    Wishart = ("dist.Wishart({df}, scale_tril={scale_tril})",)
    MatrixNormal = (
        "dist.MatrixNormal({loc}, jnp.linalg.cholesky({row_covariance}), "
        "jnp.linalg.cholesky({col_covariance}))",
    )


CALLS: dict[str, tuple[str, ...]] = named(_NumPyroCalls, FAMILIES, tuple)

#: The improper flat priors without arguments (`Flat`, `HalfFlat`): NumPyro's
#: ImproperUniform on the support, one number per draw (the plates around the site batch
#: it). One with arguments (`BoundedFlat`) has its call in the table above.
_IMPROPER = {"real": "dist.constraints.real", "positive": "dist.constraints.positive"}
CALLS.update(
    {
        f.name: (f"dist.ImproperUniform({_IMPROPER[f.support.kind]}, (), ())",)
        for f in FAMILIES.values()
        if f.improper and not f.params
    }
)


#: NumPyro's constraint of each set a step's `[constraint=...]` names (Stan's `ordered[K]`):
#: an ImproperUniform on it is the latent, moved by NumPyro's own ordered transform.
ORDERED_SETS = {
    "ordered": "dist.constraints.ordered_vector",
    "positive_ordered": "dist.constraints.positive_ordered_vector",
}


class _ObservedOnly:
    """Families NumPyro has whose latent would not mean what qvr's does: why."""

    VonMises = (
        "NumPyro's VonMises moves a latent on the circle (-pi, pi], qvr's on the real line; "
        "observe it, or draw the angle from a Normal"
    )


OBSERVED_ONLY: dict[str, str] = named(_ObservedOnly, FAMILIES, str)


class _Enumerable:
    """The families NumPyro's enumeration sums out here (after a relaxation's `relaxes`)."""

    Bernoulli = True
    Categorical = True


ENUMERABLE = members(_Enumerable, FAMILIES)


class _Normalised:
    """The probability vector torch normalises (`probs / probs.sum(-1)`) and NumPyro does
    not, by family."""

    Categorical = "probs"
    MixtureNormal = "weights"


NORMALISED = named(_Normalised, FAMILIES, str)


def family_call(family: str, args: dict[str, str]) -> str | None:
    """The numpyro.distributions call of `family` with these argument texts by
    parameter name, or None when none of its templates takes exactly them."""
    for template in CALLS.get(family, ()):
        if set(_fields(template)) == set(args):
            return template.format(**args)
    return None


def sized(family: Family) -> bool:
    """NumPyro's call takes the draw's size (`{dimension}`: an LKJCholesky's)."""
    return any("{dimension}" in call for call in CALLS.get(family.name, ()))


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


__all__ = ["CALLS", "ENUMERABLE", "NORMALISED", "OBSERVED_ONLY", "family_call", "sized"]
