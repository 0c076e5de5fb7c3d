"""Several NUTS chains in parallel processes: seeds, stopping, failures, the summary."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.inference import InferenceError
from qvr_core.inference.chains import chain_seeds, default_processes, run_chains
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.runs.run import run_inference

from .toy_models import ScaledNormal

X = torch.zeros(1, 1)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.timeout(240)


def gaussian() -> ScaledNormal:
    return ScaledNormal([0.5, 2.0])


# kernel_free: seeds and process counts, nothing is drawn
@pytest.mark.kernel_free
def test_seeds_are_distinct_and_depend_only_on_the_run_seed() -> None:
    assert chain_seeds(3, 4) == chain_seeds(3, 4)
    assert len(set(chain_seeds(3, 4))) == 4 and chain_seeds(3, 4) != chain_seeds(4, 4)
    assert chain_seeds(3, 2) == chain_seeds(3, 4)[:2]  # chain c is chain c, however many
    assert 1 <= default_processes(4) <= 4 and default_processes(1) == 1


# kernel_free: one process or two, the same chains compared: two paths of the same code
# on one machine (the chain processes inherit the kernels of this one)
@pytest.mark.kernel_free
def test_chains_in_two_processes_equal_the_same_chains_run_here() -> None:
    kernel = NUTSKernel(max_tree_depth=4)
    a = run_chains(gaussian(), X, {}, kernel, 10, 10, chains=3, seed=5, processes=2)
    b = run_chains(gaussian(), X, {}, kernel, 10, 10, chains=3, seed=5, processes=1)
    assert a.samples["z"].shape == (3, 10, 1, 2) and not a.stopped
    torch.testing.assert_close(a.samples["z"], b.samples["z"], rtol=1e-5, atol=1e-6)
    assert not torch.equal(a.samples["z"][0], a.samples["z"][1])  # own seeds
    assert a.energies.shape == (3, 10) and a.diverging.shape == (3, 10)


# kernel_free: a stopped run; what it keeps is counted in draws, whatever their values
@pytest.mark.kernel_free
def test_stopping_stops_every_chain_and_keeps_what_is_complete() -> None:
    seen = []
    result = run_chains(
        gaussian(),
        X,
        {},
        NUTSKernel(max_tree_depth=3),
        5,
        2000,
        chains=4,
        processes=2,
        on_progress=lambda i, total, u, chain: seen.append(i),
        should_stop=lambda: len(seen) >= 60,
    )
    assert result.stopped and len(seen) < 4 * 2005
    # every chain's draws so far: each process advances its two chains together, so all
    # four run; a process that started later may have chains with under half the draws
    # of the longest, which are dropped, never both of the first process's
    assert result.samples["z"].shape[0] in (2, 3, 4)


# kernel_free: refused at the initial point, before anything is drawn
@pytest.mark.kernel_free
def test_a_failing_chain_is_an_inference_error_in_the_parent() -> None:
    bad = ScaledNormal([float("nan")])
    with pytest.raises(InferenceError, match="not finite at the initial point"):
        run_chains(bad, X, {}, NUTSKernel(), 5, 5, chains=2, processes=2)


def test_run_inference_runs_four_chains_and_reports_the_table() -> None:
    from .qvr_sources import REGRESSION

    s = run_inference(REGRESSION, method="nuts", steps=30, batch=8, max_tree_depth=4, seed=2)
    assert s["chains"] == 4 and s["num_samples"] == 15 and s["steps"] == 4 * 30
    posterior = s["posterior"]
    assert posterior["chains"] == 4 and posterior["draws"] == 15
    labels = [r["label"] for r in posterior["rows"]]
    assert "morphisms.reg.net.weight[0, 2]" in labels and "morphisms.reg.net.bias[0]" in labels
    assert {"ess", "r_hat"} & {w["kind"] for w in posterior["warnings"]}  # 15 draws: too few
    assert len(posterior["e_bfmi"]) == 4 and posterior["divergences"] == s["divergences"]
    row = posterior["rows"][0]
    assert np.isfinite([row[k] for k in ("mean", "sd", "q5", "q50", "q95", "r_hat")]).all()
    json.dumps(s)


def test_one_chain_runs_in_this_process() -> None:
    from .qvr_sources import REGRESSION

    s = run_inference(REGRESSION, method="nuts", steps=12, batch=8, max_tree_depth=3, chains=1)
    assert s["chains"] == 1 and s["steps"] == 12


# kernel_free: each draw as it arrived against the same draw in the result: one run
# read two ways
@pytest.mark.kernel_free
@pytest.mark.parametrize("processes", [1, 2])
def test_draws_arrive_as_they_are_made_and_are_the_result_s(processes: int) -> None:
    got: dict[int, list] = {0: [], 1: [], 2: []}
    result = run_chains(
        gaussian(),
        X,
        {},
        NUTSKernel(max_tree_depth=4),
        5,
        8,
        chains=3,
        seed=2,
        processes=processes,
        on_draw=lambda c, d: got[c].append(d),
    )
    for c in range(3):
        assert len(got[c]) == 8
        arrived = np.stack([d.values["z"] for d in got[c]])
        np.testing.assert_allclose(arrived, result.samples["z"][c].double().numpy(), rtol=1e-6)
        assert [d.diverging for d in got[c]] == result.diverging[c].tolist()
        assert [d.tree_depth for d in got[c]] == result.tree_depths[c].tolist()


# kernel_free: how many processes the chains ran in, which no draw decides
@pytest.mark.kernel_free
@pytest.mark.parametrize("split", [0.0, float("inf")])
def test_a_run_says_how_many_processes_its_chains_ran_in(
    split: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qvr_core.inference import chains

    from .qvr_sources import REGRESSION

    monkeypatch.setattr(chains, "SPLIT_SECONDS", split)  # every model slow, or none
    s = run_inference(REGRESSION, method="nuts", steps=6, batch=4, max_tree_depth=2, chains=2)
    assert s["processes"] == (default_processes(2) if split == 0.0 else 1)


# kernel_free: programs compiled and pickled, nothing drawn
@pytest.mark.kernel_free
@pytest.mark.parametrize(
    "path",
    sorted(p.name for p in EXAMPLES.glob("*.qvr"))
    + sorted(f"models/{p.name}" for p in EXAMPLES.glob("models/*.qvr")),
)
def test_every_example_s_program_can_travel_to_a_chain_process(path: str) -> None:
    """Chains run in other processes only when the program pickles (else one by one here)."""
    from qvr_core.check import check
    from qvr_core.plan.runnable import runnable_programs
    from qvr_core.runtime.compile import Compiler
    from qvr_core.runtime.model import compile_model

    checked = check((EXAMPLES / path).read_text(encoding="utf-8"))
    for name in runnable_programs(checked):
        if path.startswith("models/"):
            program = compile_model(checked, name)
        else:
            program = Compiler(checked, path).export(name)
        pickle.loads(pickle.dumps(program))
