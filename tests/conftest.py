"""Shared fixtures: the project's example files."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytest rewrites each test module's asserts when it imports it, and caches the result
# in the module's __pycache__ (gitignored) unless bytecode writing is off, as
# PYTHONDONTWRITEBYTECODE=1 turns it off on some machines: then every pytest process
# (each xdist worker, each pass of ./dev test) rewrote all 300 files again, about 6 s
# each. Only this process writes; the environment its subprocesses inherit is unchanged.
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def example_text(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """Torch on one thread in the test process while a test runs, when torch is loaded.

    The suite runs a worker per core, so a second intra-op thread only waits for a core:
    on a busy two-core machine a softmax over a 3 x 2 tensor took 3 ms instead of 4 us.
    Processes a test starts set theirs themselves (`OMP_NUM_THREADS=1`)."""
    if "torch" not in sys.modules:  # importing it here would cost every test process
        yield
        return
    from qvr_core.runs.model_data import one_thread  # what a model program's run does

    with one_thread():
        yield


@pytest.fixture
def jax_float64() -> Iterator[None]:
    """JAX in float64 for one test (qvr computes in float64), restored afterwards, so the
    suite's other users of JAX find it as they left it."""
    jax = pytest.importorskip("jax")
    before = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


#: The tests that run exports in their targets (Stan compiles each example with g++,
#: about a minute each; every target is compared with qvr's NUTS on six models) run
#: last, in this order; what they need is prepared meanwhile by a background process
#: on the core the rest of the suite leaves idle (tests/export/background.py).
RUNS_EXPORTS = (
    "tests/export/test_numpyro.py",
    "tests/export/test_pymc.py",
    "tests/export/test_stan.py",
)


def _export_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return RUNS_EXPORTS.index(path) + 1 if path in RUNS_EXPORTS else 0


#: The tests whose outcome rests on what a sampler draws (NUTS, SVI, prior draws, and
#: what is computed from them). `./dev test` runs them a second time with torch's AVX2
#: kernels (ATEN_CPU_CAPABILITY=avx2), which round differently in the last bits from the
#: AVX-512 ones, so a test that holds only for one CPU's chaotic trajectory fails here
#: rather than on the next machine (on a CPU whose own kernels are AVX2 the first pass
#: ran them, and the second is left out).
SAMPLES = (
    "tests/inference/",
    "tests/runs/",
    "tests/posterior/",
    "tests/plots/",
    "tests/notebook/",
    "tests/gallery/",
    "tests/lsp_commands/test_fit_view.py",
    "tests/lsp_commands/test_fit_view_server.py",
    "tests/lsp_commands/test_run_inference.py",
)


#: Files under SAMPLES whose outcome no draw decides, so the AVX2 pass would repeat them
#: for nothing: refusals made before anything is drawn (data and run-file sizes, launch
#: variables and process groups, plot arguments, page text), and comparisons of two
#: paths of the same code on one machine, exact by design (one process or two, chains
#: together or alone, either path a timing could pick). A test of the same kind in
#: another file says so itself: `@pytest.mark.kernel_free`.
KERNEL_FREE = (
    "tests/runs/test_data_bounds.py",
    "tests/posterior/test_run_file_sizes.py",
    "tests/posterior/test_malformed_runs.py",
    "tests/runs/test_distributed_launch.py",
    "tests/plots/test_errors.py",
    "tests/plots/test_plot_hostile.py",
    "tests/gallery/test_pages.py",
    "tests/runs/test_distributed.py",
    "tests/inference/test_lockstep.py",
    "tests/inference/test_clock_free.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if (
            item.nodeid.startswith(SAMPLES)
            and not item.nodeid.startswith(KERNEL_FREE)
            and item.get_closest_marker("kernel_free") is None
        ):
            item.add_marker(pytest.mark.sampling)
    ranks = [_export_rank(i) for i in items]
    if not any(ranks) or all(ranks):
        return
    items[:] = sorted(items, key=_export_rank)  # stable: each file keeps its own order
    from tests.export import background

    worker = getattr(config, "workerinput", None)  # pytest-xdist's, in a worker
    background.start(None if worker is None else str(worker["testrunuid"]))


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.export import background

    background.stop()
