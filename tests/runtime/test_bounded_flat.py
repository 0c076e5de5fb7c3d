"""`BoundedFlat(low, high)` in the runtime: Stan's `real<lower=low, upper=high>` parameter
with no prior statement. Its log density is 0 between the bounds and -inf outside (not a
Uniform's -log(high - low), which would change the posterior of what the bounds read);
the support the run reports, which NUTS and SVI move the value in, is the interval of the
call's arguments; NUTS on bounds the data gives finds the exact truncated posterior, so
the interval's map and its Jacobian are right; a bound that reads another latent is
refused by NUTS and SVI (they map a latent onto its support once, when the run starts,
and would keep it within that run's bounds); and what would draw from the prior (the
prior predictive, synthetic data) is refused, as for `Flat`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.guide import AutoNormalGuide
from qvr_core.inference.mcmc import MCMC
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.sites import site_transform
from qvr_core.inference.svi import SVI
from qvr_core.runs.run import run_program
from qvr_core.runs.synthesise import synthesise
from qvr_core.runtime.distributions import make_distribution
from qvr_core.runtime.model import ModelProgram, compile_model
from tests.models import bounded

F64 = torch.float64
#: `between`'s data: the observations sit above the upper bound, so the posterior piles
#: against it and a wrong map or Jacobian shows in its mean
LO, HI = 0.0, 1.0
Y_BETWEEN = [1.3, 1.7, 1.4, 1.6, 1.5, 1.2, 1.8, 1.5]
Y_PERSISTENCE = [0.9, 0.8, 1.0, 0.7, 0.95]


def _t(value: float | list[float]) -> torch.Tensor:
    return torch.tensor(value, dtype=F64)


def _program(source: str, name: str) -> ModelProgram:
    checked = check(source)
    assert checked.ok, [(d.code, d.message) for d in checked.diagnostics]
    return compile_model(checked, name)


def _truncated_mean_sd() -> tuple[float, float]:
    """The exact posterior of `between`: Normal(mean(y), 1 / sqrt(n)) cut to (LO, HI)."""
    n = len(Y_BETWEEN)
    mu, sd = sum(Y_BETWEEN) / n, 1 / math.sqrt(n)
    a, b = (LO - mu) / sd, (HI - mu) / sd

    def pdf(z: float) -> float:
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    def cdf(z: float) -> float:
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))

    mass = cdf(b) - cdf(a)
    mean = mu + sd * (pdf(a) - pdf(b)) / mass
    var = sd**2 * (1 + (a * pdf(a) - b * pdf(b)) / mass - ((pdf(a) - pdf(b)) / mass) ** 2)
    return mean, math.sqrt(var)


# ---------------------------------------------------------------- the density


def test_the_checker_has_nothing_to_say_of_either_program() -> None:
    """A call with arguments, as quivers' grammars parse it: no error, warning or hint
    (no QVR012), bounds from data and from a let of another latent alike."""
    for source in (bounded.between(8), bounded.persistence(5)):
        assert check(source).diagnostics == ()


def test_the_density_is_zero_between_the_bounds_and_minus_inf_outside() -> None:
    d = make_distribution("BoundedFlat", {"low": _t(0.0), "high": _t(0.7)})
    inside = d.log_prob(_t([1e-9, 0.2, 0.35, 0.6999]))
    assert torch.equal(inside, torch.zeros(4, dtype=F64))  # not Uniform's -log(0.7)
    outside = d.log_prob(_t([-1e-9, 0.7001, 5.0, -3.0, math.nan]))
    assert torch.equal(outside, torch.full((5,), -math.inf, dtype=F64))
    assert not d.has_rsample


def test_bounds_given_per_coordinate_bound_each_coordinate() -> None:
    d = make_distribution("BoundedFlat", {"low": _t([0.0, -2.0]), "high": _t(1.0)})
    assert d.batch_shape == (2,)
    assert d.log_prob(_t([-1.0, -1.0])).tolist() == [-math.inf, 0.0]
    wide = d.expand((3, 2))  # the runtime expands a family over its plates
    assert wide.batch_shape == (3, 2) and wide.support.lower_bound.shape == (3, 2)


def test_a_start_is_stans_between_the_bounds() -> None:
    """A draw is Stan's starting point: uniform on (-2, 2) mapped onto the interval."""
    d = make_distribution("BoundedFlat", {"low": _t(1.0), "high": _t(3.0)}).expand((2000,))
    start = d.sample()
    s = torch.sigmoid(_t(2.0))
    assert bool(((start > 1 + 2 * (1 - s)) & (start < 1 + 2 * s)).all())


