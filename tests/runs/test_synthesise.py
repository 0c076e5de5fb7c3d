"""`qvr data`: a data file of the right shapes, from what the checker knows, that `qvr run
--data` reads and runs, so a model can be tried before its data exists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.data import read_data
from qvr_core.runs.run import run_program
from qvr_core.runs.synthesise import missing_data_hint, synthesise, write_data
from tests.conftest import EXAMPLES
from tests.runs.cli import qvr

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((EXAMPLES / "models").glob("*.qvr"))
CORPUS = ROOT.parent / "shared" / "corpus"

pytestmark = pytest.mark.timeout(300)

#: Value parameters (a count, a positive number), a data name an observed site reads
#: with known plates, and one whose rows only the data fixes.
COUNTS = """\
object K : FinSet 3

program counts(n : Nat, a : Real) : K -> K
    sample p <- Beta(a, 1.0)
    sample s <- HalfNormal(1.0)
    observe y : K <- Binomial(n, p)
    observe z : K <- Normal(offset, s)
    observe w <- Normal(v, s)
    return p

export counts
"""


def _written(source: str, tmp_path: Path, name: str, suffix: str = ".npz") -> Path:
    checked = check(source)
    data = synthesise(checked, name, seed=3)
    return write_data(data, tmp_path / f"{name}{suffix}")


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_every_model_example_runs_prior_and_svi_on_its_synthesised_file(
    path: Path, tmp_path: Path
) -> None:
    source = path.read_text(encoding="utf-8")
    name = check(source).exports[0]
    data = _written(source, tmp_path, name)
    prior = run_program(source, data=data, method="prior", steps=5)
    assert prior.data == str(data)
    svi = run_program(source, data=data, method="svi", steps=20)
    assert svi.final_loss is not None and np.isfinite(svi.final_loss)


def test_indices_counts_and_observations_have_the_checkers_shapes_and_supports() -> None:
    source = (EXAMPLES / "models" / "hierarchical_logistic.qvr").read_text(encoding="utf-8")
    arrays = synthesise(check(source), "hierarchical_logistic", seed=1).arrays()
    assert list(arrays) == ["county", "x", "y"]
    county, x, y = arrays["county"], arrays["x"], arrays["y"]
    assert county.shape == x.shape == y.shape == (120,)  # the rows of `observe y : Obs`
    assert county.dtype == np.int64 and county.min() >= 0 and county.max() < 6  # County
    assert x.dtype == np.float64
    assert y.dtype == np.int64 and set(np.unique(y)) <= {0, 1}  # Bernoulli


def test_a_scale_read_from_the_data_is_positive_with_the_plates_of_its_site() -> None:
    source = (EXAMPLES / "models" / "eight_schools_noncentered.qvr").read_text(encoding="utf-8")
    arrays = synthesise(check(source), "eight_schools", seed=0).arrays()
    assert arrays["sigma"].shape == arrays["y"].shape == (8,)
    assert (arrays["sigma"] > 0).all()


def test_value_parameters_are_numbers_and_unplated_data_gets_the_rows_asked_for(
    tmp_path: Path,
) -> None:
    data = synthesise(check(COUNTS), "counts", seed=5, rows=7)
    arrays = data.arrays()
    assert arrays["n"].shape == () and arrays["n"].dtype == np.int64 and arrays["n"] >= 1
    assert arrays["a"].shape == () and arrays["a"] > 0  # Beta's concentration1
    assert arrays["offset"].shape == arrays["z"].shape == (3,)
    assert arrays["v"].shape == arrays["w"].shape == (7,)
    assert arrays["y"].dtype == np.int64 and (arrays["y"] <= arrays["n"]).all()  # Binomial(n, p)
    path = write_data(data, tmp_path / "counts.json")
    summary = run_program(COUNTS, data=path, method="prior", steps=3)
    assert set(summary.sites or {}) >= {"y", "z", "w"}


@pytest.mark.parametrize(
    ("name", "program", "matrix", "shape"),
    [("sblrc-blr", "blr", "X", (100, 5)), ("diamonds-diamonds", "diamonds", "X", (5000, 24))],
)
def test_a_design_matrix_gets_a_column_per_coefficient(
    name: str, program: str, matrix: str, shape: tuple[int, ...]
) -> None:
    """`let terms = X * beta` (beta over Coef) reads a row of X per data row: X gets the
    rows and the coefficients' axis, directly or through a let of rows alone (diamonds'
    `let Xc = X - X.mean(0)`), and the program runs on it (a vector of rows did not)."""
    source = (EXAMPLES / "posteriordb" / f"{name}.qvr").read_text(encoding="utf-8")
    arrays = synthesise(check(source), program, seed=0).arrays()
    assert arrays[matrix].shape == shape


def test_the_same_seed_gives_the_same_file_and_another_seed_another() -> None:
    checked = check(COUNTS)
    first = synthesise(checked, "counts", seed=11).arrays()
    again = synthesise(checked, "counts", seed=11).arrays()
    other = synthesise(checked, "counts", seed=12).arrays()
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not all(np.array_equal(first[k], other[k]) for k in first)


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_the_file_reads_back_with_its_keys_shapes_and_whole_numbers(
    suffix: str, tmp_path: Path
) -> None:
    data = synthesise(check(COUNTS), "counts", seed=2)
    path = write_data(data, tmp_path / f"d{suffix}")
    read = read_data(path)
    assert list(read) == list(data.arrays())
    for key, value in data.arrays().items():
        assert tuple(read[key].shape) == value.shape, key
        assert read[key].is_floating_point() == (value.dtype.kind == "f"), key


def test_a_seed_program_gets_its_input_and_observed_sites(tmp_path: Path) -> None:
    source = (EXAMPLES / "linear_regression.qvr").read_text(encoding="utf-8")
    data = synthesise(check(source), "linear_regression", batch=5)
    assert [c.key for c in data.columns] == ["x", "y"]
    assert data.arrays()["x"].shape[0] == data.arrays()["y"].shape[0] == 5
    path = write_data(data, tmp_path / "lr.npz")
    summary = run_program(source, data=path, method="svi", steps=5)
    assert summary.data == str(path)


def test_a_program_that_does_not_run_is_refused_with_the_reason() -> None:
    source = (EXAMPLES / "bidirectional_rnn_lm.qvr").read_text(encoding="utf-8")
    checked = check(source)
    let = next(iter(checked.lets))
    with pytest.raises(InferenceError, match="is a let"):
        synthesise(checked, let)


def test_other_formats_are_refused(tmp_path: Path) -> None:
    data = synthesise(check(COUNTS), "counts")
    with pytest.raises(InferenceError, match=r"\.npz or \.json"):
        write_data(data, tmp_path / "d.csv")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_qvr_data_writes_a_file_that_qvr_run_reads(tmp_path: Path) -> None:
    model = EXAMPLES / "models" / "hierarchical_logistic.qvr"
    out = tmp_path / "logistic.npz"
    done = qvr("data", str(model), "-o", str(out), "--seed", "4")
    assert done.returncode == 0, done.stderr
    assert "county: int64, shape (120,), data name, an index into County" in done.stdout
    assert f"--data {out} --method prior" in done.stdout
    ran = qvr("run", str(model), "--data", str(out), "--method", "prior", "--steps", "3")
    assert ran.returncode == 0, ran.stderr


@pytest.mark.kernel_free  # refused before anything is drawn
def test_qvr_data_refusals_are_one_line_with_their_status(tmp_path: Path) -> None:
    model = EXAMPLES / "models" / "linear_regression.qvr"
    suffix = qvr("data", str(model), "-o", str(tmp_path / "d.csv"))
    assert suffix.returncode == 2 and "write a .npz or .json file" in suffix.stderr
    broken = tmp_path / "broken.qvr"
    broken.write_text("object A : FinSet 2\nprogram p : A -> A\n    sample x <- Nope(1.0)\n")
    errors = qvr("data", str(broken), "-o", str(tmp_path / "d.npz"))
    assert errors.returncode == 1 and "qvr data: error:" in errors.stderr
    assert "Traceback" not in errors.stderr
    rows = qvr("data", str(model), "-o", str(tmp_path / "d.npz"), "--rows", "0")
    assert rows.returncode == 2 and "rows must be 1" in rows.stderr
    assert not (tmp_path / "d.npz").exists()


@pytest.mark.kernel_free  # refused before a run
def test_a_run_without_its_data_names_the_command_that_writes_them() -> None:
    model = EXAMPLES / "models" / "linear_regression.qvr"
    done = qvr("run", str(model), "--method", "prior")
    assert done.returncode == 1
    assert missing_data_hint("linear_regression") in done.stderr


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus (../shared/corpus) is missing")
@pytest.mark.parametrize(
    "name",
    [
        "docs__examples__source/lda@12d1a14.qvr",  # value parameters, a via= index
        "docs__examples__source/beta_binomial_ab_test@26750f5.qvr",  # counts, an index
        "tests__transpile__fixtures__families/categorical@12d1a14.qvr",  # a rank-1 argument
    ],
)
def test_real_files_that_read_data_names_run_on_their_synthesised_data(
    name: str, tmp_path: Path
) -> None:
    source = (CORPUS / name).read_text(encoding="utf-8")
    program = check(source).exports[0]
    data = _written(source, tmp_path, program)
    summary = run_program(source, data=data, method="prior", steps=3)
    assert summary.program == program
