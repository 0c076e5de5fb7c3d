"""Errors of a run are one located line, wherever they happen: in a chain process as in
this one, a prior draw that leaves its support, an `--output` that cannot be written
(refused before the run starts)."""

from __future__ import annotations

import os
import pickle
import subprocess
from pathlib import Path

import pytest
import torch

from qvr_core.check import check
from qvr_core.cli import run as cli_run
from qvr_core.inference.chains import _child_error, _error_event
from qvr_core.inference.errors import InferenceError, NonFiniteLossError
from qvr_core.runs.run import run_program
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model.program import compile_model, draws_stay_in_support
from tests.conftest import EXAMPLES
from tests.runs.cli import qvr, qvr_here

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"

pytestmark = pytest.mark.timeout(300)

#: Summing out a continuous family fails in the log joint: in the chains, not before.
CONTINUOUS_MARGINAL = """\
object K : FinSet 3

program m : K -> K
    sample mu <- Normal(0.0, 1.0)
    marginalize z : K <- Normal(mu, 1.0)
        observe y <- Normal(z, 1.0)
    return mu

export m
"""
MARGINAL_MESSAGE = "line 5, marginalize z: only a family with finitely many values"

#: LogNormal(0, s) under a HalfCauchy scale this wide underflows to 0 or overflows to inf.
HEAVY = """\
object One : FinSet 1

program heavy : One -> One
    sample s <- HalfCauchy({scale})
    sample x <- LogNormal(0.0, s)
{observe}    return x

export heavy
"""


