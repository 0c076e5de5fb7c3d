"""A series in a model's lets: `lag(x, k)` and `linear_recurrence(init, coef, drive)`
(issue 49), what a Stan model's loop over time says (`y[t - 1]`, a variance carried from
one step to the next), typed along the series' plate and run in log2(T) whole-series
steps.

The values are proved against the loop Stan writes (every entry, gradients too); the
checker keeps the series' plate and refuses, at the argument, a coefficient over a
plate, a series that is one number and a lag that is not a whole number of steps; a
model program reading its observed series before the `observe` (GARCH's y[t - 1]) runs
on the data it was given; the exports write it (NumPyro) or say where they cannot.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.export import TARGETS, export_program
from qvr_core.runtime.functions import FUNCTION_IMPLEMENTATIONS
from qvr_core.runtime.model import compile_model

lag = FUNCTION_IMPLEMENTATIONS["lag"]
linear_recurrence = FUNCTION_IMPLEMENTATIONS["linear_recurrence"]

GARCH = """\
object Time : FinSet 6

program garch : Time -> Time
    sample mu <- Normal(0.0, 10.0)
    sample alpha0 <- HalfNormal(1.0)
    sample alpha1 <- Uniform(0.0, 1.0)
    sample beta1 <- Uniform(0.0, 1.0)
    let e = y - mu
    let e2 = lag(e * e, 1)
    let sigma2 = linear_recurrence(sigma1 * sigma1, beta1, alpha0 + alpha1 * e2)
    let sigma = sqrt(sigma2)
    observe y : Time <- Normal(mu, sigma)
    return sigma

export garch
"""
Y = [0.3, -1.2, 2.5, 0.1, -0.7, 1.9]


def _loop(init: torch.Tensor, coef: torch.Tensor, drive: torch.Tensor) -> torch.Tensor:
    """The recurrence as Stan's loop writes it, one step at a time."""
    out = [init.expand(drive.shape[:-1])]
    for t in range(1, drive.shape[-1]):
        out.append(coef * out[-1] + drive[..., t])
    return torch.stack(out, -1)


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 8, 13, 100, 1000])
def test_the_recurrence_is_the_loop_at_every_step(steps: int) -> None:
    g = torch.Generator().manual_seed(steps)
    drive = torch.randn(3, steps, generator=g, dtype=torch.float64)
    coef = torch.rand(3, generator=g, dtype=torch.float64) * 1.8 - 0.9
    init = torch.randn(3, generator=g, dtype=torch.float64)
    got = linear_recurrence(init, coef, drive)
    torch.testing.assert_close(got, _loop(init[:, None][:, 0], coef, drive), rtol=1e-10, atol=1e-10)


def test_its_gradient_is_the_loops() -> None:
    drive = torch.randn(37, dtype=torch.float64, requires_grad=True)
    coef = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    init = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(linear_recurrence, (init, coef, drive))


def test_a_small_coefficient_underflows_to_zero_not_to_infinity() -> None:
    """Only products of coefficients are formed, so 1e-300 ** k is 0, never 1 / 0."""
    drive = torch.ones(1000, dtype=torch.float64)
    got = linear_recurrence(torch.tensor(5.0), torch.tensor(1e-300), drive)
    assert torch.isfinite(got).all() and got[0] == 5.0 and torch.all(got[1:] == 1.0)


def test_a_lag_moves_the_series_and_fills_the_first_steps_with_zero() -> None:
    x = torch.arange(1.0, 6.0)
    assert lag(x, torch.tensor(2.0)).tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    assert lag(x, torch.tensor(9.0)).tolist() == [0.0] * 5
    rows = torch.arange(6.0).reshape(2, 3)  # along the last axis of each row
    assert lag(rows, torch.tensor(1.0)).tolist() == [[0.0, 0.0, 1.0], [0.0, 3.0, 4.0]]


