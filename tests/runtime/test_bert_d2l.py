"""The BERT page against d2l's BERT (`../shared/seeds/bert_chapter.txt`, dropout 0).

d2l's `BERTEncoder`, `MaskLM` and `NextSentencePred` (and the Transformer
pieces they use: masked softmax, multi-head attention, AddNorm, the
position-wise FFN) are written out here; their weights are copied into the
compiled page, and per-position encodings, masked-token logits and NSP
logits must agree to 1e-5 on a padded batch with different lengths and
numbers of picks.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from qvr_core.dsl import load
from qvr_core.inference import ELBO, SVI, AutoNormalGuide
from qvr_core.runtime.attention import Attention, Padded
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.paramnet import param_groups
from qvr_core.runtime.program import Masked, ProgramModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VOCAB, HIDDEN, FFN, HEADS, BLOCKS, MAX_LEN = 64, 32, 64, 2, 2, 20


# ---------------------------------------------------------------- d2l's BERT


def masked_softmax(X: Tensor, valid_lens: Tensor | None) -> Tensor:
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1])
    mask = torch.arange(shape[-1])[None, :] < valid_lens[:, None]
    X = X.masked_fill(~mask, -1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor) -> Tensor:
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.attention_weights, values)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens: int, num_heads: int, bias: bool) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention()
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def transpose_qkv(self, X: Tensor) -> Tensor:
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        X = X.permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X: Tensor) -> Tensor:
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor) -> Tensor:
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        return self.W_o(self.transpose_output(output))


class PositionWiseFFN(nn.Module):
    def __init__(self, num_hiddens: int, ffn_num_hiddens: int) -> None:
        super().__init__()
        self.dense1 = nn.Linear(num_hiddens, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, num_hiddens)

    def forward(self, X: Tensor) -> Tensor:
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    def __init__(self, norm_shape: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X: Tensor, Y: Tensor) -> Tensor:
        return self.ln(Y + X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, bias=True)
        self.addnorm1 = AddNorm(num_hiddens)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens)

    def forward(self, X: Tensor, valid_lens: Tensor) -> Tensor:
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class BERTEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.segment_embedding = nn.Embedding(2, HIDDEN)
        self.blks = nn.Sequential(
            *[TransformerEncoderBlock(HIDDEN, FFN, HEADS) for _ in range(BLOCKS)]
        )
        self.pos_embedding = nn.Parameter(torch.randn(1, MAX_LEN, HIDDEN))

    def forward(self, tokens: Tensor, segments: Tensor, valid_lens: Tensor) -> Tensor:
        X = self.token_embedding(tokens) + self.segment_embedding(segments)
        X = X + self.pos_embedding[:, : X.shape[1], :]
        for blk in self.blks:
            X = blk(X, valid_lens)
        return X


class MaskLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, VOCAB)
        )

    def forward(self, X: Tensor, pred_positions: Tensor) -> Tensor:
        num_pred_positions = pred_positions.shape[1]
        pred_positions = pred_positions.reshape(-1)
        batch_size = X.shape[0]
        batch_idx = torch.repeat_interleave(torch.arange(0, batch_size), num_pred_positions)
        masked_X = X[batch_idx, pred_positions].reshape((batch_size, num_pred_positions, -1))
        return self.mlp(masked_X)


class BERTModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = BERTEncoder()
        self.hidden = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh())
        self.mlm = MaskLM()
        self.nsp = nn.Linear(HIDDEN, 2)  # NextSentencePred's output layer

    def forward(
        self, tokens: Tensor, segments: Tensor, valid_lens: Tensor, pred_positions: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        encoded_X = self.encoder(tokens, segments, valid_lens)
        mlm_Y_hat = self.mlm(encoded_X, pred_positions)
        nsp_Y_hat = self.nsp(self.hidden(encoded_X[:, 0, :]))
        return encoded_X, mlm_Y_hat, nsp_Y_hat


# ------------------------------------------------------------ copying weights


@torch.no_grad()
def linear(leaf: nn.Module, layer: nn.Linear, rows: slice = slice(None)) -> None:
    """d2l's `nn.Linear` rows into an `Affine` (which divides by sqrt(fan-in))."""
    net = leaf.net
    net.weight.copy_(layer.weight[rows] / net.gain)
    net.bias.copy_(layer.bias[rows])


@torch.no_grad()
def norm(leaf: nn.Module, layer: nn.LayerNorm) -> None:
    leaf.net.norm.weight.copy_(layer.weight)
    leaf.net.norm.bias.copy_(layer.bias)


