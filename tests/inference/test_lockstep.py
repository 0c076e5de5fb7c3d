"""Chains advanced together: the same draws as each chain run alone, a compiled potential
that equals the eager one or is not used, and the choice between one process and many."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
import torch

from qvr_core.inference import chains as chains_module
from qvr_core.inference import many as many_module
from qvr_core.inference import static
from qvr_core.inference.chains import chain_seeds, chosen_processes, default_processes, run_chains
from qvr_core.inference.lockstep import TaskError, run_together
from qvr_core.inference.many import ManyPotential
from qvr_core.inference.mcmc import (
    ProgramPotential,
    chain_layout,
    initial_values,
    sample_chain,
    sample_chains,
)
from qvr_core.inference.nuts import NUTSKernel, Requests
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import PreparedRun, prepare
from tests.inference.batched_agreement import assert_rows_are_eager
from tests.tiny_network import TINY as TINY_NETWORK

from .toy_models import ScaledNormal

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def schools() -> PreparedRun:
    source = (MODELS / "eight_schools_noncentered.qvr").read_text()
    return prepare(source, RunArguments(method="nuts"), data=str(MODELS / "eight_schools.json"))


def _potentials(run: PreparedRun) -> tuple[ProgramPotential, torch.Tensor]:
    layout = chain_layout(run.program, run.x, run.observations)
    eager = ProgramPotential(run.program, run.x, run.observations, layout)
    torch.manual_seed(0)
    start = layout.pack(initial_values(run.program, run.x, dict(run.observations)))
    return eager, torch.stack([start, start + 0.3, start - 0.2])


@pytest.mark.parametrize(
    ("model", "data"),
    [
        ("eight_schools_noncentered", "eight_schools"),
        # a gather by a data index (its bounds check reads the data) and torch's
        # Bernoulli density, which writes into tensors it made
        ("hierarchical_logistic", "hierarchical_logistic"),
        ("gaussian_mixture", "gaussian_mixture"),
        ("hmm", "hmm"),  # nested `marginalize`: gathers by the summed states
    ],
)
def test_the_compiled_potential_of_a_model_program_equals_the_eager_one(
    model: str, data: str
) -> None:
    source = (MODELS / f"{model}.qvr").read_text()
    run = prepare(source, RunArguments(method="nuts"), data=str(MODELS / f"{data}.json"))
    eager, starts = _potentials(run)
    many = ManyPotential(eager, eager.log_density, starts)
    assert many.compiled
    if static.available():  # this torch has Static Runtime: it runs the potential
        assert isinstance(many.function, static.StaticGraph)
    points = assert_rows_are_eager(many, eager, starts)
    fewer, _ = many(points[:1])  # one chain left waiting: the batch is padded, one answer
    assert len(fewer) == 1 and fewer[0] == pytest.approx(eager(points[0])[0], rel=1e-9)
    # padded calls share one buffer: an answer is the caller's own, not overwritten by
    # the next call
    kept_values, kept_grads = many(points[:2])
    many(points[1:2] + 0.05)
    for row in range(2):
        u, grad = eager(points[row])
        assert kept_values[row] == pytest.approx(u, rel=1e-9)
        torch.testing.assert_close(kept_grads[row], grad, rtol=1e-7, atol=1e-9)
    # more rows than recorded (Pathfinder's paths beyond the chains): in recorded parts
    more = torch.cat([points, points + 0.1, points[:1] - 0.1])
    values, grads = many(more)
    assert len(values) == 7 and grads.shape == more.shape
    for row in range(7):
        u, grad = eager(more[row])
        assert values[row] == pytest.approx(u, rel=1e-9)
        torch.testing.assert_close(grads[row], grad, rtol=1e-7, atol=1e-9)


def test_a_float32_network_is_compiled_and_agrees_to_its_rounding() -> None:
    """vmap's batched kernels add in another order than the eager ones, so a float32
    gradient differs from the eager one by some 1e-6; the compiled potential is used all
    the same (it was not, and Pathfinder evaluated such a model row by row), and agrees
    with the eager one to a few hundred of float32's roundings of the largest element."""
    run = prepare(TINY_NETWORK, RunArguments(method="nuts", batch=2))
    eager, starts = _potentials(run)
    assert starts.dtype == torch.float32
    many = ManyPotential(eager, eager.log_density, starts)
    assert many.compiled
    _assert_agrees_to_float32(many, eager, starts, seed=2)


def _assert_agrees_to_float32(
    many: ManyPotential, eager: ProgramPotential, starts: torch.Tensor, seed: int
) -> None:
    """`many` gives each row what `eager` gives, to float32's rounding, at points beside
    `starts`."""
    g = torch.Generator().manual_seed(seed)
    points = starts + 0.1 * torch.randn(starts.shape, generator=g, dtype=starts.dtype)
    values, grads = many(points)
    for row in range(points.shape[0]):
        u, grad = eager(points[row])
        assert values[row] == pytest.approx(u, rel=1e-5)
        scale = float(grad.abs().max())
        torch.testing.assert_close(grads[row], grad, rtol=1e-4, atol=1e-5 * scale)


