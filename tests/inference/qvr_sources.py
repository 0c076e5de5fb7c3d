"""QVR programs with known answers, used by the inference tests."""

from __future__ import annotations

import torch

#: mu ~ Normal(m0, 1) per example, y | mu ~ Normal(mu * 1_8, 0.5^2 I). A constant
#: input (FinSet 1) feeds the prior kernel, whose linear network is set to the
#: constant m0; the likelihood's linear network is set to broadcast mu.
NORMAL_NORMAL = """
object One : FinSet 1
object Mu : Real 1
object Obs : Real 8

#! the prior of the mean: a kernel from the one-point set
morphism mu_prior : One -> Mu [role=kernel, param_source=linear, scale=1.0] ~ Normal
morphism lik : Mu -> Obs [role=kernel, param_source=linear, scale=0.5] ~ Normal

program normal_normal : One -> Obs
    sample mu <- mu_prior
    observe y : Obs <- lik(mu)
    return y

export normal_normal
"""
SIGMA = 0.5
N_OBS = 8

#: y ~ Normal(W x + b, 0.1^2): no latents, so SVI is maximum likelihood.
REGRESSION = """
object X : Real 3
object Y : Real 1
morphism reg : X -> Y [role=kernel, param_source=linear, scale=0.1] ~ Normal
program regression : X -> Y
    observe y : Y <- reg
    return y
export regression
"""


def set_normal_normal(model: torch.nn.Module, prior_loc: float, learn_prior: bool = False) -> None:
    """Fix the networks so that the program is the textbook conjugate model."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        params["morphisms.mu_prior.net.weight"].zero_()
        params["morphisms.mu_prior.net.bias"].fill_(prior_loc)
        params["morphisms.lik.net.weight"].fill_(1.0)
        params["morphisms.lik.net.bias"].zero_()
    for name, p in params.items():
        p.requires_grad_(learn_prior and name.startswith("morphisms.mu_prior"))


def conjugate_posterior(y: torch.Tensor, prior_loc: float) -> tuple[torch.Tensor, float]:
    """Posterior mean per row of y (shape (B, N_OBS)) and the common variance."""
    precision = 1.0 + N_OBS / SIGMA**2
    mean = (prior_loc + y.sum(-1) / SIGMA**2) / precision
    return mean, 1.0 / precision
