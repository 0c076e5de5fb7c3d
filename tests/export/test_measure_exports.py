"""quivers' measure algebra through the exports: what each target writes scores as qvr.

`export/measures.py` rewrites a step's measure into probability distributions (a
truncation, a mixture of distributions, a point mass, a pushforward); PyMC writes
`pm.Truncated`, `pm.Mixture` and `pm.DiracDelta`, NumPyro `TruncatedDistribution`,
`MixtureGeneral`, `Delta` and `TransformedDistribution`, Stan `T[low, high]`. Each
export's log density at qvr's start point is qvr's log joint there (Stan's: its
compiler accepts the program; tests/export/test_stan.py holds compiled Stan to qvr's
log joint). What a target cannot write is refused where it is written (QVR701).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from qvr_core.runs.synthesise import synthesise
from tests.export.qvr_start import qvr_start

#: Truncated latents (one end, the other, both), truncated data, a mixture of a Normal and
#: a truncated Exponential, zero inflation, an `Independent` (its base), the horseshoe (a
#: mixture of 16 Normals, its quadrature), pushforwards (a latent, data, a component):
#: what PyMC writes (and, through Logit, a latent and a pushed truncation, with their logp).
BY_PYMC = """object R : FinSet 4

program cuts : R -> R
    sample mu <- Normal(0.0, 1.0)
    sample x <- Restrict(Normal(mu, 2.0), 0.0)
    sample s <- Truncate(Gamma(2.0, 1.0), high=3.0)
    observe cut : R <- Truncate(Normal(mu, s), low=-1.0, high=2.5)
    observe far : R <- Restrict(Normal(mu, 1.0), 2.0)
    observe m : R <- Mixture([0.25, 0.5], [Normal(mu, 1.0), Truncated(Exponential(x), 0.5, 4.0)])
    observe zi : R <- Mixture([0.3, 0.7], [PointMass(0.0), Poisson(x)])
    observe joined : R <- Independent(Normal(mu, 2.0), 1)
    sample shrunk : R <- Horseshoe(s)
    sample soft <- Pushforward(Normal(0.0, 1.0), Softplus)
    observe pushed : R <- Pushforward(Normal(mu, 0.5), Exp)
    observe q : R <- Mixture([0.5, 0.5], [Normal(mu, 1.0), Pushforward(Normal(soft, 1.0), Sigmoid)])
    observe kept : R <- Mixture([0.3, 0.7], [PointMass(0.0), Restrict(Poisson(x), 1.0)])
    observe km : R <- Mixture([0.3, 0.7], [Restrict(Normal(mu, 1.0), 0.0, 2.0), Normal(3.0, 1.0)])
    sample lt <- Pushforward(Beta(2.0, 3.0), Logit)
    observe lg : R <- Pushforward(Truncated(Gamma(2.0, 1.0), 0.1, 0.9), Logit)
    return mu

export cuts
"""

#: What NumPyro writes: its own truncations of Normal, Cauchy, Laplace, Logistic and
#: StudentT, the module's `TruncatedByCDF` of the others (a latent, data, counts, one in a
#: mixture; the Kumaraswamy by the CDF the class writes); a pushforward inside a mixture.
BY_NUMPYRO = """object R : FinSet 4

