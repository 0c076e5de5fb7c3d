"""`qvr run --engine numpyro`: NumPyro's NUTS on the program's NumPyro export
(`qvr_core.runs.numpyro_nuts`) gives qvr's posterior under qvr's names.

Proved on conjugate models, whose posteriors are exact (the bound is the fit's own Monte
Carlo error, so no seed decides it), with a constrained latent each (a Beta on (0, 1), a
Gamma on (0, inf)): the draws read back under qvr's site names and shapes, and the log
density kept for each draw is qvr's own log joint there. Around that: the summary says
which engine ran, a stop keeps the draws so far, the editor's live draws arrive, and what
the engine cannot run is refused before anything runs, with the reason.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import RunResults
from qvr_core.runs import numpyro_nuts
from qvr_core.runs.numpyro_nuts import BLOCK, EngineRun
from qvr_core.runs.numpyro_nuts import refusal as refusal_of
from qvr_core.runs.run import run_program
from qvr_core.runtime.model import compile_model
from tests.inference.test_discrete_latents import SWITCH
from tests.inference.test_model_posteriors import BETA, conjugates

pytest.importorskip("numpyro")
pytest.importorskip("jax")

CASES = {c[1]: c for c in conjugates()}


def data_file(tmp_path: Path, source: str, name: str, data: torch.Tensor) -> str:
    """The observed site's values as a JSON data file, as a user writes one."""
    observed = compile_model(check(source), name).observed_names[0]
    path = tmp_path / f"{name}.json"
    values = data.long().tolist() if name != "normal_normal" else data.tolist()
    path.write_text(json.dumps({observed: values}), encoding="utf-8")
    return str(path)


def assert_exact_posterior(draws: torch.Tensor, ess: float | None, mean: float, sd: float) -> None:
    """4 chains of 600 draws whose mean is the exact posterior mean within 4 Monte Carlo
    standard errors (the fit's own error: no seed decides it), with an ESS above 400."""
    assert draws.shape == (4, 600)
    assert ess is not None and ess > 400
    se = sd / math.sqrt(ess)
    got = float(draws.mean())
    assert abs(got - mean) < 4 * se, f"mean {got:.4f}, exact {mean:.4f}, 4 se {4 * se:.4f}"


@pytest.mark.parametrize("name", ["beta_bernoulli", "gamma_poisson"])
def test_the_engine_recovers_the_conjugate_posterior_under_qvrs_names(
    tmp_path: Path, name: str
) -> None:
    source, _, site, data, mean, sd = CASES[name]
    results = RunResults()
    summary = run_program(
        source,
        data=data_file(tmp_path, source, name, data),
        method="nuts",
        steps=1200,
        chains=4,
        seed=3,
        engine="numpyro",
        results=results,
    )
    assert summary.nuts is not None and summary.nuts.engine == "numpyro"
    assert summary.nuts.chains == 4 and summary.nuts.num_samples == 600
    assert summary.to_json()["engine"] == "numpyro"
    draws = torch.as_tensor(results.groups["posterior"][site])
    assert_exact_posterior(draws, summary.nuts.ess[site], mean, sd)
    assert abs(float(draws.std()) - sd) < 0.2 * sd

    # the log density kept for a draw is qvr's log joint at it: one model, two samplers
    program = compile_model(check(source), name)
    observed = {program.observed_names[0]: data}
    lp = torch.as_tensor(results.groups["sample_stats"]["lp"])
    for chain, draw in ((0, 0), (1, 299), (3, 599)):
        values = {site: draws[chain, draw].to(torch.float64)}
        joint = float(program.log_joint({}, {**observed, **values}).sum())
        assert lp[chain, draw].item() == pytest.approx(joint, rel=1e-9, abs=1e-9)


