"""NUTS and SVI on model programs with discrete latent sites (`inference.discrete`): the
sites are summed out, drawn back from their exact posterior, and reported; the corpus
programs that used to be refused now run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import distributions as D

from qvr_core.inference.errors import InferenceError
from qvr_core.runs.fit import fit
from qvr_core.runs.run import run_program
from tests.runs.cli import qvr_here

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"

#: Data under which x's posterior is far from its prior (0.3) and from 0 or 1.
Y = [-1.2, 2.0, 0.0, 2.6]
Y_ONLY = [1.5, 1.7, 1.5, 1.7]

#: x doubles the noise of y around mu: mu is conjugate given x, so p(x | y) has a closed
#: form, and mu's posterior stays one mode (a chain reaches all of it).
SWITCH = """
object Obs : FinSet 4

program switch : Obs -> Obs
    sample mu <- Normal(0.0, 1.0)
    sample x <- Bernoulli(0.3)
    let s = x + 1.0
    observe y : Obs <- Normal(mu, s)
    return mu

export switch
"""

#: The same without mu: every latent is discrete.
ONLY_DISCRETE = """
object Obs : FinSet 4

program switch : Obs -> Obs
    sample x <- Bernoulli(0.3)
    let m = x * 3.0
    observe y : Obs <- Normal(m, 1.0)
    return x