#: Kernels whose torch distributions check their arguments when built (a read of the
#: values into Python, which no recording can follow) or factor a covariance with a check
#: of its own; written for this test, of the shapes quivers' family fixtures use.
CHECKED_KERNELS = {
    "mvn": """
object Obs : Real 3
morphism cov_kernel : Obs -> Obs [role=kernel] ~ MultivariateNormal
program mvn_draws : Obs -> Obs
    sample y <- cov_kernel
    return y
export mvn_draws
""",
    "matrix_normal": """
object Row : FinSet 2
object Col : FinSet 3
morphism grid_kernel : Row * Col -> Row * Col [role=kernel, over=[Row, Col]] ~ MatrixNormal
program grid_draws : Row * Col -> Row * Col
    sample m <- grid_kernel
    return m
export grid_draws
""",
}


@pytest.mark.parametrize("name", sorted(CHECKED_KERNELS))
def test_a_kernel_whose_distribution_checks_its_arguments_is_compiled(name: str) -> None:
    """torch checks a distribution's arguments each time one is built, reading them into
    Python; the potential is recorded without the checks (the eager potential at the
    starts keeps them), so such a kernel's chains run the recorded graph, which agrees
    with the eager one, and torch's checks are on again afterwards."""
    run = prepare(CHECKED_KERNELS[name], RunArguments(method="nuts", batch=2))
    eager, starts = _potentials(run)
    validating = torch.distributions.Distribution._validate_args
    many = ManyPotential(eager, eager.log_density, starts)
    assert many.compiled
    assert torch.distributions.Distribution._validate_args == validating
    _assert_agrees_to_float32(many, eager, starts, seed=3)


def _off_by(eager: ProgramPotential, error: float):
    """A batched potential giving `eager`'s answers with every gradient element moved by
    `error` times the row's largest element (what another order of additions does)."""

    def batched(points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [eager(z) for z in points]
        grads = torch.stack([g + error * g.abs().max() for _, g in rows])
        values = torch.tensor([u for u, _ in rows], dtype=points.dtype)
        return -grads, -values

    return batched


def test_a_float32_gradient_is_held_to_float32s_rounding_of_its_largest_element() -> None:
    """A gradient element near zero differs by the rounding of the sums that made it,
    which is float32's rounding of the largest element, not of its own size: that is
    accepted, an error a hundred times that is not."""
    run = prepare(TINY_NETWORK, RunArguments(method="nuts", batch=2))
    eager, starts = _potentials(run)
    eps = torch.finfo(torch.float32).eps
    assert many_module._agrees_beside(_off_by(eager, 4 * eps), eager, starts)
    assert not many_module._agrees_beside(_off_by(eager, 400 * eps), eager, starts)


def test_a_model_quick_once_recorded_keeps_its_chains_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The HMM's eager evaluation counts some 700 operations (Python per value of each
    `marginalize`), enough to split its chains over processes; recorded, only its
    arithmetic is left (some 23,000 elements a chain), so they stay here, and the run
    reuses the recording it made."""
    source = (MODELS / "hmm.qvr").read_text()
    run = prepare(source, RunArguments(method="nuts"), data=str(MODELS / "hmm.json"))
    layout = chain_layout(run.program, run.x, run.observations)
    monkeypatch.setattr(chains_module, "default_processes", lambda chains: 2)
    placement = chosen_processes(run.program, run.x, run.observations, layout, 4)
    assert placement.processes == 1 and placement.recorded is not None
    records = sample_chains(
        run.program, run.x, run.observations, NUTSKernel(), 5, 5, [1, 2, 3, 4], layout,
        recorded=placement.recorded,
    )  # fmt: skip
    assert [len(r.zs) for r in records] == [5, 5, 5, 5]


class _Branching(ScaledNormal):
    """A density whose Python branches on a value: recording it would freeze the branch."""

    def log_joint(self, x: torch.Tensor, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        lp = super().log_joint(x, values)
        return lp * 2.0 if float(values["z"].detach().sum()) > 0 else lp


def test_a_model_that_cannot_be_recorded_runs_eagerly_and_right() -> None:
    model = _Branching([1.0, 2.0])
    x = torch.zeros(1, 1)
    layout = chain_layout(model, x, {})
    eager = ProgramPotential(model, x, {}, layout)
    starts = torch.tensor([[0.5, 0.5], [-0.5, -0.5]])
    many = ManyPotential(eager, eager.log_density, starts)
    assert not many.compiled
    values, grads = many(starts)
    assert values == [eager(starts[0])[0], eager(starts[1])[0]]
    torch.testing.assert_close(grads[1], eager(starts[1])[1])


def _alone(
    run: PreparedRun, kernel: NUTSKernel, seeds: list[int], n: int, warmup: int | None = None
) -> list[torch.Tensor]:
    draws = []
    for seed in seeds:
        torch.manual_seed(seed)
        record, _ = sample_chain(
            run.program, run.x, run.observations, kernel, n if warmup is None else warmup, n
        )
        draws.append(torch.stack(record.zs))
    return draws


@pytest.mark.parametrize("compile", [True, False])
def test_chains_together_draw_what_each_chain_draws_alone(
    schools: PreparedRun, compile: bool
) -> None:
    kernel = NUTSKernel(max_tree_depth=6)
    seeds = chain_seeds(3, 3)
    layout = chain_layout(schools.program, schools.x, schools.observations)
    records = sample_chains(
        schools.program,
        schools.x,
        schools.observations,
        kernel,
        25,
        25,
        seeds,
        layout,
        compile=compile,
    )
    for alone, record in zip(_alone(schools, kernel, seeds, 25), records, strict=True):
        assert record.complete and len(record.zs) == 25
        torch.testing.assert_close(torch.stack(record.zs), alone, rtol=1e-6, atol=1e-8)
    assert len({float(r.zs[-1][0]) for r in records}) == 3  # each chain its own stream


def test_chains_together_with_a_dense_mass_matrix_draw_what_each_draws_alone(
    schools: PreparedRun,
) -> None:
    """A warmup long enough for Stan's windows (150), so the covariance is adapted."""
    kernel = NUTSKernel(max_tree_depth=5, dense_mass=True)
    seeds = chain_seeds(5, 2)
    layout = chain_layout(schools.program, schools.x, schools.observations)
    records = sample_chains(
        schools.program, schools.x, schools.observations, kernel, 160, 10, seeds, layout
    )
    for alone, record in zip(_alone(schools, kernel, seeds, 10, warmup=160), records, strict=True):
        assert record.complete and len(record.zs) == 10
        torch.testing.assert_close(torch.stack(record.zs), alone, rtol=1e-6, atol=1e-8)


