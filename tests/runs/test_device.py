"""`--device`: which device a run resolves to, a one-line refusal of `cuda` where torch
has no GPU, the default device set for a block and put back (also on an error), values
moved to a device, and the memory budget capped by a GPU's free memory. A CUDA GPU is
faked (`torch.cuda.is_available`, `mem_get_info`) where the test needs none; "meta", a
device every build has, stands in for a non-CPU one."""

from __future__ import annotations

import statistics
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.distributions import constraints as C

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.mcmc import _ChainRecord, _result
from qvr_core.inference.sites import FlatLayout, LatentSite, constraint_transform
from qvr_core.plan.run_arguments import DEVICES
from qvr_core.runs.device import (
    AUTO_THRESHOLD,
    DeviceUnavailable,
    check_device,
    computing_on,
    device_memory,
    resolve_device,
    to_device,
)
from qvr_core.runs.run import run_program
from qvr_core.runs.sizing import device_budget
from qvr_core.runtime.numbers import number
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked

ROOT = Path(__file__).resolve().parents[2]
META = torch.device("meta")
CUDA = torch.device("cuda", 0)
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU with 3 GiB free, that nothing here allocates on."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (3 << 30, 80 << 30))


def test_every_device_argument_is_resolved(fake_gpu: None) -> None:
    for name in DEVICES:
        assert resolve_device(name).type in {"cpu", "cuda"}
    with pytest.raises(ValueError):
        resolve_device("tpu")


def test_cpu_is_the_cpu(fake_gpu: None) -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("cpu", work=10**12) == torch.device("cpu")


def test_cuda_without_a_gpu_is_refused_in_one_line(no_gpu: None) -> None:
    with pytest.raises(DeviceUnavailable) as e:
        resolve_device("cuda")
    message = str(e.value)
    assert isinstance(e.value, InferenceError)
    assert "\n" not in message
    assert message.startswith("--device cuda: no CUDA GPU is available here (torch ")
    assert check_device("cuda") == message


def test_check_device_passes_what_can_run(no_gpu: None) -> None:
    assert check_device("cpu") is None
    assert check_device("auto") is None  # falls back to the CPU
    assert check_device("tpu") is not None


def test_auto_without_a_gpu_is_the_cpu(no_gpu: None) -> None:
    assert resolve_device("auto", work=AUTO_THRESHOLD * 1000) == torch.device("cpu")


def test_cuda_with_a_gpu(fake_gpu: None) -> None:
    assert resolve_device("cuda") == CUDA
    assert check_device("cuda") is None


def test_auto_picks_the_gpu_for_a_large_run_only(fake_gpu: None) -> None:
    assert resolve_device("auto", work=AUTO_THRESHOLD) == CUDA
    assert resolve_device("auto", work=AUTO_THRESHOLD * 100) == CUDA
    assert resolve_device("auto", work=AUTO_THRESHOLD - 1) == torch.device("cpu")
    assert resolve_device("auto", work=50) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")  # size unknown


def test_device_memory_and_budget(fake_gpu: None) -> None:
    assert device_memory(torch.device("cpu")) is None
    assert device_memory(CUDA) == 3 << 30
    assert device_budget(8 << 30, CUDA) == 3 << 30  # the GPU has less than the budget
    assert device_budget(1 << 30, CUDA) == 1 << 30  # the budget is less than the GPU's
    assert device_budget(8 << 30, torch.device("cpu")) == 8 << 30


def test_computing_on_sets_the_default_device_for_the_block() -> None:
    with computing_on(META):
        assert torch.zeros(3).device == META
        assert torch.tensor([1.0, 2.0]).device == META
        assert torch.zeros(3, device="cpu").device.type == "cpu"  # an explicit device stays
    assert torch.zeros(3).device.type == "cpu"


def test_computing_on_restores_the_default_after_an_error() -> None:
    with pytest.raises(RuntimeError, match="inside"), computing_on(META):
        assert torch.ones(2).device == META
        raise RuntimeError("inside")
    assert torch.ones(2).device.type == "cpu"
    assert torch.get_default_device().type == "cpu"


def test_computing_on_nests_and_keeps_a_default_set_before() -> None:
    torch.set_default_device(META)
    try:
        with computing_on(META), computing_on(torch.device("cpu")):  # the CPU: no change
            assert torch.empty(1).device == META
        assert torch.empty(1).device == META
    finally:
        torch.set_default_device(None)
    assert torch.empty(1).device.type == "cpu"


def test_to_device_moves_nested_values() -> None:
    Pair = namedtuple("Pair", "a b")
    value: dict[str, Any] = {
        "x": torch.ones(2, 3),
        "seqs": Padded(torch.zeros(2, 4), torch.tensor([4, 2])),
        "obs": Masked(torch.zeros(2, 4), torch.ones(2, 4, dtype=torch.bool)),
        "many": [torch.arange(3), (torch.ones(1), 7)],
        "pair": Pair(torch.ones(1), "name"),
        "n": 3,
        "none": None,
    }
    moved = to_device(value, META)
    assert moved["x"].device == META and moved["x"].shape == (2, 3)
    assert isinstance(moved["seqs"], Padded)
    assert moved["seqs"].values.device == META and moved["seqs"].lengths.device == META
    assert isinstance(moved["obs"], Masked)
    assert moved["obs"].values.device == META and moved["obs"].mask.dtype == torch.bool
    assert moved["obs"].mask.device == META
    assert isinstance(moved["many"], list) and moved["many"][0].device == META
    assert isinstance(moved["many"][1], tuple) and moved["many"][1][0].device == META
    assert moved["many"][1][1] == 7
    assert isinstance(moved["pair"], Pair) and moved["pair"].a.device == META
    assert moved["pair"].b == "name"
    assert moved["n"] == 3 and moved["none"] is None
    assert value["x"].device.type == "cpu"  # the original is left where it was


