"""The pointwise log-likelihood of a model program (`ModelProgram.log_likelihood`): at a
fixed draw, each term is the one torch.distributions gives by hand, and the terms add
up to the log joint less every latent's log-density, marginalised scopes included."""

from __future__ import annotations

import itertools
import json
import math

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.inference.discrete import summed_out
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.model.enumerate import SummedModel
from tests.conftest import EXAMPLES

MODELS = EXAMPLES / "models"
F64 = torch.float64


def program(source: str) -> ModelProgram:
    checked = check(source)
    assert checked.ok, [d.message for d in checked.errors]
    name = checked.default_export
    assert name is not None
    return compile_model(checked, name)


def example(name: str) -> ModelProgram:
    return program((MODELS / f"{name}.qvr").read_text())


def data(name: str) -> dict[str, torch.Tensor]:
    raw = json.loads((MODELS / f"{name}.json").read_text())
    return {k: torch.tensor(v, dtype=F64) for k, v in raw.items()}


def t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def test_eight_schools_terms_are_normal_densities_one_per_school() -> None:
    m = example("eight_schools_centered")
    d = data("eight_schools")
    x, y = {"sigma": d["sigma"]}, d["y"]
    theta = t(10.0, 7.0, -2.0, 6.5, 0.0, 3.0, 15.0, 9.0)
    values = {"mu": torch.tensor(5.0, dtype=F64), "tau": torch.tensor(3.0, dtype=F64)}
    values["theta"] = theta
    terms = m.log_likelihood(x, {"y": y}, values)
    assert list(terms) == ["y"] and terms["y"].shape == (8,)
    expected = D.Normal(theta, d["sigma"]).log_prob(y)
    torch.testing.assert_close(terms["y"], expected, rtol=0, atol=1e-12)
    prior = (
        D.Normal(t(0.0), t(5.0)).log_prob(values["mu"])
        + D.HalfCauchy(t(5.0)).log_prob(values["tau"])
        + D.Normal(values["mu"], values["tau"]).log_prob(theta).sum()
    )
    joint = m.log_joint(x, {**values, "y": y})
    assert float(terms["y"].sum()) == pytest.approx(float(joint - prior), abs=1e-9)


def test_the_mixture_terms_are_each_points_marginal_and_sum_to_the_likelihood() -> None:
    m = example("gaussian_mixture")
    y = data("gaussian_mixture")["y"]
    w, mu, sigma = t(0.35, 0.65), t(-2.1, 2.9), t(0.9, 1.1)
    values = {"weights": w, "mu": mu, "sigma": sigma}
    terms = m.log_likelihood({}, {"y": y}, values)
    assert list(terms) == ["y"] and terms["y"].shape == (100,)
    per_component = torch.stack(
        [w[k].log() + D.Normal(mu[k], sigma[k]).log_prob(y) for k in (0, 1)]
    )
    torch.testing.assert_close(terms["y"], torch.logsumexp(per_component, 0), rtol=0, atol=1e-12)
    prior = (
        D.Dirichlet(torch.full((2,), 2.0, dtype=F64)).log_prob(w)
        + D.Normal(t(0.0), t(10.0)).log_prob(mu).sum()
        + D.HalfNormal(t(2.0)).log_prob(sigma).sum()
    )
    joint = m.log_joint({}, {**values, "y": y})
    assert float(terms["y"].sum()) == pytest.approx(float(joint - prior), abs=1e-9)


def test_an_hmm_has_one_term_per_sequence_the_sum_over_its_state_paths() -> None:
    m = example("hmm")
    d = data("hmm")
    obs = {f"o{i}": d[f"o{i}"] for i in range(4)}
    start = t(0.7, 0.3)
    trans = t(0.8, 0.2, 0.3, 0.7).reshape(2, 2)
    emit = t(0.6, 0.3, 0.1, 0.2, 0.2, 0.6).reshape(2, 3)
    values = {"start": start, "trans": trans, "emit": emit}
    terms = m.log_likelihood({}, obs, values)
    assert list(terms) == ["o0+o1+o2+o3"]
    (term,) = terms.values()
    assert term.shape == (40,)
    symbols = torch.stack([obs[f"o{i}"] for i in range(4)]).long()  # (4, 40)
    paths = []
    for path in itertools.product((0, 1), repeat=4):  # every state path, summed by hand
        lp = start[path[0]].log() + emit[path[0], symbols[0]].log()
        for i in range(1, 4):
            lp = lp + trans[path[i - 1], path[i]].log() + emit[path[i], symbols[i]].log()
        paths.append(lp)
    torch.testing.assert_close(term, torch.logsumexp(torch.stack(paths), 0), rtol=0, atol=1e-10)
    prior = (
        D.Dirichlet(torch.ones(2, dtype=F64)).log_prob(start)
        + D.Dirichlet(torch.ones(2, dtype=F64)).log_prob(trans).sum()
        + D.Dirichlet(torch.ones(3, dtype=F64)).log_prob(emit).sum()
    )
    joint = m.log_joint({}, {**values, **obs})
    assert float(term.sum()) == pytest.approx(float(joint - prior), abs=1e-9)


