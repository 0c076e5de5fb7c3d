"""The recurrent pages against the seed's own cells (`../shared/seeds/rlstm_mogrifier_notes.txt`).

`RLSTMCell` and `MogRLSTMCell` are copied from the seed as written there (only
formatting differs); the compiled programs get the seed cells' weights, and
the per-position language models must give the seed's states and a PyTorch
reference's log-likelihood to 1e-5.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from qvr_core.dsl import load, loads
from qvr_core.runtime.program import ProgramModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ------------------------------------------------------------ the seed's cells


class RLSTMCell(nn.Module):
    def __init__(self, input_size, hidden_size):  # type: ignore[no-untyped-def]
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size

        self.linear1 = nn.Linear(input_size + hidden_size, hidden_size * 2)
        self.linear2 = nn.Linear(hidden_size * 2, hidden_size)
        self.linear3 = nn.Linear(hidden_size, hidden_size)

    def forward(self, input: Tensor, hidden=None) -> tuple[Tensor, Tensor]:  # type: ignore[no-untyped-def]
        if hidden is None:
            h_prev = input.new_zeros(input.size(0), self.hidden_size)
            c_prev = input.new_zeros(input.size(0), self.hidden_size)
        else:
            h_prev, c_prev = hidden

        ij_gates = self.linear1(torch.cat([input, h_prev], dim=-1))
        i, j = torch.chunk(ij_gates, chunks=2, dim=1)
        i, j = torch.sigmoid(i), torch.tanh(j)

        f = self.linear2(torch.cat([i * j, h_prev], dim=-1))
        f = torch.sigmoid(f)

        c = f * c_prev + torch.min(i, 1 - f) * j

        o = torch.sigmoid(self.linear3(c))
        h = o * torch.tanh(c)

        return h, c


class MogRLSTMCell(nn.Module):
    def __init__(self, input_size, hidden_size, mog_iterations=0, rank=0):  # type: ignore[no-untyped-def]
        super().__init__()
        assert rank < min(input_size, hidden_size)
        assert mog_iterations == 0 or mog_iterations > 1

        self.input_size = input_size
        self.hidden_size = hidden_size
        self.mog_iterations = mog_iterations
        self.rank = rank

        self.linear1 = nn.Linear(input_size + hidden_size, hidden_size * 2)
        self.linear2 = nn.Linear(hidden_size * 2, hidden_size)
        self.linear3 = nn.Linear(hidden_size, hidden_size)

        if rank == 0 and mog_iterations > 0:
            self.Q = nn.Linear(hidden_size, input_size)
            self.R = nn.Linear(input_size, hidden_size)

        elif mog_iterations > 0:
            self.Ql = nn.Parameter(torch.Tensor(hidden_size, rank))
            self.Qr = nn.Parameter(torch.Tensor(rank, input_size))
            self.Qb = nn.Parameter(torch.zeros(input_size))

            self.Rl = nn.Parameter(torch.Tensor(input_size, rank))
            self.Rr = nn.Parameter(torch.Tensor(rank, hidden_size))
            self.Rb = nn.Parameter(torch.zeros(hidden_size))

            self._init_mog_low_rank_matrices()

    def _init_mog_low_rank_matrices(self):  # type: ignore[no-untyped-def]
        def make_low_rank_factorization_initializer(fan_in, rank):  # type: ignore[no-untyped-def]
            variance = 1.0 / fan_in
            stddev = math.sqrt(math.sqrt(variance / rank))
            return partial(nn.init.trunc_normal_, std=stddev)

        q_init = make_low_rank_factorization_initializer(self.hidden_size, self.rank)
        r_init = make_low_rank_factorization_initializer(self.input_size, self.rank)
        q_init(self.Ql)
        q_init(self.Qr)
        r_init(self.Rl)
        r_init(self.Rr)

    def mogrify(self, xt, ht):  # type: ignore[no-untyped-def]
        for i in range(1, self.mog_iterations + 1):
            if i % 2 == 0:
                if self.rank == 0:
                    ht = (2 * torch.sigmoid(self.R(xt))) * ht
                else:
                    _x = xt @ self.Rl
                    _x = _x @ self.Rr + self.Rb
                    ht = 2 * torch.sigmoid(_x) * ht
            else:
                if self.rank == 0:
                    xt = (2 * torch.sigmoid(self.Q(ht))) * xt
                else:
                    _h = ht @ self.Ql
                    _h = _h @ self.Qr + self.Qb
                    xt = 2 * torch.sigmoid(_h) * xt
        return xt, ht

    def forward(self, input: Tensor, hidden=None) -> tuple[Tensor, Tensor]:  # type: ignore[no-untyped-def]
        if hidden is None:
            h_prev = input.new_zeros(input.size(0), self.hidden_size)
            c_prev = input.new_zeros(input.size(0), self.hidden_size)
        else:
            h_prev, c_prev = hidden

        input, h_prev = self.mogrify(input, h_prev)
        ij_gates = self.linear1(torch.cat([input, h_prev], dim=-1))
        i, j = torch.chunk(ij_gates, chunks=2, dim=1)
        i, j = torch.sigmoid(i), torch.tanh(j)

        f = self.linear2(torch.cat([i * j, h_prev], dim=-1))
        f = torch.sigmoid(f)

        c = f * c_prev + torch.min(i, 1 - f) * j

        o = torch.sigmoid(self.linear3(c))
        h = o * torch.tanh(c)

        return h, c


# --------------------------------------------------------- copying weights


@torch.no_grad()
def set_affine(net: nn.Module, weight: Tensor, bias: Tensor) -> None:
    """An `Affine` divides by sqrt(fan-in) in its forward pass: store W / gain."""
    net.weight.copy_(weight / net.gain)
    net.bias.copy_(bias)


@torch.no_grad()
def set_low_rank(net: nn.Module, left: Tensor, right: Tensor, bias: Tensor) -> None:
    """The seed's `x @ A @ B + b` as a `LowRankAffine` (`x R^T L^T * gain + b`)."""
    net.right.copy_(left.T / net.gain)
    net.left.copy_(right.T)
    net.bias.copy_(bias)


