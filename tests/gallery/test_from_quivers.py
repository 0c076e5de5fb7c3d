"""docs/from_quivers.md: its imports exist, and its script, a quivers script with the
imports renamed, runs and fits (the SVI loss falls, NUTS draws with finite densities)."""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import re

import pytest
import torch

from qvr_core.runs import model_data as model_job
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "from_quivers.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_every_name_the_table_gives_imports() -> None:
    text = PAGE.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    found = 0
    for row in rows:
        qvr = row.split(" | ")[-1]
        for module, names in re.findall(r"from (qvr_core[\w.]*) import ([\w, ]+)", qvr):
            imported = importlib.import_module(module)
            for name in names.split(","):
                assert hasattr(imported, name.strip()), f"{module}.{name.strip()}"
                found += 1
    assert found >= 10


@pytest.mark.timeout(300)
def test_the_renamed_quivers_script_runs_and_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    (code,) = _blocks()
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {"__name__": "__from_quivers__"}
    with model_job.one_thread(), contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, f"{PAGE}", "exec"), scope)
    losses = scope["losses"]
    assert isinstance(losses, list) and len(losses) == 30
    assert sum(losses[-5:]) < sum(losses[:5])  # averaged: no one step decides
    result = scope["result"]
    densities = result.log_densities  # type: ignore[attr-defined]
    assert bool(torch.isfinite(densities).all()) and densities.numel() == 10
    assert "SVI loss" in out.getvalue() and "NUTS acceptance" in out.getvalue()
    assert not math.isnan(float(result.acceptance_rates.mean()))  # type: ignore[attr-defined]