def test_the_series_keep_their_plate() -> None:
    """Over a latent series the plate is known (GARCH's y is data where its let reads it,
    before its `observe` types it, so its lets are typed over the data's rows)."""
    text = GARCH.replace(
        "    return sigma",
        "    sample z : Time <- Normal(0.0, 1.0)\n"
        "    let walk = linear_recurrence(0.0, 1.0, z)\n"
        "    let before = lag(walk, 2)\n"
        "    return sigma",
    )
    module = check(text)
    assert [d.code for d in module.diagnostics if d.is_error] == []
    lets = {s.name: s for s in module.models["garch"].steps if isinstance(s, Let)}
    for name in ("walk", "before"):
        assert lets[name].type is not None and lets[name].type.label == "Time -> R"


@pytest.mark.parametrize(
    ("old", "new", "where", "says"),
    [
        ("lag(e * e, 1)", "lag(e * e, 0.5)", "0.5", "whole number of steps"),
        ("lag(e * e, 1)", "lag(e * e, mu)", "mu", "whole number of steps"),
        (
            "linear_recurrence(sigma1 * sigma1, beta1,",
            "linear_recurrence(sigma1 * sigma1, theta,",
            "theta",
            "one number for every step",
        ),
        ("alpha0 + alpha1 * e2)", "alpha0)", "alpha0", "reads a series"),
    ],
)
def test_a_misused_series_is_refused_at_the_argument(
    old: str, new: str, where: str, says: str
) -> None:
    text = GARCH.replace(old, new).replace(
        "    let e = y - mu\n", "    sample theta : Time <- Normal(0.0, 1.0)\n    let e = y - mu\n"
    )
    errors = [d for d in check(text).diagnostics if d.is_error]
    assert [d.code for d in errors] == ["QVR207"], errors
    assert says in errors[0].message
    assert text[errors[0].span.start : errors[0].span.end] == where


def _garch_log_joint(point: dict[str, float], y: torch.Tensor, sigma1: float) -> float:
    """The model's log joint written by hand with Stan's loop over time."""
    d = torch.distributions
    f = torch.double
    zero, one, ten = (torch.tensor(v, dtype=f) for v in (0.0, 1.0, 10.0))
    mu, a0, a1, b1 = (
        torch.tensor(point[k], dtype=torch.float64) for k in ("mu", "alpha0", "alpha1", "beta1")
    )
    sigma = [torch.tensor(sigma1, dtype=torch.float64)]
    for t in range(1, len(y)):
        sigma.append(torch.sqrt(a0 + a1 * (y[t - 1] - mu) ** 2 + b1 * sigma[-1] ** 2))
    prior = (
        d.Normal(zero, ten).log_prob(mu)
        + d.HalfNormal(one).log_prob(a0)
        + d.Uniform(zero, one).log_prob(a1)
        + d.Uniform(zero, one).log_prob(b1)
    )
    return float(prior + d.Normal(mu, torch.stack(sigma)).log_prob(y).sum())


def test_a_garch_model_scores_as_stans_loop() -> None:
    """The observed series read before its `observe` is the data the run was given."""
    program = compile_model(check(GARCH), "garch")
    point = {"mu": 0.2, "alpha0": 0.5, "alpha1": 0.3, "beta1": 0.4}
    y = torch.tensor(Y, dtype=torch.float64)
    values = {k: torch.tensor(v, dtype=torch.float64) for k, v in point.items()}
    got = program.log_joint({"sigma1": torch.tensor(0.5)}, {**values, "y": y})
    assert float(got.reshape(-1)[0]) == pytest.approx(_garch_log_joint(point, y, 0.5), rel=1e-12)


@pytest.mark.usefixtures("jax_float64")
def test_numpyro_writes_the_series_and_scores_as_qvr() -> None:
    pytest.importorskip("numpyro")
    import jax
    from numpyro.infer.util import log_density

    from tests.export.test_numpyro import load

    text = export_program(check(GARCH), TARGETS["numpyro"], "garch").text
    assert text is not None and "jax.lax.associative_scan" in text
    point = {"mu": 0.2, "alpha0": 0.5, "alpha1": 0.3, "beta1": 0.4}
    model = load(text)["model"]
    kwargs = {"sigma1": 0.5, "y": jax.numpy.asarray(Y)}
    ours = float(log_density(model, (), kwargs, point)[0])
    y = torch.tensor(Y, dtype=torch.float64)
    assert ours == pytest.approx(_garch_log_joint(point, y, 0.5), rel=1e-10)


