"""The encoder-decoder page against d2l's Transformer blocks (dropout 0).

d2l's `TransformerEncoderBlock` and `TransformerDecoderBlock` (training mode:
the decoder's self-attention sees positions 0..t, its cross-attention the
encoder's real positions) with learned position embeddings, as the page
writes them. Weights are copied into the compiled page; per-position logits
must agree to 1e-5 on a batch whose sources have different lengths.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from qvr_core.check import check
from qvr_core.dsl import load
from qvr_core.runtime.attention import Attention, Padded
from qvr_core.runtime.program import Masked, ProgramModule
from tests.runtime.test_bert_d2l import (
    AddNorm,
    MultiHeadAttention,
    PositionWiseFFN,
    TransformerEncoderBlock,
    linear,
    norm,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VOCAB, HIDDEN, FFN, HEADS, BLOCKS, LENGTH = 16, 32, 64, 2, 2, 12


class TransformerDecoderBlock(nn.Module):
    """d2l's decoder block as it trains: causal self-attention, then attention over the
    encoder's outputs, each with AddNorm, then the FFN."""

    def __init__(self) -> None:
        super().__init__()
        self.attention1 = MultiHeadAttention(HIDDEN, HEADS, bias=True)
        self.addnorm1 = AddNorm(HIDDEN)
        self.attention2 = MultiHeadAttention(HIDDEN, HEADS, bias=True)
        self.addnorm2 = AddNorm(HIDDEN)
        self.ffn = PositionWiseFFN(HIDDEN, FFN)
        self.addnorm3 = AddNorm(HIDDEN)

    def forward(self, X: Tensor, enc_outputs: Tensor, enc_valid_lens: Tensor) -> Tensor:
        batch, steps, _ = X.shape
        dec_valid_lens = torch.arange(1, steps + 1).repeat(batch, 1)
        Y = self.addnorm1(X, self.attention1(X, X, X, dec_valid_lens))
        Z = self.addnorm2(Y, self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens))
        return self.addnorm3(Z, self.ffn(Z))


class Seq2Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.src_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.tgt_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.pos_embedding = nn.Embedding(LENGTH, HIDDEN)
        self.encoder = nn.ModuleList(
            TransformerEncoderBlock(HIDDEN, FFN, HEADS) for _ in range(BLOCKS)
        )
        self.decoder = nn.ModuleList(TransformerDecoderBlock() for _ in range(BLOCKS))
        self.dense = nn.Linear(HIDDEN, VOCAB)

    def forward(self, src: Tensor, tgt: Tensor, src_lens: Tensor) -> Tensor:
        positions = self.pos_embedding.weight[: src.shape[1]]
        memory = self.src_embedding(src) + positions
        for blk in self.encoder:
            memory = blk(memory, src_lens)
        y = self.tgt_embedding(tgt) + positions
        for dec in self.decoder:
            y = dec(y, memory, src_lens)
        return self.dense(y)


def attention(m: dict[str, nn.Module], prefix: str, key: str, att: MultiHeadAttention) -> None:
    width = HIDDEN // HEADS
    for h in range(HEADS):
        rows = slice(h * width, (h + 1) * width)
        linear(m[f"{prefix}_q_{h}{key}"], att.W_q, rows)
        linear(m[f"{prefix}_k_{h}{key}"], att.W_k, rows)
        linear(m[f"{prefix}_v_{h}{key}"], att.W_v, rows)
    linear(m[f"{prefix}_o{key}"], att.W_o)


@torch.no_grad()
def copy_weights(model: ProgramModule, ref: Seq2Seq) -> None:
    m = model.morphisms
    m["src_embed"].table.copy_(ref.src_embedding.weight)
    m["tgt_embed"].table.copy_(ref.tgt_embedding.weight)
    m["pos_embed"].table.copy_(ref.pos_embedding.weight)
    for i, blk in enumerate(ref.encoder):
        key = f"__stack0_{i}"
        attention(m, "enc", key, blk.attention)
        norm(m[f"enc_norm_1{key}"], blk.addnorm1.ln)
        linear(m[f"enc_ffn_1{key}"], blk.ffn.dense1)
        linear(m[f"enc_ffn_2{key}"], blk.ffn.dense2)
        norm(m[f"enc_norm_2{key}"], blk.addnorm2.ln)
    for i, dec in enumerate(ref.decoder):
        key = f"__stack1_{i}"
        attention(m, "dec", key, dec.attention1)
        norm(m[f"dec_norm_1{key}"], dec.addnorm1.ln)
        attention(m, "cross", key, dec.attention2)
        norm(m[f"dec_norm_2{key}"], dec.addnorm2.ln)
        linear(m[f"dec_ffn_1{key}"], dec.ffn.dense1)
        linear(m[f"dec_ffn_2{key}"], dec.ffn.dense2)
        norm(m[f"dec_norm_3{key}"], dec.addnorm3.ln)
    linear(m["out"], ref.dense)