export switch
"""


def data_file(tmp_path: Path, y: list[float] = Y) -> Path:
    path = tmp_path / "y.json"
    path.write_text(json.dumps({"y": y}), encoding="utf-8")
    return path


def switch_posterior() -> tuple[float, float]:
    """P(x = 1 | y) and E[mu | y]: given x, y ~ N(0, (1 + x)^2 I + 1 1^T) with mu
    integrated out, and E[mu | y, x] = sum(y) / (n + (1 + x)^2)."""
    y = torch.tensor(Y, dtype=torch.float64)
    n = len(Y)
    eye, zero = torch.eye(n, dtype=torch.float64), torch.zeros(n, dtype=torch.float64)
    log_w = torch.stack(
        [
            math.log(p) + D.MultivariateNormal(zero, (1.0 + x) ** 2 * eye + 1.0).log_prob(y)
            for x, p in ((0, 0.7), (1, 0.3))
        ]
    )
    post = torch.softmax(log_w, 0)
    mean_mu = sum(float(post[x]) * float(y.sum()) / (n + (1 + x) ** 2) for x in (0, 1))
    return float(post[1]), mean_mu


def only_discrete_posterior() -> tuple[float, float]:
    """P(x = 1 | y) and log p(y) when x is the only latent."""
    y = torch.tensor(Y_ONLY, dtype=torch.float64)
    log_w = torch.stack(
        [math.log(p) + D.Normal(3.0 * x, 1.0).log_prob(y).sum() for x, p in ((0, 0.7), (1, 0.3))]
    )
    return float(torch.softmax(log_w, 0)[1]), float(torch.logsumexp(log_w, 0))


def rows(summary: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r["label"]: r for r in summary["posterior"]["rows"]}


def test_nuts_draws_the_discrete_site_from_its_exact_posterior(tmp_path: Path) -> None:
    p1, mean_mu = switch_posterior()
    assert 0.5 < p1 < 0.7  # the prior's 0.3 would fail
    done = fit(SWITCH, method="nuts", steps=400, chains=2, seed=1, data=data_file(tmp_path))
    s = done.summary
    assert set(s["posterior"]["sites"]) == {"mu", "x"} and set(s["r_hat"]) == {"mu", "x"}
    got = rows(s)
    assert abs(got["x"]["mean"] - p1) < 0.12, (got["x"]["mean"], p1)
    assert abs(got["mu"]["mean"] - mean_mu) < 0.2, (got["mu"]["mean"], mean_mu)
    assert s["r_hat_max"] < 1.05
    x = done.results.groups["posterior"]["x"]
    assert x.shape == (2, 200) and set(np.unique(x).tolist()) <= {0.0, 1.0}


def test_svi_reports_the_discrete_site_drawn_given_each_guide_draw(tmp_path: Path) -> None:
    s = run_program(SWITCH, method="svi", steps=300, lr=0.05, seed=0, data=data_file(tmp_path))
    assert set(s.to_json()["posterior"]["sites"]) == {"mu", "x"}
    x = rows(s.to_json())["x"]
    assert 0.0 < x["mean"] < 1.0 and x["q5"] in (0.0, 1.0)
    assert math.isfinite(s.losses[-1])


def test_svi_with_only_discrete_latents_is_exact(tmp_path: Path) -> None:
    p1, log_evidence = only_discrete_posterior()
    assert 0.5 < p1 < 0.7
    y = data_file(tmp_path, Y_ONLY)
    s = run_program(ONLY_DISCRETE, method="svi", steps=50, seed=0, data=y)
    assert s.losses == pytest.approx([-log_evidence], rel=1e-5)  # one exact evaluation
    mean = rows(s.to_json())["x"]["mean"]
    assert abs(mean - p1) < 5 * math.sqrt(p1 * (1 - p1) / 200) + 1e-3


def test_nuts_with_only_discrete_latents_draws_them_exactly(tmp_path: Path) -> None:
    p1, _ = only_discrete_posterior()
    y = data_file(tmp_path, Y_ONLY)
    done = fit(ONLY_DISCRETE, method="nuts", steps=400, chains=2, seed=0, data=y)
    s = done.summary
    assert s["num_warmup"] == 0 and s["num_samples"] == 200 and s["chains"] == 2
    assert s["acceptance"] is None and s["step_size"] is None  # no sampler ran
    mean = rows(s)["x"]["mean"]
    assert abs(mean - p1) < 5 * math.sqrt(p1 * (1 - p1) / 400) + 1e-3
    assert done.results.groups["posterior"]["x"].shape == (2, 200)
    again = run_program(ONLY_DISCRETE, method="nuts", steps=400, chains=2, seed=0, data=y)
    assert rows(again.to_json())["x"]["mean"] == mean  # seeded as chains are


def test_a_discrete_site_with_infinitely_many_values_is_still_refused() -> None:
    source = SWITCH.replace("Bernoulli(0.3)", "Poisson(0.3)")
    with pytest.raises(InferenceError, match=r"site 'x' is discrete"):
        run_program(source, method="nuts", steps=10, chains=1)


# ------------------------------------------------------------------ the corpus

#: The corpus files whose only latent trouble was a discrete site (issue #26), with it.
CORPUS_DISCRETE = {
    **{
        f"tests__transpile__fixtures__statements/{name}.qvr": "x"
        for name in (
            "bundle_decl@315be83",
            "category_decl@87d9913",
            # composition_decl@c5079c6 is refused, as quivers 0.25.2 refuses its body
            # (QVR316; docs/corpus.md)
            "contraction_decl@c5079c6",
            "decoder_decl@f2c994f",
            "deduction_decl@f2c994f",
            "encoder_decl@f2c994f",
            "export_decl@c5079c6",
            "object_decl_finset@f2c994f",
            "rule_decl@b6d1336",
            "rule_decl@f2c994f",
            "schema_decl@f2c994f",
            "signature_decl@f2c994f",
        )
    },
    "docs__examples__source/hmm@c863ffe.qvr": "state",
    "tests__transpile__fixtures__families/bernoulli@c5079c6.qvr": "theta",
}


def corpus_source(name: str) -> str:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"the corpus is not at {CORPUS}")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("method", ["nuts", "svi"])
@pytest.mark.parametrize("name", sorted(CORPUS_DISCRETE))
def test_corpus_programs_with_a_discrete_latent_run(name: str, method: str) -> None:
    s = run_program(corpus_source(name), method=method, steps=16, chains=2, seed=0)
    site = CORPUS_DISCRETE[name]
    assert site in s.to_json()["posterior"]["sites"]
    assert all(math.isfinite(v) for v in s.losses)


def test_the_command_line_runs_the_hmm_with_its_state(tmp_path: Path) -> None:
    corpus_source("docs__examples__source/hmm@c863ffe.qvr")
    path = CORPUS / "docs__examples__source/hmm@c863ffe.qvr"
    for method in ("nuts", "svi"):
        done = qvr_here(
            "run", str(path), "--method", method, "--steps", "10", "--chains", "2", "--json"
        )
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert "state" in summary["posterior"]["sites"]