def assert_one_line(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    err = done.stderr.strip()
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    last = err.splitlines()[-1]
    for text in expected:
        assert text in last, err
    return last


# ------------------------------------------------------------------ chain processes


@pytest.mark.parametrize("chains", [1, 2])
@pytest.mark.kernel_free  # a continuous marginal fails whatever is drawn
def test_a_chain_s_error_is_the_same_located_error_in_or_out_of_process(chains: int) -> None:
    with pytest.raises(InferenceError) as info:
        run_program(CONTINUOUS_MARGINAL, method="nuts", steps=10, chains=chains)
    assert str(info.value).startswith(MARGINAL_MESSAGE)
    assert isinstance(info.value.__cause__, QvrRuntimeError)  # as the runtime raised it


@pytest.mark.kernel_free  # a continuous marginal fails whatever is drawn
def test_the_command_line_prints_a_chain_s_error_as_one_line(tmp_path: Path) -> None:
    path = tmp_path / "m.qvr"
    path.write_text(CONTINUOUS_MARGINAL, encoding="utf-8")
    done = qvr("run", str(path), "--method", "nuts", "--steps", "10", "--chains", "2")
    assert done.returncode == 1
    last = assert_one_line(done, "qvr run: error: " + MARGINAL_MESSAGE)
    assert "RuntimeError" not in last
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_error_event_carries_the_exception_whole() -> None:
    error = QvrRuntimeError("line 3, sample x: bad", site="x", expected="(2,)")
    back = _child_error(_error_event(error))
    assert type(back) is QvrRuntimeError and str(back) == "line 3, sample x: bad"
    assert back.site == "x" and back.expected == "(2,)"
    assert any("in a chain process" in n for n in getattr(back, "__notes__", []))
    nan = NonFiniteLossError(7, float("nan"), what="potential energy")
    again = _child_error(_error_event(nan))
    assert isinstance(again, NonFiniteLossError) and again.step == 7 and str(again) == str(nan)
    assert pickle.loads(pickle.dumps(nan)).what == "potential energy"


def test_an_exception_that_does_not_pickle_keeps_its_class_and_message() -> None:
    class Local(ValueError):  # defined here: the parent could not import it
        pass

    event = _error_event(Local("no way back"))
    assert event[3] is None
    back = _child_error(event)
    assert isinstance(back, InferenceError) and "Local: no way back" in str(back)
    assert isinstance(_child_error(("error", "MemoryError", "out", None, "")), MemoryError)


CORPUS_FILES = ["docs__examples__source/event_structure@29e9de9.qvr"]


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_programs_whose_chains_fail_fail_with_their_located_line(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"the corpus is not at {CORPUS}")
    source = path.read_text(encoding="utf-8")
    messages = []
    for chains in (1, 2):
        with pytest.raises(InferenceError) as info:
            run_program(source, method="nuts", steps=6, chains=chains)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and messages[0].startswith("line ")


# ------------------------------------------------------------------ draws outside the support


def heavy_program(scale: float = 1e6):  # type: ignore[no-untyped-def]
    source = HEAVY.format(scale=scale, observe="")
    return compile_model(check(source), "heavy")


def test_a_draw_outside_its_support_is_kept_with_log_density_minus_infinity() -> None:
    program = heavy_program()
    left = 0
    for seed in range(20):
        torch.manual_seed(seed)
        run = program.run({})  # no ValueError from torch
        x = run.values["x"]
        if not bool(x > 0) or not bool(torch.isfinite(x)):
            left += 1
            assert float(run.log_probs["x"]) == float("-inf")
    assert left > 0  # the scale is wide enough that draws leave the support


def test_the_prior_method_names_the_site_and_the_value() -> None:
    program = heavy_program()
    torch.manual_seed(0)
    with draws_stay_in_support(), pytest.raises(QvrRuntimeError) as info:
        for _ in range(20):
            program.run({})
    message = str(info.value)
    assert message.startswith("line 5, sample x: a draw of LogNormal left its support")
    assert "it drew" in message and "with s = " in message and info.value.site == "x"


def test_qvr_run_prior_is_one_located_line(tmp_path: Path) -> None:
    path = tmp_path / "heavy.qvr"
    path.write_text(HEAVY.format(scale=1e6, observe=""), encoding="utf-8")
    done = qvr("run", str(path), "--method", "prior", "--steps", "50")
    assert done.returncode == 1
    assert_one_line(done, "qvr run: error: line 5, sample x: a draw of LogNormal left its support")


@pytest.mark.parametrize("method", ["svi", "nuts"])
@pytest.mark.parametrize("seed", ["0", "3"])  # seeds whose first draws leave the support
def test_svi_and_nuts_treat_such_a_draw_as_the_sampler_does(
    method: str, seed: str, tmp_path: Path
) -> None:
    path = tmp_path / "heavy.qvr"
    path.write_text(
        HEAVY.format(scale=100.0, observe="    observe y <- Normal(x, 1.0)\n"), encoding="utf-8"
    )
    data = tmp_path / "y.json"
    data.write_text('{"y": 1.5}', encoding="utf-8")
    done = qvr_here(
        "run",
        str(path),
        *("--data", str(data), "--method", method, "--steps", "40", "--seed", seed),
        *("--chains", "2", "--max-tree-depth", "3", "--json"),
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_an_argument_outside_what_the_family_allows_is_named() -> None:
    source = """\
object One : FinSet 1

program b : One -> One
    sample p <- Normal(0.0, 1.0)
    observe y <- Bernoulli(p)
    return p

export b
"""
    with pytest.raises(InferenceError, match=r"line 5, observe y: the probs of Bernoulli is "):
        for seed in range(10):  # a Normal draw outside [0, 1] comes soon
            run_program(source, method="prior", steps=20, seed=seed)


# ------------------------------------------------------------------ --output


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("missing/run.npz", "does not exist"),
        ("folder", "is a folder"),
        ("folder/", "names a folder"),
        ("/dev/null", "not a regular file"),
    ],
)
@pytest.mark.kernel_free
def test_an_output_that_cannot_be_written_is_refused_before_the_run(
    name: str, expected: str, tmp_path: Path
) -> None:
    (tmp_path / "folder.npz").mkdir()  # without ArviZ `folder` becomes `folder.npz`
    (tmp_path / "folder").mkdir()
    output = name if name.startswith("/") else str(tmp_path / name)
    if name == "folder/":
        output = str(tmp_path / "folder") + os.sep
    model = EXAMPLES / "models" / "linear_regression.qvr"
    data = EXAMPLES / "models" / "linear_regression.json"
    done = qvr(
        "run", str(model), "--data", str(data), "--method", "nuts", "--steps", "4000",
        "--output", output,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    last = assert_one_line(done, "qvr run: error: --output", expected)
    assert done.stderr.strip() == last and done.stdout == ""  # nothing ran


@pytest.mark.kernel_free
def test_check_output_accepts_a_new_file_and_an_existing_one(tmp_path: Path) -> None:
    assert cli_run.check_output(str(tmp_path / "new.nc")) is None
    existing = tmp_path / "old.npz"
    existing.write_bytes(b"")
    assert cli_run.check_output(str(existing)) is None


@pytest.mark.kernel_free
def test_a_read_only_output_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write any file")
    existing = tmp_path / "old.npz"
    existing.write_bytes(b"")
    existing.chmod(0o444)
    assert "not writable" in (cli_run.check_output(str(existing)) or "")


PARETO = """object County : FinSet 4
program m : County -> County
    sample mu1 <- Exponential(rate=0.183)
    observe obs5 : County <- Pareto(1.496, mu1)
    return mu1
export m
"""


@pytest.mark.parametrize("method", ["prior", "svi"])
def test_a_support_bound_that_varies_over_a_plate_is_named_not_a_traceback(
    tmp_path: Path, method: str
) -> None:
    """The fuzzer's case: a Pareto's support starts at its scale, a tensor over the plate
    (naming the support took it for a number and raised ValueError)."""
    path = tmp_path / "pareto.qvr"
    path.write_text(PARETO, encoding="utf-8")
    done = qvr_here("run", str(path), "--method", method, "--steps", "5")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "observe obs5 (greater_than_eq, 4)" in done.stdout or method == "svi"


@pytest.mark.kernel_free  # shapes that do not fit, whatever is drawn
def test_arguments_torch_indexes_past_are_one_located_line(tmp_path: Path) -> None:
    """A MixtureNormal over a one-entry plate: torch's IndexError becomes the site's line."""
    path = tmp_path / "mixture.qvr"
    path.write_text(
        "object Trial : FinSet 1\nprogram p : Trial -> Trial\n"
        "    sample theta <- MixtureNormal([1.0], -95.1, 1.5) [over=Trial]\n"
        "    return theta\nexport p\n",
        encoding="utf-8",
    )
    done = qvr("run", str(path), "--method", "prior", "--steps", "2")
    assert done.returncode == 1
    assert_one_line(done, "line 3, sample theta: the arguments of MixtureNormal do not fit")


def test_a_draw_a_nested_family_refuses_is_outside_its_support(tmp_path: Path) -> None:
    """Pareto(1e308, a) draws inf (float64, where model programs compute; 1e300 did in
    float32): inside the Pareto's own support check, but its inner Exponential refused
    the transformed value with torch's ValueError."""
    path = tmp_path / "pareto.qvr"
    path.write_text(
        "object Region : FinSet 64\nprogram p : Region -> Region\n"
        "    sample theta : Region <- Pareto(1e308, 0.001)\n"
        "    sample sigma <- Logistic(loc=-83152.311, scale=2.011)\n"
        "    return sigma\nexport p\n",
        encoding="utf-8",
    )
    prior = qvr_here("run", str(path), "--method", "prior", "--steps", "2")
    assert_one_line(prior, "line 3, sample theta: a draw of Pareto left its support")
    svi = qvr_here("run", str(path), "--method", "svi", "--steps", "2")
    assert "Traceback" not in svi.stdout + svi.stderr


@pytest.mark.kernel_free  # shapes, not values
def test_arguments_that_fit_only_until_a_draw_are_one_located_line(tmp_path: Path) -> None:
    """The fuzzer's MixtureNormal whose means (data, 4096 x 1) build but cannot be drawn
    with its five weights: torch's RuntimeError from `sample` is the site's line."""
    path = tmp_path / "mixture.qvr"
    path.write_text(
        "object State : FinSet 4\nprogram p : State -> State\n"
        "    sample w <- MixtureNormal(v3, v4, [1.1, 0.5, 1.1, 3.1, 0.8])\n"
        "    return w\nexport p\n",
        encoding="utf-8",
    )
    data = tmp_path / "data.json"
    data.write_text('{"v3": [0.1, 0.2, 0.3, 0.2, 0.2], "v4": ' + str([[0.5]] * 64) + "}")
    done = qvr("run", str(path), "--data", str(data), "--method", "prior", "--steps", "2")
    assert done.returncode == 1
    assert_one_line(done, "line 3, sample w: the arguments of MixtureNormal do not fit together")


@pytest.mark.kernel_free  # the data's support
def test_observed_matrices_outside_the_support_name_a_whole_matrix(tmp_path: Path) -> None:
    """An InverseWishart observation checks one flag per matrix; the message shows the
    first matrix outside (it expanded the flags to the entries and failed)."""
    path = tmp_path / "wishart.qvr"
    path.write_text(
        "object Component : FinSet 3\nprogram p : Component -> Component\n"
        "    sample a <- Normal(0.0, 1.0)\n"
        "    observe k : Component <- InverseWishart(3.8, m)\n"
        "    return a\nexport p\n",
        encoding="utf-8",
    )
    bad = [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 5.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 2.0]]]
    data = tmp_path / "data.json"
    data.write_text(str({"m": [[1.0, 0.5], [0.5, 1.0]], "k": bad}).replace("'", '"'))
    done = qvr("run", str(path), "--data", str(data), "--method", "svi", "--steps", "2")
    assert done.returncode == 1
    assert_one_line(done, "'k' (line 4) holds [1, 5, 0, 1], outside the support")


