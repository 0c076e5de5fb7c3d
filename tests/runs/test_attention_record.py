"""A run keeps the attention weights of its first example (`runs.attention_record`).

The BERT page's model on a padded batch (its "Try it" recipe, shortened): after a
few SVI steps the weights recorded for the first pair are an attention over its
real positions only. A small attention program through `run_program`: the
summary, its JSON, `--output`'s constant data and the caps.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from qvr_core.dsl import load
from qvr_core.inference import ELBO, SVI, AutoNormalGuide
from qvr_core.inference.results import RunResults
from qvr_core.runs import run_program
from qvr_core.runs.attention_record import (
    MAX_HEADS,
    MAX_POSITIONS,
    SVI_BASIS,
    attention_modules,
    record_attention,
)
from qvr_core.runtime.attention import Attention
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked, ProgramModule
from tests.conftest import EXAMPLES

VOCAB, MAX_LEN, PICKS = 64, 20, 3


def pairs(lengths: list[int]) -> tuple[Padded, dict[str, object]]:
    """Pairs as the BERT page builds them: `<cls> A <sep> B <sep>` padded to 20, three
    picks per pair (the padded picks masked), and the NSP label."""
    g = torch.Generator().manual_seed(3)
    batch = len(lengths)
    tokens = torch.randint(4, VOCAB, (batch, MAX_LEN), generator=g)
    segments = torch.zeros(batch, MAX_LEN, dtype=torch.long)
    picks = torch.zeros(batch, PICKS, dtype=torch.long)
    mask = torch.zeros(batch, PICKS, dtype=torch.bool)
    for i, n in enumerate(lengths):
        tokens[i, 0], tokens[i, n - 1], tokens[i, n:] = 0, 1, 3  # <cls>, <sep>, <pad>
        segments[i, n // 2 : n] = 1
        k = 1 + i % PICKS
        picks[i, :k] = torch.arange(1, k + 1)
        mask[i, :k] = True
    positions = torch.arange(MAX_LEN).expand(batch, MAX_LEN)
    x = Padded(torch.stack([tokens, segments, positions], -1), torch.tensor(lengths))
    given = {
        "pred_positions": picks,
        "masked_tokens": Masked(tokens.gather(1, picks), mask),
        "is_next": torch.randint(0, 2, (batch,), generator=g),
    }
    return x, given


def test_a_bert_run_records_each_blocks_attention_over_the_real_positions() -> None:
    torch.manual_seed(0)
    model = load(EXAMPLES / "bert_mlm.qvr").morphism
    assert isinstance(model, ProgramModule)
    x, given = pairs([13, 20, 9])
    guide = AutoNormalGuide(model, observed_names={"masked_tokens", "is_next"})
    optim = torch.optim.Adam(list(model.parameters()) + list(guide.parameters()), lr=1e-2)
    svi = SVI(model, guide, optim, ELBO(num_particles=1))
    for _ in range(3):
        svi.step(x, given)

    records = record_attention(model, [partial(model.run, x, given)], x, SVI_BASIS)

    assert [r.label for r in records] == [
        "self_attention in encoder_block 1 of 2",
        "self_attention in encoder_block 2 of 2",
    ]
    for record in records:
        assert record.site == "encoder_block.a" and record.kind == "self"
        assert record.combinator == "multihead(w_q, w_k, w_v)" and record.basis == SVI_BASIS
        assert (record.heads, record.queries, record.keys) == (2, 13, 13)  # padding cut off
        w = torch.tensor(record.weights)
        assert w.shape == (2, 13, 13)
        assert torch.allclose(w.sum(-1), torch.ones(2, 13), atol=1e-6)  # nothing on padding
        assert bool((w > 0).all())  # every real position sees every other
        assert record.tokens is not None and len(record.tokens) == 13
        assert record.tokens[0] == "(0, 0, 0)" and record.tokens[12] == "(1, 1, 12)"
    # What the modules computed: the first pair's padded keys got exactly nothing.
    modules = [p.module for p in attention_modules(model)]
    assert modules == [m for m in model.modules() if isinstance(m, Attention)]
    for module, record in zip(modules, records, strict=True):
        full = module.last_weights
        assert full is not None and full.shape == (3, 2, MAX_LEN, MAX_LEN)
        assert float(full[0, :, :, 13:].abs().max()) == 0.0
        assert torch.allclose(
            full[0, :, :13, :13].double(), torch.tensor(record.weights, dtype=torch.float64)
        )


ATTENTION = """\
object Tok : FinSet 8
object Hid : Real 8
object Head : Real 4
object Heads : {heads}

