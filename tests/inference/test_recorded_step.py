"""SVI steps recorded once and replayed (`inference.recorded_step`): the same fit as the
eager steps from the same seed, fresh noise every replay, and eager steps wherever a
recording would not hold."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from qvr_core.dsl import load, loads
from qvr_core.inference import ELBO, SVI, AutoNormalGuide, NonFiniteLossError
from qvr_core.inference.record import record_call
from qvr_core.inference.simplify import simplify
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked

from .qvr_sources import REGRESSION
from .toy_models import NormalNormal

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def fit(
    model: torch.nn.Module,
    x: object,
    observations: dict[str, torch.Tensor],
    steps: int,
    record_after: float | None,
    seed: int = 3,
) -> tuple[SVI, list[float]]:
    """`steps` SVI steps from `seed`; `record_after=0.0` records at the second step."""
    torch.manual_seed(seed)
    guide = AutoNormalGuide(model, observed_names=set(observations))
    params = [p for p in model.parameters() if p.requires_grad] + list(guide.parameters())
    optim = torch.optim.Adam(params, lr=0.01, foreach=True)
    svi = SVI(model, guide, optim, ELBO(), record_after=record_after)
    return svi, [svi.step(x, observations) for _ in range(steps)]


def regression() -> tuple[torch.nn.Module, torch.Tensor, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = loads(REGRESSION).morphism
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.5], [-2.0], [0.5]]) + 0.7 + 0.1 * torch.randn(64, 1)
    return model, x, {"y": y}


# ------------------------------------------------------------------ random draws


def test_a_recorded_draw_draws_afresh_in_each_replay_as_the_eager_call_would() -> None:
    loc = torch.tensor([1.0, -1.0])

    def noisy() -> list[torch.Tensor]:
        eps = torch.distributions.Normal(torch.zeros(2), 1.0).rsample()  # empty + normal_
        return [loc + 2.0 * eps + torch.randn(2)]

    graph = simplify(record_call(noisy, [loc], random=True), loc)
    torch.manual_seed(7)
    first, second = graph(loc)[0], graph(loc)[0]
    assert not torch.equal(first, second)  # the draws were not folded into constants
    torch.manual_seed(7)
    torch.testing.assert_close(first, noisy()[0])
    torch.testing.assert_close(second, noisy()[0])


# ------------------------------------------------------------------ the same fit


@pytest.mark.parametrize("case", ["regression", "vanilla_rnn_lm"])
def test_a_recorded_fit_is_the_eager_fit_from_the_same_seed(case: str) -> None:
    if case == "regression":
        make = regression
    else:

        def make() -> tuple[torch.nn.Module, torch.Tensor, dict[str, torch.Tensor]]:
            torch.manual_seed(0)
            model = load(EXAMPLES / "vanilla_rnn_lm.qvr").morphism
            x = model.example_input(16, 8)
            with torch.no_grad():
                y = model.run(x).values["next_token"]
            return model, x, {"next_token": y}

    recorded_model, x, obs = make()
    recorded, recorded_losses = fit(recorded_model, x, obs, 40, record_after=0.0)
    eager_model, x, obs = make()
    eager, eager_losses = fit(eager_model, x, obs, 40, record_after=None)
    assert recorded.replaying and not eager.replaying
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-4, atol=1e-4)
    for a, b in zip(recorded_model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)


# ------------------------------------------------------------------ any batch


def language_model() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """The vanilla RNN LM and a pool of 64 texts with their next tokens."""
    torch.manual_seed(0)
    model = load(EXAMPLES / "vanilla_rnn_lm.qvr").morphism
    x = model.example_input(64, 8)
    with torch.no_grad():
        y = model.run(x).values["next_token"]
    return model, x, y


def minibatch_fit(
    model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, order: list[int], record: bool
) -> tuple[SVI, list[float]]:
    """One step per entry of `order`: that 16-text minibatch of the pool, taken afresh
    (new tensors every step, as a data loader gives)."""
    torch.manual_seed(3)
    guide = AutoNormalGuide(model, observed_names={"next_token"})
    params = [p for p in model.parameters() if p.requires_grad] + list(guide.parameters())
    optim = torch.optim.Adam(params, lr=0.01, foreach=True)
    svi = SVI(model, guide, optim, ELBO(), record_after=0.0 if record else None)
    losses = []
    for k in order:
        rows = slice(16 * k, 16 * (k + 1))
        losses.append(svi.step(x[rows].clone(), {"next_token": y[rows].clone()}))
    return svi, losses


def test_a_recording_taking_the_batch_replays_every_minibatch_as_the_eager_steps_do() -> None:
    order = [k % 4 for k in range(30)]
    recorded_model, x, y = language_model()
    recorded, recorded_losses = minibatch_fit(recorded_model, x, y, order, record=True)
    eager_model, x, y = language_model()
    eager, eager_losses = minibatch_fit(eager_model, x, y, order, record=False)
    assert recorded.replaying and recorded._recorded is not None
    assert recorded._recorded.for_any_batch  # not one batch's constants
    assert (recorded.stepping, eager.stepping) == ("replayed for any batch", "eager")
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-4, atol=1e-4)
    for a, b in zip(recorded_model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_the_recording_replays_every_minibatch_as_the_eager_steps_do() -> None:
    """The replay draws its noise from the GPU's generator in the eager step's order: the
    same losses and parameters from the same seed prove it."""
    order = [k % 4 for k in range(30)]
    with torch.device("cuda"):
        recorded_model, x, y = language_model()
        recorded, recorded_losses = minibatch_fit(recorded_model, x, y, order, record=True)
        eager_model, x, y = language_model()
        _, eager_losses = minibatch_fit(eager_model, x, y, order, record=False)
    assert x.device.type == "cuda"
    assert all(p.device.type == "cuda" for p in recorded_model.parameters())
    assert recorded.replaying and recorded._recorded is not None
    assert recorded._recorded.for_any_batch
    assert recorded._recorded.devices == (torch.device("cuda", torch.cuda.current_device()),)
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-4, atol=1e-4)
    for a, b in zip(recorded_model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)


def test_a_replayed_step_checks_the_batchs_indices_as_the_eager_step_does() -> None:
    model, x, y = language_model()
    svi, _ = minibatch_fit(model, x, y, [k % 4 for k in range(12)], record=True)
    assert svi._recorded is not None and svi._recorded.for_any_batch
    bad = x[:16].clone()
    bad[3, 5] = 10_000  # no such token
    with pytest.raises(QvrRuntimeError) as eager:
        svi.evaluate_loss(bad, {"next_token": y[:16].clone()})
    with pytest.raises(QvrRuntimeError) as replayed:
        svi.step(bad, {"next_token": y[:16].clone()})
    assert "index 10000 is out of range" in str(replayed.value)
    assert str(replayed.value) == str(eager.value)
    assert svi.replaying  # a bad batch leaves the recording for the good ones


class Masking(NormalNormal):
    """Selects by a mask made from the data: the result's shape follows the data's values."""

    def dist(self, name, x, values):  # type: ignore[no-untyped-def]
        d = super().dist(name, x, values)
        if name == "y":
            shift = x[x > 0].sum()  # a shape read from the batch
            return torch.distributions.Normal(d.loc + shift, d.scale, validate_args=False)
        return d


class Caching(NormalNormal):
    """Keeps a value derived from its last batch across steps (by identity): a recording
    would hold the kept value as a constant of every batch."""

    def __init__(self, n: int, sigma: float) -> None:
        super().__init__(n, sigma)
        self.seen: torch.Tensor | None = None
        self.shift = torch.zeros(())

    def dist(self, name, x, values):  # type: ignore[no-untyped-def]
        d = super().dist(name, x, values)
        if name != "y":
            return d
        if self.seen is not x:
            self.seen, self.shift = x, x.detach().sum()
        return torch.distributions.Normal(d.loc + self.shift, d.scale, validate_args=False)


def test_a_shape_read_from_the_data_records_for_the_one_batch_only() -> None:
    x, obs = torch.randn(8, 1, generator=torch.Generator().manual_seed(2)), {"y": torch.ones(8, 3)}
    svi, recorded_losses = fit(Masking(n=3, sigma=0.5), x, obs, 12, record_after=0.0)
    _, eager_losses = fit(Masking(n=3, sigma=0.5), x, obs, 12, record_after=None)
    assert svi.replaying and svi._recorded is not None and not svi._recorded.for_any_batch
    assert svi.stepping == "replayed for one batch"
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-4, atol=1e-4)


def test_a_value_kept_from_an_earlier_batch_is_caught_at_the_first_other_batch() -> None:
    pool = torch.randn(6, 8, 1, generator=torch.Generator().manual_seed(2))
    obs = {"y": torch.ones(8, 3)}
    # the recording (third step) and its check (fourth) see the second step's batch
    # object again, whose kept sum the recording reads as a constant
    order = [0, 1, 1, 1, 2, 3, 4, 5, 2, 3]

    def run(record: bool) -> tuple[SVI, list[float]]:
        torch.manual_seed(3)
        model = Caching(n=3, sigma=0.5)
        guide = AutoNormalGuide(model, observed_names={"y"})
        optim = torch.optim.Adam(list(guide.parameters()), lr=0.01)
        svi = SVI(model, guide, optim, ELBO(), record_after=0.0 if record else None)
        batches = list(pool)  # one tensor object per batch
        return svi, [svi.step(batches[k], obs) for k in order]

    recorded, recorded_losses = run(record=True)
    _, eager_losses = run(record=False)
    assert not recorded.replaying  # disagreed at batch 2, eager since
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-5, atol=1e-5)


def test_replayed_steps_draw_new_noise_each_step() -> None:
    x, obs = torch.zeros(8, 1), {"y": torch.ones(8, 3)}
    svi, _ = fit(NormalNormal(n=3, sigma=0.5), x, obs, 5, record_after=0.0)
    assert svi.replaying
    evaluations = set()
    for _ in range(3):  # no learning rate: only the guide's draws change the loss
        for group in svi.optim.param_groups:
            group["lr"] = 0.0
        evaluations.add(svi.step(x, obs))
    assert len(evaluations) == 3


def test_a_short_run_is_never_recorded() -> None:
    model, x, obs = regression()
    svi, _ = fit(model, x, obs, 10, record_after=60.0)
    assert not svi.replaying


# ------------------------------------------------------------------ where it stays eager


class Branching(NormalNormal):
    """Reads a latent's value back into Python: a recording cannot hold its control flow."""

    def dist(self, name, x, values):  # type: ignore[no-untyped-def]
        d = super().dist(name, x, values)
        if name == "y" and float(values["mu"].detach().sum()) > 1e9:
            raise AssertionError("not reached")
        return d