@pytest.mark.kernel_free
def test_svi_with_nothing_to_fit_says_so(tmp_path: Path) -> None:
    """Every site observed and no parameters: Adam got an empty list and raised."""
    path = tmp_path / "fixed.qvr"
    path.write_text(
        "object School : FinSet 5\nprogram m : School -> School\n"
        "    let eta = 0.5 - x\n"
        "    observe y <- Pareto(alpha=0.44, scale=2.0)\n"
        "    return eta\nexport m\n",
        encoding="utf-8",
    )
    data = tmp_path / "data.json"
    data.write_text('{"x": [0.1, 0.2, 0.3, 0.4, 0.5], "y": 4.6}')
    for guide in ("normal", "delta"):  # the delta guide holds an empty vector of locations
        done = qvr_here(
            "run",
            str(path),
            "--data",
            str(data),
            "--method",
            "svi",
            "--steps",
            "1",
            "--guide",
            guide,
        )
        assert done.returncode == 1
        assert_one_line(done, "program m: SVI has nothing to fit")


@pytest.mark.kernel_free
def test_a_latent_wishart_is_refused_by_nuts_and_svi_naming_the_site(tmp_path: Path) -> None:
    """torch has no one-to-one map onto positive-definite matrices (biject_to raised
    NotImplementedError from the chain's start)."""
    path = tmp_path / "wishart.qvr"
    path.write_text(
        "object Row : FinSet 8\nprogram p : Row -> Row\n"
        "    sample w <- Wishart(8.1, m)\n"
        "    sample mu <- Cauchy(0.9, 0.95)\n"
        "    return mu\nexport p\n",
        encoding="utf-8",
    )
    data = tmp_path / "data.json"
    data.write_text('{"m": [[1.0, 0.0], [0.5, 1.0]]}')  # a Cholesky factor
    for method in ("nuts", "svi"):
        done = qvr_here("run", str(path), "--data", str(data), "--method", method, "--steps", "4")
        assert done.returncode == 1
        assert_one_line(done, "site 'w': NUTS and SVI move a latent through a one-to-one map")


