"""A step option written as a flag runs as the step without it: the checker drops it from
the resolved model (check/step_flags.py), so the compiled program, and every run of it,
is the program without the flag. Compared exactly, at the same values and the same seed,
never against a sampler's outcome."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runs.fit import fit
from qvr_core.runtime.model import compile_model
from qvr_core.text import rules
from tests.check.test_step_flags import mixture, program

Y3 = [0.4, -1.1, 2.0]
Y6 = [0.3, 2.2, -0.4, 1.9, 2.4, -0.1]


def _only_warnings(text: str) -> None:
    module = check(text)
    assert [d.code for d in module.diagnostics if d.is_error] == []
    assert rules.OPTION_WITHOUT_VALUE.code in [d.code for d in module.diagnostics]


def test_the_log_joint_of_a_flagged_step_is_the_plain_ones() -> None:
    flagged = program(" [iid_over]", " [over]")
    _only_warnings(flagged)
    mu, sigma = torch.tensor(0.3, dtype=torch.float64), torch.tensor(1.4, dtype=torch.float64)
    y = torch.tensor(Y3, dtype=torch.float64)
    values = {"mu": mu, "sigma": sigma, "y": y}
    got = compile_model(check(flagged), "p").log_joint({}, values)
    want = (
        D.Normal(0.0, 1.0).log_prob(mu)
        + D.HalfNormal(1.0).log_prob(sigma)
        + D.Normal(mu, sigma).log_prob(y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want)
    plain = compile_model(check(program()), "p").log_joint({}, values)
    torch.testing.assert_close(got, plain)


def test_a_reduction_flag_sums_exactly_and_a_via_flag_maps_nothing() -> None:
    """quivers' default reduction, `logsumexp`: the mixture's exact likelihood."""
    flagged = mixture(", reduction", " [via]")
    _only_warnings(flagged)
    w = torch.tensor([0.3, 0.7], dtype=torch.float64)
    mu = torch.tensor([-1.0, 2.0], dtype=torch.float64)
    y = torch.tensor(Y6, dtype=torch.float64)
    values = {"w": w, "mu": mu, "y": y}
    got = compile_model(check(flagged), "mix").log_joint({}, values)
    rows = torch.logsumexp(w.log() + D.Normal(mu, 1.0).log_prob(y[:, None]), dim=1)
    want = (
        D.Dirichlet(torch.ones(2, dtype=torch.float64)).log_prob(w)
        + D.Normal(0.0, 2.0).log_prob(mu).sum()
        + rows.sum()
    )
    torch.testing.assert_close(got.reshape(()), want)


@pytest.mark.parametrize(
    ("method", "arguments"),
    [
        ("prior", {"steps": 20}),
        ("nuts", {"steps": 40, "chains": 2, "max_tree_depth": 3}),
        ("svi", {"steps": 30}),
    ],
)
def test_prior_nuts_and_svi_run_it_as_the_plain_program(
    tmp_path: Path, method: str, arguments: dict[str, int]
) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"y": Y3}))
    runs = [
        fit(text, method=method, seed=3, data=str(data), **arguments)
        for text in (program(" [iid_over]", " [over]"), program())
    ]
    flagged, plain = (r.results.groups for r in runs)
    assert flagged.keys() == plain.keys()
    assert any("mu" in arrays for arrays in plain.values())
    for group, arrays in plain.items():
        assert flagged[group].keys() == arrays.keys(), group
        for name, array in arrays.items():
            np.testing.assert_array_equal(flagged[group][name], array, err_msg=f"{group}/{name}")
