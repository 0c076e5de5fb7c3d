"""The gallery pages' "SVI fit" and "NUTS posterior" snippets run as written.

The code is the seed pages' with the two allowed substitutions (`quivers` ->
`qvr_core`, the `.qvr` path -> `examples/`); the vanilla page lost its
indentation in transcription and it is restored here.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.seed_snippets import (
    BIDIRECTIONAL_NUTS,
    BIDIRECTIONAL_SVI,
    VANILLA_NUTS,
    VANILLA_SVI,
    run_snippet,
)

ROOT = Path(__file__).resolve().parents[2]


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
