"""A step's `[constraint=ordered]` / `[constraint=positive_ordered]` exported.

Stan: its own types, `ordered[K] mu;` / `positive_ordered[K] mu;`, with the family's `~`
statement. NumPyro: an `ImproperUniform` on its ordered constraint and the family's log
density as a factor. PyMC: the family with the ordered transform (log then ordered for the
positive set) and an ordered `initval`. Each scores qvr's log joint (the agreement test,
tests/export/test_every_model_scores.py, holds every model of tests/models/ordered.qvr and
the low_dim_gauss_mix example to it too); Stan's compiled program also moves the value as
qvr does: its unconstrained point and Jacobian are `runtime/ordered.py`'s. Over two plates
every export says QVR701 at the option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from qvr_core.export import TARGETS, export_program
from qvr_core.runtime.model import compile_model
from qvr_core.runtime.ordered import PositiveOrderedTransform
from tests.conftest import ROOT
from tests.export.exported_text import exported, module
from tests.export.stan_warm import unavailable

MEANS = (ROOT / "tests" / "models" / "ordered.qvr").read_text(encoding="utf-8")
MIXTURE = (ROOT / "examples" / "posteriordb" / "low_dim_gauss_mix-low_dim_gauss_mix.qvr").read_text(
    encoding="utf-8"
)
#: two points of the positive ordered latents of `MEANS`
POINTS = (
    {"mu": [2.5, 9.0], "scale": [0.4, 1.7]},
    {"mu": [0.3, 4.0], "scale": [1.1, 1.2]},
)


def qvr_log_joint(point: dict[str, list[float]]) -> float:
    """qvr's log joint of `MEANS` at `point` (constrained space, no Jacobian)."""
    program = compile_model(module(MEANS), "ordered_means")
    values = {k: torch.tensor(v, dtype=torch.float64) for k, v in point.items()}
    with torch.no_grad():
        return float(program.log_joint({}, values).reshape(()))


def test_stan_declares_its_own_types() -> None:
    lines = [line.strip() for line in exported(MEANS, "stan", "ordered_means").splitlines()]
    assert "positive_ordered[State] mu;" in lines
    assert "positive_ordered[State] scale;" in lines
    assert "vector[2] mu_loc = [3.0, 10.0]';" in lines  # one entry per state, as qvr pairs them
    assert "mu ~ normal(mu_loc, 1.0);" in lines and "scale ~ normal(0.0, 2.0);" in lines
    mixture = [line.strip() for line in exported(MIXTURE, "stan", "low_dim_gauss_mix").splitlines()]
    assert "ordered[Component] mu;" in mixture and "mu ~ normal(0.0, 2.0);" in mixture


def test_numpyro_writes_an_improper_uniform_and_the_familys_factor() -> None:
    text = exported(MIXTURE, "numpyro", "low_dim_gauss_mix")
    assert (
        '"mu", dist.ImproperUniform(dist.constraints.ordered_vector, (), event_shape=(2,))'
    ) in text
    assert 'numpyro.factor("mu.Normal", dist.Normal(0.0, 2.0).log_prob(mu).sum(-1))' in text
    means = exported(MEANS, "numpyro", "ordered_means")
    assert "dist.constraints.positive_ordered_vector" in means
    assert 'numpyro.factor("mu.Normal", dist.Normal(mu_loc, 1.0).log_prob(mu).sum(-1))' in means


def test_pymc_writes_the_transform_and_an_ordered_start() -> None:
    text = exported(MIXTURE, "pymc", "low_dim_gauss_mix")
    assert "transform=pm.distributions.transforms.ordered," in text
    assert "initval=np.linspace(-1.0, 1.0, 2)," in text
    means = exported(MEANS, "pymc", "ordered_means")
    assert (
        "transform=pm.distributions.transforms.Chain(\n"
        "                [pm.distributions.transforms.log, pm.distributions.transforms.ordered],\n"
    ) in means
    assert all(len(line) <= 100 for line in means.splitlines())


@pytest.mark.parametrize("target", ["stan", "numpyro", "pymc"])
def test_over_two_plates_every_export_says_qvr701_at_the_option(target: str) -> None:
    source = (
        "object G : FinSet 2\nobject K : FinSet 3\n\n"
        "program p : K -> K\n"
        "    sample mu : G * K <- Normal(0.0, 1.0) [constraint=ordered]\n"
        "    return mu\n\n"
        "export p\n"
    )
    result = export_program(module(source), TARGETS[target], "p", source="p.qvr")
    assert result.text is None
    (d,) = result.diagnostics
    assert d.code == "QVR701" and "constraint=ordered over 2 plates" in d.message
    assert source[d.span.start : d.span.end] == "constraint=ordered"


@pytest.mark.usefixtures("jax_float64")
def test_numpyro_scores_as_qvr(tmp_path: Path) -> None:
    pytest.importorskip("numpyro")
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    namespace: dict[str, Any] = {"__name__": "exported_model"}
    exec(compile(exported(MEANS, "numpyro", "ordered_means"), "<export>", "exec"), namespace)
    for point in POINTS:
        values = {k: jnp.asarray(v) for k, v in point.items()}
        ours, _ = log_density(namespace["model"], (), {}, values)
        assert float(ours) == pytest.approx(qvr_log_joint(point), rel=1e-12)


def test_pymc_scores_as_qvr_and_starts_inside_the_set() -> None:
    pytest.importorskip("pymc")
    from tests.export.pymc_points import value_point
    from tests.export.test_pymc import PYTHON, load

    model = load(exported(MEANS, "pymc", "ordered_means"))["build_model"]()
    logp = model.compile_logp(jacobian=False, mode=PYTHON)
    for point in POINTS:
        got = float(logp(value_point(model, {k: np.asarray(v) for k, v in point.items()})))
        assert got == pytest.approx(qvr_log_joint(point), rel=1e-9)
    start = model.compile_logp(mode=PYTHON)(model.initial_point())
    assert float(start) > -float("inf")


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a compile with g++, on a busy machine
@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_stan_moves_the_value_through_the_same_transform() -> None:
    """Stan's log density without the Jacobian is qvr's log joint up to the constant its
    `~` drops (compared between two points); its unconstrained point is the inverse of
    `PositiveOrderedTransform`, and with the Jacobian the difference gains that
    transform's log |det J|: Stan moves the value as qvr's NUTS does."""
    from tests.export.stan_warm import build

    stan_model = build(exported(MEANS, "stan", "ordered_means"), {}, random_seed=1)
    t = PositiveOrderedTransform()
    free, jacobians = [], []
    for point in POINTS:
        u = stan_model.unconstrain_pars({k: v for k, v in point.items()})
        free.append(list(u))
        ours = [t.inv(torch.tensor(point[k], dtype=torch.float64)) for k in ("mu", "scale")]
        assert u == pytest.approx(torch.cat(ours).tolist(), abs=1e-12)
        jacobians.append(sum(float(t.log_abs_det_jacobian(x, t(x))) for x in ours))
    for jacobian in (False, True):
        stan = [stan_model.log_prob(u, adjust_transform=jacobian) for u in free]
        qvr = [
            qvr_log_joint(p) + (j if jacobian else 0.0)
            for p, j in zip(POINTS, jacobians, strict=True)
        ]
        assert stan[0] - stan[1] == pytest.approx(qvr[0] - qvr[1], rel=1e-9, abs=1e-8)