def test_a_latent_inside_a_scope_stays_out_of_the_likelihood() -> None:
    """A scope's term is log p(y, u) - log p(u) per group: its own latent u is a prior term."""
    m = program(
        """
object Component : FinSet 2
object Point : FinSet 6

program m : Point -> Point
    sample w <- Dirichlet(2.0) [over=Component]
    sample mu : Component <- Normal(0.0, 3.0)
    marginalize z : Component <- Categorical(w) [over=Point]
        sample u : Point <- Normal(mu[z], 1.0)
        observe y : Point <- Normal(u, 0.5)
    return w

export m
"""
    )
    y = t(-1.2, 2.0, 0.0, 2.6, 0.3, 1.0)
    w, mu, u = t(0.4, 0.6), t(-1.0, 2.0), t(-0.8, 1.5, 0.2, 2.2, 0.0, 1.1)
    terms = m.log_likelihood({}, {"y": y}, {"w": w, "mu": mu, "u": u})
    latent = torch.stack([w[k].log() + D.Normal(mu[k], 1.0).log_prob(u) for k in (0, 1)])
    both = latent + D.Normal(u, 0.5).log_prob(y)
    expected = torch.logsumexp(both, 0) - torch.logsumexp(latent, 0)
    torch.testing.assert_close(terms["y"], expected, rtol=0, atol=1e-12)


def test_a_score_is_a_factor_of_the_joint_not_a_likelihood_term() -> None:
    m = program(
        """
object Row : FinSet 3

program m : Row -> Row
    sample alpha <- Normal(0.0, 1.0)
    score shrink = -0.5 * alpha * alpha
    observe y : Row <- Normal(alpha, 1.0)
    return alpha

export m
"""
    )
    y, alpha = t(0.5, -0.2, 1.0), torch.tensor(0.3, dtype=F64)
    terms = m.log_likelihood({}, {"y": y}, {"alpha": alpha})
    assert list(terms) == ["y"]
    torch.testing.assert_close(terms["y"], D.Normal(alpha, 1.0).log_prob(y), rtol=0, atol=1e-12)


def test_a_summed_discrete_latent_gives_each_point_its_marginal() -> None:
    """NUTS sums a discrete latent without data out; the terms are its marginal per entry of
    its plates, whatever value a posterior draw gave it."""
    m = program(
        """
object Point : FinSet 5

program m : Point -> Point
    sample mu <- Normal(0.0, 1.0)
    sample z : Point <- Bernoulli(0.3)
    let s = z + 1.0
    observe y : Point <- Normal(mu, s)
    return mu

export m
"""
    )
    y = t(-1.2, 2.0, 0.0, 2.6, 0.3)
    summed = summed_out(m, {"y": y})
    assert isinstance(summed, SummedModel)
    mu = torch.tensor(0.4, dtype=F64)
    drawn = {"mu": mu, "z": torch.ones(5, dtype=F64)}  # a draw of z: left out of the terms
    terms = summed.log_likelihood({}, {"y": y}, drawn)
    expected = torch.logsumexp(
        torch.stack(
            [
                math.log(0.7) + D.Normal(mu, 1.0).log_prob(y),
                math.log(0.3) + D.Normal(mu, 2.0).log_prob(y),
            ]
        ),
        0,
    )
    torch.testing.assert_close(terms["y"], expected, rtol=0, atol=1e-12)
    joint = summed.log_joint({}, {"mu": mu, "y": y})
    prior = D.Normal(t(0.0), t(1.0)).log_prob(mu)
    assert float(terms["y"].sum()) == pytest.approx(float(joint - prior), abs=1e-12)