def test_an_observation_a_nested_family_cannot_score_is_located_or_minus_infinity(
    tmp_path: Path,
) -> None:
    """Pareto(1e308, a) draws inf for its synthesised observation; scoring it asks the inner
    Exponential about nan. The prior run names the site; NUTS reads -inf, as for a draw
    outside the support, and says the start is not finite."""
    path = tmp_path / "pareto.qvr"
    path.write_text(
        "object Obs : FinSet 9\nprogram p : Obs -> Obs\n"
        "    sample alpha <- Chi2(0.879)\n"
        "    observe y <- Pareto(1e308, 0.001)\n"
        "    return alpha\nexport p\n",
        encoding="utf-8",
    )
    nuts = qvr("run", str(path), "--method", "nuts", "--steps", "4", "--chains", "1")
    assert nuts.returncode == 1
    assert_one_line(nuts, "not finite at the initial point")


def test_a_via_over_one_entry_groups_reads_the_one_drawn_value(tmp_path: Path) -> None:
    """`over=Component` with one entry has no axis; `via=item` indexed a 0-d tensor."""
    path = tmp_path / "via.qvr"
    path.write_text(
        "object Component : FinSet 1\nprogram m : Component -> Component\n"
        "    sample tau <- HalfNormal(3.0)\n"
        "    sample weights <- Dirichlet(9.1) [over=Component]\n"
        "    marginalize z : Component <- Categorical(weights) [over=Component, reduction=sum]\n"
        "        observe k : Component <- Beta(concentration0=tau, concentration1=0.8) [via=item]\n"
        "    return tau\nexport m\n",
        encoding="utf-8",
    )
    data = tmp_path / "data.json"
    data.write_text('{"item": [0], "k": [0.47]}')
    done = qvr("run", str(path), "--data", str(data), "--method", "prior", "--steps", "3")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
