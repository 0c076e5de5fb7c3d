"""The gallery pages' "Generating synthetic data" snippets run as written.

The code is the seed pages' with the two allowed substitutions: `quivers`
-> `qvr_core` and the `.qvr` path -> the project's `examples/` (the vanilla
page lost its indentation in transcription; it is restored here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.seed_snippets import BIDIRECTIONAL_DATA, VANILLA_DATA, run_snippet

ROOT = Path(__file__).resolve().parents[2]


def test_vanilla_data_generation_snippet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = run_snippet(VANILLA_DATA, monkeypatch)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "prompts: torch.Size([4, 8]) torch.int64",
        "targets: torch.Size([4]) torch.int64",
    ]
    model, prompts = scope["model"], scope["prompts"]
    # the NUTS snippet sizes the lifted `h` from the site module
    assert tuple(model._step_h.rsample(prompts).shape) == (4, 128)  # type: ignore[attr-defined]


def test_bidirectional_data_generation_snippet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = run_snippet(BIDIRECTIONAL_DATA, monkeypatch)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "contexts: torch.Size([4, 8]) torch.int64",
        "targets:  torch.Size([4]) torch.int64",
    ]
    model, contexts = scope["model"], scope["contexts"]
    assert tuple(model._step_h.rsample(contexts).shape) == (4, 128)  # type: ignore[attr-defined]


def test_snippet_targets_are_reproducible_under_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_snippet(VANILLA_DATA, monkeypatch)["targets"]
    second = run_snippet(VANILLA_DATA, monkeypatch)["targets"]
    assert first.tolist() == second.tolist()  # type: ignore[attr-defined]