def copy_rlstm(model: ProgramModule, cell: nn.Module) -> None:
    m = model.morphisms
    hid = cell.hidden_size
    w1, b1 = cell.linear1.weight, cell.linear1.bias
    set_affine(m["gate_i"].net, w1[:hid], b1[:hid])
    set_affine(m["gate_j"].net, w1[hid:], b1[hid:])
    set_affine(m["gate_f"].net, cell.linear2.weight, cell.linear2.bias)
    set_affine(m["gate_o"].net, cell.linear3.weight, cell.linear3.bias)
    if "mog_q" in m:
        set_low_rank(m["mog_q"].net, cell.Ql, cell.Qr, cell.Qb)
        set_low_rank(m["mog_r"].net, cell.Rl, cell.Rr, cell.Rb)


def seed_states(cell: nn.Module, e: Tensor) -> tuple[Tensor, Tensor]:
    """Every (h, c) of the seed cell along `e` (B, L, in): (B, L, hidden) each."""
    hidden = None
    hs, cs = [], []
    for t in range(e.shape[1]):
        hidden = cell(e[:, t], hidden)
        hs.append(hidden[0])
        cs.append(hidden[1])
    return torch.stack(hs, 1), torch.stack(cs, 1)


def compiled(name: str) -> ProgramModule:
    torch.manual_seed(0)
    model = load(EXAMPLES / name).morphism
    assert isinstance(model, ProgramModule)
    return model


# ------------------------------------------------------------------- tests


def randomise_biases(cell: nn.Module) -> None:
    """The seed's zero-initialised biases would hide a wrongly wired bias."""
    with torch.no_grad():
        for name, p in cell.named_parameters():
            if name.endswith("b") or name.endswith("bias"):
                p.normal_(0, 0.5)


def test_rlstm_states_at_every_position_are_the_seed_cells() -> None:
    model = compiled("rlstm_lm.qvr")
    torch.manual_seed(1)
    cell = RLSTMCell(32, 64)
    randomise_biases(cell)
    copy_rlstm(model, cell)
    x = torch.randint(0, 256, (3, 7))
    e = model.morphisms["tok_embed"].table[x]
    h, c = seed_states(cell, e)
    state = model.steps["(h, _c)"].mean(x)  # (3, 7, 128): h and c side by side per position
    assert state.shape == (3, 7, 128)
    assert torch.allclose(state[..., :64], h, atol=1e-5)
    assert torch.allclose(state[..., 64:], c, atol=1e-5)


