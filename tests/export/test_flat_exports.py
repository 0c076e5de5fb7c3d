"""Improper flat priors exported (`qvr export --to stan|numpyro|pymc`): a `Flat` latent is
Stan's unconstrained parameter with no statement, a `HalfFlat` one `real<lower=0>`;
NumPyro's `ImproperUniform` over the reals or the positive numbers, batched by the plate
around it; PyMC's `pm.Flat` / `pm.HalfFlat` with the site's dims. Each export of a
regression with flat priors (a plated intercept, a slope, a scale) scores as qvr's log
joint does: NumPyro and PyMC exactly (every constant kept, the flat terms 0), Stan up to
the constants its `~` drops (compared as differences between two points, with and
without the Jacobian of its constrained parameters).

The runs in NumPyro, PyMC and Stan are marked slow, as their test files are left out of
`./dev test --fast`; Stan compiles once (about a minute with g++), cached by httpstan
(tests/export/stan_warm.py), a program it shares with tests/export/test_transformed_data.py
(tests/export/stan_shared.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program
from qvr_core.runtime.model import compile_model
from tests.export import stan_shared
from tests.export.stan_warm import unavailable
from tests.models import regressions

SOURCE = regressions.flat_groups(8)
DATA: dict[str, Any] = {
    "x": [0.1, -0.4, 1.2, 0.7, -1.0, 0.3, 2.1, -0.8],
    "g": [0, 1, 2, 1, 0, 2, 2, 1],
    "y": [0.3, 0.5, 2.0, 1.1, -0.2, 1.4, 3.3, -0.1],
}
#: two points of the latents, as qvr shapes them
POINTS = (
    {"alpha": [0.2, -0.5, 1.0], "b": 0.8, "tau": 0.6},
    {"alpha": [-0.3, 0.4, 0.9], "b": 1.1, "tau": 1.3},
)


def module() -> CheckedModule:
    checked = check(SOURCE)
    assert checked.ok, checked.errors
    return checked


def exported(target: str) -> str:
    result = export_program(module(), TARGETS[target], "grouped", source="grouped.qvr")
    assert result.text is not None, result.diagnostics
    return result.text


def qvr_log_joint(point: dict[str, Any]) -> float:
    """qvr's log joint at `point`: every constant kept, no Jacobian (constrained space)."""
    program = compile_model(module(), "grouped")
    inputs = {
        "x": torch.tensor(DATA["x"], dtype=torch.float64),
        "g": torch.tensor(DATA["g"]),
    }
    values = {k: torch.tensor(v, dtype=torch.float64) for k, v in point.items()}
    values["y"] = torch.tensor(DATA["y"], dtype=torch.float64)
    with torch.no_grad():
        return float(program.log_joint(inputs, values).reshape(()))


def test_qvrs_log_joint_is_the_likelihood_alone() -> None:
    """What the exports are compared with: the flat priors add nothing."""
    point = POINTS[0]
    mu = np.asarray(point["alpha"])[DATA["g"]] + point["b"] * np.asarray(DATA["x"])
    z = (np.asarray(DATA["y"]) - mu) / point["tau"]
    want = float(np.sum(-0.5 * z**2 - math.log(point["tau"]) - 0.5 * math.log(2 * math.pi)))
    assert qvr_log_joint(point) == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------- the text


def test_stan_declares_the_parameters_with_no_statement() -> None:
    got = [line.strip() for line in exported("stan").splitlines()]
    assert "vector[Group] alpha;" in got
    assert "real b;" in got
    assert "real<lower=0> tau;" in got
    model = got[got.index("model {") :]
    assert [line for line in model if "~" in line] == ["y ~ normal(mu, tau);"]
    assert "// tau: HalfFlat, an improper flat prior: no statement" in model