def test_a_stop_keeps_the_draws_so_far_and_live_draws_arrive(tmp_path: Path) -> None:
    source, name, site, data, _, _ = CASES["gamma_poisson"]
    reached = 0
    snapshots: list[dict[str, Any]] = []

    def progress(step: int, total: int, loss: float) -> None:
        nonlocal reached
        reached = step

    def stop() -> bool:  # after three blocks of 50 iterations: 100 of warmup, 50 draws
        return reached >= 3 * BLOCK * 2

    results = RunResults()
    summary = run_program(
        source,
        data=data_file(tmp_path, source, name, data),
        method="nuts",
        steps=200,
        chains=2,
        seed=0,
        engine="numpyro",
        results=results,
        should_stop=stop,
        on_progress=progress,
        on_update=snapshots.append,
    )
    assert summary.stopped
    assert summary.nuts is not None and summary.nuts.num_samples == 50
    assert torch.as_tensor(results.groups["posterior"][site]).shape == (2, 50)
    assert snapshots and snapshots[-1]["draws"] == [50, 50]
    assert snapshots[-1]["warmup"] == 100


def refusal(tmp_path: Path, source: str, name: str, **arguments: Any) -> str:
    data = {"y": [0.5, 1.0, -0.3, 0.2]} if name == "switch" else {"y": [0, 1] * 10}
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InferenceError) as caught:
        run_program(source, data=str(path), method="nuts", steps=20, engine="numpyro", **arguments)
    return str(caught.value)


def test_qvrs_own_metrics_are_refused_with_the_ones_it_adapts(tmp_path: Path) -> None:
    message = refusal(tmp_path, BETA, "beta_bernoulli", mass_matrix="fisher")
    assert "--mass-matrix fisher" in message and "diag" in message and "dense" in message


def test_a_discrete_latent_is_left_to_qvrs_sampler(tmp_path: Path) -> None:
    message = refusal(tmp_path, SWITCH, "switch")
    assert "discrete" in message and "without --engine" in message


def test_a_program_numpyro_cannot_say_is_refused_where_the_export_says(tmp_path: Path) -> None:
    source = """\
object Obs : FinSet 20

program tails : Obs -> Obs
    sample xi <- Normal(0.0, 0.3)
    observe y : Obs <- GeneralizedPareto(0.0, 1.0, xi)
    return xi

export tails
"""
    message = refusal(tmp_path, source, "tails", path="tails.qvr")
    assert "NumPyro export" in message
    assert "tails.qvr:5:5: QVR701" in message and "GeneralizedPareto" in message


def test_a_seed_program_is_left_to_qvrs_sampler() -> None:
    source = (Path(__file__).resolve().parents[2] / "examples" / "rlstm_lm.qvr").read_text()
    with pytest.raises(InferenceError, match="model programs"):
        run_program(source, method="nuts", steps=4, engine="numpyro")


def test_the_command_line_names_the_engine(tmp_path: Path) -> None:
    from tests.runs.cli import qvr

    source, name, _, data, _, _ = CASES["gamma_poisson"]
    model = tmp_path / "gamma.qvr"
    model.write_text(source, encoding="utf-8")
    done = qvr(
        "run",
        str(model),
        "--data",
        data_file(tmp_path, source, name, data),
        "--method",
        "nuts",
        "--steps",
        "200",
        "--engine",
        "numpyro",
    )
    assert done.returncode == 0, done.stderr
    assert "NumPyro's NUTS" in done.stdout
    assert "rate" in done.stdout
    bad = qvr("run", str(model), "--method", "nuts", "--engine", "stan")
    assert bad.returncode != 0 and "--engine" in bad.stderr


def test_without_numpyro_the_engine_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpyro", None)  # an import of it raises ImportError
    run = EngineRun(10, 10, 2, 0, 10, 0.8, "auto", "pathfinder")
    message = refusal_of(run, "cpu")
    assert message is not None and "numpyro" in message and "pip install" in message
    assert refusal_of(run, "cuda") is not None and "CPU" in str(refusal_of(run, "cuda"))


MIXTURE = """\
object Component : FinSet 2
object Point : FinSet 40

program mixture : Point -> Point
    sample weights <- Dirichlet(5.0) [over=Component]
    sample mu : Component <- Normal(0.0, 2.0) [constraint=ordered]
    sample sigma : Component <- HalfNormal(2.0)
    marginalize z : Component <- Categorical(weights) [over=Point]
        observe y : Point <- Normal(mu[z], sigma[z])
    return weights

export mixture
"""


