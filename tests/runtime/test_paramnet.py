"""Dense parameter networks start and train as `nn.Linear` does (issue #25).

`Affine` keeps its weight at unit scale and multiplies by 1/sqrt(fan-in) in the
forward pass; these tests pin the two consequences that made the BERT page
learn slower than d2l's: the starting distribution, and Adam's step, which
`param_groups` must make the step Adam takes on the same `nn.Linear`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from qvr_core.runtime import param_groups
from qvr_core.runtime.paramnet import Affine, LowRankAffine, make_paramnet


def test_an_affine_starts_within_nn_linears_bounds() -> None:
    torch.manual_seed(0)
    net = Affine(64, 200)
    bound = 1 / math.sqrt(64)
    effective = net.weight.detach() * net.gain
    assert effective.abs().max() <= bound and net.bias.abs().max() <= bound
    # uniform on the bound: its deviation is bound / sqrt(3), as nn.Linear's
    assert abs(float(effective.std()) - bound / math.sqrt(3)) < 0.05 * bound


def test_adam_on_param_groups_takes_nn_linears_steps() -> None:
    torch.manual_seed(0)
    ours, theirs = Affine(32, 8), nn.Linear(32, 8)
    with torch.no_grad():
        theirs.weight.copy_(ours.weight * ours.gain)
        theirs.bias.copy_(ours.bias)
    opt_ours = torch.optim.Adam(param_groups([ours], lr=1e-2))
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    for _ in range(5):
        x, y = torch.randn(16, 32), torch.randn(16, 8)
        for net, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
    # equal to rounding (the steps themselves are 1e-2): Adam's eps, which meets a
    # gradient sqrt(32) times smaller on our side, is sqrt(32) times smaller there too
    # (with nn.Linear's eps the weights were 2e-6 apart after these five steps)
    assert torch.allclose(ours.weight * ours.gain, theirs.weight, rtol=0, atol=2e-7)
    assert torch.allclose(ours.bias, theirs.bias, rtol=0, atol=2e-7)


def test_param_groups_lists_each_parameter_once_with_its_scale() -> None:
    dense, low = Affine(16, 4), LowRankAffine(16, 4, rank=4)
    norm = make_paramnet(4, 4, "layer_norm")
    groups = param_groups([dense, low, norm, dense], lr=1.0)
    lr_of = {id(p): g["lr"] for g in groups for p in g["params"]}
    eps_of = {id(p): g["eps"] for g in groups for p in g["params"]}
    listed = [id(p) for g in groups for p in g["params"]]
    assert len(listed) == len(set(listed)) == len(lr_of)
    assert lr_of[id(dense.weight)] == math.sqrt(16) and lr_of[id(dense.bias)] == 1.0
    assert lr_of[id(low.left)] == lr_of[id(low.right)]
    assert math.isclose(lr_of[id(low.left)], (16 * 4) ** 0.25)
    assert all(lr_of[id(p)] == 1.0 for p in norm.parameters())
    assert eps_of[id(dense.weight)] == 1e-8 / math.sqrt(16) and eps_of[id(dense.bias)] == 1e-8
