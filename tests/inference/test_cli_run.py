"""`qvr run`: options, output, exit statuses and Ctrl-C."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys

import pytest

from qvr_core.cli import run as cli_run

from .conftest import ROOT
from .qvr_sources import REGRESSION


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="qvr run")
    cli_run.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture
def regression_file(tmp_path):
    path = tmp_path / "regression.qvr"
    path.write_text(REGRESSION, encoding="utf-8")
    return path


def test_options_and_defaults() -> None:
    args = parse("m.qvr", "--method", "nuts", "--seq-len", "5", "--lr", "0.1", "--json")
    assert (args.file, args.method, args.seq_len, args.lr, args.json) == (
        "m.qvr",
        "nuts",
        5,
        0.1,
        True,
    )
    assert (args.steps, args.seed, args.batch, args.data, args.program) == (100, 0, 16, None, None)


def test_json_summary_on_stdout_and_progress_on_stderr(regression_file, capsys) -> None:
    status = cli_run.main(parse(str(regression_file), "--steps", "20", "--json"))
    out, err = capsys.readouterr()
    assert status == 0
    summary = json.loads(out)
    assert summary["method"] == "svi" and len(summary["losses"]) == 20
    assert "svi step 20/20" in err and "steps/s" in err


def test_text_summary(regression_file, capsys) -> None:
    assert cli_run.main(parse(str(regression_file), "--steps", "5")) == 0
    out = capsys.readouterr().out
    assert out.startswith("regression: svi on synthetic data (batch 16), 5 steps")
    assert "loss:" in out and "->" in out


def test_nuts_and_prior_text_summaries(regression_file, capsys) -> None:
    assert cli_run.main(parse(str(regression_file), "--method", "nuts", "--steps", "8")) == 0
    out = capsys.readouterr().out
    assert "acceptance" in out and "divergences" in out and "r_hat" in out
    assert cli_run.main(parse(str(regression_file), "--method", "prior", "--steps", "2")) == 0
    assert "observe y (real, 16x1)" in capsys.readouterr().out


def test_the_mass_matrix_is_chosen_and_reported(regression_file, capsys) -> None:
    argv = (str(regression_file), "--method", "nuts", "--steps", "8")
    assert cli_run.main(parse(*argv, "--mass-matrix", "dense")) == 0
    assert "dense mass matrix" in capsys.readouterr().out
    assert cli_run.main(parse(*argv, "--mass-matrix", "dense", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["mass_matrix"] == "dense"
    assert cli_run.main(parse(*argv, "--mass-matrix", "diag", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["mass_matrix"] == "diag"
    assert cli_run.main(parse(*argv, "--json")) == 0  # auto: a regression's few coordinates
    assert json.loads(capsys.readouterr().out)["mass_matrix"] == "low-rank"


def test_where_the_chains_start_is_chosen_and_reported(regression_file, capsys) -> None:
    argv = (str(regression_file), "--method", "nuts", "--steps", "8")
    assert cli_run.main(parse(*argv)) == 0
    assert "Pathfinder starts" in capsys.readouterr().out
    assert cli_run.main(parse(*argv, "--json")) == 0
    assert json.loads(capsys.readouterr().out)["starts"] == "pathfinder"
    assert cli_run.main(parse(*argv, "--init", "prior", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["starts"] == "prior"


def test_the_target_acceptance_reaches_the_sampler_and_the_summary(
    regression_file, capsys, monkeypatch
) -> None:
    import qvr_core.runs.methods as methods

    kernels = []
    made = methods.NUTSKernel

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        kernels.append(made(*args, **kwargs))
        return kernels[-1]

    monkeypatch.setattr(methods, "NUTSKernel", spy)
    argv = (str(regression_file), "--method", "nuts", "--steps", "8")
    assert cli_run.main(parse(*argv)) == 0
    assert "(target" not in capsys.readouterr().out  # Stan's 0.8 goes without saying
    assert cli_run.main(parse(*argv, "--target-accept", "0.95", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["target_accept"] == 0.95
    assert [k.target_accept for k in kernels] == [0.8, 0.95]
    assert cli_run.main(parse(*argv, "--target-accept", "0.9")) == 0
    assert "(target 0.9)" in capsys.readouterr().out
    for bad in ("1", "0", "nan", "high"):
        with pytest.raises(SystemExit):
            parse(*argv, "--target-accept", bad)
        assert "target_accept must be a number between 0 and 1" in capsys.readouterr().err


def test_errors_exit_1_with_one_line(tmp_path, capsys) -> None:
    assert cli_run.main(parse(str(tmp_path / "missing.qvr"))) == 1
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.qvr"
    bad.write_text("object A : Real 2\nmorphism f : A -> B [role=embed]\n")
    assert cli_run.main(parse(str(bad))) == 1
    err = capsys.readouterr().err
    assert err.startswith("qvr run: error:") and "Traceback" not in err


def test_progress_line_rewrites_itself_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    line = cli_run.ProgressLine("svi", stream)
    for step in range(1, 4):
        line(step, 3, 1.5)
    line.finish()
    text = stream.getvalue()
    assert text.startswith("\r[") and "step 3/3" in text and text.endswith("\n")


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_with_the_summary(regression_file) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "qvr_core.cli.run", str(regression_file), "--steps", "5000"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the first progress line: the fit is running
    assert "svi step" in line, line
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == cli_run.EXIT_INTERRUPTED, err
    assert "[stopped]" in out and "loss:" in out


def test_the_progress_line_shows_each_chain_s_draws_and_the_worst_r_hat() -> None:
    stream = io.StringIO()
    line = cli_run.ProgressLine("nuts", stream)
    line.update({"draws": [200, 13, 0, 0], "posterior": None})
    line(10, 10, 3.5)
    assert "draws/chain 200,13,0,0" in stream.getvalue() and "r_hat" not in stream.getvalue()
    sites = {"mu": {"r_hat_max": 1.0123}, "tau": {"r_hat_max": float("nan")}, "z": {}}
    line.update({"draws": [200, 200, 0, 0], "posterior": {"sites": sites}})
    line(20, 20, 3.5)
    assert stream.getvalue().splitlines()[-1].endswith("draws/chain 200,200,0,0  r_hat max 1.012")


def test_a_program_the_checker_does_not_type_is_refused_with_its_reason(tmp_path, capsys) -> None:
    path = tmp_path / "unchecked.qvr"
    path.write_text(
        "object Row : FinSet 5\n\n"
        "program p : Row -> Row\n"
        "    sample a <- Normal(0.0, 1.0)\n"
        "    let b = frobnicate(a)\n"
        "    observe y : Row <- Normal(b, 1.0)\n"
        "    return b\n\n"
        "export p\n",
        encoding="utf-8",
    )
    assert cli_run.main(parse(str(path), "--method", "prior", "--steps", "2")) == 1
    err = capsys.readouterr().err
    assert err.startswith("qvr run: error:") and "Traceback" not in err
    assert "its function frobnicate" in err and "QVR011" in err


def test_a_model_with_sqrt_of_a_scale_checks_and_runs(tmp_path, capsys) -> None:
    path = tmp_path / "sqrt.qvr"
    path.write_text(
        "object Row : FinSet 5\n\n"
        "program p : Row -> Row\n"
        "    sample alpha <- Normal(0.0, 1.0)\n"
        "    sample sigma <- HalfNormal(1.0)\n"
        "    let mu = sqrt(sigma) + alpha\n"
        "    observe y : Row <- Normal(mu, 1.0)\n"
        "    return mu\n\n"
        "export p\n",
        encoding="utf-8",
    )
    assert cli_run.main(parse(str(path), "--method", "svi", "--steps", "5", "--json")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["program"] == "p" and summary["method"] == "svi"
