"""Runs fitted once per session and written as `qvr run --output` writes them: the files
the comparison and check tests read. Short NUTS runs, fixed seeds, one torch thread."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from qvr_core.runs import fit
from tests.conftest import EXAMPLES

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    pytest.importorskip("arviz")

MODELS = EXAMPLES / "models"
SCHOOLS_DATA = MODELS / "eight_schools.json"
MIXTURE_DATA = MODELS / "gaussian_mixture.json"

#: One Normal for the bimodal data of gaussian_mixture.json: a model that is wrong.
ONE_NORMAL = """
object Point : FinSet 100

program one_normal : Point -> Point
    sample mu <- Normal(0.0, 10.0)
    sample sigma <- HalfNormal(5.0)
    observe y : Point <- Normal(mu, sigma)
    return mu

export one_normal
"""


@pytest.fixture(scope="session", autouse=True)
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def fit_to(
    folder: Path,
    name: str,
    source: str,
    data: Path,
    *,
    steps: int = 400,
    chains: int = 4,
    seed: int = 1,
) -> Path:
    """NUTS on `source` with `data`, posterior predictive draws too, written to
    `folder/name.nc` as `qvr run --output` writes it.

    At a maximum tree depth of 6, not Stan's 10 (the run's default): these tests are
    about the files and the numbers computed from them, not about the tree depth, and
    the centred funnel hits any bound, so a lower one keeps its fit short. Where the
    comparison tests compare numbers, they are one file read two ways, or a run and a
    copy moved by known amounts: never two chaotic fits."""
    result = fit(
        source,
        method="nuts",
        steps=steps,
        chains=chains,
        seed=seed,
        data=data,
        predictive=True,
        max_tree_depth=6,
    )
    return result.results.write(folder / f"{name}.nc")


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both eight-schools models on the classic data, 100 draws a chain: the tests that read
    them compare one file read two ways, or a copy moved by known amounts, and check
    shapes, so more draws would only make the centred funnel's fit longer."""
    folder = tmp_path_factory.mktemp("runs")
    return {
        name: fit_to(folder, name, (MODELS / f"{name}.qvr").read_text(), SCHOOLS_DATA, steps=200)
        for name in ("eight_schools_centered", "eight_schools_noncentered")
    }


@pytest.fixture(scope="session")
def mixture_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two-component mixture and the one Normal, fitted to the mixture's data."""
    folder = tmp_path_factory.mktemp("mixture")
    mixture = (MODELS / "gaussian_mixture.qvr").read_text()
    return {
        "mixture": fit_to(folder, "mixture", mixture, MIXTURE_DATA, steps=300, chains=2, seed=3),
        "one_normal": fit_to(folder, "one_normal", ONE_NORMAL, MIXTURE_DATA, chains=2, seed=3),
    }
