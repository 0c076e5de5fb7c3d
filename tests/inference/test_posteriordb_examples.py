"""Every posteriordb posterior written in examples/posteriordb fits with the defaults of
`qvr run --method nuts` (4 chains x (1,000 + 1,000), in this process as the bench runs it)
and matches posteriordb's reference by its rule: each parameter's mean within 0.1 reference
sd + 3 MCSE, its sd within 0.8-1.25 of the reference's, R-hat <= 1.01.

The rule's tolerances come from the fit's own Monte Carlo error, not from a seed's draws, so
the test holds on any CPU. The references are ../shared/posteriordb's (not in this
repository): without them the test is skipped.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.posteriordb import DEFAULT_DB, EXPRESSIBLE, MODELS, Settings, fit_model, reference

DEFAULTS = Settings(draws=1000, warmup=1000, chains=4, seed=1, stan_rebuild=False)
#: Posteriors whose one-click fit is not yet reliable, and why (issue 47): a test that
#: fails on some seeds would fail on some CPUs. None now: gp_pois_regr's funnel of alpha
#: and f_tilde left R-hat above 1.01 at four of six seeds while the low-rank metric's
#: correction fitted its bulk; a window far from Gaussian now keeps the diagonal
#: (`inference.fisher.far_from_gaussian`), and seeds 1-6 converge and match.
UNRELIABLE: set[str] = set()


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


@pytest.mark.slow
def test_numpyros_engine_fits_the_gaussian_process_to_the_reference() -> None:
    """`--engine numpyro` on the posterior whose one-click fit is qvr's slowest (issue 47):
    the same defaults and the same rule, the draws read back under qvr's names."""
    pytest.importorskip("numpyro")
    name = "gp_pois_regr-gp_pois_regr"
    if not (DEFAULT_DB / name / "reference.json").is_file():
        pytest.skip(f"{DEFAULT_DB / name} is not here")
    settings = replace(DEFAULTS, engine="numpyro")
    (fit,) = fit_model(
        name, EXPRESSIBLE[name], DEFAULT_DB, [], settings, reference(DEFAULT_DB, name), False
    )
    assert fit.matches, fit.worst
