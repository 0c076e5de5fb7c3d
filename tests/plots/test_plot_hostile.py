"""`qvr plot` on draws no axis can hold and on a link at its default output (issue #46).

Draws of 1e308 made matplotlib fail while laying out the figure, inside
`savefig`, and the line blamed the output ("cannot write ...: arange: cannot
compute length"); now the figure is laid out before the file is opened and the
line says what is wrong with the draws. The default output, `RUN.KIND.svg` beside
the run, is never written through a symbolic link: a link there is refused and
its target left as it was.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from qvr_cli.main import main
from qvr_core.posterior.figures import draws_problem

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

RNG = np.random.default_rng(0)
DRAWS = RNG.normal(size=(2, 50))


def run_of(path: Path, **posterior: np.ndarray) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        az.from_dict(posterior=posterior).to_netcdf(path)  # type: ignore[arg-type]  # ArviZ types groups loosely
    return path


def fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    status = main(["plot", *args])
    out, err = capsys.readouterr()
    assert status == 2 and out == "", err
    (line,) = err.splitlines()
    assert line.startswith("qvr plot: ") and "Traceback" not in err
    return line


@pytest.mark.parametrize("kind", ["trace", "forest"])
def test_draws_of_1e308_are_the_draws_fault_not_the_output_s(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_of(tmp_path / "huge.nc", mu=np.full_like(DRAWS, 1e308))
    line = fails(capsys, str(run), "--kind", kind)
    assert "cannot write" not in line
    assert line.startswith(f"qvr plot: {run}: cannot draw {kind}: the posterior draws of 'mu'")
    assert "reach 1e+308, too large to draw on an axis" in line
    assert not (tmp_path / f"huge.{kind}.svg").exists()


def test_large_draws_that_fit_an_axis_are_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_of(tmp_path / "large.nc", mu=DRAWS * 1e290)
    assert main(["plot", str(run)]) == 0
    assert (tmp_path / "large.trace.svg").stat().st_size > 0
    assert draws_problem(az.from_netcdf(run), "trace") is None
    capsys.readouterr()


def test_the_draws_named_are_the_selected_kind_s_first(tmp_path: Path) -> None:
    idata = az.from_dict(
        posterior={"mu": DRAWS, "tau": np.where(DRAWS > 0, np.nan, DRAWS)},
        sample_stats={"energy": np.full_like(DRAWS, -1e308)},
    )
    assert "sample_stats draws of 'energy' reach -1e+308" in str(draws_problem(idata, "trace"))
    found = str(
        draws_problem(az.from_dict(posterior={"tau": idata.posterior["tau"].values}), "trace")
    )
    assert found.endswith("posterior draws of 'tau' are not finite (NaN or infinite)")


def test_a_symbolic_link_at_the_default_output_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_of(tmp_path / "run.nc", mu=DRAWS)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "run.trace.svg"
    link.symlink_to(victim)
    line = fails(capsys, str(run))
    assert line == (
        f"qvr plot: {link} is a symbolic link: qvr plot does not write through one beside "
        "the run; remove it or name the output with -o"
    )
    assert victim.read_text() == "keep me\n" and link.is_symlink()


def test_a_dangling_link_at_the_default_output_is_refused_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_of(tmp_path / "run.nc", mu=DRAWS)
    target = tmp_path / "elsewhere.svg"
    (tmp_path / "run.rank.svg").symlink_to(target)
    assert "is a symbolic link" in fails(capsys, str(run), "--kind", "rank")
    assert not target.exists()


def test_an_output_named_with_o_is_written_where_it_leads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o` is the user's own choice of path, as `qvr run --output` follows a link."""
    run = run_of(tmp_path / "run.nc", mu=DRAWS)
    target = tmp_path / "figure.svg"
    link = tmp_path / "link.svg"
    link.symlink_to(target)
    assert main(["plot", str(run), "-o", str(link)]) == 0
    assert target.read_bytes().startswith(b"<?xml")
    capsys.readouterr()


def test_a_fifo_at_the_output_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    run = run_of(tmp_path / "run.nc", mu=DRAWS)
    os.mkfifo(tmp_path / "run.trace.svg")
    assert fails(capsys, str(run)).startswith("qvr plot: cannot write")
