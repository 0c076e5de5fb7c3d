"""`BoundedFlat(low, high)` exported (`qvr export --to stan|numpyro|pymc`).

Stan: the parameter alone, `real<lower=..., upper=...>`, with no statement; a bound that
is a `let` of earlier parameters is written out in the declaration (`upper=(1.0 -
alpha1)`, as posteriordb's garch11 declares beta1), and one Stan cannot compute before
the parameters is a located QVR701. NumPyro: `ImproperUniform` on the interval, which
scores 0 inside, as qvr does, and whose map onto the bounds NumPyro makes at each
evaluation: its potential in unconstrained space is qvr's log joint plus the interval's
Jacobian at that evaluation's bounds. PyMC has no flat density between bounds: refused
with the reason, not written as a Uniform (whose -log(high - low) changes the posterior).

The runs in NumPyro and Stan are marked slow, as the other exporters' runs are; the
Stan program compiles once with g++ (tests/export/stan_warm.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from qvr_core.export import TARGETS, export_program
from qvr_core.export.pymc import PYMC_FAMILIES, WHY_NOT
from qvr_core.runtime.model import compile_model
from tests.export.exported_text import exported, module
from tests.export.stan_warm import unavailable
from tests.models import bounded

Y = [0.9, 0.8, 1.0, 0.7, 0.95]
#: two points of the latents: inside the bounds, beta1's upper bound 1 - alpha1 differing
POINTS = ({"alpha1": 0.3, "beta1": 0.2}, {"alpha1": 0.6, "beta1": 0.35})


def qvr_log_joint(point: dict[str, float]) -> float:
    """qvr's log joint at `point` (constrained space, no Jacobian)."""
    program = compile_model(module(bounded.persistence(len(Y))), "persistence")
    values = {k: torch.tensor(v, dtype=torch.float64) for k, v in point.items()}
    values["y"] = torch.tensor(Y, dtype=torch.float64)
    with torch.no_grad():
        return float(program.log_joint({}, values).reshape(()))


def log_jacobian(point: dict[str, float]) -> float:
    """log |d(alpha1, beta1) / d(u, v)| of the interval maps, alpha1 = sigmoid(u) on (0, 1)
    and beta1 = (1 - alpha1) sigmoid(v) on (0, 1 - alpha1): the second's at the bound of
    the first's value (its matrix is triangular)."""
    a, b = point["alpha1"], point["beta1"]
    high = 1 - a
    return math.log(a * (1 - a)) + math.log(high) + math.log(b / high * (1 - b / high))


# ---------------------------------------------------------------- Stan


def test_stan_declares_the_bounds_and_writes_no_statement() -> None:
    text = exported(bounded.persistence(5), "stan", "persistence")
    lines = [line.strip() for line in text.splitlines()]
    assert "real<lower=0.0, upper=1.0> alpha1;" in lines
    # the let `beta_max = 1.0 - alpha1` is a model local: the bound is its expression
    assert "real<lower=0.0, upper=(1.0 - alpha1)> beta1;" in lines
    model = lines[lines.index("model {") :]
    assert "// beta1: BoundedFlat, an improper flat prior: no statement" in model
    assert [line for line in model if "~" in line] == [
        "alpha1 ~ uniform(0.0, 1.0);",
        "y ~ normal(mu, 0.5);",
    ]


def test_stan_refuses_a_bound_it_cannot_compute_before_the_parameters() -> None:
    """A bound read through a `score` (a term of the model block): located at the
    argument, as a QVR701."""
    source = (
        "object Obs : FinSet 5\n\n"
        "program p : Obs -> Obs\n"
        "    sample a <- Normal(0.0, 1.0)\n"
        "    score s = -0.5 * a * a\n"
        "    let hi = 2.0 + s\n"
        "    sample b <- BoundedFlat(0.0, hi)\n"
        "    observe y : Obs <- Normal(b, 1.0)\n"
        "    return a\n\n"
        "export p\n"
    )
    result = export_program(module(source), TARGETS["stan"], "p", source="p.qvr")
    assert result.text is None
    (d,) = result.diagnostics
    assert d.code == "QVR701" and "computes after the parameters" in d.message
    assert source[d.span.start : d.span.end] == "hi" and d.span.start_line == 6


