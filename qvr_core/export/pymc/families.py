"""How PyMC spells each registry family, and the families a `marginalize` sums here.

A table of namespaces named after the registry's entries (`qvr_core.export.named`), so
no family's name is written outside `qvr_core/builtins` and `coverage.py` lists what
PyMC writes from the same table the export reads. `keywords` and `family_call` turn
qvr's parameters into PyMC's keyword arguments, with the runtime's parameterisation.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.builtins import FAMILIES
from qvr_core.builtins.quadrature import HORSESHOE_SCALES, HORSESHOE_WEIGHTS
from qvr_core.export.named import members, named


@dataclass(frozen=True)
class _Family:
    """A qvr family as PyMC writes it: its class, the keyword of each qvr parameter,
    the parameters PyMC takes as one minus qvr's, keywords it needs fixed, and keywords
    only a named variable takes (`compute_p=False`: no Deterministic of the probabilities
    beside the ordinal site)."""

    pm: str
    keywords: dict[str, str]
    flipped: frozenset[str] = frozenset()
    fixed: tuple[str, ...] = ()
    named: tuple[str, ...] = ()
    shaped: dict[str, str] | None = None  # a parameter's text in a template: `{}` is it


def _f(
    pm: str,
    *pairs: str,
    flipped: tuple[str, ...] = (),
    fixed: tuple[str, ...] = (),
    named: tuple[str, ...] = (),
) -> _Family:
    keywords = dict(pair.split("=") for pair in pairs)
    return _Family(pm, keywords, frozenset(flipped), fixed, named)


class _PyMCFamilies:
    """The families PyMC has with the runtime's parameterisation (runtime/distributions.py),
    named after the registry's entry (`named`)."""

    Normal = _f("pm.Normal", "loc=mu", "scale=sigma")
    Cauchy = _f("pm.Cauchy", "loc=alpha", "scale=beta")
    StudentT = _f("pm.StudentT", "df=nu", "loc=mu", "scale=sigma")
    Laplace = _f("pm.Laplace", "loc=mu", "scale=b")
    Logistic = _f("pm.Logistic", "loc=mu", "scale=s")
    Gumbel = _f("pm.Gumbel", "loc=mu", "scale=beta")
    MixtureNormal = _f("pm.NormalMixture", "weights=w", "loc=mu", "scale=sigma")
    Uniform = _f("pm.Uniform", "low=lower", "high=upper")
    TruncatedNormal = _f("pm.TruncatedNormal", "mu=mu", "sigma=sigma", "low=lower", "high=upper")
    HalfNormal = _f("pm.HalfNormal", "scale=sigma")
    HalfCauchy = _f("pm.HalfCauchy", "scale=beta")
    HalfStudentT = _f("pm.HalfStudentT", "df=nu", "scale=sigma")
    LogNormal = _f("pm.LogNormal", "loc=mu", "scale=sigma")
    Exponential = _f("pm.Exponential", "rate=lam")
    Gamma = _f("pm.Gamma", "concentration=alpha", "rate=beta")
    InverseGamma = _f("pm.InverseGamma", "concentration=alpha", "rate=beta")
    Chi2 = _f("pm.ChiSquared", "df=nu")
    Weibull = _f("pm.Weibull", "concentration=alpha", "scale=beta")
    Pareto = _f("pm.Pareto", "alpha=alpha", "scale=m")
    Beta = _f("pm.Beta", "concentration1=alpha", "concentration0=beta")
    Kumaraswamy = _f("pm.Kumaraswamy", "concentration1=a", "concentration0=b")
    LogitNormal = _f("pm.LogitNormal", "mu=mu", "sigma=sigma")
    Bernoulli = _f("pm.Bernoulli", "probs=p")
    Categorical = _f("pm.Categorical", "probs=p", "logits=logit_p")
    Poisson = _f("pm.Poisson", "rate=mu")
    Binomial = _f("pm.Binomial", "total_count=n", "probs=p")
    BetaBinomial = _f(
        "pm.BetaBinomial", "total_count=n", "concentration1=alpha", "concentration0=beta"
    )
    # torch counts successes before `total_count` failures, PyMC failures before n successes
    NegativeBinomial = _f("pm.NegativeBinomial", "total_count=n", "probs=p", flipped=("probs",))
    # failures before the first success from 0, as torch's Geometric (PyMC's counts from 1)
    Geometric = _f("pm.NegativeBinomial", "probs=p", fixed=("n=1.0",))
    OrderedLogistic = _f(
        "pm.OrderedLogistic", "predictor=eta", "cutpoints=cutpoints", named=("compute_p=False",)
    )
    OrderedProbit = _f(
        "pm.OrderedProbit", "eta=eta", "cutpoints=cutpoints", named=("compute_p=False",)
    )
    # PyMC's psi is the probability of the Poisson part, qvr's zero_prob that of the zero
    ZeroInflatedPoisson = _f(
        "pm.ZeroInflatedPoisson", "zero_prob=psi", "rate=mu", flipped=("zero_prob",)
    )
    HurdlePoisson = _f("pm.HurdlePoisson", "zero_prob=psi", "rate=mu", flipped=("zero_prob",))
    # the mixture of 16 Normals the horseshoe's quadrature is (builtins/quadrature.py)
    Horseshoe = _Family(
        "pm.NormalMixture",
        {"scale": "sigma"},
        fixed=(f"w={list(HORSESHOE_WEIGHTS)!r}", "mu=0.0"),
        shaped={
            "scale": f"pm.math.as_tensor({{}})[..., None] * np.array({list(HORSESHOE_SCALES)!r})"
        },
    )
    Dirichlet = _f("pm.Dirichlet", "concentration=a")
    MultivariateNormal = _f("pm.MvNormal", "loc=mu", "scale_tril=chol")