@pytest.mark.parametrize("target", ["stan", "pymc"])
def test_stan_and_pymc_say_where_they_cannot_write_it(target: str) -> None:
    result = export_program(check(GARCH), TARGETS[target], "garch")
    assert result.text is None
    found = {GARCH[d.span.start : d.span.end].split("(")[0] for d in result.diagnostics}
    # Stan stops at the first let it cannot write (the lets after it read its value)
    assert "lag" in found and found <= {"lag", "linear_recurrence"}
    assert all(d.code == "QVR701" for d in result.diagnostics)


def test_the_recurrence_costs_log2_steps_of_whole_series_operations() -> None:
    """A doubling scan: the graph of 1,000 steps is some 10 rounds deep, not 1,000."""
    drive = torch.randn(1000, dtype=torch.float64, requires_grad=True)
    out = linear_recurrence(torch.tensor(0.0), torch.tensor(0.5), drive)
    depth, node, seen = 0, out.grad_fn, 0
    while node is not None and seen < 10_000:
        depth += 1
        seen += 1
        node = next((f for f, _ in node.next_functions if f is not None), None)
    assert depth < 20 * math.ceil(math.log2(1000))


def test_a_draw_of_the_series_it_reads_early_is_made_step_by_step() -> None:
    """Drawing y from the model needs y step by step (its scale reads y[t - 1]): the prior
    predictive and `qvr data` draw it so (`runtime.model.early`; its own tests check the
    draws against the recursion)."""
    from qvr_core.runs.synthesise import synthesise

    program = compile_model(check(GARCH), "garch")
    drawn = program.run({"sigma1": torch.tensor(0.5)}).values["y"]
    assert drawn.shape == (6,) and bool(torch.isfinite(drawn).all())
    assert synthesise(check(GARCH), "garch", seed=0).arrays()["y"].shape == (6,)


def _fit_with_predictive(text: str, tmp_path: pytest.TempPathFactory) -> tuple[Any, Any]:
    import json
    from pathlib import Path

    from qvr_core.inference.results import RunResults
    from qvr_core.runs.run import run_program

    data = Path(str(tmp_path)) / "garch.json"
    data.write_text(json.dumps({"y": Y, "sigma1": 0.5}), encoding="utf-8")
    results = RunResults()
    summary = run_program(
        text,
        method="nuts",
        data=str(data),
        steps=40,
        chains=1,
        seed=1,
        predictive=True,
        results=results,
    )
    return summary, results


def test_a_fit_draws_the_posterior_predictive_of_a_series_read_early(
    tmp_path: pytest.TempPathFactory,
) -> None:
    summary, results = _fit_with_predictive(GARCH, tmp_path)
    assert summary.posterior is not None and not summary.stopped
    assert "posterior_predictive" in results.groups
    assert not [w for w in summary.warnings if w.kind == "posterior_predictive"]


def test_a_fit_asked_for_predictive_draws_it_cannot_make_keeps_its_draws(
    tmp_path: pytest.TempPathFactory,
) -> None:
    """A model whose early read is of later entries (y's sum) has no step-by-step draw:
    `qvr run --predictive` keeps the fit, the missing draws are a warning with the
    reason, not an error after the sampling."""
    text = GARCH.replace("    let e = y - mu\n", "    let total = y.sum()\n    let e = y - total\n")
    summary, results = _fit_with_predictive(text, tmp_path)
    assert summary.posterior is not None and not summary.stopped
    assert "posterior" in results.groups and "posterior_predictive" not in results.groups
    (warning,) = [w for w in summary.warnings if w.kind == "posterior_predictive"]
    assert "which it reads before the observe, did not settle" in warning.message


# ---------------------------------------------------------------- lags and tail

