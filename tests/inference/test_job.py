"""run_inference: the shared entry point of `qvr run` and the server's worker."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from qvr_core.inference import InferenceError, NonFiniteLossError
from qvr_core.runs.run import run_inference

from .conftest import ROOT
from .qvr_sources import REGRESSION

VANILLA = (ROOT / "examples" / "vanilla_rnn_lm.qvr").read_text(encoding="utf-8")


def test_svi_on_the_seed_without_data_follows_the_try_it_recipe() -> None:
    progress = []
    s = run_inference(
        VANILLA,
        method="svi",
        steps=12,
        lr=1e-2,
        seed=3,
        batch=4,
        seq_len=5,
        on_progress=lambda step, total, loss: progress.append((step, total, loss)),
    )
    assert s["method"] == "svi" and s["program"] == "vanilla_rnn_lm"
    assert s["data"] == "synthetic" and s["batch"] == 4
    assert len(s["losses"]) == 12 == s["steps"]
    assert s["initial_loss"] == s["losses"][0] and s["final_loss"] == s["losses"][-1]
    assert s["seconds"] > 0 and s["steps_per_second"] > 0 and s["stopped"] is False
    assert [p[0] for p in progress] == list(range(1, 13)) and progress[0][1] == 12
    json.dumps(s)  # the summary is JSON as it is


def test_same_seed_same_run() -> None:
    a = run_inference(REGRESSION, steps=5, seed=7, batch=8)
    b = run_inference(REGRESSION, steps=5, seed=7, batch=8)
    assert a["losses"] == b["losses"]


def test_nuts_summary_reports_acceptance_divergences_and_diagnostics() -> None:
    s = run_inference(REGRESSION, method="nuts", steps=40, batch=16, max_tree_depth=4)
    assert s["num_warmup"] == 20 and s["num_samples"] == 20
    assert 0 < s["acceptance"] <= 1 and s["divergences"] >= 0
    assert set(s["r_hat"]) == {"morphisms.reg.net.weight", "morphisms.reg.net.bias"}
    assert all(v is None or v > 0 for v in s["ess"].values())
    assert len(s["losses"]) == 40 and len(s["traces"]) == 4 == s["chains"]
    assert all(len(t) == 40 for t in s["traces"]) and s["losses"] == s["traces"][0]
    json.dumps(s)


def test_prior_summarises_every_site() -> None:
    s = run_inference(VANILLA, method="prior", steps=3, batch=2, seq_len=3)
    assert set(s["sites"]) == {"h", "next_token"}
    assert s["sites"]["h"]["shape"] == [2, 128] and "mean" in s["sites"]["h"]
    assert s["sites"]["next_token"]["support"] == "finset"
    assert sum(m["fraction"] for m in s["sites"]["next_token"]["most_frequent"]) <= 1


def test_should_stop_ends_cleanly_with_the_summary_so_far() -> None:
    steps = []
    s = run_inference(
        REGRESSION,
        steps=50,
        on_progress=lambda step, total, loss: steps.append(step),
        should_stop=lambda: len(steps) >= 4,
    )
    assert s["stopped"] is True and s["steps"] == 4 and len(s["losses"]) == 4


def _regression_data(n: int = 64) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, generator=g)
    return {
        "x": x,
        "y": x @ torch.tensor([[1.0], [-1.0], [0.5]]) + 0.1 * torch.randn(n, 1, generator=g),
    }


@pytest.mark.parametrize("fmt", ["pt", "npz", "csv"])
def test_data_files_in_each_format(tmp_path, fmt: str) -> None:
    data = _regression_data()
    path = tmp_path / f"data.{fmt}"
    if fmt == "pt":
        torch.save(data, path)
    elif fmt == "npz":
        np.savez(path, **{k: v.numpy() for k, v in data.items()})
    else:
        header = ["x[0]", "x[1]", "x[2]", "y"]
        rows = torch.cat([data["x"], data["y"]], dim=1).tolist()
        path.write_text(",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows))
    s = run_inference(REGRESSION, steps=150, lr=0.05, data=str(path), data_root=tmp_path)
    assert s["data"] == str(path) and s["batch"] == 64
    assert s["final_loss"] < s["initial_loss"]


def test_csv_sequences_of_tokens(tmp_path) -> None:
    x = torch.randint(0, 256, (3, 4))
    y = torch.randint(0, 256, (3,))
    header = [f"x[{t}]" for t in range(4)] + ["next_token"]
    rows = [[*map(int, xr), int(yr)] for xr, yr in zip(x, y, strict=True)]
    path = tmp_path / "tokens.csv"
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows))
    s = run_inference(VANILLA, steps=2, data=path)
    assert s["batch"] == 3


def test_missing_and_unknown_keys_are_refused(tmp_path) -> None:
    path = tmp_path / "bad.pt"
    torch.save({"x": torch.randn(4, 3), "why": torch.randn(4, 1)}, path)
    with pytest.raises(InferenceError, match=r"missing 'y'; unexpected 'why'"):
        run_inference(REGRESSION, data=path)


def test_paths_outside_the_workspace_are_refused(tmp_path) -> None:
    inner = tmp_path / "ws"
    inner.mkdir()
    torch.save(_regression_data(), tmp_path / "data.pt")
    with pytest.raises(InferenceError, match="outside the workspace"):
        run_inference(REGRESSION, data="../data.pt", data_root=inner)


def test_wrong_shapes_become_a_message_naming_the_site(tmp_path) -> None:
    path = tmp_path / "d.pt"
    torch.save({"x": torch.randn(4, 3), "y": torch.randn(4, 2)}, path)
    with pytest.raises(InferenceError, match="'y'"):
        run_inference(REGRESSION, data=path)


def test_source_errors_and_bad_settings_are_messages() -> None:
    with pytest.raises(InferenceError, match="has errors"):
        run_inference("object A : Real 2\nmorphism f : A -> B [role=embed]\n")
    with pytest.raises(InferenceError, match="not exported"):
        run_inference(VANILLA, program="cell")
    with pytest.raises(InferenceError, match="method must be one of svi, nuts, prior"):
        run_inference(VANILLA, method="hmc")
    with pytest.raises(InferenceError, match="steps must be a whole number from 1"):
        run_inference(VANILLA, steps=0)


def test_non_finite_loss_names_the_step_and_keeps_the_summary(tmp_path) -> None:
    data = _regression_data(8)
    data["y"][0, 0] = 1e30
    torch.save(data, tmp_path / "d.pt")
    with pytest.raises(NonFiniteLossError, match="at step 1") as info:
        run_inference(REGRESSION, data=tmp_path / "d.pt")
    assert info.value.summary["stopped"] is True
