"""`qvr compare` on files `qvr run` never writes: one line naming the file, status 2.

Each of these ended in ArviZ's or numpy's traceback (issue #46): a log-likelihood
of booleans, integers, complex numbers or text; a file without a posterior (which
`az.loo` weighs the draws by); a run of one draw; an `.npz` member that is not a
`.npy` array (numpy's reader hands back its raw bytes); a log-likelihood without
observations. `qvr_core.posterior.comparison.check_run` refuses them by name.
"""

from __future__ import annotations

import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from qvr_cli.main import main
from qvr_core.posterior.comparison import RunFileError, compare_runs

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

RNG = np.random.default_rng(0)
POSTERIOR = {"mu": RNG.normal(size=(2, 50))}
LOG_LIK = RNG.normal(-1.0, 0.3, (2, 50, 5))


def netcdf(path: Path, **groups: dict[str, np.ndarray]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        az.from_dict(**groups).to_netcdf(path)  # type: ignore[arg-type]  # ArviZ types groups loosely
    return path


def with_log_likelihood(values: np.ndarray) -> Callable[[Path], Path]:
    return lambda path: netcdf(path, posterior=POSTERIOR, log_likelihood={"y": values})


def raw_member(path: Path) -> Path:
    """`log_likelihood/y` as raw float64 bytes, not a `.npy` array."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("log_likelihood/y", LOG_LIK.tobytes())
        archive.writestr("posterior/mu.npy", b"")
    return path


#: (file name, how it is made, what the line says)
MALFORMED: list[tuple[str, Callable[[Path], Path], str]] = [
    ("bool.nc", with_log_likelihood(LOG_LIK > -1), "log-likelihood 'y' holds bool values"),
    (
        "int.nc",
        with_log_likelihood((LOG_LIK * 10).astype(np.int64)),
        "log-likelihood 'y' holds int64 values",
    ),
    (
        "complex.nc",
        with_log_likelihood(LOG_LIK.astype(complex)),
        "log-likelihood 'y' holds complex128 values",
    ),
    ("text.nc", with_log_likelihood(LOG_LIK.astype(str)), "log-likelihood 'y' holds text values"),
    (
        "no_posterior.nc",
        lambda path: netcdf(path, log_likelihood={"y": LOG_LIK}),
        "has no posterior draws",
    ),
    (
        "one_draw.nc",
        lambda path: netcdf(
            path,
            posterior={"mu": POSTERIOR["mu"][:1, :1]},
            log_likelihood={"y": LOG_LIK[:1, :1]},
        ),
        "has 1 draw per chain: PSIS-LOO and WAIC need at least 4",
    ),
    ("raw_member.npz", raw_member, "'log_likelihood/y' is not a group/variable.npy array"),
    ("no_observations.nc", with_log_likelihood(LOG_LIK[..., :0]), "has no observations"),
    (
        "text_posterior.nc",
        lambda path: netcdf(
            path, posterior={"mu": POSTERIOR["mu"].astype(str)}, log_likelihood={"y": LOG_LIK}
        ),
        "posterior 'mu' holds text values",
    ),
]


@pytest.mark.parametrize(
    ("name", "make", "expected"), MALFORMED, ids=[name for name, _, _ in MALFORMED]
)
def test_a_malformed_run_is_one_line_naming_the_file_and_status_2(
    name: str,
    make: Callable[[Path], Path],
    expected: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = make(tmp_path / name)
    status = main(["compare", str(path)])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"qvr compare: {path}: ")
    assert expected in line


def test_a_well_formed_run_beside_them_is_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = with_log_likelihood(LOG_LIK)(tmp_path / "good.nc")
    assert main(["compare", str(path)]) == 0
    assert "good" in capsys.readouterr().out


def test_observed_data_of_text_are_compared_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Observed data that are not numbers: numpy's cast to float was a traceback."""
    text = netcdf(
        tmp_path / "text.nc",
        posterior=POSTERIOR,
        log_likelihood={"y": LOG_LIK},
        observed_data={"y": np.array(list("abcde"))},
    )
    numbers = netcdf(
        tmp_path / "numbers.nc",
        posterior=POSTERIOR,
        log_likelihood={"y": LOG_LIK},
        observed_data={"y": np.arange(5.0)},
    )
    assert main(["compare", str(text), str(numbers)]) == 0
    assert "the observed data of numbers differ from those of text" in capsys.readouterr().out


def test_the_python_api_refuses_them_by_the_run_s_name() -> None:
    idata = az.from_dict(posterior=POSTERIOR, log_likelihood={"y": LOG_LIK > -1})
    with pytest.raises(RunFileError, match=r"^bad: its log-likelihood 'y' holds bool values"):
        compare_runs({"bad": idata})
