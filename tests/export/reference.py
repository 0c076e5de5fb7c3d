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
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import Target, export_program, exportable_programs
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
    run = fit(source(name), method="nuts", steps=2 * DRAWS, seed=0, data=data_file)
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


def canonical(name: str, draws: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Label-invariant draws. A mixture's components and an HMM's states are
    exchangeable: their labels mean nothing, and every sampler's chains switch them
    (qvr's within one chain). Each draw is put in one order: the mixture's components
    by their mean, the HMM's states by the probability they emit symbol 0 (start,
    trans's rows and columns, and emit's rows permuted alike). Other models as given."""
    if name == "gaussian_mixture":
        order = np.argsort(draws["mu"], axis=-1)
        return {k: np.take_along_axis(v, order, -1) for k, v in draws.items()}
    if name == "hmm":
        order = np.argsort(draws["emit"][..., 0], axis=-1)  # (chains, draws, State)
        start = np.take_along_axis(draws["start"], order, -1)
        emit = np.take_along_axis(draws["emit"], order[..., None], -2)
        trans = np.take_along_axis(draws["trans"], order[..., None], -2)
        trans = np.take_along_axis(trans, order[..., None, :], -1)
        return {"start": start, "trans": trans, "emit": emit}
    return dict(draws)


def assert_posterior_agrees(name: str, theirs: Mapping[str, np.ndarray]) -> None:
    """A target's draws of every latent site of `name` (chains, draws, ...) have the
    posterior means of qvr's NUTS within Monte Carlo error, compared label-invariantly."""
    ours = qvr_posterior(name)
    model = checked(name).models[program(name)]
    sites = [s.name for s in model.sites if s.kind == "sample" and s.name in ours]
    assert_means_agree(canonical(name, {s: theirs[s] for s in sites}), canonical(name, ours), sites)


def corpus_exports(target: Target, written: Callable[[Path, str, str], None]) -> dict[str, int]:
    """Export every program of every shared corpus file that checks and every example:
    none may raise; each either is written (`written(path, program, text)` checks the
    text in the target) or gets only located QVR701 diagnostics. The counts of each."""
    from tests.conformance.shared import corpus

    files = [f.path for f in corpus()]
    if not files:
        pytest.skip("the shared corpus is not here")
    counts = {"exported": 0, "diagnosed": 0}
    for path in files + sorted(EXAMPLES.rglob("*.qvr")):
        text = path.read_text(encoding="utf-8")
        module = check(text)
        if not module.ok:
            continue
        for program in exportable_programs(module):
            out = export_program(module, target, program, source=path.name)
            if out.text is not None:
                written(path, program, out.text)
                counts["exported"] += 1
                continue
            assert out.diagnostics, (path, program)
            for d in out.diagnostics:
                assert d.code == "QVR701", (path, d)
                assert 0 <= d.span.start <= d.span.end <= len(text), (path, d)
            counts["diagnosed"] += 1
    return counts