PYMC_FAMILIES: dict[str, _Family] = named(_PyMCFamilies, FAMILIES, _Family)

#: The improper flat priors without arguments (`Flat`, `HalfFlat`), by their support; one
#: between bounds (`BoundedFlat`) PyMC has none of (`_WhyNot`).
_IMPROPER = {"real": "pm.Flat", "positive": "pm.HalfFlat"}
PYMC_FAMILIES.update(
    {
        f.name: _f(_IMPROPER[f.support.kind])
        for f in FAMILIES.values()
        if f.improper and not f.params
    }
)


class _WhyNot:
    """Why a family of qvr's is not written, where PyMC has it in some form."""

    VonMises = "PyMC's VonMises lives on [-pi, pi], qvr's on the real line"
    LKJCholesky = (
        "PyMC's LKJCorr is a density over correlation matrices, qvr's LKJCholesky one over "
        "their Cholesky factors"
    )
    Wishart = "PyMC's Wishart cannot be sampled by NUTS (PyMC itself advises against it)"
    MatrixNormal = "PyMC's MatrixNormal has no batch of matrices"
    BoundedFlat = (
        "PyMC has no flat density between bounds: its Uniform's is 1 / (upper - lower), which "
        "changes the posterior of whatever the bounds read"
    )


WHY_NOT = named(_WhyNot, FAMILIES, str)


class _Summed:
    """The families a `marginalize` can sum out here: their values and prior are written
    out (a Binomial's when its `total_count` is written as a number)."""

    Categorical = True
    Bernoulli = True
    Binomial = True


SUMMED = members(_Summed, FAMILIES)


class _Mixture:
    """The family of a scope written as `pm.Mixture` (`lower_scopes.mixture`)."""

    Categorical = True


MIXTURE = members(_Mixture, FAMILIES)


TRANSFORMS = "pm.distributions.transforms"

#: PyMC's transforms onto each set a step's `[constraint=...]` names (Stan's `ordered[K]`),
#: applied in order from the value (the positive set: log, then ordered, a chain every
#: PyMC 5 has), and a start inside it for a vector of `{size}`: PyMC starts a Normal at its
#: mean, where the entries are equal, off the set (log 0 through the transform).
ORDERED_SETS: dict[str, tuple[tuple[str, ...], str]] = {
    "ordered": ((f"{TRANSFORMS}.ordered",), "np.linspace(-1.0, 1.0, {size})"),
    "positive_ordered": (
        (f"{TRANSFORMS}.log", f"{TRANSFORMS}.ordered"),
        "np.linspace(1.0, 2.0, {size})",
    ),
}


def keywords(family: str, args: dict[str, str], *, named: bool = False) -> list[str]:
    """The keyword arguments PyMC's distribution of `family` takes for qvr's arguments
    (Python text by qvr parameter name); `named`: of a model variable, not a `.dist`."""
    spec = PYMC_FAMILIES[family]
    out = []
    for param, text in args.items():
        value = f"1.0 - {text}" if param in spec.flipped else text
        if spec.shaped is not None and param in spec.shaped:
            value = spec.shaped[param].format(value)
        out.append(f"{spec.keywords[param]}={value}")
    return out + list(spec.fixed) + list(spec.named if named else ())


def family_call(family: str, args: dict[str, str]) -> str | None:
    """`pm.Normal.dist(mu=.., sigma=..)`: qvr's `family` at the given arguments as a PyMC
    distribution, or None where PyMC has none with qvr's parameterisation."""
    if family not in PYMC_FAMILIES:
        return None
    return f"{PYMC_FAMILIES[family].pm}.dist({', '.join(keywords(family, args))})"


__all__ = [
    "MIXTURE",
    "ORDERED_SETS",
    "PYMC_FAMILIES",
    "SUMMED",
    "TRANSFORMS",
    "WHY_NOT",
    "family_call",
    "keywords",
]