@torch.no_grad()
def copy_weights(model: ProgramModule, bert: BERTModel) -> None:
    m, enc = model.morphisms, bert.encoder
    m["tok_embed"].table.copy_(enc.token_embedding.weight)
    m["seg_embed"].table.copy_(enc.segment_embedding.weight)
    m["pos_embed"].table.copy_(enc.pos_embedding[0, :MAX_LEN])
    width = HIDDEN // HEADS
    for i, blk in enumerate(enc.blks):
        key = f"__stack0_{i}"
        att = blk.attention
        for h in range(HEADS):
            rows = slice(h * width, (h + 1) * width)
            linear(m[f"w_q_{h}{key}"], att.W_q, rows)
            linear(m[f"w_k_{h}{key}"], att.W_k, rows)
            linear(m[f"w_v_{h}{key}"], att.W_v, rows)
        linear(m[f"w_o{key}"], att.W_o)
        norm(m[f"norm_1{key}"], blk.addnorm1.ln)
        linear(m[f"ffn_1{key}"], blk.ffn.dense1)
        linear(m[f"ffn_2{key}"], blk.ffn.dense2)
        norm(m[f"norm_2{key}"], blk.addnorm2.ln)
    linear(m["mlm_dense"], bert.mlm.mlp[0])
    norm(m["mlm_norm"], bert.mlm.mlp[2])
    linear(m["mlm_out"], bert.mlm.mlp[3])
    linear(m["nsp_hidden"], bert.hidden[0])
    linear(m["nsp_out"], bert.nsp)


# ------------------------------------------------------------------- fixture


def batch() -> dict[str, Tensor]:
    """Three pairs padded to 20 positions, of lengths 20, 15 and 11, with 3, 2 and 1
    picked positions (pick rows padded with position 0, as d2l pads them)."""
    g = torch.Generator().manual_seed(5)
    lengths = torch.tensor([20, 15, 11])
    tokens = torch.randint(3, VOCAB, (3, MAX_LEN), generator=g)
    segments = torch.zeros(3, MAX_LEN, dtype=torch.long)
    for b, n in enumerate(lengths.tolist()):
        segments[b, n // 2 : n] = 1
        tokens[b, n:] = 1  # <pad>
    picks = torch.tensor([[1, 4, 7], [2, 9, 0], [5, 0, 0]])
    weights = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]]).bool()
    return {
        "tokens": tokens,
        "segments": segments,
        "lengths": lengths,
        "picks": picks,
        "weights": weights,
    }


def inputs(b: dict[str, Tensor]) -> Tensor:
    positions = torch.arange(MAX_LEN).expand(b["tokens"].shape[0], MAX_LEN)
    return torch.stack([b["tokens"], b["segments"], positions], -1)


@pytest.fixture(scope="module")
def pair() -> tuple[ProgramModule, BERTModel]:
    torch.manual_seed(0)
    model = load(EXAMPLES / "bert_mlm.qvr", strict=True).morphism
    assert isinstance(model, ProgramModule)
    torch.manual_seed(1)
    bert = BERTModel().eval()
    with torch.no_grad():  # d2l's layers start with zero-ish biases: make wiring visible
        for p in bert.parameters():
            p.add_(0.1 * torch.randn_like(p))
    copy_weights(model, bert)
    return model, bert


def run(model: ProgramModule, b: dict[str, Tensor], targets: Tensor | None = None):
    obs = {"pred_positions": b["picks"]}
    if targets is not None:
        obs["masked_tokens"] = Masked(targets, b["weights"])
    return model.run(Padded(inputs(b), b["lengths"]), obs)


# --------------------------------------------------------------------- tests


def test_encodings_and_logits_agree_with_d2l(pair) -> None:
    model, bert = pair
    b = batch()
    encoded, mlm_logits, nsp_logits = bert(b["tokens"], b["segments"], b["lengths"], b["picks"])
    values = run(model, b).values
    for i, n in enumerate(b["lengths"].tolist()):  # padded positions are not compared
        assert torch.allclose(values["h"][i, :n], encoded[i, :n], atol=1e-5)
    m = model.morphisms
    ours_mlm = m["mlm_out"].params(values["m_norm"])
    ours_nsp = m["nsp_out"].params(torch.tanh(values["n"]))
    assert torch.allclose(ours_mlm, mlm_logits, atol=1e-5)
    assert torch.allclose(ours_nsp, nsp_logits, atol=1e-5)


