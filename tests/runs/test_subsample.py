"""Minibatch SVI on a model program: `--subsample PLATE=ROWS` (`runs.minibatch`).

What must hold: the loss of a step that scores B of a plate's N rows is an unbiased
estimate of the whole plate's (its terms scaled by N/B, the guide's local latents
drawn for those rows only), a fit on 200,000 rows recovers what full-data SVI does,
the memory of a step does not grow with N, and what cannot be subsampled is
refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.check.subsample import subsample_plan
from qvr_core.inference import InferenceError
from qvr_core.inference.autoguides import AutoDeltaGuide
from qvr_core.inference.elbo import ELBO
from qvr_core.inference.guide import AutoNormalGuide
from qvr_core.runs import run_program
from qvr_core.runs.minibatch import Minibatches, draw_rows
from qvr_core.runs.model_data import split_data
from qvr_core.runtime.model import compile_model
from qvr_core.runtime.share import sharing
from qvr_core.sizing.model_resources import estimate_model
from tests.runs.cli import qvr
from tests.runs.regression import regression, write_rows

ROWS = 200_000


VARYING = """
object Row : FinSet 40

program varying : Row -> Row
    sample mu <- Normal(0.0, 5.0)
    sample tau <- HalfNormal(2.0)
    sample u : Row <- Normal(0.0, 1.0)
    let m = mu + tau * u
    observe y : Row <- Normal(m, 0.5)
    return m

export varying
"""


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rows(tmp_path_factory.mktemp("rows") / "rows.npz", ROWS)


def _means(summary: dict[str, object]) -> dict[str, tuple[float, float]]:
    rows = summary["posterior"]["rows"]  # type: ignore[index]
    return {r["label"]: (float(r["mean"]), float(r["sd"])) for r in rows}  # type: ignore[attr-defined]


def test_subsampled_fit_of_200000_rows_recovers_full_data_svi(rows_file: Path) -> None:
    source = regression(ROWS)
    full = run_program(source, data=str(rows_file), steps=300, lr=0.1, seed=1).to_json()
    sub = run_program(
        source, data=str(rows_file), steps=1500, lr=0.01, seed=2, subsample=("Row", 1024)
    ).to_json()
    assert sub["subsample"] == {"plate": "Row", "rows": 1024}
    assert sub["elbo_sd"] is not None and sub["elbo_sd"] > 0 and sub["elbo_evaluations"] == 20
    a, b = _means(full), _means(sub)
    for name in ("alpha", "beta", "sigma"):
        (m1, s1), (m2, s2) = a[name], b[name]
        # the two fits' Monte Carlo error: each guide's spread, and the steps' noise on top
        assert abs(m1 - m2) <= 4 * (s1**2 + s2**2) ** 0.5 + 0.01, (name, a[name], b[name])
    assert abs(b["beta"][0] + 2.0) < 0.05 and abs(b["alpha"][0] - 1.5) < 0.05


def test_a_step_holds_memory_for_its_rows_not_the_plates() -> None:
    """The estimate a run is admitted under: a subsampled step's graph is the same for
    200,000 and 2,000,000 rows; the whole plate's grows tenfold."""
    small, large = check(regression(ROWS)), check(regression(10 * ROWS))
    kw = {"method": "svi", "steps": 100}
    sub = [
        estimate_model(c, "regression", rows=n, subsample=("Row", 1024), **kw)  # type: ignore[arg-type]
        for c, n in ((small, ROWS), (large, 10 * ROWS))
    ]
    whole = [
        estimate_model(c, "regression", rows=n, **kw)  # type: ignore[arg-type]
        for c, n in ((small, ROWS), (large, 10 * ROWS))
    ]
    assert sub[0].activation_bytes == sub[1].activation_bytes
    assert whole[1].activation_bytes > 9 * whole[0].activation_bytes
    assert sub[1].activation_bytes * 100 < whole[1].activation_bytes


def test_a_budget_too_small_for_the_whole_plate_admits_the_subsampled_run(
    rows_file: Path,
) -> None:
    source = regression(ROWS)
    whole = estimate_model(check(source), "regression", rows=ROWS, data_bytes=16 * ROWS)
    sub = estimate_model(
        check(source), "regression", rows=ROWS, data_bytes=16 * ROWS, subsample=("Row", 256)
    )
    budget = (whole.total + sub.total) // 2
    with pytest.raises(InferenceError, match="memory"):
        run_program(source, data=str(rows_file), steps=2, memory_budget=budget)
    out = run_program(
        source, data=str(rows_file), steps=2, memory_budget=budget, subsample=("Row", 256)
    )
    assert out.steps == 2


