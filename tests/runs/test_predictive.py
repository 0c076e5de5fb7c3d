"""Posterior predictive draws made together (vmap) are draws of the exact predictive
distribution, each with its own noise; a program vmap cannot follow is drawn one draw
after another, exactly as before, from the same random state."""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.runs import predictive
from qvr_core.runs.predictive import posterior_predictive
from qvr_core.runtime.model import compile_model
from tests.eight_schools import SIGMA, SOURCE

STUDENT = """
object Row : FinSet 5

program robust : Row -> Row
    sample mu <- Normal(0.0, 1.0)
    observe y : Row <- StudentT(4.0, mu, 1.0)
    return y

export robust
"""


def _program(source: str, name: str):  # type: ignore[no-untyped-def]
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, name)


def _constant(chains: int, draws: int, **values: torch.Tensor) -> dict[str, torch.Tensor]:
    """`chains` x `draws` copies of one posterior draw: the predictive is then exact."""
    return {k: v.expand(chains, draws, *v.shape).clone() for k, v in values.items()}


def _together_used(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    used: list[bool] = []
    real = predictive._together

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        used.append(out is not None)
        return out

    monkeypatch.setattr(predictive, "_together", spy)
    return used


def test_eight_schools_draws_together_from_the_exact_predictive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used = _together_used(monkeypatch)
    program = _program(SOURCE, "eight_schools")
    theta_raw = torch.linspace(-1.0, 1.0, 8, dtype=torch.float64)
    samples = _constant(
        4,
        1500,
        mu=torch.tensor(3.0, dtype=torch.float64),
        tau=torch.tensor(2.0, dtype=torch.float64),
        theta_raw=theta_raw,
    )
    torch.manual_seed(0)
    y = posterior_predictive(program, {"sigma": SIGMA}, {"sigma": SIGMA}, samples, ["y"])["y"]
    assert used == [True]
    assert y.shape == (4, 1500, 8)
    flat = y.reshape(-1, 8)
    mean, sd, n = 3.0 + 2.0 * theta_raw, SIGMA.to(torch.float64), flat.shape[0]
    # y ~ Normal(mu + tau theta_raw, sigma): each school's mean within 4.5 standard errors,
    # its standard deviation within 4.5 of the sample sd's (about sd / sqrt(2n))
    assert ((flat.mean(0) - mean).abs() < 4.5 * sd / n**0.5).all()
    assert ((flat.std(0) - sd).abs() < 4.5 * sd / (2 * n) ** 0.5).all()
    # every draw its own noise: none repeats, across chunks of the vmap included
    assert torch.unique(flat[:, 0]).numel() == n
    lagged = torch.corrcoef(
        torch.stack([flat[: -predictive.CHUNK, 0], flat[predictive.CHUNK :, 0]])
    )
    assert abs(float(lagged[0, 1])) < 0.1


def test_each_posterior_draw_sets_its_own_predictive(monkeypatch: pytest.MonkeyPatch) -> None:
    used = _together_used(monkeypatch)
    program = _program(SOURCE, "eight_schools")
    mu = torch.tensor([[-100.0, 100.0]], dtype=torch.float64)  # (1 chain, 2 draws)
    samples = {
        "mu": mu,
        "tau": torch.full((1, 2), 1e-6, dtype=torch.float64),
        "theta_raw": torch.zeros(1, 2, 8, dtype=torch.float64),
    }
    tiny = torch.full((8,), 1e-3)
    y = posterior_predictive(program, {"sigma": tiny}, {"sigma": tiny}, samples, ["y"])["y"]
    assert used == [True]
    assert torch.allclose(y[0, 0], torch.full((8,), -100.0, dtype=torch.float64), atol=0.01)
    assert torch.allclose(y[0, 1], torch.full((8,), 100.0, dtype=torch.float64), atol=0.01)


def test_a_program_vmap_cannot_draw_is_drawn_one_by_one_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used = _together_used(monkeypatch)
    program = _program(STUDENT, "robust")  # StudentT's draw: noise vmap cannot batch
    samples = {"mu": torch.randn(2, 30, dtype=torch.float64)}
    torch.manual_seed(7)
    got = posterior_predictive(program, {}, {}, samples, ["y"])["y"]
    assert used == [False]
    torch.manual_seed(7)
    flat = samples["mu"].reshape(60)
    loop = torch.stack([program.run(None, {}, {"mu": m}).values["y"] for m in flat])
    assert torch.equal(got, loop.reshape(2, 30, 5))
