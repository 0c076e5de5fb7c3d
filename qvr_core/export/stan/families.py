"""How each QVR family is a Stan distribution of the same density, and what Stan's types
say of a family's support.

The table is a namespace named after the builtins registry's entries (`named`), so a
family the registry adds is one Stan does not write (a located QVR701 problem) until a
row here says which of Stan's distributions has exactly its density, in which
parameterisation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from qvr_core.builtins import FAMILIES
from qvr_core.check.terms import Call, Num, Op, Term
from qvr_core.export.named import named
from qvr_core.export.stan.functions import STAN_PREFIX
from qvr_core.text.span import Span


@dataclass(frozen=True)
class StanFamily:
    """How a QVR family is a Stan distribution of the same density.

    `params` are the QVR parameters in Stan's order (a number stands for itself: a
    half family is its symmetric family at location 0). `half`: |x| of that family,
    so the value is bounded below by 0 and its exact density has log 2 more.
    `ints`: parameters Stan takes as integers. `truncation`: the parameters of
    `T[low, high]`. `rewrite` gives the parameters Stan's parameterisation needs from
    qvr's (a NegativeBinomial's `probs` as Stan's odds). `over_ints`: Stan takes an
    array of draws with one vector parameter (a Categorical's `probs`). `flat`: an
    improper flat prior (`Flat`, `HalfFlat`, `BoundedFlat`), which is a Stan parameter
    with no statement: its bounds are the support (a `BoundedFlat`'s its arguments, as a
    `Uniform`'s are), and nothing is added to `target`.
    `logits`: the distribution when the call gives `logits` (`categorical_logit`).
    """

    stan: str
    params: tuple[str, ...]
    half: bool = False
    ints: tuple[str, ...] = ()
    truncation: tuple[str, str] | None = None
    rewrite: Callable[[dict[str, Term], Span], dict[str, Term]] | None = None
    over_ints: bool = False
    flat: bool = False
    logits: StanFamily | None = None


def _odds_of_failure(a: dict[str, Term], s: Span) -> dict[str, Term]:
    # torch's NegativeBinomial(r, p) counts successes of probability p before r failures:
    # Stan's neg_binomial(r, beta) with beta = (1 - p) / p
    p = a["probs"]
    return {"beta": Op("/", Op("-", Num(1.0, s), p, s), p, s)}


def _odds(a: dict[str, Term], s: Span) -> dict[str, Term]:
    # torch's Geometric(p) counts failures before the first success: neg_binomial(1, p / (1 - p))
    p = a["probs"]
    return {"beta": Op("/", p, Op("-", Num(1.0, s), p, s), s)}


def _covariance(a: dict[str, Term], s: Span) -> dict[str, Term]:
    return {"sigma": Call(STAN_PREFIX + "multiply_lower_tri_self_transpose", (a["scale_tril"],), s)}


class _StanFamilies:
    """Stan's distribution of each family it has, named after the registry's entry
    (read by `named`): a family the registry adds has none until one is written here."""

    Normal = StanFamily("normal", ("loc", "scale"))
    Cauchy = StanFamily("cauchy", ("loc", "scale"))
    StudentT = StanFamily("student_t", ("df", "loc", "scale"))
    Laplace = StanFamily("double_exponential", ("loc", "scale"))
    Logistic = StanFamily("logistic", ("loc", "scale"))
    Gumbel = StanFamily("gumbel", ("loc", "scale"))
    Uniform = StanFamily("uniform", ("low", "high"))
    TruncatedNormal = StanFamily("normal", ("mu", "sigma"), truncation=("low", "high"))
    HalfNormal = StanFamily("normal", ("0", "scale"), half=True)
    HalfCauchy = StanFamily("cauchy", ("0", "scale"), half=True)
    HalfStudentT = StanFamily("student_t", ("df", "0", "scale"), half=True)
    LogNormal = StanFamily("lognormal", ("loc", "scale"))
    Exponential = StanFamily("exponential", ("rate",))
    Gamma = StanFamily("gamma", ("concentration", "rate"))
    InverseGamma = StanFamily("inv_gamma", ("concentration", "rate"))
    Chi2 = StanFamily("chi_square", ("df",))
    Weibull = StanFamily("weibull", ("concentration", "scale"))
    Pareto = StanFamily("pareto", ("scale", "alpha"))
    Beta = StanFamily("beta", ("concentration1", "concentration0"))
    Bernoulli = StanFamily("bernoulli", ("probs",))
    Categorical = StanFamily(
        "categorical",
        ("probs",),
        over_ints=True,
        logits=StanFamily("categorical_logit", ("logits",), over_ints=True),
    )
    Poisson = StanFamily("poisson", ("rate",))
    Binomial = StanFamily("binomial", ("total_count", "probs"), ints=("total_count",))
    BetaBinomial = StanFamily(
        "beta_binomial",
        ("total_count", "concentration1", "concentration0"),
        ints=("total_count",),
    )
    NegativeBinomial = StanFamily("neg_binomial", ("total_count", "beta"), rewrite=_odds_of_failure)
    Geometric = StanFamily("neg_binomial", ("1", "beta"), rewrite=_odds)
    OrderedLogistic = StanFamily("ordered_logistic", ("predictor", "cutpoints"), over_ints=True)
    OrderedProbit = StanFamily("ordered_probit", ("eta", "cutpoints"), over_ints=True)
    Dirichlet = StanFamily("dirichlet", ("concentration",))
    MultivariateNormal = StanFamily("multi_normal_cholesky", ("loc", "scale_tril"))
    LKJCholesky = StanFamily("lkj_corr_cholesky", ("concentration",))
    Wishart = StanFamily("wishart", ("df", "sigma"), rewrite=_covariance)
    InverseWishart = StanFamily("inv_wishart", ("df", "sigma"), rewrite=_covariance)


STAN_FAMILIES: dict[str, StanFamily] = named(_StanFamilies, FAMILIES, StanFamily)
#: The improper flat priors (`Flat`, `HalfFlat`, `BoundedFlat`): a parameter bounded by the
#: support alone.
STAN_FAMILIES.update(
    {f.name: StanFamily("", (), flat=True) for f in FAMILIES.values() if f.improper}
)
#: Stan parameters an export derives (their rank: a covariance is a matrix).
DERIVED_RANK = {"beta": 0, "sigma": 2}

#: support kind -> (Stan's constrained type of one draw, or "" for its bounds alone)
CONSTRAINED = {
    "simplex": "simplex",
    "corr_cholesky": "cholesky_factor_corr",
    "lower_cholesky": "cholesky_factor_cov",
    "positive_definite": "cov_matrix",
    # a step's `[constraint=...]`: Stan's types of the same names (`ordered[K] mu;`)
    "ordered": "ordered",
    "positive_ordered": "positive_ordered",
}
#: support kinds Stan's integer data index from 0 in qvr: read through a 1-based copy
FROM_ZERO = ("index", "ordinal")


__all__ = ["CONSTRAINED", "DERIVED_RANK", "FROM_ZERO", "STAN_FAMILIES", "StanFamily"]


def density_refusal(family: str, params: tuple[str, ...]) -> str | None:
    """Why Stan has no density function of exactly qvr's `log_prob` of `family` given
    `params` (a half family's, a truncated or rewritten one's, an improper or a vector
    one's), or None where `density_call` writes it."""
    spec = STAN_FAMILIES.get(family)
    if spec is None or spec.half or spec.flat or spec.over_ints or spec.truncation:
        return f"log_prob of {family}: the export writes the density of a family Stan has as is"
    if spec.rewrite is not None or spec.ints or FAMILIES[family].event_rank:
        return f"log_prob of {family}: Stan's density takes other parameters than qvr's"
    if not set(spec.params) <= set(params):
        return f"log_prob of {family} given {', '.join(params)}: Stan's density takes others"
    return None


def density_call(family: str, params: tuple[str, ...], texts: list[str]) -> str:
    """`student_t_lpdf(y | 3.0, mu, sigma)`: `log_prob` of `family`, its arguments' texts
    bound to `params` and the value's text first in `texts` (`density_refusal` is None)."""
    spec = STAN_FAMILIES[family]
    given = dict(zip(params, texts[1:], strict=True))
    suffix = "lpmf" if FAMILIES[family].discrete else "lpdf"
    return f"{spec.stan}_{suffix}({texts[0]} | {', '.join(given[p] for p in spec.params)})"