def _loss_at(
    source: str, program: str, data: dict[str, torch.Tensor], guide_kind: type, rows: int | None
) -> tuple[float, float]:
    """The mean and standard error of the loss at one fixed guide over many evaluations,
    each with fresh rows (when `rows`) and fresh guide draws."""
    checked = check(source)
    model = compile_model(checked, program)
    x, observations = split_data(model, data, "test data")
    torch.manual_seed(0)
    guide = guide_kind(model, observed_names=set(observations))
    with torch.no_grad():
        guide(x)
        for p in guide.parameters():
            p.add_(0.3 * torch.randn_like(p))  # somewhere other than the start
    plan = subsample_plan(checked, program, "Row")
    batches = Minibatches(
        x,
        observations,
        plan=plan,
        rows=rows,
        seed=3,
        world=None,
        batch=1,  # type: ignore[arg-type]
    )
    values = []
    with torch.no_grad():
        for _ in range(3000):
            part = batches()
            with sharing(part.share):
                values.append(float(ELBO().loss(model, guide, part.x, part.observations)))
    t = torch.tensor(values, dtype=torch.float64)
    return float(t.mean()), float(t.std() / len(values) ** 0.5)


@pytest.mark.parametrize("guide_kind", [AutoDeltaGuide, AutoNormalGuide])
def test_the_subsampled_loss_is_unbiased(guide_kind: type) -> None:
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.normal(size=40))
    data = {"x": x, "y": 1.5 - 2.0 * x + 0.5 * torch.tensor(rng.normal(size=40))}
    whole, se_whole = _loss_at(regression(40), "regression", data, guide_kind, None)
    sub, se_sub = _loss_at(regression(40), "regression", data, guide_kind, 8)
    assert abs(whole - sub) <= 4.5 * (se_whole**2 + se_sub**2) ** 0.5 + 1e-9


def test_local_latents_are_drawn_for_the_rows_scored_and_unbiased() -> None:
    rng = np.random.default_rng(5)
    data = {"y": torch.tensor(1.0 + 2.0 * rng.normal(size=40))}
    plan = subsample_plan(check(VARYING), "varying", "Row")
    assert not isinstance(plan, type(None)) and dict(plan.local) == {"u": 0}  # type: ignore[union-attr]
    whole, se_whole = _loss_at(VARYING, "varying", data, AutoNormalGuide, None)
    sub, se_sub = _loss_at(VARYING, "varying", data, AutoNormalGuide, 10)
    assert abs(whole - sub) <= 4.5 * (se_whole**2 + se_sub**2) ** 0.5


def test_a_subsampled_fit_with_local_latents_keeps_a_guide_for_every_row(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    path = tmp_path / "y.npz"
    np.savez(path, y=1.0 + 2.0 * rng.normal(size=40))
    out = run_program(VARYING, data=str(path), steps=50, subsample=("Row", 10)).to_json()
    assert out["posterior"]["sites"]["u"]["size"] == 40


def test_rows_are_distinct_and_uniform() -> None:
    g = torch.Generator().manual_seed(0)
    for total, rows in ((10, 3), (10, 7), (100_000, 500)):
        counts = torch.zeros(total)
        for _ in range(400 if total > 10 else 4000):
            drawn = draw_rows(total, rows, g)
            assert drawn.numel() == rows == drawn.unique().numel()
            assert bool((drawn[1:] > drawn[:-1]).all())
            counts[drawn] += 1
        if total == 10:
            share = counts / counts.sum()
            assert float((share - 0.1).abs().max()) < 0.02


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "nuts", "subsample": ("Row", 10)}, "--subsample is for SVI"),
        ({"subsample": ("Point", 10)}, "cannot subsample Point"),
        ({"subsample": ("Row", 80)}, "Row has 40 rows"),
        ({"subsample": ("Row", 10), "guide": "mvn"}, "--guide normal"),
    ],
)
def test_what_cannot_be_subsampled_is_refused_in_one_line(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    path = tmp_path / "y.npz"
    np.savez(path, y=np.zeros(40))
    with pytest.raises(InferenceError, match=message) as e:
        run_program(VARYING, data=str(path), steps=2, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def test_a_program_of_morphisms_has_no_plate_to_subsample() -> None:
    source = (Path(__file__).parents[2] / "examples" / "vanilla_rnn_lm.qvr").read_text()
    with pytest.raises(InferenceError, match="plate of a model program"):
        run_program(source, steps=1, batch=2, seq_len=3, subsample=("Token", 2))


def test_the_command_line_reports_the_subsample(tmp_path: Path) -> None:
    src, data = tmp_path / "varying.qvr", tmp_path / "y.npz"
    src.write_text(VARYING)
    np.savez(data, y=np.ones(40))
    done = qvr("run", str(src), "--data", str(data), "--subsample", "Row=10", "--steps", "20")
    assert done.returncode == 0, done.stderr
    assert "subsample: 10 rows of Row per step" in done.stdout
    bad = qvr("run", str(src), "--data", str(data), "--subsample", "Row=0")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "subsample" in bad.stderr