@pytest.mark.parametrize("rounds", [4, 5])
def test_mogrifier_cell_matches_the_seed_with_even_and_odd_rounds(rounds: int) -> None:
    """The page's four rounds, and five: two Q-then-R pairs and one last Q update."""
    source = (EXAMPLES / "mogrifier_rlstm_lm.qvr").read_text()
    if rounds % 2:
        source = source.replace(
            "define mogrify = repeat(mog_round, 2)",
            "define mogrify = repeat(mog_round, 2) >> mog_half",
        ).replace(
            "#! Four rounds",
            """#! One last round: the state rescales the input.
program mog_half (x, h) : Embedded * Hidden -> Embedded * Hidden
    sample q <- mog_q(h)
    let x_next = 2 * sigmoid(q) * x
    return (x_next, h)

#! Four rounds""",
        )
    torch.manual_seed(0)
    model = loads(source, strict=True).morphism
    assert isinstance(model, ProgramModule)
    torch.manual_seed(2)
    cell = MogRLSTMCell(32, 64, mog_iterations=rounds, rank=8)
    randomise_biases(cell)
    copy_rlstm(model, cell)
    x = torch.randint(0, 256, (2, 6))
    e = model.morphisms["tok_embed"].table[x]
    h, c = seed_states(cell, e)
    state = model.steps["(h, _c)"].mean(x)
    assert torch.allclose(state, torch.cat([h, c], -1), atol=1e-5)
    if rounds % 2:  # an even-round cell differs: the check above can fail
        even = MogRLSTMCell(32, 64, mog_iterations=rounds - 1, rank=8)
        even.load_state_dict(cell.state_dict())
        assert not torch.allclose(state[..., :64], seed_states(even, e)[0], atol=1e-3)


class ReferenceLM(nn.Module):
    """A per-position language model in PyTorch: embedding, the seed's cell, a head."""

    def __init__(self, model: ProgramModule, cell: nn.Module) -> None:
        super().__init__()
        m = model.morphisms
        self.embed = nn.Embedding.from_pretrained(m["tok_embed"].table.detach().clone())
        self.cell = cell
        head = m["lm_head"].net
        self.hidden = nn.Linear(64, head.hidden.weight.shape[0])
        self.out = nn.Linear(head.hidden.weight.shape[0], 256)
        with torch.no_grad():
            self.hidden.weight.copy_(head.hidden.weight * head.hidden.gain)
            self.hidden.bias.copy_(head.hidden.bias)
            self.out.weight.copy_(head.out.weight * head.out.gain)
            self.out.bias.copy_(head.out.bias)

    def log_likelihood(self, tokens: Tensor, targets: Tensor) -> Tensor:
        h, _ = seed_states(self.cell, self.embed(tokens))
        logits = self.out(torch.tanh(self.hidden(h)))
        return torch.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0].sum(-1)


def test_per_position_log_likelihood_equals_a_pytorch_reference() -> None:
    model = compiled("rlstm_lm.qvr")
    torch.manual_seed(3)
    cell = RLSTMCell(32, 64)
    randomise_biases(cell)
    copy_rlstm(model, cell)
    text = torch.randint(0, 256, (4, 9))
    tokens, targets = text[:, :-1], text[:, 1:]  # the next token at every position
    run = model.run(tokens, observations={"next_tokens": targets})
    reference = ReferenceLM(model, cell).log_likelihood(tokens, targets)
    assert run.values["next_tokens"].shape == (4, 8)
    assert torch.allclose(run.log_probs["next_tokens"], reference, atol=1e-5)
    shifted = (
        run.log_probs["next_tokens"]
        - model.run(tokens, observations={"next_tokens": targets.roll(1, -1)}).log_probs[
            "next_tokens"
        ]
    )
    assert shifted.abs().max() > 1e-3  # every position counts: moving the targets changes it