def test_a_marginalised_mixture_is_summed_out_as_qvr_sums_it(tmp_path: Path) -> None:
    """The export writes `marginalize` as an enumerated site, which NumPyro's NUTS sums out
    (funsor); the log density kept at each draw is qvr's log joint there, the sum over the
    components included, and an ordered latent comes back ordered."""
    g = torch.Generator().manual_seed(5)
    y = torch.cat([torch.randn(20, generator=g) - 2.0, torch.randn(20, generator=g) * 0.5 + 2.0])
    path = tmp_path / "mixture.json"
    path.write_text(json.dumps({"y": y.tolist()}), encoding="utf-8")
    results = RunResults()
    run_program(
        MIXTURE,
        data=str(path),
        method="nuts",
        steps=200,
        chains=2,
        seed=1,
        engine="numpyro",
        results=results,
    )
    posterior = {k: torch.as_tensor(v) for k, v in results.groups["posterior"].items()}
    assert set(posterior) == {"weights", "mu", "sigma"}
    assert bool((posterior["mu"][..., 0] < posterior["mu"][..., 1]).all())
    program = compile_model(check(MIXTURE), "mixture")
    lp = torch.as_tensor(results.groups["sample_stats"]["lp"])
    for chain, draw in ((0, 0), (1, 99)):
        values = {k: v[chain, draw].to(torch.float64) for k, v in posterior.items()}
        joint = float(program.log_joint({}, {"y": y.to(torch.float64), **values}).sum())
        assert lp[chain, draw].item() == pytest.approx(joint, rel=1e-9, abs=1e-9)


def test_what_numpyro_raises_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import qvr_core.runs.methods as methods

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("Incompatible shapes for broadcasting: (3,) and (4,)\nmore detail")

    monkeypatch.setattr(methods, "sample_numpyro", fails)
    source, name, _, data, _, _ = CASES["gamma_poisson"]
    with pytest.raises(InferenceError) as caught:
        run_program(
            source,
            data=data_file(tmp_path, source, name, data),
            method="nuts",
            steps=20,
            engine="numpyro",
        )
    message = str(caught.value)
    assert "numpyro engine failed" in message and "ValueError: Incompatible shapes" in message
    assert "more detail" not in message and "--engine qvr" in message