def test_to_device_moves_a_module_in_place() -> None:
    module = nn.Linear(3, 2)
    assert to_device(module, META) is module
    assert module.weight.device == META and module.bias.device == META


def test_a_tensor_already_there_is_itself() -> None:
    x = torch.ones(2)
    assert to_device(x, torch.device("cpu")) is x


@needs_gpu
def test_a_matmul_on_the_gpu() -> None:
    device = resolve_device("cuda")
    a = torch.arange(6.0).reshape(2, 3)
    b = torch.arange(12.0).reshape(3, 4)
    with computing_on(device):
        x, y = to_device((a, b), device)
        eye = torch.eye(4)  # created without a device: on the GPU
        product = x @ y @ eye
    assert product.device.type == "cuda" and eye.device.type == "cuda"
    assert torch.equal(product.cpu(), a @ b)
    free = device_memory(device)
    assert free is not None and free > 0
    assert 0 < device_budget(1 << 60, device) < 1 << 60  # the GPU's free memory


def test_a_number_is_made_on_the_device_computed_on() -> None:
    """Literals are cached tensors; a run on another device must not read the CPU's
    (a GPU run's `Normal(0, 1)` failed on mixed devices)."""
    on_cpu = number(2.5)
    with computing_on(META):
        there = number(2.5)
    assert on_cpu.device.type == "cpu" and there.device == META
    assert number(2.5) is on_cpu  # still one cached tensor per device


def test_chains_are_assembled_on_the_cpu_whatever_the_default_device() -> None:
    """The trees and draws of NUTS live on the CPU; a GPU run's result (R-hat, ESS, the
    tables written) is read with NumPy, so it is made there too."""
    layout = FlatLayout([LatentSite("s", (2,), constraint_transform("s", C.positive))])
    records = []
    for c in range(2):
        record = _ChainRecord(complete=True, step_size=0.5)
        for i in range(6):
            z = torch.tensor([0.1 * i - c, 0.2 * c + 0.05 * i], dtype=torch.float64)
            record.zs.append(z)
            record.potentials.append(float(i))
            record.accept.append(0.9)
            record.diverging.append(False)
            record.depths.append(2)
            record.steps.append(3)
            record.energies.append(float(i))
        records.append(record)
    with computing_on(META):
        result = _result(layout, records)
    tensors = [
        *result.samples.values(),
        *result.r_hat.values(),
        *result.ess.values(),
        result.log_densities,
        result.energies,
        result.diverging,
        result.step_sizes,
    ]
    assert all(t.device.type == "cpu" for t in tensors)
    assert result.summary()["s"]["r_hat_max"] > 0
    assert torch.allclose(result.samples["s"][1, 5].double(), records[1].zs[5].exp())


EIGHT = ROOT / "examples" / "models"


@needs_gpu
@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_a_model_program_runs_on_the_gpu_as_on_the_cpu(method: str) -> None:
    """Eight schools (literals, data, a HalfCauchy, a plate) run on the GPU: the run
    completes there and finds what the CPU run finds. The GPU draws its own random
    numbers, so the two agree within Monte Carlo error, with wide margins: seeds 1-4 on
    the CPU give SVI's mean -ELBO of the last 100 steps 31.9-32.4, NUTS's mean of mu
    4.35-4.55 (sd 3.3, bulk ESS over 1,100), the prior's mu sd 5 over 1,000 draws."""
    source = (EIGHT / "eight_schools_noncentered.qvr").read_text()
    data = str(EIGHT / "eight_schools.json")
    options: dict[str, Any] = {"method": method, "data": data, "seed": 1, "steps": 1000}
    if method == "nuts":
        options["chains"] = 2
    if method == "svi":
        options.update(steps=500, lr=0.05)
    here = run_program(source, device="cpu", **options)
    there = run_program(source, device="cuda", **options)
    assert there.device.startswith("cuda")
    if method == "svi":
        assert abs(statistics.mean(here.losses[-100:]) - statistics.mean(there.losses[-100:])) < 1.5
        return
    if method == "prior":
        assert here.sites is not None and there.sites is not None
        means = [s["mu"].mean for s in (here.sites, there.sites)]
        sd = here.sites["mu"].sd
    else:
        assert here.posterior is not None and there.posterior is not None
        rows = [next(r for r in s.posterior.rows if r["site"] == "mu") for s in (here, there)]  # type: ignore[union-attr]
        means, sd = [r["mean"] for r in rows], rows[0]["sd"]
    assert None not in means and sd is not None
    assert abs(means[0] - means[1]) < 0.4 * sd
