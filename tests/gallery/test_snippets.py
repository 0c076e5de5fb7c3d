"""Every ```python block of every gallery page runs, and does what its heading says.

Each block is executed on its own, as a reader would paste it: a fresh
namespace, the repository root as working directory, nothing shared with the
other blocks. The blocks run in this process (a subprocess per block would
spend most of its time importing torch) with torch limited to one thread: the
snippets are tiny, and on a shared two-core machine intra-op threads only
contend. The timeout mark is each block's time budget.

Then, by the block's heading:
- data generation: `observations` holds data for exactly the program's
  observed sites, batched like the input;
- SVI: `losses` went down (the last value below the first, and the last five
  on average below the first five);
- NUTS: `result` holds draws of every lifted site with finite log-densities.
"""

from __future__ import annotations

import contextlib
import io
import math
import time

import pytest
import torch

from qvr_core.runs import model_data as model_job
from tests.gallery.pages import MODELS, ROOT, Block, page_blocks, page_path

BUDGET_SECONDS = 120


def _cases() -> list:
    cases = []
    for model in MODELS:
        if not page_path(model).exists():  # reported by test_pages.py; nothing to run here
            continue
        for block in page_blocks(model, "python"):
            cases.append(pytest.param(model, block, id=f"{model}-{block.kind}-line{block.line}"))
    return cases


CASES = _cases()


@pytest.fixture
def one_thread():
    with model_job.one_thread():
        yield


def run_block(block: Block, model: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, str]:
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {"__name__": "__gallery__"}
    out = io.StringIO()
    code = compile(block.code, f"docs/gallery/{model}.md:{block.line}", "exec")
    with contextlib.redirect_stdout(out):
        exec(code, scope)
    return scope, out.getvalue()


def observed_sites(program) -> set[str]:
    return {n for n in program.site_names if program.site_kind(n) == "observe"}


def test_every_page_has_the_three_try_it_blocks() -> None:
    for model in MODELS:
        assert page_path(model).exists(), f"{page_path(model)} is missing"
        kinds = [b.kind for b in page_blocks(model, "python")]
        assert kinds == ["data", "svi", "nuts"], f"{model}: python blocks under {kinds}"


@pytest.mark.timeout(BUDGET_SECONDS)
@pytest.mark.parametrize(("model", "block"), CASES)
def test_block_runs(model: str, block: Block, monkeypatch, one_thread) -> None:
    start = time.perf_counter()
    scope, printed = run_block(block, model, monkeypatch)
    elapsed = time.perf_counter() - start
    assert printed.strip(), f"{model}:{block.line}: the block prints nothing for the reader"
    assert elapsed < BUDGET_SECONDS

    program = scope["model"]
    if block.kind == "data":
        observations = scope["observations"]
        assert set(observations) == observed_sites(program)  # type: ignore[arg-type]
        batches = {int(v.shape[0]) for v in observations.values()}  # type: ignore[union-attr]
        assert len(batches) == 1, f"observations disagree on the batch: {batches}"
    elif block.kind == "svi":
        losses = [float(v) for v in scope["losses"]]  # type: ignore[union-attr]
        assert len(losses) >= 10 and all(math.isfinite(v) for v in losses)
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        assert losses[-1] < losses[0], f"SVI did not lower the loss: {losses}"
        assert last < first, f"SVI did not lower the loss on average: {first} -> {last}"
    elif block.kind == "nuts":
        result = scope["result"]
        lifted = scope["lifted"]
        assert set(result.samples) == set(lifted.site_names) - observed_sites(lifted)  # type: ignore[attr-defined]
        draws = {tuple(v.shape[:2]) for v in result.samples.values()}  # type: ignore[attr-defined]
        assert len(draws) == 1, f"sites disagree on (chains, draws): {draws}"
        assert torch.isfinite(result.log_densities).all()  # type: ignore[attr-defined]
        rates = result.acceptance_rates  # type: ignore[attr-defined]
        assert ((rates >= 0) & (rates <= 1)).all()
    else:
        pytest.fail(f"{model}:{block.line}: a python block under '{block.heading}'")
