"""Lengths and masks in `--data` files (`qvr_core.runs.sequence_data`).

The BERT page read from a file with `x_lengths` (a length per example) and
`masked_tokens_mask` (a varying number of real picks per example) runs as the
Python API runs `Padded` and `Masked` inputs: padded tokens and unmarked picks
change nothing, the results keep the keys, and each inconsistency is a one-line
error naming the key, the example and the position.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import RunResults
from qvr_core.plan.run_arguments import validate_run_arguments
from qvr_core.runs.prepare import prepare
from qvr_core.runs.run import run_program
from qvr_core.runs.synthesise import synthesise
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked, ProgramModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BERT = (EXAMPLES / "bert_mlm.qvr").read_text(encoding="utf-8")
LENGTHS = np.array([6, 4, 5, 3])
MASK = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 0]], dtype=bool)


def arrays(**changes: np.ndarray) -> dict[str, np.ndarray]:
    data = synthesise(check(BERT), "bert_mlm", batch=4, seq_len=6).arrays()
    picks = data["pred_positions"] % LENGTHS[:, None]  # real positions only
    return {
        **data,
        "pred_positions": picks,
        "x_lengths": LENGTHS,
        "masked_tokens_mask": MASK,
        **changes,
    }


def saved(tmp_path: Path, **changes: np.ndarray) -> Path:
    path = tmp_path / "bert.npz"
    np.savez(path, **arrays(**changes))
    return path


def prepared(path: Path, method: str = "prior") -> tuple[ProgramModule, object, dict]:
    run = prepare(BERT, validate_run_arguments({"method": method, "steps": 2}), data=path)
    assert isinstance(run.program, ProgramModule)
    return run.program, run.x, run.observations


def test_a_file_with_lengths_and_a_mask_runs_padded_and_masked(tmp_path: Path) -> None:
    _, x, observations = prepared(saved(tmp_path))
    assert isinstance(x, Padded)
    assert x.lengths.tolist() == LENGTHS.tolist()
    masked = observations["masked_tokens"]
    assert isinstance(masked, Masked)
    assert masked.mask.tolist() == MASK.tolist()
    assert not isinstance(observations["is_next"], Masked)


def log_joint(path: Path) -> torch.Tensor:
    program, x, observations = prepared(path)
    program.eval()
    with torch.no_grad():
        values = program.run(x, observations, {}).values  # every latent: deterministic here
        return program.run(x, observations, values).log_joint


def test_padding_and_unmarked_picks_change_nothing(tmp_path: Path) -> None:
    base = arrays()
    before = log_joint(saved(tmp_path))
    x = base["x"].copy()
    x[1, 4:, 0] = (x[1, 4:, 0] + 7) % 40  # tokens in example 1's padding
    unmarked = base["masked_tokens"].copy()
    unmarked[~MASK] = -1  # unobserved picks may hold anything
    after = log_joint(saved(tmp_path, x=x, masked_tokens=unmarked))
    torch.testing.assert_close(after, before)
    observed = base["masked_tokens"].copy()
    observed[0, 0] = (observed[0, 0] + 1) % 40  # a marked pick does count
    assert not torch.allclose(log_joint(saved(tmp_path, masked_tokens=observed)), before)


def test_the_file_lengths_equal_the_python_apis_padded_input(tmp_path: Path) -> None:
    program, x, observations = prepared(saved(tmp_path))
    assert isinstance(x, Padded)
    program.eval()
    with torch.no_grad():
        values = program.run(x, observations, {}).values
        by_file = program.run(x, observations, values).log_joint
        direct = program.run(
            Padded(x.values.clone(), torch.tensor(LENGTHS)),
            {
                **observations,
                "masked_tokens": Masked(observations["masked_tokens"].values, torch.tensor(MASK)),
            },  # type: ignore[union-attr]
            values,
        ).log_joint
    torch.testing.assert_close(by_file, direct)


@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_every_method_runs_and_keeps_the_keys(tmp_path: Path, method: str) -> None:
    results = RunResults()
    summary = run_program(
        BERT, data=saved(tmp_path), method=method, steps=2, chains=1, results=results
    )
    assert summary.batch == 4
    groups = results.inference_data()
    constant = groups.constant_data
    assert constant["x_lengths"].values.tolist() == LENGTHS.tolist()
    assert constant["masked_tokens_mask"].values.tolist() == MASK.tolist()
    assert "masked_tokens" in groups.observed_data


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"x_lengths": np.array([6, 0, 5, 3])}, "gives example 1 the length 0, but a length"),
        ({"x_lengths": np.array([6, 7, 5, 3])}, "is between 1 and the padded length of 'x', 6"),
        ({"x_lengths": np.array([6.0, 4.5, 5, 3])}, "'x_lengths' must hold whole numbers"),
        ({"x_lengths": np.ones((4, 2), dtype=np.int64)}, "(4, 2) but holds one length per"),
        ({"masked_tokens_mask": MASK[:, :2]}, "'masked_tokens_mask' has shape (4, 2) but"),
        ({"masked_tokens_mask": MASK * 2}, "must hold booleans or 0 and 1 only"),
        ({"is_next_mask": np.ones(4, dtype=bool)}, "'is_next' has one value per example"),
        ({"x_lenghts": LENGTHS}, "may hold 'x_lengths'"),
    ],
)
def test_an_inconsistent_file_is_one_line_naming_the_key(
    tmp_path: Path, changes: dict[str, np.ndarray], message: str
) -> None:
    if "x_lenghts" in changes:  # a misspelt key is unexpected, and the error says what may be
        data = arrays(**changes)
        del data["x_lengths"]
        path = tmp_path / "bert.npz"
        np.savez(path, **data)
    else:
        path = saved(tmp_path, **changes)
    with pytest.raises(InferenceError) as caught:
        prepared(path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


SCORED = """\
object Token : FinSet 5
object Embedded : Real 3
object Hidden : Real 4
morphism embed : Token -> Embedded [role=embed]
morphism step : Embedded * Hidden -> Hidden [role=kernel, param_source=linear] ~ Deterministic
morphism out : Hidden -> Token [role=kernel, param_source=linear] ~ Categorical
define encoder = embed >> scanl(step)
program lm : Token -> Token
    sample h <- encoder
    observe next_token : Token <- out(h)
    return next_token
