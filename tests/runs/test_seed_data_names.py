"""`qvr run` on a seed program that picks positions by a data name (the BERT page).

The data name (`pred_positions` in `h[pred_positions]`) comes with synthetic
data, from `qvr data`, and from a data file; it is read, not observed (it is
constant data in the output), and a wrong one is a one-line error naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import RunResults
from qvr_core.runs.run import run_program
from qvr_core.runs.synthesise import synthesise, write_data

BERT = Path(__file__).resolve().parents[2] / "examples" / "bert_mlm.qvr"


def source() -> str:
    return BERT.read_text(encoding="utf-8")


@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_synthetic_data_picks_positions(method: str) -> None:
    summary = run_program(source(), method=method, steps=2, chains=1, batch=4, seq_len=6)
    assert summary.data == "synthetic"
    assert summary.steps >= 1
    assert len(summary.attention) == 2  # the positions reach the weights' passes too


def written(tmp_path: Path, **changes: np.ndarray) -> Path:
    data = synthesise(check(source()), "bert_mlm", batch=4, seq_len=6)
    arrays = {**data.arrays(), **changes}
    path = tmp_path / "bert.npz"
    np.savez(path, **arrays)
    return path


def test_qvr_data_writes_the_positions_and_a_run_reads_them(tmp_path: Path) -> None:
    data = synthesise(check(source()), "bert_mlm", batch=4, seq_len=6)
    assert data.arrays()["pred_positions"].shape == (4, 3)
    path = write_data(data, tmp_path / "bert.npz")
    results = RunResults()
    run_program(source(), data=path, steps=2, results=results)
    groups = results.inference_data()
    assert "pred_positions" in groups.constant_data
    assert "pred_positions" not in groups.observed_data
    assert set(groups.observed_data.data_vars) == {"masked_tokens", "is_next"}


@pytest.mark.parametrize(
    ("picks", "message"),
    [
        (np.full((4, 3), 1.5), "'pred_positions' picks positions, so it must hold whole numbers"),
        (np.zeros((4,), dtype=np.int64), "'pred_positions' has shape (4) but positions are"),
        (np.full((4, 3), 9, dtype=np.int64), "data 'pred_positions' holds position 9, outside"),
    ],
)
def test_wrong_positions_are_one_line_errors(
    tmp_path: Path, picks: np.ndarray, message: str
) -> None:
    with pytest.raises(InferenceError) as caught:
        run_program(source(), data=written(tmp_path, pred_positions=picks), steps=2)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


BNN = """\
object Feature : Real 1
object Target : Real 1
object Resp : FinSet 200
morphism net : Feature -> Target [param_source=mlp, hidden_dim=8] ~ Normal
program bnn : Resp -> Target
    observe y : Resp <- net(x)
    return y
export bnn
"""


@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_a_data_name_a_morphism_reads_comes_from_the_file_by_its_type(
    tmp_path: Path, method: str
) -> None:
    """quivers' bnn: `net(x)` reads `x`, one Feature per example; the program never reads
    its input, so the file's `x` is the data name, as `qvr data` writes it."""
    path = write_data(synthesise(check(BNN), "bnn", batch=6, seq_len=1), tmp_path / "bnn.npz")
    results = RunResults()
    summary = run_program(BNN, data=path, method=method, steps=4, chains=1, results=results)
    assert summary.batch == 6
    assert results.inference_data().constant_data["x"].shape[0] == 6


def test_a_data_name_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bnn.npz"
    np.savez(path, x=np.zeros((6, 3)), y=np.zeros((6, 1)))
    with pytest.raises(
        InferenceError, match="'x': expected \\(B, 1\\) float32 \\(Feature\\), got \\(6, 3\\)"
    ):
        run_program(BNN, data=path, steps=1)


def test_the_posterior_predictive_reads_the_data_names_as_the_fit_did(tmp_path: Path) -> None:
    path = write_data(synthesise(check(BNN), "bnn", batch=6, seq_len=1), tmp_path / "bnn.npz")
    results = RunResults()
    run_program(BNN, data=path, method="nuts", steps=4, chains=1, results=results, predictive=True)
    predictive = results.inference_data().posterior_predictive
    assert set(predictive.data_vars) == {"y"}  # the observed site, not the data name
    assert predictive["y"].shape[:3] == (1, 2, 6)
