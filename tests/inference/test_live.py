"""What a NUTS run shows while it goes (`qvr_core.inference.live`): snapshots of each chain's
draws as traces and as the summary table, the same table the run ends with."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qvr_core.inference.chains import ChainDraw
from qvr_core.inference.live import INTERVAL_SECONDS, TRACE_POINTS, TRACE_SCALARS, LiveDraws
from qvr_core.inference.summary import SamplerStats, summarize
from qvr_core.runs.run import run_inference
from tests.eight_schools import SOURCE

DATA = {"y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}

pytestmark = pytest.mark.timeout(300)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def draw(rng: np.random.Generator, diverging: bool = False) -> ChainDraw:
    values = {"mu": rng.normal(size=()), "theta": rng.normal(size=(3, 4))}
    return ChainDraw(values, diverging, 3, float(rng.normal()))


def test_a_snapshot_is_sent_once_a_second_and_the_last_on_demand() -> None:
    clock, sent = Clock(), []
    live = LiveDraws(2, 50, 6, sent.append, clock)
    rng = np.random.default_rng(0)
    clock.now = 5.0  # the chains took a while to start: no snapshot of the first draw
    live.add(0, draw(rng))
    assert sent == []
    clock.now += INTERVAL_SECONDS
    live.add(1, draw(rng))
    assert [s["draws"] for s in sent] == [[1, 1]]
    live.add(0, draw(rng))
    assert len(sent) == 1  # too soon for another
    live.send()
    assert sent[-1]["draws"] == [2, 1] and sent[-1]["warmup"] == 50 and sent[-1]["chains"] == 2


def test_no_table_until_a_chain_has_enough_draws_then_over_the_chains_that_do() -> None:
    rng = np.random.default_rng(1)
    live = LiveDraws(3, 10, 6, lambda _: None)
    for _ in range(3):
        live.add(0, draw(rng))
    assert live.snapshot()["posterior"] is None
    for _ in range(7):
        live.add(0, draw(rng))
    for _ in range(5):
        live.add(1, draw(rng, diverging=True))
    live.add(2, draw(rng))  # fewer than half the longest chain's: left out
    posterior = live.snapshot()["posterior"]
    assert posterior["chains"] == 2 and posterior["draws"] == 5  # cut to the shortest
    assert posterior["divergences_per_chain"] == [0, 5]
    assert "divergences" in {w["kind"] for w in posterior["warnings"]}
    # The numbers are summarize's on exactly those draws.
    arrays = {
        name: np.stack([np.stack(live.values[c][name][:5]) for c in (0, 1)])
        for name in ("mu", "theta")
    }
    stats = SamplerStats(
        diverging=np.array([[False] * 5, [True] * 5]),
        tree_depth=np.full((2, 5), 3),
        energy=np.array([[s[2] for s in live.stats[c][:5]] for c in (0, 1)]),
        max_tree_depth=6,
    )
    assert json.dumps(posterior) == json.dumps(summarize(arrays, stats).to_dict())


def test_traces_are_the_first_scalars_thinned_per_chain() -> None:
    rng = np.random.default_rng(2)
    live = LiveDraws(2, 0, 6, lambda _: None)
    for _ in range(TRACE_POINTS * 3):
        live.add(0, draw(rng))
    live.add(1, draw(rng))
    traces = live.snapshot()["traces"]
    labels = [t["label"] for t in traces]
    assert len(traces) == TRACE_SCALARS
    assert labels[:4] == ["mu", "theta[0, 0]", "theta[0, 1]", "theta[0, 2]"]
    first, second = traces[2]["chains"]
    assert len(first) == TRACE_POINTS and first[0][0] == 0 and first[-1][0] == TRACE_POINTS * 3 - 1
    assert first[-1][1] == pytest.approx(float(live.values[0]["theta"][-1][0, 1]))
    assert len(second) == 1


def test_non_finite_values_travel_as_null() -> None:
    live = LiveDraws(1, 0, 6, lambda _: None)
    live.add(0, ChainDraw({"mu": np.array(np.inf)}, False, 1, 0.0))
    assert live.snapshot()["traces"][0]["chains"][0] == [[0, None]]


def test_a_model_run_reports_its_draws_and_ends_with_the_table_it_returns(tmp_path) -> None:
    data = tmp_path / "schools.json"
    data.write_text(json.dumps(DATA))
    updates: list[dict] = []
    summary = run_inference(
        SOURCE, method="nuts", steps=60, chains=2, seed=4, data=data, on_update=updates.append
    )
    last = updates[-1]
    assert last["draws"] == [30, 30] and last["chains"] == 2 and last["warmup"] == 30
    assert last["posterior"]["rows"] == summary["posterior"]["rows"]
    assert last["posterior"]["warnings"] == summary["posterior"]["warnings"]
    labels = [t["label"] for t in last["traces"]]
    assert labels == ["mu", "tau", *(f"theta_raw[{i}]" for i in range(6))]
    assert all(len(chain) == 30 for t in last["traces"] for chain in t["chains"])
    means = {r["label"]: r["mean"] for r in summary["posterior"]["rows"]}
    tau = [v for chain in last["traces"][1]["chains"] for _, v in chain]
    assert np.mean(tau) == pytest.approx(means["tau"])