def batch() -> dict[str, Tensor]:
    """Three pairs padded to 12 positions; sources of 12, 8 and 5 real tokens."""
    g = torch.Generator().manual_seed(3)
    lengths = torch.tensor([12, 8, 5])
    src = torch.randint(2, VOCAB, (3, LENGTH), generator=g)
    for b, n in enumerate(lengths.tolist()):
        src[b, n:] = 1  # <pad>
    tgt = torch.randint(2, VOCAB, (3, LENGTH), generator=g)
    return {"src": src, "tgt": tgt, "lengths": lengths}


@pytest.fixture(scope="module")
def pair() -> tuple[ProgramModule, Seq2Seq]:
    torch.manual_seed(0)
    model = load(EXAMPLES / "transformer_seq2seq.qvr", strict=True).morphism
    assert isinstance(model, ProgramModule)
    torch.manual_seed(1)
    ref = Seq2Seq().eval()
    with torch.no_grad():  # biases and LayerNorm start at 0 and 1: make the wiring visible
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    copy_weights(model, ref)
    return model, ref


def run(model: ProgramModule, b: dict[str, Tensor]) -> dict[str, Tensor]:
    positions = torch.arange(LENGTH).expand(b["src"].shape[0], LENGTH)
    x = torch.stack([b["src"], b["tgt"], positions], -1)
    return model.run(Padded(x, b["lengths"]), {}).values


def logits(model: ProgramModule, b: dict[str, Tensor]) -> Tensor:
    return model.morphisms["out"].params(run(model, b)["(d, _memory)"][..., :HIDDEN])


def test_logits_agree_with_d2l(pair) -> None:
    model, ref = pair
    b = batch()
    expected = ref(b["src"], b["tgt"], b["lengths"])
    assert torch.allclose(logits(model, b), expected, atol=1e-5)


def test_the_decoder_reads_no_future_target(pair) -> None:
    model, _ = pair
    b = batch()
    before = logits(model, b)
    j = 6
    b["tgt"][0, j] = (b["tgt"][0, j] + 1) % VOCAB
    moved = (logits(model, b) - before)[0].abs().amax(-1).detach()
    assert float(moved[:j].max().detach()) == 0.0
    assert bool((moved[j:] > 1e-6).all())


def test_a_padded_source_token_changes_nothing(pair) -> None:
    model, _ = pair
    b = batch()
    before = logits(model, b)
    b["src"][2, 9] = 7  # example 2 has 5 real source tokens
    assert torch.allclose(logits(model, b), before, atol=1e-6)


def test_recorded_weights_are_causal_and_skip_padded_memory(pair) -> None:
    model, _ = pair
    run(model, batch())
    kinds = {a.kind: a.last_weights for a in model.modules() if isinstance(a, Attention)}
    assert set(kinds) == {"self", "causal", "cross"}
    for w in kinds.values():
        assert w is not None and w.shape == (3, HEADS, LENGTH, LENGTH)
        assert torch.allclose(w.sum(-1), torch.ones(3, HEADS, LENGTH), atol=1e-5)
    causal, cross = kinds["causal"], kinds["cross"]
    assert causal is not None and cross is not None
    assert float(causal.triu(1).abs().max()) == 0.0
    assert float(cross[2, :, :, 5:].abs().max()) == 0.0


def test_target_padding_is_masked_out_of_the_likelihood(pair) -> None:
    model, _ = pair
    b = batch()
    positions = torch.arange(LENGTH).expand(3, LENGTH)
    x = Padded(torch.stack([b["src"], b["tgt"], positions], -1), b["lengths"])
    mask = torch.arange(LENGTH) < torch.tensor([10, 7, 4])[:, None]
    targets = torch.randint(2, VOCAB, (3, LENGTH))
    got = model.run(x, {"next_target": Masked(targets, mask)}).log_probs["next_target"]
    targets[mask.logical_not()] = 0
    again = model.run(x, {"next_target": Masked(targets, mask)}).log_probs["next_target"]
    assert torch.equal(got, again)


CROSS = """object A : Real 4
object M : Real 6
object K : Real 2
morphism q : A -> K [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism k : M -> K [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism v : {value} -> K [role=kernel, param_source=linear, replicate=2] ~ Deterministic
define attend = cross_multihead(q, k, v)
"""


def test_cross_attention_types_and_mismatches() -> None:
    ok = check(CROSS.format(value="M"))
    assert not ok.errors
    hover = [t for t in ok.typed_spans if "d_k" in t.note]
    assert len(hover) == 1 and str(hover[0].type) == "[A * M] -> [K * K]"
    assert hover[0].note == "2 heads, d_k = 2, queries read A, keys and values the memory M"
    bad = check(CROSS.format(value="A"))
    assert [d.code for d in bad.errors] == ["QVR211"]
    assert "keys and values read one memory" in bad.errors[0].message


def test_a_sequence_pairs_only_with_sequences() -> None:
    text = """object A : Real 2
morphism q : A -> A [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism f : A * A -> A [role=kernel, param_source=linear] ~ Deterministic
define attend = multihead(q, q, q)
program p (x) : A -> A
    sample a <- attend(x)
    let first = a[0]
    sample c <- f(first, x)
    return c
export p
"""
    errors = check(text).errors
    assert len(errors) == 1 and "pairs only with sequences" in errors[0].message