def test_the_log_joint_has_no_normaliser_of_the_bounds() -> None:
    """What sets it apart from `Uniform(0.0, beta_max)`: the log joint differs from the
    Uniform's by exactly log(1 - alpha1), and a value over the bound is -inf."""
    flat = _program(bounded.persistence(5), "persistence")
    uniform = _program(bounded.persistence(5, "Uniform"), "persistence")
    for alpha1 in (0.3, 0.6):
        values = {"alpha1": _t(alpha1), "beta1": _t(0.2), "y": _t(Y_PERSISTENCE)}
        got, with_uniform = (float(p.log_joint({}, values)) for p in (flat, uniform))
        normal = D.Normal(_t(alpha1 + 0.2), _t(0.5))
        likelihood = float(normal.log_prob(_t(Y_PERSISTENCE)).sum())
        assert got == pytest.approx(likelihood, rel=1e-12)  # Uniform(0, 1) and flat: 0
        assert got - with_uniform == pytest.approx(math.log(1 - alpha1), rel=1e-12)
    over = {"alpha1": _t(0.6), "beta1": _t(0.5), "y": _t(Y_PERSISTENCE)}
    assert float(flat.log_joint({}, over)) == -math.inf


def test_the_support_is_the_interval_of_the_bound_arguments() -> None:
    """With alpha1 at 0.3 beta1 lies in (0, 0.7); at 0.6 in (0, 0.4): the run reads the
    bounds from the call's arguments, a let of the other latent."""
    program = _program(bounded.persistence(5), "persistence")
    for alpha1, high in ((0.3, 0.7), (0.6, 0.4)):
        values = {"alpha1": _t(alpha1), "beta1": _t(0.1), "y": _t(Y_PERSISTENCE)}
        program.log_joint({}, values)
        c = program.site_constraint("beta1")
        assert isinstance(c, D.constraints.interval)
        assert float(c.lower_bound) == 0.0
        assert float(c.upper_bound) == pytest.approx(high, rel=1e-15)
    assert program.site_support("beta1") == "interval"


# ---------------------------------------------------------------- inference


def test_nuts_moves_it_through_the_interval_of_its_bounds() -> None:
    """Bounds from the data: NUTS's map is the interval (lo, hi), every draw is inside,
    and the mean and sd are the exact truncated Normal's (within 5 Monte Carlo errors
    and 20%): a map or Jacobian other than the interval's would pull them elsewhere."""
    program = _program(bounded.between(len(Y_BETWEEN)), "between")
    data, obs = {"lo": _t(LO), "hi": _t(HI)}, {"y": _t(Y_BETWEEN)}
    program.run(data, obs)
    transform = site_transform(program, "b")
    assert transform is not None  # R onto (lo, hi): the midpoint at 0, the ends far out
    ends = transform(_t([-40.0, 0.0, 40.0]))
    torch.testing.assert_close(ends, _t([LO, (LO + HI) / 2, HI]), rtol=0, atol=1e-15)
    torch.manual_seed(3)
    result = MCMC(NUTSKernel(), 300, 800).run(program, data, obs)
    draws = result.samples["b"].reshape(-1)
    assert bool(((draws > LO) & (draws < HI)).all())
    mean, sd = _truncated_mean_sd()
    ess = float(result.ess["b"].min())
    assert abs(float(draws.mean()) - mean) < 5 * sd / math.sqrt(ess), (draws.mean(), mean)
    assert abs(float(draws.std()) - sd) < 0.2 * sd, (draws.std(), sd)


def test_svi_keeps_every_draw_between_the_bounds() -> None:
    program = _program(bounded.between(len(Y_BETWEEN)), "between")
    data, obs = {"lo": _t(LO), "hi": _t(HI)}, {"y": _t(Y_BETWEEN)}
    torch.manual_seed(0)
    program.run(data, obs)
    guide = AutoNormalGuide(program, observed_names={"y"})
    svi = SVI(program, guide, torch.optim.Adam(guide.parameters(), lr=0.05), ELBO())
    for _ in range(400):
        svi.step(data, obs)
    with torch.no_grad():
        draws = torch.stack([guide.rsample(data)["b"] for _ in range(500)])
    assert bool(((draws > LO) & (draws < HI)).all())
    mean, sd = _truncated_mean_sd()
    assert abs(float(draws.mean()) - mean) < sd, (draws.mean(), mean)


@pytest.mark.parametrize("family", ["BoundedFlat", "Uniform"])
def test_a_bound_that_reads_another_latent_is_refused_by_svi(family: str) -> None:
    """A guide's map onto a support is made once, so it would keep beta1 within the
    bounds of the run before the fit, a wrong posterior: refused, naming the site, its
    line and the latent, and pointing at NUTS."""
    program = _program(bounded.persistence(5, family), "persistence")
    obs = {"y": _t(Y_PERSISTENCE)}
    program.run({}, obs)
    with pytest.raises(InferenceError) as svi:
        AutoNormalGuide(program, observed_names={"y"})
    message = str(svi.value)
    assert message.startswith(f"site 'beta1' (line 6): the high of its {family} reads")
    assert "the latent 'alpha1'" in message and "--method nuts" in message
    assert ("`score` log(high - low)" in message) == (family == "BoundedFlat")
    # alpha1's own bounds are numbers: it is not refused
    assert site_transform(program, "alpha1") is not None


