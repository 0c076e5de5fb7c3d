"""qvr's Adam (inference/adam.py) is torch's Adam bit for bit, and an SVI run with it leaves
torch's compiler unimported (its import was 1.2 to 1.9 s of every SVI process)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch

from qvr_core.inference.adam import Adam
from tests.conftest import ROOT

pytestmark = pytest.mark.kernel_free  # two paths of one computation on one machine


def _params() -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(3)
    return [torch.nn.Parameter(torch.randn(s, generator=g)) for s in ((4, 3), (3,), ())]


def _train(optim_type: type[torch.optim.Adam], **options: Any) -> list[torch.Tensor]:
    """Five steps on a fixed loss, a parameter group added after the second; every
    parameter and moment afterwards."""
    first, second, third = _params()
    optim = optim_type([first, second], lr=0.05, **options)
    for step in range(5):
        if step == 2:
            optim.add_param_group({"params": [third], "lr": 0.01})
        optim.zero_grad(set_to_none=True)
        loss = (first.sin() * 2.0).sum() + (second**2).sum() * first.mean() + third.exp()
        loss.backward()
        optim.step()
    moments = [t for s in optim.state.values() for t in s.values()]
    return [p.detach().clone() for p in (first, second, third)] + moments


@pytest.mark.parametrize(
    "options",
    [
        {"foreach": True},
        {"foreach": False},
        {"foreach": True, "amsgrad": True, "weight_decay": 0.1},
        {"foreach": False, "maximize": True},
    ],
    ids=["foreach", "for-loop", "amsgrad", "maximize"],
)
def test_every_parameter_and_moment_is_torch_s_bit_for_bit(options: dict[str, Any]) -> None:
    ours, torch_s = _train(Adam, **options), _train(torch.optim.Adam, **options)
    assert len(ours) == len(torch_s) == 3 + 3 * (3 + options.get("amsgrad", False))
    for a, b in zip(ours, torch_s, strict=True):
        assert torch.equal(a, b)


def test_the_step_leaves_gradients_off_inside_and_on_after() -> None:
    (p,) = _params()[:1]
    optim = Adam([p], lr=0.1)
    p.grad = torch.ones_like(p)
    optim.step()
    assert torch.is_grad_enabled()


def test_an_svi_run_does_not_import_torch_s_compiler() -> None:
    code = (
        "import sys\n"
        "from qvr_core.runs.run import run_inference\n"
        "src = open('examples/models/hmm.qvr').read()\n"
        "run_inference(src, steps=3, seed=1)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
