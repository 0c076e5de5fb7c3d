"""The gallery pages' "SVI fit" and "NUTS posterior" snippets run as written.

The code is the seed pages' with the two allowed substitutions (`quivers` ->
`qvr_core`, the `.qvr` path -> `examples/`); the vanilla page lost its
indentation in transcription and it is restored here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

VANILLA_SVI = """
import torch
from qvr_core.dsl import load
from qvr_core.inference import AutoNormalGuide, ELBO, SVI
torch.manual_seed(0)
prog = load("examples/vanilla_rnn_lm.qvr")
model = prog.morphism
# Regenerate the synthetic corpus under the same seed used for
# data generation.
for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)
batch, seq_len, vocab = 4, 8, 256
prompts = torch.randint(0, vocab, (batch, seq_len))
targets = model.rsample(prompts)
observations = {"next_token": targets}
# Fresh weights for fitting.
torch.manual_seed(1)
for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)
guide = AutoNormalGuide(model, observed_names={"next_token"})
optim = torch.optim.Adam(
    list(model.parameters()) + list(guide.parameters()), lr=5e-2,
)
svi = SVI(model, guide, optim, ELBO(num_particles=1))
losses = [svi.step(prompts, observations)]
for _ in range(30):
    losses.append(svi.step(prompts, observations))
print(f"initial loss: {losses[0]:.2f}")
print(f"final loss: {losses[-1]:.2f}")
"""

VANILLA_NUTS = """
import torch
from qvr_core.dsl import load
from qvr_core.inference import MCMC, NUTSKernel, bayesian_lift_parameters
torch.manual_seed(0)
prog = load("examples/vanilla_rnn_lm.qvr")
model = prog.morphism
for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)
batch, seq_len, vocab = 4, 8, 256
prompts = torch.randint(0, vocab, (batch, seq_len))
targets = model.rsample(prompts)
observations = {"next_token": targets}
h_shape = tuple(model._step_h.rsample(prompts).shape)
lifted, lx, lobs = bayesian_lift_parameters(
    model, prompts, observations,
    prior_scale=1.0,
    additional_latents={"h": h_shape},
)
kernel = NUTSKernel(step_size=0.005, max_tree_depth=3, target_accept=0.8)
mc = MCMC(kernel, num_warmup=10, num_samples=10, num_chains=1)
result = mc.run(lifted, lx, lobs)
print(f"acceptance: {float(result.acceptance_rates.mean()):.2f}")
print(f"divergences: {int(result.divergence_counts.sum())}")
"""

BIDIRECTIONAL_SVI = """
import torch
from qvr_core.dsl import load
from qvr_core.inference import AutoNormalGuide, ELBO, SVI

torch.manual_seed(0)
prog = load("examples/bidirectional_rnn_lm.qvr")
model = prog.morphism

for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)
batch, seq_len, vocab = 4, 8, 256
contexts = torch.randint(0, vocab, (batch, seq_len))
targets = model.rsample(contexts)
observations = {"masked_token": targets}

torch.manual_seed(1)
for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)

guide = AutoNormalGuide(model, observed_names={"masked_token"})
optim = torch.optim.Adam(
    list(model.parameters()) + list(guide.parameters()), lr=1e-2,
)
svi = SVI(model, guide, optim, ELBO(num_particles=1))

losses = [svi.step(contexts, observations)]
for _ in range(40):
    losses.append(svi.step(contexts, observations))

print(f"initial loss: {losses[0]:.2f}")
print(f"final loss:   {losses[-1]:.2f}")
"""

BIDIRECTIONAL_NUTS = """
import torch
from qvr_core.dsl import load
from qvr_core.inference import MCMC, NUTSKernel, bayesian_lift_parameters

torch.manual_seed(0)
prog = load("examples/bidirectional_rnn_lm.qvr")
model = prog.morphism
for _, p in model.named_parameters():
    p.data.copy_(torch.randn_like(p) * 0.3)
batch, seq_len, vocab = 4, 8, 256
contexts = torch.randint(0, vocab, (batch, seq_len))
targets = model.rsample(contexts)
observations = {"masked_token": targets}

h_shape = tuple(model._step_h.rsample(contexts).shape)
lifted, lx, lobs = bayesian_lift_parameters(
    model, contexts, observations,
    prior_scale=1.0,
    additional_latents={"h": h_shape},
)
kernel = NUTSKernel(step_size=0.005, max_tree_depth=3, target_accept=0.8)
mc     = MCMC(kernel, num_warmup=10, num_samples=10, num_chains=1)
result = mc.run(lifted, lx, lobs)

print(f"acceptance:  {float(result.acceptance_rates.mean()):.2f}")
print(f"divergences: {int(result.divergence_counts.sum())}")
"""


def run_snippet(code: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {"__name__": "__snippet__"}
    exec(compile(code, "<snippet>", "exec"), scope)
    return scope


def check_svi(scope: dict, out: str, steps: int) -> None:
    losses = scope["losses"]
    assert len(losses) == steps + 1
    assert all(isinstance(v, float) for v in losses)
    assert losses[-1] < losses[0], losses
    assert re.search(r"initial loss: +-?\d+\.\d\d\n", out)
    assert re.search(r"final loss: +-?\d+\.\d\d\n", out)


def check_nuts(scope: dict, out: str, site_count: int) -> None:
    result = scope["result"]
    assert result.acceptance_rates.shape == (1,)
    assert 0.0 < float(result.acceptance_rates.mean()) <= 1.0
    assert result.divergence_counts.shape == (1,)
    assert int(result.divergence_counts.sum()) >= 0
    assert result.samples["h"].shape == (1, 10, 4, 128)
    assert len(result.samples) == site_count
    assert re.search(r"acceptance: +\d\.\d\d\n", out)
    assert re.search(r"divergences: +\d+\n", out)


def test_vanilla_svi_snippet_reduces_the_loss(monkeypatch, capsys) -> None:
    scope = run_snippet(VANILLA_SVI, monkeypatch)
    check_svi(scope, capsys.readouterr().out, 30)


def test_bidirectional_svi_snippet_reduces_the_loss(monkeypatch, capsys) -> None:
    scope = run_snippet(BIDIRECTIONAL_SVI, monkeypatch)
    check_svi(scope, capsys.readouterr().out, 40)


def test_vanilla_nuts_snippet(monkeypatch, capsys) -> None:
    scope = run_snippet(VANILLA_NUTS, monkeypatch)
    # 9 parameter tensors (embedding, cell mlp, head mlp) plus h
    check_nuts(scope, capsys.readouterr().out, 10)


def test_bidirectional_nuts_snippet(monkeypatch, capsys) -> None:
    scope = run_snippet(BIDIRECTIONAL_NUTS, monkeypatch)
    check_nuts(scope, capsys.readouterr().out, 18)