def test_numpyro_writes_improper_uniforms_batched_by_their_plates() -> None:
    got = [line.strip() for line in exported("numpyro").splitlines()]
    plate = got.index('with numpyro.plate("Group", 3):')
    assert got[plate + 1] == (
        'alpha = numpyro.sample("alpha", dist.ImproperUniform(dist.constraints.real, (), ()))'
    )
    assert 'b = numpyro.sample("b", dist.ImproperUniform(dist.constraints.real, (), ()))' in got
    assert (
        'tau = numpyro.sample("tau", dist.ImproperUniform(dist.constraints.positive, (), ()))'
        in got
    )


def test_pymc_writes_flat_and_half_flat_with_the_sites_dims() -> None:
    text = exported("pymc")
    assert 'alpha = pm.Flat("alpha", dims="Group")' in text
    assert 'b = pm.Flat("b")' in text
    assert 'tau = pm.HalfFlat("tau")' in text


# ---------------------------------------------------------------- the meaning


def _run(text: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "exported_model"}
    exec(compile(text, "<export>", "exec"), namespace)
    return namespace


@pytest.mark.slow
@pytest.mark.usefixtures("jax_float64")
def test_numpyro_scores_as_qvr_does(tmp_path: Path) -> None:
    pytest.importorskip("numpyro")
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    namespace = _run(exported("numpyro"))
    path = tmp_path / "data.json"
    path.write_text(json.dumps(DATA), encoding="utf-8")
    kwargs = namespace["load_data"](str(path))
    for point in POINTS:
        values = {k: jnp.asarray(v) for k, v in point.items()}
        ours, _ = log_density(namespace["model"], (), kwargs, values)
        assert float(ours) == pytest.approx(qvr_log_joint(point), rel=1e-9)


@pytest.mark.slow
def test_pymc_scores_as_qvr_does() -> None:
    pm = pytest.importorskip("pymc")
    import pytensor

    model = _run(exported("pymc"))["build_model"](**DATA)
    mode = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")  # no C compiler
    logp = model.compile_logp(jacobian=False, mode=mode)
    assert {rv.name for rv in model.free_RVs} == {"alpha", "b", "tau"}
    for point in POINTS:
        values = {}
        for rv in model.free_RVs:  # each value moved by its transform (tau: log)
            value = np.asarray(point[rv.name], dtype=float)
            transform = model.rvs_to_transforms.get(rv)
            if transform is not None:
                value = transform.forward(value, *rv.owner.inputs).eval()
            values[model.rvs_to_values[rv].name] = value
        assert float(logp(values)) == pytest.approx(qvr_log_joint(point), rel=1e-9)
    assert isinstance(model["tau"].owner.op, type(pm.HalfFlat.dist().owner.op))


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a compile with g++, on a busy machine
@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_stan_scores_as_qvr_does_up_to_its_dropped_constants() -> None:
    """Stan's `~` drops `-log(2 pi) / 2` per observation: compared as differences between
    two points. Without the Jacobian the densities are the constrained ones; with it
    Stan adds log tau for `<lower=0>`, as qvr's NUTS does moving log tau.

    The program is tests/export/stan_shared.py's, which holds this regression with flat
    priors beside test_transformed_data's (one g++ compile for both tests): only the
    flat latents move between the two points here, the others cancel in the difference."""
    stan_model = stan_shared.stan_model()
    assert "// tau: HalfFlat, an improper flat prior: no statement" in stan_shared.exported()
    points = [{**stan_shared.POINT, **p} for p in POINTS]
    unconstrained = [stan_shared.unconstrained(stan_model, p) for p in points]
    assert unconstrained[0][4] == pytest.approx(math.log(POINTS[0]["tau"]))  # alpha (3), b, tau
    for jacobian in (False, True):
        stan = [stan_model.log_prob(u, adjust_transform=jacobian) for u in unconstrained]
        qvr = [
            stan_shared.qvr_log_joint(p) + (math.log(p["tau"]) if jacobian else 0.0) for p in points
        ]
        assert abs(qvr[0] - qvr[1]) > 1e-3
        assert stan[0] - stan[1] == pytest.approx(qvr[0] - qvr[1], rel=1e-9, abs=1e-8)