morphism embed : Tok -> Hid [role=embed]
morphism w_q : Hid -> Head [role=kernel, param_source=linear, replicate={n}] ~ Deterministic
morphism w_k : Hid -> Head [role=kernel, param_source=linear, replicate={n}] ~ Deterministic
morphism w_v : Hid -> Head [role=kernel, param_source=linear, replicate={n}] ~ Deterministic
morphism w_o : Heads -> Hid [role=kernel, param_source=linear] ~ Deterministic
morphism head : Hid -> Tok [role=kernel, param_source=linear] ~ Categorical

define attend = embed >> multihead(w_q, w_k, w_v) >> w_o

program reader : Tok -> Tok
    sample h <- attend
    observe next : Tok <- head(h)
    return next

export reader
"""


def attention_source(heads: int) -> str:
    return ATTENTION.format(n=heads, heads=" * ".join(["Head"] * heads))


def test_a_run_summary_and_its_output_carry_the_weights(tmp_path) -> None:
    results = RunResults()
    summary = run_program(
        attention_source(2), steps=3, batch=4, seq_len=6, results=results, method="svi"
    )
    (record,) = summary.attention
    assert record.label == "attend" and record.site == "reader.h"
    assert (record.heads, record.queries, record.keys) == (2, 6, 6)
    assert record.tokens is not None and len(record.tokens) == 6
    w = np.asarray(record.weights)
    assert np.allclose(w.sum(-1), 1.0, atol=1e-6)

    out = summary.to_json()
    assert list(out)[-2:] == ["attention", "stopped"]
    (sent,) = out["attention"]
    assert sent["label"] == "attend" and sent["example"] == 0 and sent["kind"] == "self"
    assert np.allclose(sent["weights"], w, atol=5e-5)  # four decimals

    written = results.write(tmp_path / "run.npz")
    with np.load(written, allow_pickle=False) as saved:
        assert np.allclose(saved["constant_data/attention_1"], w)
        assert saved["constant_data/attention_label"].tolist() == ["attend"]


def test_a_large_attention_is_capped_and_nuts_averages_its_draws() -> None:
    summary = run_program(
        attention_source(10), method="prior", steps=1, batch=2, seq_len=MAX_POSITIONS + 8
    )
    (record,) = summary.attention
    assert (record.heads, record.queries, record.keys) == (10, MAX_POSITIONS + 8, MAX_POSITIONS + 8)
    assert np.asarray(record.weights).shape == (MAX_HEADS, MAX_POSITIONS, MAX_POSITIONS)
    assert record.tokens is not None and len(record.tokens) == MAX_POSITIONS

    nuts = run_program(
        attention_source(1), method="nuts", steps=6, chains=1, max_tree_depth=2, batch=2, seq_len=3
    )
    (record,) = nuts.attention
    assert record.basis == "mean over 3 posterior draws of chain 1"
    assert np.allclose(np.asarray(record.weights).sum(-1), 1.0, atol=1e-6)


def test_a_program_without_attention_records_none() -> None:
    source = (EXAMPLES / "vanilla_rnn_lm.qvr").read_text(encoding="utf-8")
    summary = run_program(source, method="prior", steps=2, batch=2, seq_len=3)
    assert summary.attention == () and "attention" not in summary.to_json()
