"""The run view's data after a fit (`qvr_core.posterior.view.fit_view`): ArviZ's numbers,
computed without ArviZ, bounded in size; on a real NUTS run of the centred eight schools,
on a real run of a model that diverges by construction (`tests/models/cliff.qvr`) and on
made-up results of a given size."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qvr_core.inference.results import RunResults
from qvr_core.posterior import view as fit
from qvr_core.posterior.view import fit_view
from qvr_lsp.runs.worker import PREDICTIVE_MAX_DRAWS, fit_view_of, predictive_refusal

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # arviz 0.2x announces its rewrite
    import arviz as az
    from arviz.plots.plot_utils import compute_ranks

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
TEST_MODELS = Path(__file__).resolve().parents[1] / "models"
#: 2 chains of 400 iterations (200 draws each). Whether the centred funnel diverges in so
#: short a run depends on the last bits of the CPU's arithmetic (it did at seed 1 with
#: AVX-512 kernels on one machine and not on another), so no test here needs it to: the
#: divergence tests run the cliff model, which diverges on about half its draws anywhere.
CHAINS, STEPS, SEED = 2, 400, 1


def nuts(model: Path, data: Path, *, predictive: bool = False) -> RunResults:
    """A real NUTS run of `model` on `data`, CHAINS x STEPS at SEED."""
    from qvr_core.runs.run import run_program

    results = RunResults()
    run_program(
        model.read_text(encoding="utf-8"),
        method="nuts",
        steps=STEPS,
        chains=CHAINS,
        seed=SEED,
        data=str(data),
        results=results,
        predictive=predictive,
    )
    return results


@pytest.fixture(scope="module")
def centred() -> RunResults:
    return nuts(
        MODELS / "eight_schools_centered.qvr", MODELS / "eight_schools.json", predictive=True
    )


@pytest.fixture(scope="module")
def view(centred: RunResults) -> dict[str, Any]:
    return fit_view(centred)


@pytest.fixture(scope="module")
def cliff() -> RunResults:
    """A real NUTS run whose draws diverge for sure (see the model's comment)."""
    return nuts(TEST_MODELS / "cliff.qvr", TEST_MODELS / "cliff.json")


def scalar(view: dict[str, Any], label: str) -> dict[str, Any]:
    return next(s for s in view["scalars"] if s["label"] == label)


def numbers(value: Any) -> int:
    """How many numbers (and nulls in their place) a JSON value holds."""
    if isinstance(value, dict):
        return sum(numbers(v) for v in value.values())
    if isinstance(value, list):
        return sum(numbers(v) for v in value)
    return 1 if value is None or isinstance(value, int | float) else 0


def made_up(chains: int, draws: int, sizes: dict[str, int], seed: int = 0) -> RunResults:
    rng = np.random.default_rng(seed)
    results = RunResults()
    results.add(
        "posterior", {n: rng.normal(size=(chains, draws, size)) for n, size in sizes.items()}
    )
    energy = rng.normal(size=(chains, draws)).cumsum(axis=1)
    diverging = np.zeros((chains, draws), dtype=bool)
    diverging[0, [3, 4, 5]] = True
    results.add("sample_stats", {"energy": energy, "diverging": diverging})
    results.attrs["method"] = "nuts"
    return results


# ------------------------------------------------------------------ a real run


def test_every_scalar_of_the_run_is_in_the_view_with_its_label(view, centred):
    assert view["method"] == "nuts" and view["group"] == "posterior"
    assert (view["chains"], view["draws"]) == (CHAINS, STEPS // 2)
    labels = [s["label"] for s in view["scalars"]]
    assert labels == ["mu", "tau", *(f"theta[{i}]" for i in range(8))]
    assert [(s["name"], s["first"], s["count"], s["omitted"]) for s in view["sites"]] == [
        ("mu", 0, 1, 0),
        ("tau", 1, 1, 0),
        ("theta", 2, 8, 0),
    ]
    theta = np.asarray(centred.groups["posterior"]["theta"])
    kept = scalar(view, "theta[3]")["draws"]
    for c, index in enumerate(view["draw_index"]):
        assert kept[c] == pytest.approx(theta[c, index, 3], rel=1e-3)


def test_divergent_flags_are_the_sampler_s_and_no_divergent_draw_is_thinned_away(cliff):
    view = fit_view(cliff)
    diverging = np.asarray(cliff.groups["sample_stats"]["diverging"])
    assert diverging.sum() > 0, "the cliff diverges on about half its draws"
    assert view["divergences"] == int(diverging.sum())
    for c, (index, flags) in enumerate(zip(view["draw_index"], view["diverging"], strict=True)):
        assert flags == diverging[c, index].tolist()
        assert set(np.flatnonzero(diverging[c])) <= set(index)
    assert view["warnings"][0]["kind"] == "divergences"
    assert f"{view['divergences']} of {CHAINS * STEPS // 2} draws" in view["warnings"][0]["message"]


def test_ranks_are_arviz_s_and_each_chain_s_counts_sum_to_its_draws(view, centred):
    draws = np.asarray(centred.groups["posterior"]["theta"])[:, :, 5]
    edges = np.asarray(view["rank_edges"])
    bins = int(np.ceil(2 * np.log2(view["draws"])) + 1)  # az.plot_rank: Sturges' formula x 2
    assert len(edges) == bins + 1 and edges[-1] == CHAINS * view["draws"]
    ranks = compute_ranks(draws)
    expected = [np.histogram(row, bins=edges)[0].tolist() for row in ranks]
    counts = scalar(view, "theta[5]")["ranks"]
    assert counts == expected
    for s in view["scalars"]:
        assert [sum(chain) for chain in s["ranks"]] == [view["draws"]] * CHAINS


def test_e_bfmi_is_arviz_s_and_a_low_one_warns_with_a_remedy(view, centred):
    energy = np.asarray(centred.groups["sample_stats"]["energy"])
    assert view["energy"]["bfmi"] == pytest.approx(az.bfmi(energy).tolist(), rel=1e-3)
    marginal = view["energy"]["marginal"]
    assert [len(chain) for chain in marginal] == [view["draws"]] * CHAINS
    assert marginal[0][0] == pytest.approx(energy[0, 0] - energy.mean(), rel=1e-3)
    assert view["energy"]["transition"][1][:3] == pytest.approx(
        np.diff(energy[1])[:3].tolist(), rel=1e-3
    )
    low = [v for v in view["energy"]["bfmi"] if v < fit.BFMI_MIN]
    kinds = [w["kind"] for w in view["warnings"]]
    assert ("e_bfmi" in kinds) == bool(low)
    for warning in view["warnings"]:
        assert warning["message"] and warning["remedy"] and warning["plot"] in ("pair", "energy")


def test_autocorrelation_and_intervals_are_arviz_s(view, centred):
    tau = np.asarray(centred.groups["posterior"]["tau"])
    row = scalar(view, "tau")
    assert len(row["autocorr"][0]) == fit.MAX_LAG + 1
    for c in range(CHAINS):
        assert row["autocorr"][c] == pytest.approx(az.autocorr(tau[c])[:101], abs=0.0051)
        mean, q25, q75, low, high = row["intervals"]["chains"][c]
        assert [low, high] == pytest.approx(az.hdi(tau[c], hdi_prob=0.94).tolist(), rel=1e-3)
        assert [mean, q25, q75] == pytest.approx(
            [tau[c].mean(), *np.quantile(tau[c], [0.25, 0.75])], rel=1e-3
        )
    combined = row["intervals"]["combined"]
    assert combined[3:] == pytest.approx(az.hdi(tau.reshape(-1), hdi_prob=0.94).tolist(), rel=1e-3)


def test_the_predictive_check_has_the_observed_data_and_bounded_replicated_draws(view):
    (ppc,) = view["ppc"]
    assert ppc["site"] == "y" and ppc["group"] == "posterior_predictive"
    assert ppc["kind"] == "continuous"  # y is whole numbers, its Normal replicates are not
    assert ppc["observed"] == [28, 8, -3, 7, -1, 1, 18, 12]
    assert len(ppc["replicated"]) == fit.PPC_DRAWS and ppc["draws"] == CHAINS * STEPS // 2
    assert all(len(draw) == 8 for draw in ppc["replicated"])


def test_the_view_is_json_without_nan(view):
    text = json.dumps(view, allow_nan=False)
    assert len(text) < 200_000


# ------------------------------------------------------------------ bounds
# From here on: made-up results (NumPy's generator) and the view's NumPy code, no torch
# kernel and no sampler, so the AVX2 pass of ./dev test has nothing to add (kernel_free).


@pytest.mark.kernel_free
def test_a_large_run_is_cut_to_the_bounds_and_says_so():
    results = made_up(4, 1000, {"w": 3000, "b": 10})
    view = fit_view(results, max_values=300_000, max_scalars=500)
    assert numbers(view["scalars"]) <= 300_000
    assert len(view["scalars"]) == 500
    assert [(s["name"], s["count"], s["omitted"]) for s in view["sites"]] == [
        ("w", 500, 2500),
        ("b", 0, 10),
    ]
    bounds = view["bounds"]
    assert bounds["scalars"] == 3010 and bounds["shown"] == 500
    assert bounds["points"] == fit.MIN_POINTS  # 500 a chain would not fit
    with_draws = [s for s in view["scalars"] if s["draws"] is not None]
    assert len(with_draws) == bounds["with_draws"] < 500
    assert view["scalars"][-1]["draws"] is None and view["scalars"][-1]["ranks"] is not None
    assert all(len(chain) == fit.MIN_POINTS for chain in with_draws[0]["draws"][1:])
    assert len(with_draws[0]["draws"][0]) == fit.MIN_POINTS + 3  # its divergent draws too
    assert len(json.dumps(view)) < 3_000_000
    # a budget that does not hold even each scalar's ranks, lags and intervals: fewer scalars
    tight = fit_view(results, max_values=100_000, max_scalars=500)
    assert numbers(tight["scalars"]) <= 100_000
    assert tight["bounds"]["shown"] == len(tight["scalars"]) < 500
    assert tight["sites"][0]["omitted"] == 3000 - len(tight["scalars"])


@pytest.mark.kernel_free
def test_the_default_bounds_hold_a_thousand_scalars_of_four_long_chains():
    view = fit_view(made_up(4, 2000, {"w": 5000}))
    assert len(view["scalars"]) == fit.MAX_SCALARS
    assert numbers(view["scalars"]) <= fit.MAX_VALUES
    assert all(s["draws"] is not None for s in view["scalars"])
    assert len(json.dumps(view)) < 8_000_000


@pytest.mark.kernel_free
def test_a_small_run_keeps_every_draw_and_max_points_thins_the_rest():
    view = fit_view(made_up(2, 80, {"a": 2}))
    assert view["draw_index"][1] == list(range(80))
    view = fit_view(made_up(2, 2000, {"a": 2}), max_points=300)
    assert len(view["draw_index"][1]) == 300 and view["draw_index"][1][-1] == 1999
    assert {3, 4, 5} <= set(view["draw_index"][0])
    assert len(view["scalars"][0]["draws"][1]) == 300


@pytest.mark.kernel_free
def test_numbers_keep_four_significant_digits_and_non_finite_ones_become_null():
    assert fit._rounded(np.array([123456.7, 0.000123456, -2.5, 0.0, np.nan, np.inf])) == [
        123500.0,
        0.0001235,
        -2.5,
        0.0,
        None,
        None,
    ]


@pytest.mark.kernel_free
def test_a_discrete_site_s_check_is_discrete_and_a_prior_run_checks_its_prior_predictive():
    rng = np.random.default_rng(1)
    results = RunResults()
    results.add("prior", {"rate": rng.gamma(2.0, size=(1, 100))})
    results.add("prior_predictive", {"count": rng.poisson(3.0, size=(1, 100, 20)).astype(float)})
    results.attrs["method"] = "prior"
    view = fit_view(results)
    assert view["group"] == "prior" and view["energy"] is None and view["rank_edges"] is None
    assert view["scalars"][0]["ranks"] is None and view["scalars"][0]["autocorr"] is None
    (ppc,) = view["ppc"]
    assert (ppc["site"], ppc["group"], ppc["kind"]) == ("count", "prior_predictive", "discrete")
    assert ppc["observed"] is None and len(ppc["replicated"]) == fit.PPC_DRAWS
    assert view["warnings"] == [] and view["divergences"] == 0


# ------------------------------------------------------------------ the worker's side


@pytest.mark.kernel_free
def test_the_worker_draws_the_posterior_predictive_only_within_its_bounds():
    nuts = {"method": "nuts", "steps": 1000, "chains": 4}
    assert predictive_refusal(nuts, 79) is None
    assert predictive_refusal({**nuts, "method": "svi"}, 10**9) is None  # not asked for
    many = {**nuts, "steps": 2 * PREDICTIVE_MAX_DRAWS}
    assert "draws (at most 8,000)" in (predictive_refusal(many, 79) or "")
    assert "bytes of data" in (predictive_refusal(nuts, 10**6) or "")


@pytest.mark.kernel_free
def test_a_view_that_cannot_be_computed_is_an_error_in_the_view_not_the_run():
    results = made_up(2, 50, {"a": 1})
    results.groups["sample_stats"]["energy"] = np.array([["high"] * 50] * 2)
    view = fit_view_of(results)
    assert list(view) == ["error"]
    assert view["error"].startswith("the fit view could not be computed: ValueError: could not")