# ---------------------------------------------------------------- NumPyro


def test_numpyro_writes_an_improper_uniform_on_the_interval() -> None:
    text = exported(bounded.persistence(5), "numpyro", "persistence")
    assert (
        'beta1 = numpyro.sample(\n        "beta1", dist.ImproperUniform('
        "dist.constraints.interval(0.0, beta_max), (), ())\n    )"
    ) in text
    assert text.index("beta_max = 1.0 - alpha1") < text.index('"beta1"')


@pytest.mark.slow
@pytest.mark.usefixtures("jax_float64")
def test_numpyro_scores_and_moves_it_as_qvr_means(tmp_path: Path) -> None:
    """The log density is qvr's log joint (0 for beta1 inside, not Uniform's
    -log(1 - alpha1)); the potential NUTS moves on is minus that and the Jacobian of
    the interval maps, beta1's at the bound 1 - alpha1 of the same evaluation."""
    pytest.importorskip("numpyro")
    import jax.numpy as jnp
    from numpyro.infer.util import log_density, potential_energy, unconstrain_fn

    namespace: dict[str, Any] = {"__name__": "exported_model"}
    text = exported(bounded.persistence(len(Y)), "numpyro", "persistence")
    exec(compile(text, "<export>", "exec"), namespace)
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"y": Y}), encoding="utf-8")
    kwargs = namespace["load_data"](str(path))
    model = namespace["model"]
    for point in POINTS:
        values = {k: jnp.asarray(v) for k, v in point.items()}
        ours, _ = log_density(model, (), kwargs, values)
        assert float(ours) == pytest.approx(qvr_log_joint(point), rel=1e-12)
        free = unconstrain_fn(model, (), kwargs, values)
        potential = float(potential_energy(model, (), kwargs, free))
        want = -(qvr_log_joint(point) + log_jacobian(point))
        assert potential == pytest.approx(want, rel=1e-10)


# ---------------------------------------------------------------- PyMC


def test_pymc_refuses_it_with_its_reason() -> None:
    assert "BoundedFlat" not in PYMC_FAMILIES
    source = bounded.persistence(5)
    result = export_program(module(source), TARGETS["pymc"], "persistence", source="p.qvr")
    assert result.text is None
    (d,) = result.diagnostics
    assert d.code == "QVR701"
    assert d.message.endswith(f"BoundedFlat: {WHY_NOT['BoundedFlat']}")
    assert "1 / (upper - lower)" in WHY_NOT["BoundedFlat"]
    assert d.span.start_line == 5  # the step `sample beta1 <- BoundedFlat(0.0, beta_max)`


# ---------------------------------------------------------------- Stan, compiled


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a compile with g++, on a busy machine
@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_stan_scores_and_moves_it_as_qvr_means() -> None:
    """Stan's log density without the Jacobian is qvr's log joint up to the constant its
    `~` drops (compared between two points), and with it the same plus the interval
    maps' Jacobian at each point's bounds: Stan moves beta1 within (0, 1 - alpha1)."""
    from tests.export.stan_warm import build

    code = exported(bounded.persistence(len(Y)), "stan", "persistence")
    stan_model = build(code, {"y": Y}, random_seed=1)
    free = [list(stan_model.unconstrain_pars(dict(p))) for p in POINTS]
    assert free[0][1] == pytest.approx(math.log(0.2 / (0.7 - 0.2)))  # logit(beta1 / 0.7)
    for jacobian in (False, True):
        stan = [stan_model.log_prob(u, adjust_transform=jacobian) for u in free]
        qvr = [qvr_log_joint(p) + (log_jacobian(p) if jacobian else 0.0) for p in POINTS]
        assert stan[0] - stan[1] == pytest.approx(qvr[0] - qvr[1], rel=1e-9, abs=1e-8)
