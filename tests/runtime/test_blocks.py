"""Morphism blocks built directly (no checker): shapes, parameters, densities, direction."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D

from qvr_core.runtime.combinators import Compose, Fan, Lift, Repeat, Scan, Stack, TensorProduct
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.morphisms import Embed, Identity, Kernel, Latent
from tests.runtime.builders import arrow, fin, prod, real, seq

TOKEN = fin("Token", 20)
EMB = real("Embedded", 4)
HID = real("Hidden", 5)


def n_params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def cell(key: str = "cell", scale: float | None = 0.1) -> Kernel:
    return Kernel(key, arrow(prod(EMB, HID), HID), "Normal", scale=scale, hidden_dim=8)


def backbone(reverse: bool = False) -> tuple[Compose, Embed, Kernel]:
    emb = Embed("tok_embed", arrow(TOKEN, EMB))
    c = cell()
    scan = Scan(arrow(seq(EMB), HID), "scan(cell)", c, reverse)
    return Compose(arrow(seq(TOKEN), HID), "backbone", [Lift(emb), scan]), emb, c


# ------------------------------------------------------------------ leaves


def test_embed_is_a_table_lifted_over_the_sequence_axis() -> None:
    emb = Embed("tok_embed", arrow(fin("Token", 256), real("Embedded", 64)))
    assert dict(emb.named_parameters())["table"].shape == (256, 64)
    x = torch.randint(0, 256, (4, 8))
    out = Lift(emb).rsample(x)
    assert out.shape == (4, 8, 64)
    assert torch.equal(out[1, 3], emb.table[x[1, 3]])
    assert torch.equal(Lift(emb).log_prob(x, out), torch.zeros(4))
    assert not emb.stochastic


def test_embed_over_a_product_of_finsets_has_one_row_per_pair() -> None:
    emb = Embed("pair", arrow(prod(fin("S", 3), fin("T", 4)), EMB))
    assert emb.table.shape == (12, 4)
    out = emb.rsample(torch.tensor([[2, 1]]))
    assert torch.equal(out[0], emb.table[2 * 4 + 1])


def test_embed_rejects_an_out_of_range_token_by_name() -> None:
    emb = Embed("tok_embed", arrow(TOKEN, EMB))
    with pytest.raises(QvrRuntimeError, match=r"tok_embed: input.*index 20 is out of range"):
        emb.rsample(torch.tensor([3, 20]))


@pytest.mark.parametrize(
    ("options", "count"),
    [
        # mlp: in*h + h + h*out + out with in = 4 + 5, h = 8, out = 5
        ({"scale": 0.1}, 9 * 8 + 8 + 8 * 5 + 5),
        ({}, 9 * 8 + 8 + 8 * 5 + 5 + 5),  # plus a learned deviation per dimension
        ({"scale": 0.1, "param_source": "linear"}, 9 * 5 + 5),
        ({"scale": 0.1, "param_source": "linear", "rank": 2}, 2 * (9 + 5) + 5),
    ],
)
def test_kernel_parameter_counts(options: dict[str, object], count: int) -> None:
    k = Kernel("cell", arrow(prod(EMB, HID), HID), "Normal", hidden_dim=8, **options)  # type: ignore[arg-type]
    assert n_params(k) == count


def test_kernel_parameter_names_are_short() -> None:
    names = {n for n, _ in cell(scale=None).named_parameters()}
    assert names == {
        "net.hidden.weight",
        "net.hidden.bias",
        "net.out.weight",
        "net.out.bias",
        "raw_scale",
    }
    low = Kernel("q", arrow(HID, EMB), "Normal", param_source="linear", rank=2)
    assert {n for n, _ in low.named_parameters()} == {
        "net.left",
        "net.right",
        "net.bias",
        "raw_scale",
    }


def test_normal_kernel_density_is_its_family_at_the_network_output() -> None:
    k = cell()
    x, v = torch.randn(3, 9), torch.randn(3, 5)
    expected = D.Normal(k.params(x), 0.1).log_prob(v).sum(-1)
    assert torch.allclose(k.log_prob(x, v), expected)
    assert torch.equal(k.mean(x), k.params(x))


def test_learned_deviation_starts_at_one_and_is_positive() -> None:
    k = cell(scale=None)
    assert torch.allclose(k.std(), torch.ones(5))


def test_categorical_kernel_reads_one_hot_finset_inputs() -> None:
    k = Kernel("next", arrow(TOKEN, fin("Out", 3)), "Categorical", hidden_dim=8)
    x = torch.randint(0, 20, (6,))
    y = k.rsample(x)
    assert y.shape == (6,) and y.dtype == torch.int64
    assert k.mean(x).dtype == torch.int64


def test_latent_is_a_row_stochastic_matrix() -> None:
    lat = Latent("trans", arrow(fin("S", 3), fin("S", 3)))
    with torch.no_grad():
        lat.logits.copy_(torch.randn(3, 3))
    assert torch.allclose(lat.matrix.sum(-1), torch.ones(3))
    x = torch.tensor([0, 2, 1])
    v = lat.rsample(x)
    assert v.dtype == torch.int64
    assert torch.allclose(lat.log_prob(x, v), lat.matrix[x, v].log())


# -------------------------------------------------------------- composites


def test_compose_scores_under_its_last_kernel_after_the_mean_path() -> None:
    emb = Embed("e", arrow(TOKEN, EMB))
    k = Kernel("k", arrow(EMB, HID), "Normal", scale=0.3, hidden_dim=8)
    f = Compose(arrow(TOKEN, HID), "e >> k", [emb, k])
    x, v = torch.tensor([1, 7]), torch.randn(2, 5)
    expected = D.Normal(k.params(emb.table[x]), 0.3).log_prob(v).sum(-1)
    assert torch.allclose(f.log_prob(x, v), expected)


def test_identity_at_the_end_of_a_chain_is_looked_through() -> None:
    k = Kernel("k", arrow(EMB, HID), "Normal", scale=0.3, hidden_dim=8)
    f = Compose(arrow(EMB, HID), "k >> identity(Hidden)", [k, Identity(arrow(HID, HID), "id")])
    x, v = torch.randn(2, 4), torch.randn(2, 5)
    assert torch.allclose(f.log_prob(x, v), k.log_prob(x, v))


def manual_scan(c: Kernel, xs: torch.Tensor, *, reverse: bool) -> torch.Tensor:
    h = torch.zeros(xs.shape[0], 5)
    order = range(xs.shape[1] - 1, -1, -1) if reverse else range(xs.shape[1])
    for t in order:
        h = c.mean(torch.cat([xs[:, t], h], dim=-1))
    return h


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_folds_the_cell_in_order(reverse: bool) -> None:
    f, emb, c = backbone(reverse)
    x = torch.randint(0, 20, (3, 6))
    assert torch.allclose(f.mean(x), manual_scan(c, emb.table[x], reverse=reverse), atol=1e-6)
    assert f.rsample(x).shape == (3, 5)


def test_reversed_scan_reads_right_to_left() -> None:
    fwd, _, _ = backbone(False)
    bwd = Scan(arrow(seq(EMB), HID), "rev", fwd.parts[1].cell, True)
    e = torch.randn(2, 6, 4)
    left_to_right = fwd.parts[1].mean(e)
    right_to_left = bwd.mean(e)
    assert not torch.allclose(left_to_right, right_to_left)
    assert torch.allclose(right_to_left, fwd.parts[1].mean(e.flip(1)))


def test_scan_density_scores_the_last_step_after_mean_steps() -> None:
    f, emb, c = backbone()
    x, v = torch.randint(0, 20, (3, 4)), torch.randn(3, 5)
    h = manual_scan(c, emb.table[x][:, :3], reverse=False)
    last_in = torch.cat([emb.table[x][:, 3], h], dim=-1)
    expected = D.Normal(c.params(last_in), 0.1).log_prob(v).sum(-1)
    assert torch.allclose(f.log_prob(x, v), expected, atol=1e-6)
    assert torch.equal(f.log_prob(x, v), f.log_prob(x, v))  # deterministic


def test_scan_accepts_a_finset_step_input() -> None:
    k = Kernel("c", arrow(prod(TOKEN, HID), HID), "Normal", scale=0.1, hidden_dim=8)
    s = Scan(arrow(seq(TOKEN), HID), "scan(c)", k, False)
    x = torch.randint(0, 20, (2, 5))
    assert s.rsample(x).shape == (2, 5)
    h = torch.zeros(2, 5)
    for t in range(5):
        h = k.params(torch.cat([x[:, t : t + 1].float(), h], -1))
    assert torch.allclose(s.mean(x), h, atol=1e-6)


def test_fan_feeds_the_reversed_sequence_to_marked_branches() -> None:
    emb = Embed("e", arrow(TOKEN, EMB))
    c1, c2 = cell("fwd"), cell("bwd")
    p = Compose(
        arrow(seq(TOKEN), HID), "p", [Lift(emb), Scan(arrow(seq(EMB), HID), "s1", c1, False)]
    )
    q = Compose(
        arrow(seq(TOKEN), HID), "q", [Lift(emb), Scan(arrow(seq(EMB), HID), "s2", c2, False)]
    )
    both = prod(HID, real("Bwd", 5))
    fan = Fan(arrow(seq(TOKEN), both), "fan(p, q)", [p, q], frozenset({1}))
    x = torch.randint(0, 20, (2, 7))
    out = fan.mean(x)
    assert out.shape == (2, 10)
    assert torch.allclose(out[:, :5], manual_scan(c1, emb.table[x], reverse=False), atol=1e-6)
    assert torch.allclose(out[:, 5:], manual_scan(c2, emb.table[x], reverse=True), atol=1e-6)
    assert not torch.allclose(out[:, 5:], manual_scan(c2, emb.table[x], reverse=False))
    v = fan.rsample(x)
    assert torch.allclose(
        fan.log_prob(x, v), p.log_prob(x, v[:, :5]) + q.log_prob(x.flip(1), v[:, 5:])
    )


def test_tensor_product_splits_the_input_columns() -> None:
    a = Embed("a", arrow(fin("S", 3), EMB))
    b = Embed("b", arrow(fin("T", 4), real("F", 2)))
    t = TensorProduct(
        arrow(prod(fin("S", 3), fin("T", 4)), prod(EMB, real("F", 2))), "a @ b", [a, b]
    )
    x = torch.tensor([[2, 3], [0, 1]])
    out = t.rsample(x)
    assert out.shape == (2, 6)
    assert torch.equal(out[:, :4], a.table[x[:, 0]]) and torch.equal(out[:, 4:], b.table[x[:, 1]])


def test_stack_copies_are_independent_and_repeat_shares() -> None:
    def body(i: int) -> Kernel:
        key = f"block__stack0_{i}"
        return Kernel(key, arrow(HID, HID), "Normal", scale=0.1, param_source="linear")

    stack = Stack(arrow(HID, HID), "stack(block, 3)", [body(i) for i in range(3)])
    assert n_params(stack) == 3 * (5 * 5 + 5)
    w = [c.net.weight for c in stack.copies]
    assert w[0] is not w[1] and not torch.equal(w[0], w[1])
    rep = Repeat(arrow(HID, HID), "repeat(block, 3)", body(0), 3)
    assert n_params(rep) == 5 * 5 + 5
    x = torch.randn(2, 5)
    b = rep.body
    assert torch.allclose(rep.mean(x), b.mean(b.mean(b.mean(x))))
    v = torch.randn(2, 5)
    assert torch.allclose(rep.log_prob(x, v), b.log_prob(b.mean(b.mean(x)), v))


def test_wrong_input_rank_is_a_runtime_error_not_a_torch_trace() -> None:
    f, _, _ = backbone()
    with pytest.raises(QvrRuntimeError, match=r"backbone: input: expected \(B, L\) int64"):
        f.rsample(torch.tensor([1, 2, 3]))
    with pytest.raises(QvrRuntimeError, match=r"backbone: value: expected \(3, 5\) float32"):
        f.log_prob(torch.randint(0, 20, (3, 4)), torch.randn(2, 5))
