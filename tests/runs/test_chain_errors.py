"""torch's own errors inside a NUTS chain are one line naming the chain and the iteration,
the same from a chain process as from a chain run here, and `qvr run` prints them (or
any error nothing turned into words) as one line, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from qvr_core.cli.run import unexpected
from qvr_core.inference.chains import _child_error, _error_event, run_chains
from qvr_core.inference.errors import ChainError, InferenceError
from qvr_core.inference.nuts import NUTSKernel
from tests.inference.toy_models import ScaledNormal
from tests.runs.cli import qvr

ROOT = Path(__file__).resolve().parents[2]
X = torch.zeros(1, 1)
#: What torch raises for a covariance that stopped being positive-definite.
CHOLESKY = (
    "linalg.cholesky: The factorization could not be completed because the input is not "
    "positive-definite (the leading minor of order 2 is not positive-definite)."
)

pytestmark = pytest.mark.timeout(300)


class Cholesky(ScaledNormal):
    """A Gaussian whose log density fails as a Cholesky factor does, from its `after`-th
    evaluation in each process (it travels to a chain process pickled, count and all)."""

    def __init__(self, after: int) -> None:
        super().__init__([1.0, 2.0])
        self.after, self.calls = after, 0

    def log_joint(self, x, values) -> torch.Tensor:  # type: ignore[no-untyped-def]
        # A value read into Python: the potential cannot be recorded (`many`), so every
        # evaluation comes here and the count is the sampler's
        float(values["z"].sum())
        self.calls += 1
        if self.calls >= self.after:
            raise torch.linalg.LinAlgError(CHOLESKY)
        return super().log_joint(x, values)


def chain_error(processes: int, after: int) -> ChainError:
    with pytest.raises(ChainError) as info:
        # the chains' own starts: Pathfinder's evaluations would count towards `after`
        run_chains(Cholesky(after), X, {}, NUTSKernel(max_tree_depth=3), 5, 5, chains=2,
                   processes=processes, init="prior")  # fmt: skip
    return info.value


@pytest.mark.kernel_free  # fails at the first evaluation
def test_torch_s_error_in_a_chain_here_names_the_chain_and_the_iteration() -> None:
    e = chain_error(processes=1, after=1)
    assert str(e).startswith("chain 0, iteration 1 (warmup): the model's log density failed")
    assert str(e).endswith(CHOLESKY) and "\n" not in str(e)
    assert isinstance(e.__cause__, torch.linalg.LinAlgError)  # torch's, kept as the cause


def test_a_later_failure_counts_the_iterations_done() -> None:
    e = chain_error(processes=1, after=40)  # the two chains advance together here
    assert e.chain in (0, 1) and e.iteration > 1


@pytest.mark.kernel_free  # fails at the first evaluation
def test_the_same_error_in_a_chain_process_is_the_same_line() -> None:
    here = chain_error(processes=1, after=1)
    there = chain_error(processes=2, after=1)  # each process fails its first chain at once
    assert re.sub(r"^chain \d", "chain N", str(there)) == re.sub(r"^chain \d", "chain N", str(here))
    assert any("in a chain process" in n for n in getattr(there, "__notes__", []))


def test_a_chain_error_crosses_processes_whole() -> None:
    error = ChainError(1, 7, 5, CHOLESKY)
    back = _child_error(_error_event(error))
    assert type(back) is ChainError and str(back) == str(error)
    assert (back.chain, back.iteration, back.num_warmup, back.cause) == (1, 7, 5, CHOLESKY)
    assert "(sampling)" in str(back)
    assert isinstance(back, InferenceError)  # what the command line and the server catch


@pytest.mark.kernel_free  # nan before any draw
def test_errors_in_the_user_s_words_are_left_as_they_are() -> None:
    bad = ScaledNormal([float("nan")])  # not finite at the initial point: an InferenceError
    with pytest.raises(InferenceError) as info:
        run_chains(bad, X, {}, NUTSKernel(), 5, 5, chains=1, processes=1)
    assert not isinstance(info.value, ChainError)


# ------------------------------------------------------------------ the command line

MODEL = """\
object One : FinSet 1

program m : One -> One
    sample mu <- Normal(0.0, 1.0)
    observe y <- Normal(mu, 1.0)
    return mu

export m
"""

#: Loaded by every Python process started with this folder on PYTHONPATH, the chain
#: processes too: the model's log density fails as torch's Cholesky does, and every
#: model counts as slow, so its chains run in processes.
FAULT = f"""\
import torch
from qvr_core.inference import chains
from qvr_core.runtime.model.program import ModelProgram

chains.SPLIT_SECONDS = 0.0


def log_joint(self, x, values):
    raise torch.linalg.LinAlgError({CHOLESKY!r})


ModelProgram.log_joint = log_joint
"""


@pytest.fixture
def faulty(tmp_path: Path) -> tuple[Path, Path]:
    """The model file, and a folder whose `sitecustomize.py` makes its log density raise
    torch's Cholesky error in every process that runs it."""
    fault = tmp_path / "fault"
    fault.mkdir()
    (fault / "sitecustomize.py").write_text(FAULT, encoding="utf-8")
    path = tmp_path / "m.qvr"
    path.write_text(MODEL, encoding="utf-8")
    return path, fault


@pytest.mark.kernel_free  # every evaluation fails
def test_qvr_run_prints_a_chain_process_failure_as_one_located_line(
    tmp_path: Path, faulty: tuple[Path, Path]
) -> None:
    path, fault = faulty
    data = tmp_path / "y.json"
    data.write_text('{"y": 0.5}', encoding="utf-8")
    done = qvr(
        "run", str(path), "--data", str(data), "--method", "nuts", "--steps", "10",
        "--chains", "2", pythonpath=fault,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert re.match(r"qvr run: error: chain [01], iteration 1 \(warmup\): ", lines[0])
    assert lines[0].endswith(CHOLESKY)


def test_an_error_nothing_put_in_words_is_one_line_to_report() -> None:
    line = unexpected(KeyError("site\nmore"))
    assert line.startswith("internal error: KeyError: 'site") and "\n" not in line
    assert "report" in line
    assert unexpected(MemoryError()).startswith("error: the run ran out of memory")


@pytest.mark.kernel_free  # every evaluation fails
def test_an_svi_step_s_torch_error_names_the_step(faulty: tuple[Path, Path]) -> None:
    path, fault = faulty
    done = qvr("run", str(path), "--method", "svi", "--steps", "5", pythonpath=fault)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("qvr run: error: SVI step 1: the model's log density failed")
    assert line.endswith(CHOLESKY)
