"""qvr's own answers for the exported models: what each target's run must agree with.

The six model examples with their data files; qvr's NUTS draws of each (cached for
the session, 4 chains x (500 warmup + 500 draws; 200 + 200 for the HMM), seed 0,
fitted by a background process while the rest of the suite runs:
tests/export/background.py); a fixed point in each model's constrained space; and
qvr's log joint there (marginalised sites summed out exactly, every constant kept).
The targets' tests compare against these.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from tests.conftest import EXAMPLES

MODELS_DIR = EXAMPLES / "models"
#: example -> its data file's stem
MODELS = {
    "eight_schools_noncentered": "eight_schools",
    "eight_schools_centered": "eight_schools",
    "linear_regression": "linear_regression",
    "hierarchical_logistic": "hierarchical_logistic",
    "gaussian_mixture": "gaussian_mixture",
    "hmm": "hmm",
}
DRAWS = 500  # per chain, after as many warmup iterations
#: qvr's NUTS on the HMM (every evaluation sums 16 paths per sequence, eagerly) takes
#: about ten times the others' time: its reference keeps fewer draws, which only widens
#: the Monte Carlo error the comparison allows.
REFERENCE_DRAWS = {"hmm": 200}


def source(name: str) -> str:
    return (MODELS_DIR / f"{name}.qvr").read_text(encoding="utf-8")


def checked(name: str) -> CheckedModule:
    module = check(source(name))
    assert module.ok, module.errors
    return module


def program(name: str) -> str:
    exports = checked(name).exports
    assert exports
    return exports[0]


def data(name: str) -> dict[str, Any]:
    """The example's data file as read from JSON (lists; indices from 0, as qvr reads them)."""
    loaded: dict[str, Any] = json.loads((MODELS_DIR / f"{MODELS[name]}.json").read_text())
    return loaded


@functools.cache
def qvr_posterior(name: str) -> dict[str, np.ndarray]:
    """qvr's NUTS draws of every latent site, each (chains, draws, *site shape): those the
    session's background process wrote (tests/export/background.py), else fitted here."""
    from tests.export import background

    written = background.reference(name)
    return written if written is not None else fit_posterior(name)


def fit_posterior(name: str) -> dict[str, np.ndarray]:
    from qvr_core.runs.fit import fit

    data_file = MODELS_DIR / f"{MODELS[name]}.json"
    draws = REFERENCE_DRAWS.get(name, DRAWS)
    run = fit(source(name), method="nuts", steps=2 * draws, seed=0, data=data_file)
    posterior = run.inference_data().posterior
    return {str(k): np.asarray(v) for k, v in posterior.data_vars.items()}


def _compiled(name: str) -> Any:
    from qvr_core.runtime.model import compile_model

    return compile_model(checked(name), program(name))


def _tensors(name: str) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The data split as the runtime takes it: covariates, and observed values."""
    model = checked(name).models[program(name)]
    raw = data(name)
    inputs: dict[str, torch.Tensor] = {}
    observed: dict[str, torch.Tensor] = {}
    for d in model.data:
        discrete = d.indexes is not None or (d.type is not None and d.type.element.discrete)
        value = torch.tensor(raw[d.name], dtype=torch.long if discrete else torch.float64)
        (observed if d.observed else inputs)[d.name] = value
    return inputs, observed


@functools.cache
def fixed_point(name: str) -> dict[str, np.ndarray]:
    """A point in the model's constrained space: each latent site's value in one prior
    draw at seed 0 (every latent a `sample` site; marginalised sites are summed out)."""
    model = _compiled(name)
    inputs, observed = _tensors(name)
    torch.manual_seed(0)
    with torch.no_grad():
        values = model.run(inputs, observed).values
    kinds = checked(name).models[program(name)]
    latent = [s.name for s in kinds.sites if s.kind == "sample"]
    return {n: values[n].detach().double().numpy() for n in latent}


def qvr_log_joint(name: str, point: Mapping[str, np.ndarray] | None = None) -> float:
    """qvr's log joint density at `point` (the fixed point by default): every constant
    kept, marginalised sites summed out exactly, no Jacobian (constrained space)."""
    point = fixed_point(name) if point is None else point
    model = _compiled(name)
    inputs, observed = _tensors(name)
    values = {k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in point.items()}
    with torch.no_grad():
        out = model.log_joint(inputs, {**values, **observed})
    return float(out.reshape(-1)[0])


def sorted_along(axis: int = -1) -> Callable[[np.ndarray], np.ndarray]:
    """A label-invariant view of exchangeable components (a mixture's `mu`, sorted per draw)."""
    return lambda a: np.sort(a, axis=axis)


def assert_means_agree(
    ours: Mapping[str, np.ndarray],
    theirs: Mapping[str, np.ndarray],
    names: list[str] | None = None,
    *,
    view: Mapping[str, Callable[[np.ndarray], np.ndarray]] | None = None,
    z: float = 4.5,
) -> None:
    """Every entry's posterior mean agrees within Monte Carlo error: |a - b| <= z * the
    two means' standard errors combined (ArviZ's MCSE of each, from (chains, draws, ...)
    arrays). `view` maps a site to a label-invariant function of its draws."""
    import arviz as az

    view = view or {}
    for name in names or sorted(ours):
        a, b = ours[name], theirs[name]
        if name in view:
            a, b = view[name](a), view[name](b)
        assert a.shape[2:] == b.shape[2:], (name, a.shape, b.shape)
        mean_a, mean_b = a.mean(axis=(0, 1)), b.mean(axis=(0, 1))
        se_a = np.asarray(az.mcse(az.convert_to_dataset({"v": a}))["v"])
        se_b = np.asarray(az.mcse(az.convert_to_dataset({"v": b}))["v"])
        bound = z * np.sqrt(se_a**2 + se_b**2)
        bad = np.abs(mean_a - mean_b) > bound
        assert not bad.any(), f"{name}: qvr {mean_a} vs {mean_b}, bound {bound}"
