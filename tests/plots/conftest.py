"""Real saved runs for `qvr plot`, made once for the folder.

Eight schools, centred (NUTS, two short chains; the pair plot's test flags its
own divergences, since whether so short a run diverges depends on the CPU), a
linear regression (SVI: one chain of guide draws, no sampler statistics) and
eight schools' prior draws. Each is written by `fit(...).results.write`, the
code behind `qvr run --output`. A file whose run did not write `log_likelihood`
(a `qvr` before that group) gets the group computed here from the Normal density
of `y`, so LOO-PIT is always testable; `test_figures` checks a written group
against the same density.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest
import torch
from scipy.stats import norm

from qvr_core.runs import fit

matplotlib.use("Agg")

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"


@dataclass(frozen=True)
class SavedRun:
    path: Path
    #: the Normal log-density of each observation under each draw, `(chain, draw, n)`
    log_likelihood: np.ndarray
    #: whether the run itself wrote `log_likelihood` (else this folder added it)
    wrote_log_likelihood: bool

    def read(self) -> Any:
        return read(self.path)


def read(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

        return az.from_netcdf(path).load()


def eight_schools_log_likelihood(idata: Any) -> np.ndarray:
    """log Normal(y_j | theta_j, sigma_j), the model's observe line, per draw and school."""
    theta = idata.posterior["theta"].values
    y = idata.observed_data["y"].values
    sigma = idata.constant_data["sigma"].values
    return np.asarray(norm.logpdf(y, loc=theta, scale=sigma))


def regression_log_likelihood(idata: Any) -> np.ndarray:
    """log Normal(y_i | alpha + beta x_i, sigma), per draw and row."""
    post = idata.posterior
    x = idata.constant_data["x"].values
    mu = post["alpha"].values[..., None] + post["beta"].values[..., None] * x
    y = idata.observed_data["y"].values
    return np.asarray(norm.logpdf(y, loc=mu, scale=post["sigma"].values[..., None]))


def written(folder: Path, source: str, data: Path, stem: str, **arguments: Any) -> Path:
    """`source` fitted on `data` by `fit(...)`, with torch on one thread (tiny models on
    a shared two-core machine), written as `qvr run --output` writes it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = fit(source, data=str(data), data_root=data.parent, **arguments)
    finally:
        torch.set_num_threads(threads)
    return result.results.write(folder / f"{stem}.{arguments['method']}.nc")


def _save(
    folder: Path,
    model: str,
    data: str,
    log_likelihood: Callable[[Any], np.ndarray] | None,
    seed: int = 0,
    **arguments: Any,
) -> SavedRun:
    source = (MODELS / model).read_text(encoding="utf-8")
    path = written(folder, source, MODELS / data, Path(model).stem, seed=seed, **arguments)
    idata = read(path)
    if log_likelihood is None:
        return SavedRun(path, np.empty(0), False)
    values = log_likelihood(idata)
    wrote = "log_likelihood" in idata.groups()
    if not wrote:
        idata.add_groups(log_likelihood={"y": values}, dims={"y": ["School"]})
        idata.to_netcdf(path)
    return SavedRun(path, values, wrote)


@pytest.fixture(scope="session")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("plots")


@pytest.fixture(scope="session")
def nuts_run(runs_folder: Path) -> SavedRun:
    return _save(
        runs_folder,
        "eight_schools_centered.qvr",
        "eight_schools.json",
        eight_schools_log_likelihood,
        method="nuts",
        steps=400,
        chains=2,
        predictive=True,
        seed=1,
    )


@pytest.fixture(scope="session")
def svi_run(runs_folder: Path) -> SavedRun:
    return _save(
        runs_folder,
        "linear_regression.qvr",
        "linear_regression.json",
        regression_log_likelihood,
        method="svi",
        steps=300,
        predictive=True,
    )


@pytest.fixture(scope="session")
def prior_run(runs_folder: Path) -> SavedRun:
    return _save(
        runs_folder,
        "eight_schools_centered.qvr",
        "eight_schools.json",
        None,
        method="prior",
        steps=50,
    )


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")