AR = """\
object Time : FinSet 9
object Later : FinSet 6
object Lag : FinSet 3

program ar : Time -> Time
    sample alpha <- Normal(0.0, 10.0)
    sample beta : Lag <- Normal(0.0, 1.0)
    sample sigma <- HalfNormal(1.0)
    sample z : Time <- Normal(0.0, 1.0)
    let zlags = lags(z, Lag)
    let zlater = tail(z, Later)
    let past = lags(y, Lag)
    let weighted = past * beta
    let mu = alpha + weighted.sum(1)
    let y_later = tail(y, Later)
    let mu_later = tail(mu, Later)
    observe y_later : Later <- Normal(mu_later, sigma)
    return mu

export ar
"""
Y9 = [0.4, -0.3, 1.1, 0.8, -0.6, 0.2, 1.5, -1.0, 0.7]


def test_lags_are_the_values_before_each_step_and_tail_the_last_ones() -> None:
    lags, tail = FUNCTION_IMPLEMENTATIONS["lags"], FUNCTION_IMPLEMENTATIONS["tail"]
    y = torch.tensor(Y9, dtype=torch.float64)
    got = lags(y, torch.tensor(3.0))
    assert got.shape == (9, 3)
    for t in range(9):
        for k in range(3):
            assert float(got[t, k]) == (Y9[t - k - 1] if t - k - 1 >= 0 else 0.0)
    assert tail(y, torch.tensor(4.0)).tolist() == Y9[5:]
    with pytest.raises(ValueError, match="10 entries of a series of 9"):
        tail(y, torch.tensor(10.0))


def test_lags_add_the_plate_and_tail_replaces_the_series_plate() -> None:
    module = check(AR)
    assert [d for d in module.diagnostics if d.is_error] == []
    lets = {s.name: s for s in module.models["ar"].steps if isinstance(s, Let)}
    labels = {n: lets[n].type.label for n in ("zlags", "zlater") if lets[n].type is not None}
    assert labels == {"zlags": "Time * Lag -> R", "zlater": "Later -> R"}


@pytest.mark.parametrize(
    ("old", "new", "where", "says"),
    [
        ("tail(z, Later)", "tail(z, Wide)", "tail(z, Wide)", "has 9 (Time)"),
        ("lags(z, Lag)", "lags(z, 3)", "3", "names a declared finite object"),
        ("lags(z, Lag)", "lags(alpha, Lag)", "alpha", "reads a series"),
    ],
)
def test_a_misused_lags_or_tail_is_refused_where_it_is_wrong(
    old: str, new: str, where: str, says: str
) -> None:
    text = AR.replace(old, new).replace("object Lag", "object Wide : FinSet 12\nobject Lag")
    errors = [d for d in check(text).diagnostics if d.is_error]
    assert [d.code for d in errors] == ["QVR207"], errors
    assert says in errors[0].message
    assert text[errors[0].span.start : errors[0].span.end] == where


def test_an_ar_model_scores_as_stans_loop() -> None:
    """Stan's arK: y[t] ~ normal(alpha + sum_k beta[k] * y[t - k], sigma) for t > K."""
    program = compile_model(check(AR), "ar")
    point = {"alpha": 0.1, "beta": [0.5, -0.2, 0.1], "sigma": 0.7, "z": [0.0] * 9}
    values = {k: torch.tensor(v, dtype=torch.float64) for k, v in point.items()}
    got = float(program.log_joint({"y": torch.tensor(Y9, dtype=torch.float64)}, values))
    d, f = torch.distributions, torch.float64
    want = (
        d.Normal(torch.tensor(0.0, dtype=f), 10.0).log_prob(values["alpha"])
        + d.Normal(torch.tensor(0.0, dtype=f), 1.0).log_prob(values["beta"]).sum()
        + d.HalfNormal(torch.tensor(1.0, dtype=f)).log_prob(values["sigma"])
        + d.Normal(torch.tensor(0.0, dtype=f), 1.0).log_prob(values["z"]).sum()
    )
    for t in range(3, 9):
        mu = 0.1 + sum(point["beta"][k] * Y9[t - k - 1] for k in range(3))  # type: ignore[index]
        want = want + d.Normal(torch.tensor(mu, dtype=f), 0.7).log_prob(
            torch.tensor(Y9[t], dtype=f)
        )
    assert got == pytest.approx(float(want), rel=1e-12)