export lm
"""


def test_a_mask_past_an_examples_length_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lm.json"
    x = [[1, 2, 3], [4, 0, 0]]
    mask = [[1, 1, 1], [1, 1, 0]]  # example 1 has one real position
    data = {"x": x, "x_lengths": [3, 1], "next_token": x, "next_token_mask": mask}
    path.write_text(json.dumps(data))
    with pytest.raises(InferenceError, match="marks position 1 of example 1 as observed"):
        run_program(SCORED, data=path, steps=1)


def test_per_position_observations_are_scored_within_each_length(tmp_path: Path) -> None:
    """No mask: a per-position site is scored at the real positions only, so an example
    padded to 3 scores what it scores alone."""
    checked = check(SCORED)
    assert checked.ok
    x = torch.tensor([[1, 2, 3], [4, 0, 0]])
    alone = torch.tensor([[4]])
    run = prepare(SCORED, validate_run_arguments({"method": "prior"}), data=_json(tmp_path, x))
    program = run.program
    assert isinstance(program, ProgramModule)
    program.eval()
    with torch.no_grad():
        padded = program.run(Padded(x, torch.tensor([3, 1])), {"next_token": x}, {}).log_probs[
            "next_token"
        ]
        single = program.run(alone, {"next_token": alone}, {}).log_probs["next_token"]
    torch.testing.assert_close(padded[1], single[0])


def _json(tmp_path: Path, x: torch.Tensor) -> Path:
    path = tmp_path / "lm.json"
    path.write_text(json.dumps({"x": x.tolist(), "next_token": x.tolist()}))
    return path
