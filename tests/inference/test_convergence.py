"""Convergence numbers against ArviZ's on the same draws, and each warning forced.

ArviZ (a test extra) is the oracle: `az.summary` and `az.bfmi` on draws with
known troubles (autocorrelated chains, chains stuck apart, ties, odd lengths).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from qvr_core.inference import convergence
from qvr_core.inference.summary import SamplerStats, summarize

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # arviz 0.2x announces its refactor
    az = pytest.importorskip("arviz")


def ar1(rng: np.random.Generator, chains: int, draws: int, rho: float, *shape: int) -> np.ndarray:
    x = np.zeros((chains, draws, *shape))
    x[:, 0] = rng.standard_normal((chains, *shape))
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.standard_normal((chains, *shape))
    return x


def draw_sets() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [
        {"mu": ar1(rng, 4, 200, 0.5), "w": ar1(rng, 4, 200, 0.95, 2, 3)},
        {"stuck": ar1(rng, 4, 101, 0.3) + np.arange(4)[:, None] * 0.5},  # odd length, apart
        {"k": rng.integers(0, 3, size=(3, 60, 2)).astype(float)},  # ties everywhere
        {"walk": np.cumsum(rng.standard_normal((2, 50, 4)), axis=1)},
    ]


@pytest.mark.parametrize("draws", draw_sets(), ids=["ar1", "apart", "ties", "walk"])
def test_the_summary_equals_arvizs_to_1e6(draws: dict[str, np.ndarray]) -> None:
    ours = summarize(draws, rows_per_site=1000)
    theirs = az.summary(az.from_dict(posterior=draws), round_to="none")
    quantiles = az.from_dict(posterior=draws).posterior.quantile(
        [0.05, 0.5, 0.95], dim=("chain", "draw")
    )
    assert len(ours.rows) == len(theirs)
    for row in ours.rows:
        expected = theirs.loc[row["label"]]
        for ours_key, their_key in [
            ("mean", "mean"),
            ("sd", "sd"),
            ("ess_bulk", "ess_bulk"),
            ("ess_tail", "ess_tail"),
            ("r_hat", "r_hat"),
        ]:
            assert row[ours_key] == pytest.approx(expected[their_key], rel=1e-6, abs=1e-9), (
                row["label"],
                ours_key,
            )
        q = quantiles[row["site"]].values[(slice(None), *row["index"])]
        assert [row["q5"], row["q50"], row["q95"]] == pytest.approx(list(q), rel=1e-9)


def test_e_bfmi_equals_arvizs() -> None:
    energy = np.cumsum(np.random.default_rng(3).standard_normal((4, 80)), axis=1)
    assert convergence.e_bfmi(energy) == pytest.approx(az.bfmi(energy), rel=1e-9)


def test_rhat_and_ess_on_many_random_chains_equal_arvizs() -> None:
    from arviz.stats.diagnostics import _ess_bulk, _ess_tail, _rhat_rank

    rng = np.random.default_rng(7)
    for _ in range(60):
        chains, n = int(rng.integers(2, 5)), int(rng.integers(4, 90))
        x = ar1(rng, chains, n, float(rng.uniform(-0.8, 0.98)), 2)
        for k in range(2):
            col = x[:, :, k]
            assert convergence.rhat(x)[k] == pytest.approx(_rhat_rank(col), rel=1e-9)
            assert convergence.ess_bulk(x)[k] == pytest.approx(_ess_bulk(col), rel=1e-9)
            assert convergence.ess_tail(x)[k] == pytest.approx(_ess_tail(col), rel=1e-9)


def calm_stats(chains: int, draws: int) -> SamplerStats:
    rng = np.random.default_rng(1)
    return SamplerStats(
        diverging=np.zeros((chains, draws), dtype=bool),
        tree_depth=np.full((chains, draws), 3),
        energy=rng.standard_normal((chains, draws)) * 3,  # independent: E-BFMI about 2
        max_tree_depth=10,
    )


def kinds(summary: object) -> set[str]:
    return {w.kind for w in summary.warnings}  # type: ignore[attr-defined]


def test_good_draws_give_no_warning() -> None:
    good = {"mu": np.random.default_rng(2).standard_normal((4, 500))}
    assert kinds(summarize(good, calm_stats(4, 500))) == set()


def test_each_threshold_forces_its_warning_and_only_it() -> None:
    rng = np.random.default_rng(4)
    iid = rng.standard_normal((4, 500))
    apart = {"mu": iid + np.arange(4)[:, None] * 0.3}
    summary = summarize(apart, calm_stats(4, 500))
    assert "r_hat" in kinds(summary) and summary.sites["mu"]["r_hat_max"] > 1.01

    sticky = {"mu": ar1(rng, 4, 500, 0.97)}  # mixed, but few effective draws
    summary = summarize(sticky, calm_stats(4, 500))
    assert "ess" in kinds(summary) and summary.sites["mu"]["ess_bulk_min"] < 400

    good = {"mu": iid}
    stats = calm_stats(4, 500)
    stats.diverging[2, 17] = True
    assert kinds(summarize(good, stats)) == {"divergences"}

    stats = calm_stats(4, 500)
    stats.tree_depth[0, :5] = stats.max_tree_depth
    assert kinds(summarize(good, stats)) == {"tree_depth"}

    stats = calm_stats(4, 500)
    walk = np.cumsum(rng.standard_normal(500))  # a random walk: E-BFMI near 0
    stats.energy[1] = walk - np.median(walk)  # where the other chains are
    summary = summarize(good, stats)
    assert kinds(summary) == {"e_bfmi"} and "chain 1" in summary.warnings[0].message

    stats = calm_stats(4, 500)
    stats.energy[2] += 40.0  # a chain in a mode of much lower density (a local mode)
    summary = summarize(good, stats)
    assert (
        kinds(summary) == {"apart"} and "chain 2 stayed where chain" in summary.warnings[0].message
    )
    assert all(w.remedy for w in summary.warnings)


def test_chains_stuck_together_are_apart_from_the_lowest_and_calm_ones_are_not() -> None:
    from qvr_core.inference.summary import _apart_chains

    rng = np.random.default_rng(5)
    for draws in (20, 100, 1000):  # short chains: their medians stay inside each other
        for _ in range(50):
            calm = rng.standard_normal((4, draws)) * 3 + 100.0
            assert _apart_chains(calm)[0] == []
    two = rng.standard_normal((4, 500)) * 3 + 100.0
    two[[1, 3]] += 30.0  # half the chains in one other mode: still found
    assert _apart_chains(two) == ([1, 3], _apart_chains(two)[1])
    assert _apart_chains(two)[1] in (0, 2)
    assert _apart_chains(np.full((1, 10), 1.0)) == ([], 0)  # one chain: nothing to compare


def test_thresholds_are_exact() -> None:
    """ESS exactly 100 per chain is enough; R-hat exactly 1.01 is still fine."""
    from qvr_core.inference import summary as module

    sites = {"a": {"r_hat_max": 1.01, "ess_bulk_min": 400.0, "ess_tail_min": 400.0}}
    assert module._convergence_warnings(sites, 4) == []
    sites = {"a": {"r_hat_max": 1.0101, "ess_bulk_min": 399.9, "ess_tail_min": 500.0}}
    assert {w.kind for w in module._convergence_warnings(sites, 4)} == {"r_hat", "ess"}


def test_large_sites_list_their_first_elements_and_keep_the_worst() -> None:
    draws = {"w": np.random.default_rng(5).standard_normal((2, 40, 30))}
    draws["w"][:, :, 29] += np.array([0.0, 5.0])[:, None]  # the last element disagrees
    summary = summarize(draws, rows_per_site=4)
    assert [r["label"] for r in summary.rows] == ["w[0]", "w[1]", "w[2]", "w[3]"]
    assert summary.sites["w"]["r_hat_max"] > 1.5 and "r_hat" in kinds(summary)


def test_too_few_draws_to_judge_is_a_warning_not_silence() -> None:
    summary = summarize({"mu": np.zeros((4, 3))})
    assert kinds(summary) == {"draws"} and np.isnan(summary.rows[0]["r_hat"])