class Drifting(NormalNormal):
    """A Python number that changes every call: a recording would keep its first value."""

    def dist(self, name, x, values):  # type: ignore[no-untyped-def]
        if name == "y":
            self.sigma += 0.01
        return super().dist(name, x, values)


@pytest.mark.parametrize("program", [Branching, Drifting])
def test_a_step_a_recording_cannot_replay_stays_eager_with_the_same_losses(
    program: type[NormalNormal],
) -> None:
    x, obs = torch.zeros(8, 1), {"y": torch.randn(8, 3, generator=torch.Generator().manual_seed(1))}
    recorded, recorded_losses = fit(program(n=3, sigma=0.5), x, obs, 12, record_after=0.0)
    _, eager_losses = fit(program(n=3, sigma=0.5), x, obs, 12, record_after=None)
    assert not recorded.replaying
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-6, atol=1e-6)


def test_another_batch_is_stepped_eagerly_and_the_recorded_one_replayed_after() -> None:
    model, x, obs = regression()
    svi, _ = fit(model, x, obs, 4, record_after=0.0)
    assert svi.replaying
    other_x, other_y = x[:16].clone(), obs["y"][:16].clone()
    with torch.no_grad():
        expected = svi.evaluate_loss(other_x, {"y": other_y})
    for group in svi.optim.param_groups:
        group["lr"] = 0.0
    losses = [svi.step(other_x, {"y": other_y}) for _ in range(200)]
    assert sum(losses) / len(losses) == pytest.approx(expected, rel=0.2)
    assert svi.replaying  # the recorded batch still is
    svi.step(x, obs)


