"""Recorded operations TorchScript's tracer refuses, rewritten (`inference.traceable`):
the rewrite computes what the operation computes, and a recorded LayerNorm step traces."""

from __future__ import annotations

import warnings

import pytest
import torch

from qvr_core.inference.record import record_call
from qvr_core.inference.traceable import layer_norm_backward, traceable

aten = torch.ops.aten


@pytest.mark.parametrize("shape, normalized", [((4, 5, 8), [8]), ((3, 2, 3), [2, 3]), ((6,), [6])])
@pytest.mark.parametrize(
    "affine, mask",  # without a weight and bias, autograd asks for the input's gradient only
    [
        (True, [True, True, True]),
        (True, [True, False, False]),
        (True, [False, True, True]),
        (False, [True, False, False]),
    ],
)
def test_the_rewritten_layer_norm_backward_is_atens(
    shape: tuple[int, ...], normalized: list[int], affine: bool, mask: list[bool]
) -> None:
    g = torch.Generator().manual_seed(1)
    x, grad = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    weight = torch.randn(normalized, generator=g) if affine else None
    bias = torch.randn(normalized, generator=g) if affine else None
    _, mean, rstd = aten.native_layer_norm(x, normalized, weight, bias, 1e-5)
    expected = aten.native_layer_norm_backward(grad, x, normalized, mean, rstd, weight, bias, mask)
    got = layer_norm_backward(grad, x, normalized, mean, rstd, weight, bias, mask)
    for e, r in zip(expected, got, strict=True):
        if e is None:
            assert r is None
        else:
            assert r is not None
            torch.testing.assert_close(r, e, rtol=1e-5, atol=1e-5)


def test_a_recorded_layer_norm_step_traces_and_replays_its_gradients() -> None:
    norm = torch.nn.LayerNorm(8)
    weight, bias = norm.weight.detach().clone(), norm.bias.detach().clone()
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(2))

    def step() -> list[torch.Tensor]:
        w, b = weight.requires_grad_(True), bias.requires_grad_(True)
        loss = (torch.nn.functional.layer_norm(x, [8], w, b) ** 3).sum()
        return [loss, *torch.autograd.grad(loss, [w, b])]

    graph = record_call(step, [weight, bias])
    targets = {n.target for n in graph.graph.nodes}
    assert aten.native_layer_norm_backward.default in targets
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="unsupported argument type"):
            torch.jit.trace(graph, (weight.detach(), bias.detach()), check_trace=False)
        traced = torch.jit.trace(
            traceable(graph), (weight.detach(), bias.detach()), check_trace=False
        )
    w2, b2 = torch.randn(8), torch.randn(8)
    replayed = traced(w2, b2)
    weight.data, bias.data = w2.clone(), b2.clone()
    expected = step()
    for r, e in zip(replayed, expected, strict=True):
        torch.testing.assert_close(r, e.detach(), rtol=1e-4, atol=1e-5)