def test_masked_tokens_score_only_the_real_picks(pair) -> None:
    model, bert = pair
    b = batch()
    targets = torch.randint(3, VOCAB, (3, 3))
    _, mlm_logits, _ = bert(b["tokens"], b["segments"], b["lengths"], b["picks"])
    per_pick = torch.log_softmax(mlm_logits, -1).gather(-1, targets[..., None])[..., 0]
    expected = (per_pick * b["weights"]).sum(-1)
    got = run(model, b, targets).log_probs["masked_tokens"]
    assert torch.allclose(got, expected, atol=1e-5)
    changed = targets.clone()
    changed[2, 1:] = (changed[2, 1:] + 1) % VOCAB  # only unmarked picks of example 2
    assert torch.equal(run(model, b, changed).log_probs["masked_tokens"], got)


def test_weighted_picks_give_d2ls_average_over_the_batchs_picks(pair) -> None:
    """d2l's masked-token loss averages over a batch's real picks. Each pick weighted
    (pairs) / (picks) makes minus the mean log-likelihood over pairs exactly that loss."""
    model, bert = pair
    b = batch()
    targets = torch.randint(3, VOCAB, (3, 3))
    _, mlm_logits, _ = bert(b["tokens"], b["segments"], b["lengths"], b["picks"])
    per_pick = nn.functional.cross_entropy(
        mlm_logits.reshape(-1, VOCAB), targets.reshape(-1), reduction="none"
    )
    mask = b["weights"]
    d2l_loss = (per_pick * mask.reshape(-1)).sum() / mask.sum()
    weights = torch.full((3, 3), 3 / float(mask.sum()))
    weights[~mask] = math.nan  # unmarked positions' weights are never read
    obs = {"pred_positions": b["picks"], "masked_tokens": Masked(targets, mask, weights)}
    weighted = model.run(Padded(inputs(b), b["lengths"]), obs).log_probs["masked_tokens"]
    assert torch.allclose(-weighted.mean(), d2l_loss, atol=1e-5)
    unweighted = run(model, b, targets).log_probs["masked_tokens"]
    assert torch.allclose(weighted, unweighted * 3 / float(mask.sum()), atol=1e-6)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (torch.ones(3, 3, dtype=torch.long), "must be real numbers"),
        (torch.ones(3, 2), r"must have the mask's shape \(3, 3\)"),
        (
            torch.tensor([[1.0, 1.0, 1.0], [1.0, -2.0, 0.0], [1.0, 0.0, 0.0]]),
            "example 1, position 1",
        ),
        (torch.tensor([[1.0, math.inf, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), "weighted inf"),
    ],
)
def test_bad_weights_are_errors_naming_the_site(pair, weights: Tensor, message: str) -> None:
    model, _ = pair
    b = batch()
    targets = torch.randint(3, VOCAB, (3, 3))
    obs = {"pred_positions": b["picks"], "masked_tokens": Masked(targets, b["weights"], weights)}
    with pytest.raises(QvrRuntimeError, match=f"site 'masked_tokens'.*{message}|{message}"):
        model.run(Padded(inputs(b), b["lengths"]), obs)