def test_a_batch_written_in_place_is_not_replayed_with_its_old_values() -> None:
    model, x, obs = regression()
    svi, _ = fit(model, x, obs, 4, record_after=0.0)
    assert svi.replaying
    obs["y"].mul_(100.0)  # a loop refilling its buffers: the recording read the old values
    for group in svi.optim.param_groups:
        group["lr"] = 0.0
    with torch.no_grad():
        expected = svi.evaluate_loss(x, obs)
    losses = [svi.step(x, obs) for _ in range(100)]
    assert sum(losses) / len(losses) == pytest.approx(expected, rel=0.2)


def test_a_replayed_non_finite_loss_stops_before_any_parameter_moves() -> None:
    model = NormalNormal(n=2, sigma=1.0)
    x, obs = torch.zeros(2, 1), {"y": torch.zeros(2, 2)}
    svi, _ = fit(model, x, obs, 4, record_after=0.0)
    assert svi.replaying
    loc = svi.guide.locs["mu"]
    with torch.no_grad():
        loc.fill_(1e30)  # a parameter, an input of the replay: the squares overflow
    with pytest.raises(NonFiniteLossError, match="at step 5"):
        svi.step(x, obs)
    assert bool((loc == 1e30).all())


def weighted_pairs(seed: int, weight: float | None = None) -> tuple[object, dict[str, object]]:
    """Four BERT pairs of 20 positions with 1 to 3 picks each, their masked tokens weighted
    (pairs) / (picks) as d2l averages them (or every real pick `weight`)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 64, (4, 20), generator=g)
    segments = (torch.arange(20) >= 10).long().expand(4, 20)
    x = Padded(
        torch.stack([tokens, segments, torch.arange(20).expand(4, 20)], -1), torch.full((4,), 20)
    )
    mask = torch.arange(3) < torch.randint(1, 4, (4, 1), generator=g)
    picks = torch.randint(1, 20, (4, 3), generator=g)
    targets = tokens.gather(1, picks)
    masked = (
        Masked.averaged(targets, mask)
        if weight is None
        else Masked(targets, mask, mask.float() * weight)
    )
    return x, {
        "pred_positions": picks,
        "masked_tokens": masked,
        "is_next": torch.randint(0, 2, (4,), generator=g),
    }


def weighted_bert_fit(record: bool, steps: int) -> tuple[SVI, list[float]]:
    torch.manual_seed(0)
    model = load(EXAMPLES / "bert_mlm.qvr").morphism
    guide = AutoNormalGuide(model, observed_names={"masked_tokens", "is_next"})
    params = [p for p in model.parameters() if p.requires_grad] + list(guide.parameters())
    svi = SVI(
        model,
        guide,
        torch.optim.Adam(params, lr=1e-3),
        ELBO(),
        record_after=0.0 if record else None,
    )
    return svi, [svi.step(*weighted_pairs(k % 3)) for k in range(steps)]


def test_weighted_observations_replay_for_any_batch_and_check_each_batchs_weights() -> None:
    recorded, recorded_losses = weighted_bert_fit(record=True, steps=9)
    _, eager_losses = weighted_bert_fit(record=False, steps=9)
    assert recorded.stepping == "replayed for any batch"
    torch.testing.assert_close(recorded_losses, eager_losses, rtol=1e-4, atol=1e-4)
    bad = weighted_pairs(1, weight=-1.0)
    with pytest.raises(QvrRuntimeError) as eager:
        recorded.evaluate_loss(*bad)
    with pytest.raises(QvrRuntimeError) as replayed:
        recorded.step(*bad)
    assert "weighted -1.0 at example 0, position 0" in str(replayed.value)
    assert str(replayed.value) == str(eager.value)