def _triangle(family: str) -> str:
    """alpha1 uniform on (0, 1) and beta1 on (0, 1 - alpha1), nothing observed: flat on
    the triangle alpha1 + beta1 < 1 (BoundedFlat), or beta1 uniform given alpha1."""
    return (
        "object One : FinSet 1\n\n"
        "program triangle : One -> One\n"
        "    sample alpha1 <- Uniform(0.0, 1.0)\n"
        "    let beta_max = 1.0 - alpha1\n"
        f"    sample beta1 <- {family}(0.0, beta_max)\n"
        "    return alpha1\n\n"
        "export triangle\n"
    )


@pytest.mark.parametrize(
    ("family", "alpha1", "beta1"),
    # flat on the triangle: each has density 2 (1 - t), mean 1/3; Uniform given alpha1:
    # alpha1 stays uniform (mean 1/2) and beta1 has mean E[(1 - alpha1) / 2] = 1/4
    [("BoundedFlat", 1 / 3, 1 / 3), ("Uniform", 1 / 2, 1 / 4)],
)
def test_nuts_moves_it_within_each_evaluations_bounds(
    family: str, alpha1: float, beta1: float
) -> None:
    """NUTS maps beta1 onto (0, 1 - alpha1) at every evaluation, as Stan maps a parameter
    declared `<upper=1 - alpha1>`: every draw is inside the triangle and the means are the
    exact ones, within 5 Monte Carlo standard errors (it used to keep the start's bound)."""
    torch.manual_seed(0)
    program = _program(_triangle(family), "triangle")
    program.run({}, {})
    result = MCMC(NUTSKernel(), 500, 1000, num_chains=2).run(program, {}, {})
    a, b = result.samples["alpha1"].reshape(-1), result.samples["beta1"].reshape(-1)
    assert bool(((b > 0) & (a + b < 1)).all())
    for draws, exact in ((a, alpha1), (b, beta1)):
        ess = float(result.ess["alpha1" if draws is a else "beta1"].min())
        mcse = float(draws.std()) / math.sqrt(ess)
        assert abs(float(draws.mean()) - exact) < 5 * mcse, (family, float(draws.mean()), exact)


# ---------------------------------------------------------------- the prior


def _files(tmp_path: Path) -> tuple[str, Path]:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"lo": LO, "hi": HI, "y": Y_BETWEEN}), encoding="utf-8")
    return bounded.between(len(Y_BETWEEN)), data


def test_the_prior_predictive_is_refused_naming_the_site(tmp_path: Path) -> None:
    source, data = _files(tmp_path)
    with pytest.raises(InferenceError) as refused:
        run_program(source, method="prior", data=str(data), steps=10)
    message = str(refused.value)
    assert "line 4, sample b <- BoundedFlat is an improper prior" in message
    assert "flat between its bounds, not a normalised distribution" in message
    assert "the prior predictive (--method prior) does not exist" in message


def test_synthetic_data_is_refused_naming_the_site() -> None:
    source = bounded.between(len(Y_BETWEEN))
    with pytest.raises(InferenceError) as refused:
        run_program(source, method="nuts", steps=10, chains=1)  # no data: synthetic
    assert "line 4, sample b <- BoundedFlat is an improper prior" in str(refused.value)
    assert "give a data file (--data)" in str(refused.value)
    with pytest.raises(InferenceError) as file:
        synthesise(check(source), "between")
    assert "line 4, sample b <- BoundedFlat is an improper prior" in str(file.value)
    assert "write the file from real observations" in str(file.value)


def test_qvr_run_fits_fixed_bounds_and_refuses_moving_ones_for_svi(tmp_path: Path) -> None:
    """The run API (what `qvr run` calls): NUTS on bounds from the data runs, and its
    posterior table stays between them; a bound read from a latent runs under NUTS and
    is refused for SVI with the reason before a step."""
    source, data = _files(tmp_path)
    summary = run_program(source, method="nuts", data=str(data), steps=60, chains=1, seed=1)
    assert summary.posterior is not None and not summary.stopped
    (row,) = [r for r in summary.posterior.rows if r["site"] == "b"]
    assert LO < row["q5"] < row["q95"] < HI
    moving = tmp_path / "moving.json"
    moving.write_text(json.dumps({"y": Y_PERSISTENCE}), encoding="utf-8")
    with pytest.raises(InferenceError, match=r"^site 'beta1' \(line 6\)"):
        run_program(bounded.persistence(5), method="svi", data=str(moving), steps=20)
    fitted = run_program(bounded.persistence(5), method="nuts", data=str(moving), steps=60)
    assert fitted.posterior is not None and not fitted.stopped


def test_a_flat_prior_between_bounds_integrates_without_data() -> None:
    """QVR413 is for a flat prior on an unbounded support; between finite bounds its
    posterior integrates, observed or not."""
    text = (
        "object Obs : FinSet 3\n\n"
        "program free : Obs -> Obs\n"
        "    sample b <- BoundedFlat(0.0, 2.0)\n"
        "    sample c <- Flat\n"
        "    observe y : Obs <- Normal(c, 1.0)\n"
        "    return b\n\n"
        "export free\n"
    )
    codes = [d.code for d in check(text).diagnostics]
    assert "QVR413" not in codes
    unbounded = text.replace("BoundedFlat(0.0, 2.0)", "HalfFlat")
    assert [d.code for d in check(unbounded).diagnostics].count("QVR413") == 1