def test_auto_hands_the_draws_to_numpyro_with_qvrs_metric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--engine auto` with the hand-over's bound at 0 s: qvr warms up, NumPyro draws from
    where qvr's chains are, and the posterior is still the exact one."""
    monkeypatch.setattr(numpyro_nuts, "HANDOVER_SECONDS", 0.0)
    source, name, site, data, mean, sd = CASES["beta_bernoulli"]
    results = RunResults()
    snapshots: list[dict[str, Any]] = []
    summary = run_program(
        source,
        data=data_file(tmp_path, source, name, data),
        method="nuts",
        steps=1200,
        chains=4,
        seed=3,
        results=results,
        on_update=snapshots.append,
    )
    n = summary.nuts
    assert n is not None and n.engine == "qvr+numpyro" and summary.to_json()["engine"] == n.engine
    assert n.num_warmup == 600 and n.num_samples == 600 and n.starts == "pathfinder"
    assert [len(t) for t in n.traces] == [1200] * 4  # qvr's warmup, NumPyro's draws
    draws = torch.as_tensor(results.groups["posterior"][site])
    assert_exact_posterior(draws, n.ess[site], mean, sd)
    assert snapshots[-1]["draws"] == [600] * 4  # the live view shows NumPyro's draws alone


TWO_SITES = """
object Obs : FinSet 8

program two_sites : Obs -> Obs
    sample zeta <- Gamma(4.0, 2.0)
    sample alpha <- Normal(0.0, 1.0)
    observe y : Obs <- Normal(alpha, zeta)
    return alpha

export two_sites
"""


@pytest.mark.parametrize("dense", [False, True])
def test_qvrs_positions_and_metric_reach_numpyro_in_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dense: bool
) -> None:
    """NumPyro orders its coordinates by site name (alpha, zeta), qvr by the program's
    (zeta, alpha): the positions and M^-1 NumPyro starts from are qvr's, reordered."""
    monkeypatch.setattr(numpyro_nuts, "HANDOVER_SECONDS", 0.0)
    seen: list[tuple[Any, Any]] = []
    resume_from = numpyro_nuts.resume_from

    def spy(*args: Any) -> Any:
        states = args[-1]
        for s in states:  # a metric with a correlation, to see where it lands
            inverse = np.diag([4.0, 9.0])
            inverse[0, 1] = inverse[1, 0] = 1.5
            s.chain._inv_mass = inverse if dense else np.array([4.0, 9.0])
            s.chain._low_rank = None
            s.chain._dense = dense
            s.chain.metric = "dense" if dense else "diag"
        zs = [s.chain.z.clone() for s in states]
        resume = resume_from(*args)
        seen.append((zs, resume))
        return resume

    monkeypatch.setattr(numpyro_nuts, "resume_from", spy)
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"y": [0.3, -0.2, 1.1, 0.4, 0.0, 0.8, -0.5, 0.6]}), "utf-8")
    summary = run_program(TWO_SITES, data=str(path), method="nuts", steps=400, chains=2, seed=1)
    assert summary.nuts is not None and summary.nuts.engine == "qvr+numpyro"
    ((zs, resume),) = seen
    assert resume is not None
    for c, z in enumerate(zs):  # qvr: [log zeta, alpha]; NumPyro: alpha, then zeta's log
        assert resume.positions["alpha"][c] == pytest.approx(float(z[1]))
        assert resume.positions["zeta"][c] == pytest.approx(float(z[0]))
    expected = np.array([[9.0, 1.5], [1.5, 4.0]]) if dense else np.array([9.0, 4.0])
    for metric in resume.inverse_metrics:
        np.testing.assert_array_equal(metric, expected)


def auto_and_qvr_draws(tmp_path: Path) -> list[torch.Tensor]:
    """The same run's draws with `--engine auto` and `--engine qvr`, both on qvr's
    sampler (each summary says so)."""
    source, name, site, data, _, _ = CASES["gamma_poisson"]
    groups = []
    for engine in ("auto", "qvr"):
        results = RunResults()
        summary = run_program(
            source,
            data=data_file(tmp_path, source, name, data),
            method="nuts",
            steps=400,
            chains=2,
            seed=2,
            engine=engine,
            results=results,
        )
        assert summary.nuts is not None and summary.nuts.engine == "qvr"
        groups.append(torch.as_tensor(results.groups["posterior"][site]))
    return groups


def test_auto_leaves_a_quick_run_to_qvr_draw_for_draw(tmp_path: Path) -> None:
    """A run whose trees cost little stays on qvr's sampler: its draws are `--engine
    qvr`'s (the pause after warmup changes nothing)."""
    auto, qvr = auto_and_qvr_draws(tmp_path)
    assert torch.equal(auto, qvr)


def test_where_numpyro_cannot_take_the_chains_on_they_stay_with_qvr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the bound, but with coordinates NumPyro does not share (its map to the
    unconstrained space is not qvr's): the run goes on on qvr's sampler, draw for draw."""
    import numpyro.infer.util

    monkeypatch.setattr(numpyro_nuts, "HANDOVER_SECONDS", 0.0)
    unconstrain = numpyro.infer.util.unconstrain_fn
    answers: list[object] = []

    def shifted(*args: Any) -> Any:  # another map: every coordinate off by one
        return {k: v + 1.0 for k, v in unconstrain(*args).items()}

    resume_from = numpyro_nuts.resume_from

    def spy(*args: Any) -> Any:
        answers.append(resume_from(*args))
        return answers[-1]

    monkeypatch.setattr(numpyro.infer.util, "unconstrain_fn", shifted)
    monkeypatch.setattr(numpyro_nuts, "resume_from", spy)
    auto, qvr = auto_and_qvr_draws(tmp_path)
    assert answers == [None]  # asked once (auto), refused: NumPyro's coordinates differ
    assert torch.equal(auto, qvr)