def training_batch(g: torch.Generator, pairs: int = 8) -> tuple[Padded, dict[str, object]]:
    """Pairs of 9 to 20 real positions with 1 to 3 real picks each, their targets and
    next-sentence labels; the picks weighted (pairs) / (picks) as d2l averages them."""
    lengths = torch.randint(9, MAX_LEN + 1, (pairs,), generator=g)
    tokens = torch.randint(4, VOCAB, (pairs, MAX_LEN), generator=g)
    segments = (torch.arange(MAX_LEN) >= lengths[:, None] // 2).long()
    picks = (torch.rand(pairs, 3, generator=g) * (lengths[:, None] - 1)).long() + 1
    mask = torch.arange(3) < torch.randint(1, 4, (pairs, 1), generator=g)
    given = {
        "pred_positions": picks,
        "masked_tokens": Masked.averaged(torch.randint(4, VOCAB, (pairs, 3), generator=g), mask),
        "is_next": torch.randint(0, 2, (pairs,), generator=g),
    }
    positions = torch.arange(MAX_LEN).expand(pairs, MAX_LEN)
    return Padded(torch.stack([tokens, segments, positions], -1), lengths), given


def d2l_loss(bert: BERTModel, x: Padded, given: dict[str, object]) -> Tensor:
    """d2l's pretraining loss: masked-token cross-entropy averaged over the batch's real
    picks, plus the next-sentence cross-entropy averaged over the pairs."""
    masked = given["masked_tokens"]
    assert isinstance(masked, Masked)
    tokens, segments = x.values[..., 0], x.values[..., 1]
    _, mlm_logits, nsp_logits = bert(tokens, segments, x.lengths, given["pred_positions"])
    per_pick = nn.functional.cross_entropy(
        mlm_logits.reshape(-1, VOCAB), masked.values.reshape(-1), reduction="none"
    )
    mask = masked.mask.reshape(-1).float()
    mlm = (per_pick * mask).sum() / mask.sum()
    return mlm + nn.functional.cross_entropy(nsp_logits, given["is_next"])


def test_from_d2ls_weights_svi_on_the_weighted_likelihood_takes_d2ls_adam_steps() -> None:
    """The page's training (SVI, Adam over `param_groups`, the picks weighted) from d2l's
    initial weights is d2l's training step for step: the same losses and weights after
    ten Adam steps on the same batches, so what differs between the two in
    `bench/bert_pretrain.py` is where each starts, not how it trains."""
    torch.manual_seed(0)
    model = load(EXAMPLES / "bert_mlm.qvr", strict=True).morphism
    assert isinstance(model, ProgramModule)
    bert = BERTModel()
    copy_weights(model, bert)
    guide = AutoNormalGuide(model, observed_names={"masked_tokens", "is_next"})
    optim = torch.optim.Adam(param_groups([model, guide], 1e-3), lr=1e-3)
    svi = SVI(model, guide, optim, ELBO(num_particles=1), record_after=None)
    d2l_optim = torch.optim.Adam(bert.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(7)
    for _ in range(10):
        x, given = training_batch(g)
        ours = svi.step(x, given)
        d2l_optim.zero_grad()
        theirs = d2l_loss(bert, x, given)
        theirs.backward()
        d2l_optim.step()
        assert ours == pytest.approx(float(theirs.detach()), rel=1e-5)
    # Adam moves each weight about lr = 1e-3 a step, whatever its gradient's size: a
    # tenth of one step is the tolerance (rounding flips a step where a gradient is ~0)
    m, close = model.morphisms, {"atol": 1e-4, "rtol": 0.0}
    for leaf, layer in ((m["mlm_out"], bert.mlm.mlp[3]), (m["nsp_hidden"], bert.hidden[0])):
        torch.testing.assert_close(leaf.net.weight * leaf.net.gain, layer.weight, **close)
        torch.testing.assert_close(leaf.net.bias, layer.bias, **close)
    torch.testing.assert_close(m["tok_embed"].table, bert.encoder.token_embedding.weight, **close)


def test_a_padded_token_changes_nothing(pair) -> None:
    model, _ = pair
    b = batch()
    before = run(model, b).values["h"]
    b["tokens"][2, 15] = 7  # example 2 has 11 real positions
    after = run(model, b).values["h"]
    assert torch.allclose(before[2, :11], after[2, :11], atol=1e-6)


def test_attention_rows_sum_to_one_and_every_position_sees_every_other(pair) -> None:
    model, _ = pair
    b = batch()
    before = run(model, b).values["h"]
    attentions = [a for a in model.modules() if isinstance(a, Attention)]
    assert len(attentions) == BLOCKS
    w = attentions[0].last_weights
    assert w is not None and w.shape == (3, HEADS, MAX_LEN, MAX_LEN)
    assert torch.allclose(w.sum(-1), torch.ones(3, HEADS, MAX_LEN), atol=1e-5)
    assert float(w[2, :, :, 11:].abs().max()) == 0.0  # padded keys get no weight
    j = 3
    b["tokens"][0, j] = (b["tokens"][0, j] + 1) % VOCAB
    after = run(model, b).values["h"]
    moved = (after[0] - before[0]).abs().amax(-1)
    assert bool((moved[torch.arange(MAX_LEN) != j] > 1e-6).all())


def test_inconsistent_lengths_and_masks_are_clear_errors(pair) -> None:
    model, _ = pair
    b = batch()
    with pytest.raises(QvrRuntimeError, match="lengths must be between 1 and the padded"):
        model.run(Padded(inputs(b), torch.tensor([21, 3, 3])), {"pred_positions": b["picks"]})
    with pytest.raises(QvrRuntimeError, match="one per sequence"):
        model.run(Padded(inputs(b), torch.tensor([5, 3])), {"pred_positions": b["picks"]})
    with pytest.raises(QvrRuntimeError, match="mask of site 'masked_tokens' must be booleans"):
        model.run(
            inputs(b),
            {"pred_positions": b["picks"], "masked_tokens": Masked(b["picks"], b["picks"])},
        )
    with pytest.raises(QvrRuntimeError, match="pred_positions"):
        model.run(inputs(b))
    with pytest.raises(QvrRuntimeError, match="holds position 25"):
        model.run(inputs(b), {"pred_positions": torch.tensor([[25, 0, 0]] * 3)})