program cuts : R -> R
    sample mu <- Normal(0.0, 1.0)
    sample x <- Restrict(Normal(mu, 2.0), 0.0)
    sample s <- Truncate(Cauchy(1.0, 1.0), 0.0, 3.0)
    observe cut : R <- Truncate(Normal(mu, s), low=-1.0, high=2.5)
    observe pushed : R <- Pushforward(Normal(mu, 0.5), Exp)
    observe m : R <- Mixture([0.25, 0.5], [Normal(mu, 1.0), Pushforward(Laplace(x, 1.0), Exp)])
    observe zi : R <- Mixture([0.3, 0.7], [PointMass(0.0), Poisson(x)])
    observe joined : R <- Independent(Normal(mu, 2.0), 1)
    sample shrunk : R <- Horseshoe(s)
    observe km : R <- Mixture([0.3, 0.7], [Restrict(Normal(mu, 1.0), 0.0, 2.0), Normal(3.0, 1.0)])
    sample rt <- Truncated(Gamma(2.0, 1.0), 0.5, 4.0)
    observe tg : R <- Truncate(Gamma(rt, 2.0), high=3.0)
    observe tc : R <- Truncated(Poisson(rt), 1.0, 6.0)
    observe tn : R <- Restrict(NegativeBinomial(3.0, 0.4), 1.0)
    observe ti : R <- Truncated(InverseGamma(3.0, 1.5), 0.2, 0.9)
    observe tw : R <- Truncated(Weibull(rt, 1.5), 0.1, 2.0)
    observe tk : R <- Mixture([0.3, 0.7], [PointMass(0.0), Restrict(Poisson(rt), 1.0)])
    sample ku <- Truncated(Kumaraswamy(2.0, 3.0), 0.2, 0.8)
    let ka = ku + 1.0
    observe tu : R <- Truncated(Kumaraswamy(ka, 3.0), 0.1, 0.7)
    observe kr : R <- Mixture([0.4, 0.6], [Restrict(Kumaraswamy(ka, 3.0), 0.1, 0.6), Beta(ka, 2.0)])
    return mu

