"""The project's examples compile and compute what their programs say.

Each manual computation uses the compiled leaf modules (`model.morphisms`)
and redoes the arithmetic by hand, so a wrong wiring (direction, order,
splitting) fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core.dsl import load
from qvr_core.runtime.program import ProgramModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def model_of(name: str) -> ProgramModule:
    torch.manual_seed(0)
    model = load(EXAMPLES / name).morphism
    assert isinstance(model, ProgramModule)
    return model


def n_params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def mlp(i: int, o: int, h: int = 64) -> int:
    return i * h + h + h * o + o


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("vanilla_rnn_lm.qvr", 256 * 64 + mlp(192, 128) + mlp(128, 256)),
        # tok_embed is shared by both paths: counted once
        ("bidirectional_rnn_lm.qvr", 256 * 64 + 2 * mlp(128, 64) + mlp(128, 128) + mlp(128, 256)),
        (
            "encoder_decoder.qvr",
            2 * 128 * 32
            + mlp(64, 64)
            + 2 * (64 * 64 + 64)
            + 4 * mlp(64, 16)
            + mlp(64, 64)
            + mlp(64, 128),
        ),
        (
            "rlstm_lm.qvr",
            256 * 32 + 2 * (96 * 64 + 64) + (128 * 64 + 64) + (64 * 64 + 64) + mlp(64, 256),
        ),
        # the RLSTM's plus Q and R at rank 8: left, right and a bias each
        (
            "mogrifier_rlstm_lm.qvr",
            256 * 32
            + 2 * (96 * 64 + 64)
            + (128 * 64 + 64)
            + (64 * 64 + 64)
            + mlp(64, 256)
            + (32 * 8 + 8 * 64 + 32)
            + (64 * 8 + 8 * 32 + 64),
        ),
    ],
)
def test_parameter_counts(name: str, count: int) -> None:
    assert n_params(model_of(name)) == count


#: the per-position language models: a state and a next token at each of the 8 positions
PER_POSITION = {"(h, _c)": (4, 8, 128), "next_tokens": (4, 8)}


@pytest.mark.parametrize(
    ("name", "x_shape", "sites", "sequences"),
    [
        ("vanilla_rnn_lm.qvr", (4, 8), {"h": (4, 128), "next_token": (4,)}, set()),
        ("bidirectional_rnn_lm.qvr", (4, 8), {"h": (4, 128), "masked_token": (4,)}, set()),
        (
            "encoder_decoder.qvr",
            (4, 2),
            {"z": (4, 64), "c": (4, 64), "next_target": (4,)},
            set(),
        ),
        ("rlstm_lm.qvr", (4, 8), PER_POSITION, set(PER_POSITION)),
        ("mogrifier_rlstm_lm.qvr", (4, 8), PER_POSITION, set(PER_POSITION)),
    ],
)
def test_example_shapes(
    name: str, x_shape: tuple[int, ...], sites: dict[str, tuple], sequences: set[str]
) -> None:
    model = model_of(name)
    x = model.example_input(4, 8, torch.Generator().manual_seed(1))
    assert tuple(x.shape) == x_shape and x.dtype == torch.int64
    result = model.run(x)
    assert {k: tuple(v.shape) for k, v in result.values.items()} == sites
    # one log-density per example: a sequence site sums its positions
    assert all(lp.shape == (4,) for lp in result.log_probs.values())
    assert model.site_names == tuple(sites)
    (observed,) = [s for s in sites if model.site_kind(s) == "observe"]
    out = model.rsample(x)  # every example returns its observation
    assert tuple(out.shape) == sites[observed] and out.dtype == torch.int64
    for site, shape in sites.items():
        # a sequence site's shape depends on the input's length, so it has no fixed event shape
        assert model.site_event_shape(site) == (None if site in sequences else shape[1:])
    first = model.site_names[0]
    assert tuple(model.steps[first].rsample(x).shape) == sites[first]


def test_parameter_names_are_the_declared_morphisms() -> None:
    names = [n for n, _ in model_of("vanilla_rnn_lm.qvr").named_parameters()]
    assert names == [
        "morphisms.cell.net.hidden.weight",
        "morphisms.cell.net.hidden.bias",
        "morphisms.cell.net.out.weight",
        "morphisms.cell.net.out.bias",
        "morphisms.lm_head.net.hidden.weight",
        "morphisms.lm_head.net.hidden.bias",
        "morphisms.lm_head.net.out.weight",
        "morphisms.lm_head.net.out.bias",
        "morphisms.tok_embed.table",
    ]


def test_site_modules_are_reachable_both_ways() -> None:
    model = model_of("vanilla_rnn_lm.qvr")
    assert model._step_h is model.steps["h"]
    assert model._step_next_token is model.steps["next_token"]
    assert model.steps["h"].parts[0].inner is model.morphisms["tok_embed"]
    assert model.site_kind("h") == "sample" and model.site_kind("next_token") == "observe"
    assert model.site_support("h") == "real" and model.site_support("next_token") == "finset"


# ------------------------------------------------------------ manual maths


def scan_means(cell: torch.nn.Module, xs: torch.Tensor, width: int, reverse: bool = False):
    h = torch.zeros(xs.shape[0], width)
    order = range(xs.shape[1] - 1, -1, -1) if reverse else range(xs.shape[1])
    for t in order:
        h = cell.mean(torch.cat([xs[:, t], h], dim=-1))
    return h


def test_bidirectional_backward_branch_reads_right_to_left() -> None:
    model = model_of("bidirectional_rnn_lm.qvr")
    m = model.morphisms
    x = torch.randint(0, 256, (3, 7))
    e = m["tok_embed"].table[x]
    forward = scan_means(m["fwd_cell"], e, 64)
    backward = scan_means(m["bwd_cell"], e, 64, reverse=True)
    got = model._step_h.mean(x)
    assert torch.allclose(got, m["combine"].mean(torch.cat([forward, backward], -1)), atol=1e-5)
    wrong = scan_means(m["bwd_cell"], e, 64, reverse=False)
    assert not torch.allclose(got, m["combine"].mean(torch.cat([forward, wrong], -1)), atol=1e-3)


def test_vanilla_log_joint_is_the_hand_computed_canonical_path() -> None:
    model = model_of("vanilla_rnn_lm.qvr")
    m = model.morphisms
    x = torch.randint(0, 256, (4, 6))
    values = model.run(x).values
    h, y = values["h"], values["next_token"]
    e = m["tok_embed"].table[x]
    prev = scan_means(m["cell"], e[:, :-1], 128)
    loc = m["cell"].params(torch.cat([e[:, -1], prev], -1))
    lp_h = D.Normal(loc, 0.1).log_prob(h).sum(-1)
    lp_y = torch.log_softmax(m["lm_head"].params(h), -1).gather(-1, y[:, None])[:, 0]
    first = model.log_joint(x, values)
    assert torch.allclose(first, lp_h + lp_y, atol=1e-4)
    assert torch.equal(first, model.log_joint(x, values))  # deterministic


def test_rlstm_cell_program_matches_the_reference_cell() -> None:
    model = model_of("rlstm_lm.qvr")
    m = model.morphisms
    x = torch.randint(0, 256, (2, 5))
    e = m["tok_embed"].table[x]
    h = c = torch.zeros(2, 64)
    states = []
    for t in range(5):
        i = torch.sigmoid(m["gate_i"].mean(torch.cat([e[:, t], h], -1)))
        j = torch.tanh(m["gate_j"].mean(torch.cat([e[:, t], h], -1)))
        f = torch.sigmoid(m["gate_f"].mean(torch.cat([i * j, h], -1)))
        c = f * c + torch.minimum(i, 1 - f) * j
        h = torch.sigmoid(m["gate_o"].mean(c)) * torch.tanh(c)
        states.append(torch.cat([h, c], -1))
    expected = torch.stack(states, 1)  # scanl: the state after each position, (2, 5, 128)
    step = model.steps["(h, _c)"]
    assert torch.allclose(step.rsample(x), expected, atol=1e-5)
    assert torch.allclose(step.mean(x), expected, atol=1e-5)
    # the head reads h, the first 64 numbers of each position's state
    values = model.run(x).values
    logits = m["lm_head"].params(expected[..., :64])
    lp = torch.log_softmax(logits, -1).gather(-1, values["next_tokens"][..., None])[..., 0]
    scored = model.run(x, values=values).log_probs
    assert torch.allclose(scored["next_tokens"], lp.sum(-1), atol=1e-4)
    # every site of the cell is a Dirac, so the state chain scores 0
    assert torch.equal(scored["(h, _c)"], torch.zeros(2))


def test_encoder_decoder_wires_tensor_stack_and_fan() -> None:
    model = model_of("encoder_decoder.qvr")
    m = model.morphisms
    x = torch.tensor([[3, 5], [127, 0]])
    pair = torch.cat([m["src_embed"].table[x[:, 0]], m["tgt_embed"].table[x[:, 1]]], -1)
    z = m["block__stack0_1"].mean(m["block__stack0_0"].mean(m["encode"].mean(pair)))
    assert torch.allclose(model._step_z.mean(x), z, atol=1e-5)
    heads = torch.cat([m[f"head_{i}"].mean(z) for i in range(4)], -1)
    assert torch.allclose(model._step_c.mean(z), m["mix"].mean(heads), atol=1e-5)
    w0, w1 = m["block__stack0_0"].net.weight, m["block__stack0_1"].net.weight
    assert w0 is not w1 and not torch.equal(w0, w1)