def test_chains_together_find_the_conjugate_posterior() -> None:
    """z ~ Normal(0, 1) scaled: four chains together give the exact moments."""
    result = run_chains(ScaledNormal([0.5, 2.0]), torch.zeros(1, 1), {}, NUTSKernel(), 300, 600,
                        chains=4, seed=7, processes=1)  # fmt: skip
    z = result.samples["z"].reshape(-1, 2).double()
    assert result.processes == 1 and not result.stopped
    torch.testing.assert_close(z.mean(0), torch.zeros(2, dtype=torch.float64), atol=0.15, rtol=0)
    torch.testing.assert_close(z.std(0), torch.tensor([0.5, 2.0]).double(), atol=0.0, rtol=0.12)


def _counting(steps: int, answers: list[float]) -> Requests[int]:
    for i in range(steps):
        u, _ = yield torch.full((2,), float(i))
        answers.append(u)
    return steps


class _Sum:
    """A stand-in potential: U is the sum of the position; it fails on a position of 99."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def __call__(self, z: torch.Tensor) -> tuple[float, torch.Tensor]:
        if float(z[0]) == 99:
            raise RuntimeError("bad row")
        return float(z.sum()), z


def test_tasks_of_different_lengths_end_each_with_its_own_answers() -> None:
    heard: list[list[float]] = [[], [], []]
    eager = _Sum()
    many = ManyPotential(eager, lambda z: z.sum(), torch.zeros(3, 2), compile=False)
    done = run_together([_counting(n, heard[i]) for i, n in enumerate((3, 1, 5))], many)
    assert done == [3, 1, 5]
    assert heard == [[0.0, 2.0, 4.0], [0.0], [0.0, 2.0, 4.0, 6.0, 8.0]]


def test_a_failing_row_names_its_task() -> None:
    def bad() -> Requests[None]:
        yield torch.zeros(2)
        yield torch.full((2,), 99.0)

    many = ManyPotential(_Sum(), lambda z: z.sum(), torch.zeros(2, 2), compile=False)
    with pytest.raises(TaskError) as info:
        run_together([_counting(4, []), bad()], many)
    assert info.value.index == 1 and str(info.value.error) == "bad row"


def test_a_cheap_model_runs_its_chains_here_and_a_slow_one_in_processes(
    schools: PreparedRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = chain_layout(schools.program, schools.x, schools.observations)
    args = (schools.program, schools.x, schools.observations, layout, 4)
    monkeypatch.setattr(chains_module, "SPLIT_SECONDS", float("inf"))
    assert chosen_processes(*args).processes == 1
    monkeypatch.setattr(chains_module, "SPLIT_SECONDS", 0.0)
    assert chosen_processes(*args).processes == default_processes(4)
