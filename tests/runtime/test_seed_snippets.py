"""The gallery pages' "Generating synthetic data" snippets run as written.

The code is the seed pages' with the two allowed substitutions: `quivers`
-> `qvr_core` and the `.qvr` path -> the project's `examples/` (the vanilla
page lost its indentation in transcription; it is restored here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

VANILLA = """
import torch
from qvr_core.dsl import load
torch.manual_seed(0)
prog = load("examples/vanilla_rnn_lm.qvr")
model = prog.morphism
# Fix the model's stochastic weights to a chosen draw, then
# forward-sample next-token targets for a corpus of random prompts.
for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)
batch, seq_len, vocab = 4, 8, 256
prompts = torch.randint(0, vocab, (batch, seq_len))
targets = model.rsample(prompts)
print("prompts:", prompts.shape, prompts.dtype)
print("targets:", targets.shape, targets.dtype)
"""

BIDIRECTIONAL = """
import torch
from qvr_core.dsl import load

torch.manual_seed(0)
prog = load("examples/bidirectional_rnn_lm.qvr")
model = prog.morphism

for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)

batch, seq_len, vocab = 4, 8, 256
contexts = torch.randint(0, vocab, (batch, seq_len))
targets = model.rsample(contexts)
print("contexts:", contexts.shape, contexts.dtype)
print("targets: ", targets.shape, targets.dtype)
"""


def run_snippet(code: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {"__name__": "__snippet__"}
    exec(compile(code, "<snippet>", "exec"), scope)
    return scope


def test_vanilla_data_generation_snippet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = run_snippet(VANILLA, monkeypatch)
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
    scope = run_snippet(BIDIRECTIONAL, monkeypatch)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "contexts: torch.Size([4, 8]) torch.int64",
        "targets:  torch.Size([4]) torch.int64",
    ]
    model, contexts = scope["model"], scope["contexts"]
    assert tuple(model._step_h.rsample(contexts).shape) == (4, 128)  # type: ignore[attr-defined]


def test_snippet_targets_are_reproducible_under_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_snippet(VANILLA, monkeypatch)["targets"]
    second = run_snippet(VANILLA, monkeypatch)["targets"]
    assert first.tolist() == second.tolist()  # type: ignore[attr-defined]