export cuts
"""


#: A mixture among a mixture's components, which every target writes flattened: its
#: components weigh 0.4 * 0.5 and 0.4 * 0.2 (it keeps its mass, 0.7), the step rescales.
NESTED = (
    "    observe n2 : R <- Mixture([0.4, 0.6], "
    "[Mixture([0.5, 0.2], [Normal(mu, 1.0), Normal(x, 2.0)]), Normal(mu, 3.0)])\n"
)
#: The same with weights that are values, the inner mixture's too: each component's
#: weight the product of the two, divided by their sum.
NESTED_VALUES = (
    "    observe n3 : R <- Mixture([x, 1.0], "
    "[Mixture([0.5, x], [Normal(mu, 1.0), Normal(x, 2.0)]), Normal(mu, 3.0)])\n"
)
#: Pushforwards of truncations, a latent and data.
PUSHED_CUTS = (
    "    sample pl <- Pushforward(Truncated(Normal(0.0, 1.0), -1.0, 1.0), Sigmoid)\n"
    "    observe pc : R <- Pushforward(Truncated(Normal(mu, 1.0), 0.0, 2.0), Exp)\n"
)
#: A half family cut at a value below 0, where it keeps the mass from 0 on, at a step and
#: as a mixture's component that keeps its mass.
BELOW_ZERO = (
    "    let under = mu - 4.0\n"
    "    observe hb : R <- Truncated(HalfNormal(1.0), under, 3.0)\n"
    "    observe hk : R <- Mixture([0.5, 0.5], [Restrict(HalfNormal(1.0), under, 3.0), "
    "Normal(mu, 1.0)])\n"
)
#: quivers' fold: a symmetric family cut at its centre, one end only, keeps half its mass
#: with no CDF asked (torch has none of the Student-t): the half-Student-t, a latent and
#: data whose scale it is. Each target writes its own truncation of the Student-t.
FOLDED = (
    "    sample tf <- Restrict(StudentT(3.0, 0.0, 2.5), 0.0)\n"
    "    observe td : R <- Restrict(StudentT(4.0, 0.0, tf), 0.0)\n"
)
BY_PYMC = BY_PYMC.replace(
    "    return mu\n",
    NESTED + NESTED_VALUES + PUSHED_CUTS + BELOW_ZERO + FOLDED + "    return mu\n",
)
BY_NUMPYRO = BY_NUMPYRO.replace(
    "    return mu\n",
    NESTED + NESTED_VALUES + PUSHED_CUTS + BELOW_ZERO + FOLDED + "    return mu\n",
)


def _data(source: str, program: str = "cuts") -> tuple[Any, dict[str, Any]]:
    module = check(source)
    assert [d.message for d in module.diagnostics if d.is_error] == []
    arrays = synthesise(module, program, seed=0).arrays()
    return module, json.loads(json.dumps({k: v.tolist() for k, v in arrays.items()}))


def _exported(source: str, target: str, written: tuple[str, ...]) -> tuple[Any, Any, str]:
    """The checked module, its data as a JSON file gives it and `target`'s export, which
    writes each of `written`."""
    module, data = _data(source)
    out = export_program(module, TARGETS[target], "cuts")
    assert out.text is not None, out.diagnostics
    for text in written:
        assert text in out.text, out.text
    return module, data, out.text


def test_pymc_writes_truncations_mixtures_and_point_masses_as_qvr_scores() -> None:
    pytest.importorskip("pymc")
    from tests.export.pymc_points import value_point
    from tests.export.test_pymc import PYTHON, load

    written = (
        "pm.Truncated(",
        "pm.Mixture(",
        "pm.DiracDelta.dist(0)",
        "upper=3.0",
        "pm.NormalMixture(",
        "pm.CustomDist(",
    )
    module, data, text = _exported(BY_PYMC, "pymc", written)
    start = qvr_start(module, "cuts", data, summed=False)
    model = load(text)["build_model"](**data)
    logp = model.compile_logp(jacobian=False, mode=PYTHON)
    assert float(logp(value_point(model, start.point))) == pytest.approx(start.log_joint, rel=1e-6)


@pytest.mark.usefixtures("jax_float64")
def test_numpyro_writes_truncations_mixtures_and_pushforwards_as_qvr_scores(
    tmp_path: Path,
) -> None:
    pytest.importorskip("numpyro")
    import jax
    from numpyro.infer.util import log_density

    from tests.export.test_numpyro import load

    written = (
        "TruncatedDistribution(",
        "TruncatedByCDF(dist.Poisson(",
        "MixtureGeneral(",
        "dist.Delta(0.0)",
        "ExpTransform",
        "MixtureSameFamily(",
    )
    module, data, text = _exported(BY_NUMPYRO, "numpyro", written)
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    namespace = load(text)
    kwargs = namespace["load_data"](str(path))
    start = qvr_start(module, "cuts", data, summed=True)
    point = {k: jax.numpy.asarray(v) for k, v in start.point.items()}
    density = float(log_density(namespace["model"], (), kwargs, point)[0])
    assert density == pytest.approx(start.log_joint, rel=1e-6)


class _Kumaraswamy:
    """The Kumaraswamy law scipy lacks, from its textbook formulas (written apart from the
    module's `cdf_of`, which the test checks)."""

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = a, b

    def pdf(self, x: float) -> float:
        return float(self.a * self.b * x ** (self.a - 1) * (1 - x**self.a) ** (self.b - 1))

    def cdf(self, x: float) -> float:
        return float(1 - (1 - min(max(x, 0.0), 1.0) ** self.a) ** self.b)

    def ppf(self, q: float) -> float:
        return float((1 - (1 - q) ** (1 / self.b)) ** (1 / self.a))


@pytest.mark.usefixtures("jax_float64")
@pytest.mark.parametrize(
    ("made", "law", "low", "high"),
    [
        ("dist.Gamma(2.0, 1.0)", "gamma(2.0)", 0.5, 4.0),  # NumPyro's inverse or bisection
        ("dist.Gamma(2.0, 1.0)", "gamma(2.0)", 3.0, None),  # an open upper end
        ("dist.LogNormal(0.0, 1.0)", "lognorm(1.0)", None, 2.0),
        ("dist.Weibull(1.0, 1.5)", "weibull_min(1.5)", 0.1, 2.0),  # no inverse: bisection
        ("dist.Poisson(2.5)", "poisson(2.5)", 1.0, 6.0),
        ("dist.Poisson(2.5)", "poisson(2.5)", 2.5, None),  # a count's ends: 3 and on
        ("dist.NegativeBinomialProbs(3.0, 0.4)", "nbinom(3.0, 0.6)", 1.0, 9.0),
        # NumPyro has no CDF of it; scipy's law: X = Y^(1/a) with 1 - Y ~ Beta(b, 1)
        ("dist.Kumaraswamy(2.0, 3.0)", "kumaraswamy(2.0, 3.0)", 0.2, 0.8),
        ("dist.Kumaraswamy(0.5, 0.7)", "kumaraswamy(0.5, 0.7)", None, 0.3),
    ],
)
def test_numpyro_truncated_by_cdf_draws_the_truncated_distribution(
    made: str, law: str, low: float | None, high: float | None
) -> None:
    """The module's `TruncatedByCDF` draws inside its ends with the truncated
    distribution's mean (scipy's, summed or integrated over the interval), to 5 standard
    errors of 20,000 draws from a fixed key; its density integrates to 1 there."""
    pytest.importorskip("numpyro")
    scipy_stats = pytest.importorskip("scipy.stats")
    import jax
    import numpy as np
    from scipy import integrate

    from tests.export.test_numpyro import load

    _, _, text = _exported(BY_NUMPYRO, "numpyro", ("class TruncatedByCDF(",))
    namespace = load(text)
    base = eval(made, {"dist": namespace["dist"]})  # the test's own literals
    cut = namespace["TruncatedByCDF"](base, low=low, high=high)
    draws = np.asarray(cut.sample(jax.random.PRNGKey(0), (20_000,)))
    laws = {"scipy_stats": scipy_stats, "kumaraswamy": _Kumaraswamy}
    frozen = eval(law if law.startswith("kumaraswamy") else f"scipy_stats.{law}", laws)
    if hasattr(frozen, "pmf"):
        lo = 0 if low is None else math.ceil(low)
        ks = np.arange(lo, (math.floor(high) if high is not None else lo + 400) + 1)
        weights = frozen.pmf(ks) / frozen.pmf(ks).sum()
        mean, sd = (
            float((ks * weights).sum()),
            float(np.sqrt((ks**2 * weights).sum() - (ks * weights).sum() ** 2)),
        )
        density = np.exp(np.asarray(cut.log_prob(ks.astype(float))))
        assert density.sum() == pytest.approx(1.0, abs=1e-6)  # NumPyro's CDFs to 1e-8 or so
    else:
        a, b = frozen.ppf(1e-15) if low is None else low, high if high is not None else np.inf
        mass = frozen.cdf(b) - frozen.cdf(a)
        mean = integrate.quad(lambda x: x * frozen.pdf(x), a, b)[0] / mass
        second = integrate.quad(lambda x: x * x * frozen.pdf(x), a, b)[0] / mass
        sd = math.sqrt(second - mean**2)
        total = integrate.quad(lambda x: float(np.exp(cut.log_prob(x))), a, b)[0]
        assert total == pytest.approx(1.0, abs=1e-6)
    if low is not None:
        assert draws.min() >= low
    if high is not None:
        assert draws.max() <= high
    assert abs(draws.mean() - mean) < 5 * sd / math.sqrt(draws.size)


def test_stan_writes_a_truncation_its_compiler_accepts() -> None:
    source = "\n".join(
        line
        for line in BY_PYMC.splitlines()
        if not any(w in line for w in ("Mixture", "Horseshoe", "Pushforward"))
    )
    out = export_program(check(source), TARGETS["stan"], "cuts")
    assert out.text is not None, out.diagnostics
    for written in (
        "real<lower=0.0> x;",
        "real<lower=0.0, upper=3.0> s;",
        "x ~ normal(mu, 2.0) T[0.0, ];",
        "s ~ gamma(2.0, 1.0) T[, 3.0];",
        "cut ~ normal(mu, s) T[-1.0, 2.5];",
        "joined ~ normal(mu, 2.0);",
    ):
        assert written in out.text, out.text
    try:
        import httpstan.compile
    except Exception:
        pytest.skip("httpstan (Stan's compiler front end) is not installed")
    httpstan.compile.compile(out.text, "qvr_export")  # raises where stanc refuses it


@pytest.mark.parametrize(
    ("target", "step", "words"),
    [
        (
            "numpyro",
            "observe y : Row <- Truncated(VonMises(0.0, 2.0), -1.0, 1.0)",
            "no CDF of VonMises",
        ),
        ("stan", "observe y : Row <- Restrict(Poisson(2.0), 1.5)", "whole numbers written out"),
    ],
)
def test_what_a_target_lacks_is_refused_where_it_is_written(
    target: str, step: str, words: str
) -> None:
    source = (
        f"object Row : FinSet 3\n\nprogram p : Row -> Row\n    {step}\n    return y\n\nexport p\n"
    )
    out = export_program(check(source), TARGETS[target], "p")
    assert out.text is None
    found = [d for d in out.diagnostics if d.code == "QVR701" and words in d.message]
    assert found and all(d.span.start_line == 3 for d in found), out.diagnostics


SCOPED = """object Component : FinSet 2
object Point : FinSet 20

program scoped : Point -> Point
    sample weights <- Dirichlet(2.0) [over=Component]
    sample mu : Component <- Normal(0.0, 10.0)
    marginalize z : Component <- Categorical(weights) [over=Point]
        observe y : Point <- Truncate(Normal(mu[z], 1.0), low=-5.0)
        observe w : Point <- Mixture([0.3, 0.7], [Normal(mu[z], 1.0), Pushforward(Normal(mu[z], 2.0), Exp)])
    return weights

export scoped
"""  # noqa: E501


@pytest.mark.usefixtures("jax_float64")
def test_measures_inside_a_summed_scope_score_as_qvr_sums_them(tmp_path: Path) -> None:
    """NumPyro enumerates the scope around its truncated and mixed observes, PyMC's scope
    function adds their `pm.logp` for each value, Stan their densities one value at a
    time (compiled in `test_compiled_stan_scores_truncations_and_mixtures_as_qvr`): each
    scored as qvr sums it."""
    pytest.importorskip("funsor")
    pytest.importorskip("pymc")
    import jax
    from numpyro.contrib.funsor import enum
    from numpyro.contrib.funsor import log_density as enumerated_log_density

    from tests.export.test_numpyro import load, plate_nesting

    module, data = _data(SCOPED, "scoped")
    out = export_program(module, TARGETS["numpyro"], "scoped")
    assert out.text is not None, out.diagnostics
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    namespace = load(out.text)
    kwargs = namespace["load_data"](str(path))
    start = qvr_start(module, "scoped", data, summed=True)
    point = {k: jax.numpy.asarray(v) for k, v in start.point.items()}
    nesting = plate_nesting(namespace["model"], kwargs, point)
    enumerated = enum(namespace["model"], first_available_dim=-1 - nesting)
    density = float(enumerated_log_density(enumerated, (), kwargs, point)[0])
    assert density == pytest.approx(start.log_joint, rel=1e-6)

    from tests.export.pymc_points import value_point
    from tests.export.test_pymc import PYTHON
    from tests.export.test_pymc import load as load_pymc

    written = export_program(module, TARGETS["pymc"], "scoped")
    assert written.text is not None, written.diagnostics
    assert "pm.logp(pm.Truncated.dist(" in written.text, written.text
    model = load_pymc(written.text)["build_model"](**data)
    logp = model.compile_logp(jacobian=False, mode=PYTHON)
    unsummed = qvr_start(module, "scoped", data, summed=False)
    assert float(logp(value_point(model, unsummed.point))) == pytest.approx(
        unsummed.log_joint, rel=1e-6
    )
    stan = export_program(module, TARGETS["stan"], "scoped")
    assert stan.text is not None, stan.diagnostics
    assert "normal_lccdf(-5.0 | mu[z], 1.0)" in stan.text, stan.text


#: |x| is written as its symmetric family truncated at 0 or above: an end that is a value
#: may lie below 0, so Stan raises it to 0 there.
HALF_AT_A_VALUE = """object Row : FinSet 3

program p : Row -> Row
    sample m <- Normal(0.0, 1.0)
    observe y : Row <- Truncated(HalfNormal(1.0), m, 2.0)
    return y

export p
"""
#: Stan writes a measure's density one value at a time: inside a scope with no groups,
#: an observation over a plate would need its sum, which is refused there.
UNGROUPED_SCOPE = """object Point : FinSet 5

program p : Point -> Point
    sample mu <- Normal(0.0, 1.0)
    marginalize z <- Bernoulli(0.3)
        observe y : Point <- Truncate(Normal(mu, 1.0), low=-5.0)
    return mu

export p
"""


def test_stan_refuses_what_it_cannot_write_one_value_at_a_time() -> None:
    out = export_program(check(UNGROUPED_SCOPE), TARGETS["stan"], "p")
    assert out.text is None
    assert any(
        "one value at a time" in d.message and d.span.start_line == 5 for d in out.diagnostics
    ), out.diagnostics


def test_stan_raises_a_half_family_s_lower_end_given_as_a_value_to_0() -> None:
    """|x| is its symmetric family from 0 on: an end that is a value may lie below 0,
    so Stan's bound, truncation and mass read it as `fmax(end, 0)`."""
    out = export_program(check(HALF_AT_A_VALUE), TARGETS["stan"], "p")
    assert out.text is not None, out.diagnostics
    assert "y ~ normal(0.0, 1.0) T[fmax(m, 0.0), 2.0];" in out.text, out.text


def test_stan_writes_a_mixture_one_value_at_a_time() -> None:
    """The hurdle example: per group, log_sum_exp of the point mass at 0 and the Poisson's
    lpmf less the log of its mass above 0 (Stan's lccdf at 0), its weights read from the
    vector the step's list makes; its compiler accepts it (tests/export/test_stan.py
    compiles programs; a compiled PyStan model matched qvr's log joint by hand)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "measures" / "hurdle_counts.qvr"
    out = export_program(
        check(example.read_text(encoding="utf-8")), TARGETS["stan"], "hurdle_counts"
    )
    assert out.text is not None, out.diagnostics
    for written in (
        "for (i in 1:Group) {",
        "target += log_sum_exp({log(count_weights[1]) - log(sum(count_weights))",
        "(count[i] == 0.0 ? 0 : negative_infinity())",
        "poisson_lpmf(count[i] | rate[i]) - poisson_lccdf(0 | rate[i])",
        "array[120] int<lower=0> count;",
    ):
        assert written in out.text, out.text
    try:
        import httpstan.compile
    except Exception:
        pytest.skip("httpstan (Stan's compiler front end) is not installed")
    httpstan.compile.compile(out.text, "qvr_export")


#: Truncated latents and data, a mixture of a truncated count beside a point mass, a
#: mixture of a Normal and a truncated Exponential, pushforwards (latents, data, a
#: component), truncated observed counts, mass-keeping restrictions in mixtures, the
#: horseshoe (its 16-Normal mixture written out): one program, compiled once.
BY_STAN = """object R : FinSet 6

program cuts : R -> R
    sample mu <- Normal(0.0, 1.0)
    sample x <- Restrict(Normal(mu, 2.0), 0.0)
    sample s <- Truncate(Gamma(2.0, 1.0), high=3.0)
    sample pi <- Beta(2.0, 2.0)
    let q = 1.0 - pi
    observe cut : R <- Truncate(Normal(mu, s), low=-1.0, high=2.5)
    observe hu : R <- Mixture([pi, q], [PointMass(0.0), Truncated(Poisson(x), 1.0, 6.0)])
    observe m : R <- Mixture([0.25, 0.5], [Normal(mu, 1.0), Truncated(Exponential(x), 0.5, 4.0)])
    sample soft <- Pushforward(Normal(0.0, 1.0), Softplus)
    sample p <- Pushforward(Normal(mu, 1.0), Sigmoid)
    observe pushed : R <- Pushforward(Normal(mu, 0.5), Exp)
    observe sg : R <- Mixture([0.5, 0.5], [Normal(mu, 1.0), Pushforward(Normal(soft, 1.0), Exp)])
    observe counted : R <- Restrict(Poisson(x), 1.0)
    observe capped : R <- Truncated(Poisson(x), 1.0, 6.0)
    observe kept : R <- Mixture([pi, q], [PointMass(0.0), Restrict(Poisson(x), 1.0)])
    observe km : R <- Mixture([0.3, 0.7], [Restrict(Normal(mu, 1.0), 0.0, 2.0), Normal(3.0, 1.0)])
    sample shrunk : R <- Horseshoe(s)
    return mu

export cuts
"""


#: Half families truncated (latents, data, a component, a pushed one) and one beside a
#: Normal in a mixture: Stan writes |x| as its symmetric family from 0 on.
HALVES = (
    "    sample hs <- Truncated(HalfCauchy(2.5), 0.0, 10.0)\n"
    "    sample ht <- Restrict(HalfNormal(1.0), high=3.0)\n"
    "    observe hn : R <- Truncate(HalfNormal(hs), low=0.5, high=4.0)\n"
    "    observe hm : R <- Mixture([0.4, 0.6], "
    "[Truncated(HalfCauchy(hs), 0.2, 3.0), Normal(mu, 1.0)])\n"
    "    observe hp : R <- Pushforward(Truncated(HalfNormal(ht), 0.1, 2.0), Exp)\n"
    "    observe hh : R <- Mixture([0.5, 0.5], [HalfNormal(1.0), Normal(mu, 1.0)])\n"
    # lower ends that are values, raised to 0 where below it (`fmax(end, 0)`)
    "    let lo = mu - 0.2\n"
    "    let below = mu - 5.0\n"
    "    observe hv : R <- Mixture([0.5, 0.5], [Truncated(HalfNormal(1.0), lo, 3.0), "
    "Normal(mu, 1.0)])\n"
    "    observe hw : R <- Truncated(HalfNormal(1.0), below, 4.0)\n"
    "    sample hl <- Truncated(HalfCauchy(1.0), below, 10.0)\n"
    "    observe hk : R <- Mixture([0.5, 0.5], [Restrict(HalfNormal(1.0), below, 3.0), "
    "Normal(mu, 1.0)])\n"
)
#: A truncation, and a mixture with a pushed component, inside a `marginalize` scope.
SCOPED_MEASURES = (
    "    sample wk <- Dirichlet(2.0) [over=K]\n"
    "    sample muk : K <- Normal(0.0, 3.0)\n"
    "    marginalize z : K <- Categorical(wk) [over=R]\n"
    "        observe zy : R <- Truncate(Normal(muk[z], 1.0), low=-5.0)\n"
    "        observe zm : R <- Mixture([0.3, 0.7], "
    "[Normal(muk[z], 1.0), Pushforward(Normal(muk[z], 2.0), Exp)])\n"
)
BY_STAN = BY_STAN.replace(
    "    return mu\n",
    NESTED + NESTED_VALUES + PUSHED_CUTS + SCOPED_MEASURES + HALVES + FOLDED + "    return mu\n",
).replace("object R : FinSet 6\n", "object R : FinSet 6\nobject K : FinSet 2\n")


@pytest.mark.timeout(1500)
def test_compiled_stan_scores_truncations_and_mixtures_as_qvr() -> None:
    """Stan's `~` drops constants, so its log density and qvr's are compared by their
    differences between two points (as tests/export/test_stan.py does): the same to
    rounding, which pins every term that depends on a parameter, the masses of the
    truncations and the point mass's support included."""
    from tests.export.stan_warm import build, unavailable

    why = unavailable()
    if why is not None:
        pytest.skip(why)
    import torch

    from qvr_core.runtime.model import compile_model

    module, data, code = _exported(
        BY_STAN, "stan", ("T[-1.0, 2.5]", "log_sum_exp(", "logit(", "T[1, 6]")
    )
    assert any(v == 0 for v in data["hu"]) and any(v > 0 for v in data["hu"])
    model = build(code, data, random_seed=1)
    program = compile_model(module, "cuts")

    def qvr(point: dict[str, Any]) -> float:
        values = {k: torch.tensor(v, dtype=torch.float64) for k, v in {**point, **data}.items()}
        return float(program.log_joint({}, values))

    first: dict[str, Any] = {"mu": 0.3, "x": 1.7, "s": 1.2, "pi": 0.4, "soft": 0.8, "p": 0.35}
    first["pl"] = 0.6  # sigmoid of a value in (-1, 1)
    first["wk"], first["muk"] = [0.3, 0.7], [-1.0, 1.0]
    first["hs"], first["ht"], first["hl"], first["tf"] = 2.2, 0.8, 1.5, 1.1
    first["shrunk"] = [0.05, -0.4, 1.3, 2.2, -3.0, 0.01]
    u1 = list(model.unconstrain_pars(first))
    u2 = [u + 0.3 * (i % 3 - 1) + 0.1 for i, u in enumerate(u1)]
    flat = [float(f) for f in model.constrain_pars(u2, include_tparams=False, include_gqs=False)]
    second: dict[str, Any] = {}
    for name, dims in zip(model.param_names, model.dims, strict=True):  # a vector's entries
        n = math.prod(dims)
        second[name] = flat[:n] if dims else flat[0]
        flat = flat[n:]
    stan = model.log_prob(u1, adjust_transform=False) - model.log_prob(u2, adjust_transform=False)
    ours = qvr(first) - qvr(second)
    assert abs(ours) > 1e-3
    assert stan == pytest.approx(ours, rel=1e-9, abs=1e-8)
