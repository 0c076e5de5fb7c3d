"""The encoder-decoder page's graph: which sequence each attention reads."""

from __future__ import annotations

from qvr_core.graph import NodeKind, build_graph
from tests.graph.conftest import checked


def test_cross_attention_reads_the_decoder_and_the_memory() -> None:
    g = build_graph(checked("transformer_seq2seq.qvr"))
    blk, top = "decoder_block", "translate"
    causal = f"{blk}.a.masked_attention.causal_multihead_dec_q"
    cross = f"{blk}.c.cross_attention.cross_multihead_cross_q"
    assert g.nodes[causal]["kind"] is NodeKind.COMBINATOR
    assert g.nodes[cross]["kind"] is NodeKind.COMBINATOR
    assert set(g.predecessors(causal)) == {f"{blk}.x"}  # its own sequence only
    assert set(g.predecessors(cross)) == {f"{blk}.y", f"{blk}.memory"}
    assert set(g.predecessors(f"{blk}.output")) == {f"{blk}.out_1", f"{blk}.memory"}
    stacked = f"{top}._d___memory_.decoder.stack_decoder_block"
    assert set(g.predecessors(stacked)) == {f"{top}.y", f"{top}.memory"}
    assert g.nodes[f"{top}.next_target"]["type"] == "[Target]"
