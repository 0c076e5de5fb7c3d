"""The dataflow graph of each example: its nodes, edges, sites, clusters and types."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest

from qvr_core.check import check
from qvr_core.graph import (
    REVERSED_LABEL,
    ClusterKind,
    NodeKind,
    UnknownDiagramName,
    build_graph,
    drawable_names,
    graph_nodes,
)
from tests.graph.conftest import EXAMPLES, checked

IN, M, C = NodeKind.INPUT, NodeKind.MORPHISM, NodeKind.COMBINATOR
S, OBS, V, OUT = NodeKind.SAMPLE, NodeKind.OBSERVE, NodeKind.VALUE, NodeKind.OUTPUT


def kinds(graph: nx.DiGraph) -> dict[str, NodeKind]:
    return dict(graph.nodes(data="kind"))


def edges(graph: nx.DiGraph) -> set[tuple[str, str]]:
    return set(graph.edges())


def reversed_edges(graph: nx.DiGraph) -> set[tuple[str, str]]:
    return {(u, v) for u, v, r in graph.edges(data="reversed") if r}


# ------------------------------------------------------------- examples


def test_vanilla_rnn_lm_reads_as_the_seed_diagram() -> None:
    g = build_graph(checked("vanilla_rnn_lm.qvr"))
    p = "vanilla_rnn_lm"
    assert kinds(g) == {
        f"{p}.input": IN,
        f"{p}.h.backbone.tok_embed": M,
        f"{p}.h.backbone.scan_cell": C,
        f"{p}.h": S,
        f"{p}.next_token.lm_head": M,
        f"{p}.next_token": OBS,
        f"{p}.output": OUT,
    }
    chain = [
        f"{p}.input",
        f"{p}.h.backbone.tok_embed",
        f"{p}.h.backbone.scan_cell",
        f"{p}.h",
        f"{p}.next_token.lm_head",
        f"{p}.next_token",
        f"{p}.output",
    ]
    assert edges(g) == set(itertools.pairwise(chain))
    assert reversed_edges(g) == set()
    assert g.nodes[f"{p}.h.backbone.scan_cell"]["label"] == "scan(cell)"


def test_linear_regression_is_one_observed_kernel() -> None:
    g = build_graph(checked("linear_regression.qvr"))
    p = "linear_regression"
    chain = [f"{p}.input", f"{p}.y.likelihood.reg", f"{p}.y", f"{p}.output"]
    assert kinds(g) == dict(zip(chain, [IN, M, OBS, OUT], strict=True))
    assert edges(g) == set(itertools.pairwise(chain))


def test_bidirectional_fan_shows_its_right_to_left_branch() -> None:
    g = build_graph(checked("bidirectional_rnn_lm.qvr"))
    p = "bidirectional_rnn_lm"
    bb = f"{p}.h.backbone"
    fwd, bwd = f"{bb}.fan.forward_path", f"{bb}.fan.backward_path"
    assert kinds(g) == {
        f"{p}.input": IN,
        f"{fwd}.tok_embed": M,
        f"{fwd}.scan_fwd_cell": C,
        f"{bwd}.tok_embed": M,
        f"{bwd}.scan_bwd_cell": C,
        f"{bb}.fan": C,
        f"{bb}.combine": M,
        f"{p}.h": S,
        f"{p}.masked_token.lm_head": M,
        f"{p}.masked_token": OBS,
        f"{p}.output": OUT,
    }
    assert edges(g) == {
        (f"{p}.input", f"{fwd}.tok_embed"),
        (f"{p}.input", f"{bwd}.tok_embed"),
        (f"{fwd}.tok_embed", f"{fwd}.scan_fwd_cell"),
        (f"{bwd}.tok_embed", f"{bwd}.scan_bwd_cell"),
        (f"{fwd}.scan_fwd_cell", f"{bb}.fan"),
        (f"{bwd}.scan_bwd_cell", f"{bb}.fan"),
        (f"{bb}.fan", f"{bb}.combine"),
        (f"{bb}.combine", f"{p}.h"),
        (f"{p}.h", f"{p}.masked_token.lm_head"),
        (f"{p}.masked_token.lm_head", f"{p}.masked_token"),
        (f"{p}.masked_token", f"{p}.output"),
    }
    assert reversed_edges(g) == {(f"{p}.input", f"{bwd}.tok_embed")}
    assert g.edges[f"{p}.input", f"{bwd}.tok_embed"]["label"] == REVERSED_LABEL
    assert g.edges[f"{p}.input", f"{fwd}.tok_embed"]["label"] == ""


def test_bidirectional_fan_node_carries_the_product_type_and_dimensions() -> None:
    g = build_graph(checked("bidirectional_rnn_lm.qvr"))
    fan = g.nodes["bidirectional_rnn_lm.h.backbone.fan"]
    assert fan["type"] == "[Token] -> FwdHidden * BwdHidden"
    assert fan["dims"] == "[FinSet 256] -> R^(64+64)"


def test_encoder_decoder_splits_at_tensor_and_fans_over_replicate_group() -> None:
    g = build_graph(checked("encoder_decoder.qvr"))
    p = "encoder_decoder"
    enc, pair, att = f"{p}.z.encoder", f"{p}.z.encoder.embed_pair", f"{p}.c.attend"
    heads = [f"{att}.fan.head_{i}" for i in range(4)]
    assert kinds(g) == {
        f"{p}.input": IN,
        f"{pair}.tensor.src_embed": M,
        f"{pair}.tensor.tgt_embed": M,
        f"{pair}.tensor": C,
        f"{enc}.encode": M,
        f"{enc}.stack_block": C,
        f"{p}.z": S,
        **{h: M for h in heads},
        f"{att}.fan": C,
        f"{att}.mix": M,
        f"{p}.c": S,
        f"{p}.next_target.decode": M,
        f"{p}.next_target": OBS,
        f"{p}.output": OUT,
    }
    assert edges(g) == {
        (f"{p}.input", f"{pair}.tensor.src_embed"),
        (f"{p}.input", f"{pair}.tensor.tgt_embed"),
        (f"{pair}.tensor.src_embed", f"{pair}.tensor"),
        (f"{pair}.tensor.tgt_embed", f"{pair}.tensor"),
        (f"{pair}.tensor", f"{enc}.encode"),
        (f"{enc}.encode", f"{enc}.stack_block"),
        (f"{enc}.stack_block", f"{p}.z"),
        *((f"{p}.z", h) for h in heads),
        *((h, f"{att}.fan") for h in heads),
        (f"{att}.fan", f"{att}.mix"),
        (f"{att}.mix", f"{p}.c"),
        (f"{p}.c", f"{p}.next_target.decode"),
        (f"{p}.next_target.decode", f"{p}.next_target"),
        (f"{p}.next_target", f"{p}.output"),
    }
    assert g.nodes[f"{enc}.stack_block"]["label"] == "stack(block, 2)"
    assert g.nodes[heads[0]]["type"] == "Latent -> HeadOut"


def test_rlstm_cell_program_draws_its_values_and_the_lm_scans_it() -> None:
    g = build_graph(checked("rlstm_lm.qvr"))
    c, lm = "rlstm_cell", "rlstm_lm"
    # the tuple site `sample (h, _c) <- encoder` is one node named after its
    # pattern; the names it binds are read through it, not drawn on their own
    st = f"{lm}._h___c_"
    assert kinds(g) == {
        f"{c}.x": IN,
        f"{c}.h_prev": IN,
        f"{c}.c_prev": IN,
        f"{c}.i_pre.gate_i": M,
        f"{c}.i_pre": S,
        f"{c}.j_pre.gate_j": M,
        f"{c}.j_pre": S,
        f"{c}.i": V,
        f"{c}.j": V,
        f"{c}.ij": V,
        f"{c}.f_pre.gate_f": M,
        f"{c}.f_pre": S,
        f"{c}.f": V,
        f"{c}.c": V,
        f"{c}.o_pre.gate_o": M,
        f"{c}.o_pre": S,
        f"{c}.h": V,
        f"{c}.output": OUT,
        f"{lm}.input": IN,
        f"{st}.encoder.tok_embed": M,
        f"{st}.encoder.scanl_rlstm_cell": C,
        st: S,
        f"{lm}.next_tokens.lm_head": M,
        f"{lm}.next_tokens": OBS,
        f"{lm}.output": OUT,
    }
    assert edges(g) == {
        (f"{c}.x", f"{c}.i_pre.gate_i"),
        (f"{c}.h_prev", f"{c}.i_pre.gate_i"),
        (f"{c}.i_pre.gate_i", f"{c}.i_pre"),
        (f"{c}.x", f"{c}.j_pre.gate_j"),
        (f"{c}.h_prev", f"{c}.j_pre.gate_j"),
        (f"{c}.j_pre.gate_j", f"{c}.j_pre"),
        (f"{c}.i_pre", f"{c}.i"),
        (f"{c}.j_pre", f"{c}.j"),
        (f"{c}.i", f"{c}.ij"),
        (f"{c}.j", f"{c}.ij"),
        (f"{c}.ij", f"{c}.f_pre.gate_f"),
        (f"{c}.h_prev", f"{c}.f_pre.gate_f"),
        (f"{c}.f_pre.gate_f", f"{c}.f_pre"),
        (f"{c}.f_pre", f"{c}.f"),
        (f"{c}.f", f"{c}.c"),
        (f"{c}.c_prev", f"{c}.c"),
        (f"{c}.i", f"{c}.c"),
        (f"{c}.j", f"{c}.c"),
        (f"{c}.c", f"{c}.o_pre.gate_o"),
        (f"{c}.o_pre.gate_o", f"{c}.o_pre"),
        (f"{c}.o_pre", f"{c}.h"),
        (f"{c}.c", f"{c}.h"),
        (f"{c}.h", f"{c}.output"),
        (f"{c}.c", f"{c}.output"),
        (f"{lm}.input", f"{st}.encoder.tok_embed"),
        (f"{st}.encoder.tok_embed", f"{st}.encoder.scanl_rlstm_cell"),
        (f"{st}.encoder.scanl_rlstm_cell", st),
        (st, f"{lm}.next_tokens.lm_head"),
        (f"{lm}.next_tokens.lm_head", f"{lm}.next_tokens"),
        (f"{lm}.next_tokens", f"{lm}.output"),
    }
    assert g.nodes[f"{c}.c"]["detail"] == "= f * c_prev + min(i, 1 - f) * j"
    assert g.nodes[st]["label"] == "(h, _c)"
    # scanl keeps a state per position, so the site and the observation are sequences
    assert g.nodes[f"{st}.encoder.scanl_rlstm_cell"]["type"] == "[Embedded] -> [State]"
    assert g.nodes[st]["type"] == "[State]"
    assert g.nodes[f"{lm}.next_tokens"]["type"] == "[Token]"


# ---------------------------------------------------------------- facts


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.qvr")), ids=lambda p: p.stem)
def test_every_node_of_a_clean_example_has_type_dims_and_span(path) -> None:
    module = check(path.read_text(encoding="utf-8"))
    assert module.ok
    for node in graph_nodes(build_graph(module)):
        assert node.type and node.dims, node
        assert node.span is not None and node.span.length > 0, node
        assert node.cluster in build_graph(module).graph["clusters"], node


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.qvr")), ids=lambda p: p.stem)
def test_sites_are_the_checkers_sites_with_their_kind(path) -> None:
    module = check(path.read_text(encoding="utf-8"))
    g = build_graph(module)
    drawn = {
        (n.cluster, n.label, n.kind)
        for n in graph_nodes(g)
        if n.kind in (NodeKind.SAMPLE, NodeKind.OBSERVE)
    }
    expected = {
        (p.name, s.name, NodeKind.OBSERVE if s.kind == "observe" else NodeKind.SAMPLE)
        for p in module.programs.values()
        for s in p.sites
    }
    assert drawn == expected


def test_site_types_come_from_the_checker() -> None:
    module = checked("bidirectional_rnn_lm.qvr")
    g = build_graph(module)
    h = g.nodes["bidirectional_rnn_lm.h"]
    site = module.programs["bidirectional_rnn_lm"].sites[0]
    assert (h["type"], h["dims"]) == ("Combined", "R^128")
    assert h["type"] == site.value_type.label
    assert h["span"] == site.step.span


def test_programs_and_lets_are_nested_clusters() -> None:
    g = build_graph(checked("bidirectional_rnn_lm.qvr"))
    clusters = g.graph["clusters"]
    p = "bidirectional_rnn_lm"
    assert {c: (k.kind, k.parent) for c, k in clusters.items()} == {
        p: (ClusterKind.PROGRAM, None),
        f"{p}.h.backbone": (ClusterKind.LET, p),
        f"{p}.h.backbone.fan.forward_path": (ClusterKind.LET, f"{p}.h.backbone"),
        f"{p}.h.backbone.fan.backward_path": (ClusterKind.LET, f"{p}.h.backbone"),
    }
    assert clusters[f"{p}.h.backbone"].label == "let backbone : [Token] -> Combined"


def test_graph_is_a_dag_with_unique_readable_ids() -> None:
    for path in EXAMPLES.glob("*.qvr"):
        g = build_graph(check(path.read_text(encoding="utf-8")))
        assert nx.is_directed_acyclic_graph(g)
        for ident in g.nodes:
            assert all(part.isidentifier() for part in ident.split(".")), ident


def test_building_twice_gives_the_same_graph_in_the_same_order() -> None:
    text = (EXAMPLES / "encoder_decoder.qvr").read_text(encoding="utf-8")
    a, b = build_graph(check(text)), build_graph(check(text))
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert sorted(a.edges(data=True)) == sorted(b.edges(data=True))


# ------------------------------------------------------------ selection


def test_name_selects_one_program() -> None:
    g = build_graph(checked("rlstm_lm.qvr"), "rlstm_cell")
    assert set(g.graph["clusters"]) == {"rlstm_cell"}
    assert "rlstm_lm.output" not in g


def test_name_selects_one_let_with_its_argument_and_result() -> None:
    g = build_graph(checked("vanilla_rnn_lm.qvr"), "backbone")
    assert kinds(g) == {
        "backbone.input": IN,
        "backbone.tok_embed": M,
        "backbone.scan_cell": C,
        "backbone.output": OUT,
    }
    assert g.nodes["backbone.input"]["type"] == "[Token]"


def test_unknown_name_lists_what_can_be_drawn() -> None:
    module = checked("vanilla_rnn_lm.qvr")
    with pytest.raises(UnknownDiagramName) as info:
        build_graph(module, "vanila")
    assert "backbone, vanilla_rnn_lm" in str(info.value)
    assert drawable_names(module) == ["backbone", "vanilla_rnn_lm"]


def test_unused_lets_are_drawn_on_their_own_used_ones_inside_their_users() -> None:
    module = check(
        "object A : Real 2\n"
        "morphism f : A -> A [role=kernel] ~ Normal\n"
        "let inner = f >> f\n"
        "let outer = inner >> f\n"
        "let lone = f\n"
    )
    clusters = build_graph(module).graph["clusters"]
    assert set(clusters) == {"outer", "outer.inner", "lone"}


# ------------------------------------------------------------ edge cases


def test_explicit_reverse_scan_marks_its_incoming_edge() -> None:
    module = check(
        "object T : FinSet 4\nobject E : Real 2\nobject H : Real 3\n"
        "morphism emb : T -> E [role=embed]\n"
        "morphism cell : E * H -> H [role=kernel] ~ Normal\n"
        "let back = emb >> scan(cell, reverse=true)\n"
    )
    g = build_graph(module, "back")
    assert reversed_edges(g) == {("back.emb", "back.scan_cell")}
    assert g.nodes["back.scan_cell"]["label"] == "scan(cell, reverse=true)"


def test_application_of_a_let_in_a_program_is_drawn_inline() -> None:
    g = build_graph(checked("encoder_decoder.qvr"), "encoder_decoder")
    assert "encoder_decoder.c.attend" in g.graph["clusters"]
    assert ("encoder_decoder.z", "encoder_decoder.c.attend.fan.head_0") in g.edges


def test_a_let_defined_in_terms_of_itself_does_not_recurse() -> None:
    module = check(
        "object A : Real 2\nmorphism f : A -> A [role=kernel] ~ Normal\nlet loop = f >> loop\n"
    )
    g = build_graph(module)
    assert kinds(g) == {
        "loop.input": IN,
        "loop.f": M,
        "loop.loop": M,
        "loop.output": OUT,
    }


def test_names_that_are_mermaid_keywords_get_safe_ids() -> None:
    module = check(
        "object A : Real 2\nmorphism f : A -> A [role=kernel] ~ Normal\n"
        "program end : A -> A\n    sample style <- f\n    return style\nexport end\n"
    )
    assert module.ok, module.diagnostics
    g = build_graph(module)
    assert set(g.nodes) == {"end_.input", "end_.style.f", "end_.style", "end_.output"}
    assert g.graph["clusters"]["end_"].name == "end"


@pytest.mark.parametrize("path", sorted((EXAMPLES / "errors").glob("*.qvr")), ids=lambda p: p.stem)
def test_files_with_errors_still_draw_what_was_checked(path) -> None:
    g = build_graph(check(path.read_text(encoding="utf-8")))
    assert nx.is_directed_acyclic_graph(g)


def test_bert_mlm_stacks_attention_blocks_and_reads_positions_of_its_encoding() -> None:
    g = build_graph(checked("bert_mlm.qvr"))
    p, blk, ei = "bert_mlm", "encoder_block", "embed_input"
    att = f"{blk}.a.self_attention"
    assert kinds(g) == {
        **{f"{ei}.{n}": IN for n in ("t", "s", "p")},
        f"{ei}.te.tok_embed": M,
        f"{ei}.te": S,
        f"{ei}.se.seg_embed": M,
        f"{ei}.se": S,
        f"{ei}.pe.pos_embed": M,
        f"{ei}.pe": S,
        f"{ei}.e": V,
        f"{ei}.output": OUT,
        f"{blk}.x": IN,
        f"{att}.multihead_w_q": C,
        f"{att}.w_o": M,
        f"{blk}.a": S,
        f"{blk}.r": V,
        f"{blk}.y.norm_1": M,
        f"{blk}.y": S,
        f"{blk}.f.ffn_1": M,
        f"{blk}.f": S,
        f"{blk}.g": V,
        f"{blk}.f_out.ffn_2": M,
        f"{blk}.f_out": S,
        f"{blk}.r_2": V,
        f"{blk}.out.norm_2": M,
        f"{blk}.out": S,
        f"{blk}.output": OUT,
        f"{p}.input": IN,
        f"{p}.h.encoder.embed_input": M,
        f"{p}.h.encoder.stack_encoder_block": C,
        f"{p}.h": S,
        f"{p}.picked": V,
        f"{p}.m.mlm_dense": M,
        f"{p}.m": S,
        f"{p}.m_act": V,
        f"{p}.m_norm.mlm_norm": M,
        f"{p}.m_norm": S,
        f"{p}.masked_tokens.mlm_out": M,
        f"{p}.masked_tokens": OBS,
        f"{p}.cls": V,
        f"{p}.n.nsp_hidden": M,
        f"{p}.n": S,
        f"{p}.n_act": V,
        f"{p}.is_next.nsp_out": M,
        f"{p}.is_next": OBS,
        f"{p}.output": OUT,
    }
    assert {e for e in edges(g) if e[0].startswith(f"{blk}.")} == {
        (f"{blk}.x", f"{att}.multihead_w_q"),
        (f"{att}.multihead_w_q", f"{att}.w_o"),
        (f"{att}.w_o", f"{blk}.a"),
        (f"{blk}.x", f"{blk}.r"),  # the residual sums
        (f"{blk}.a", f"{blk}.r"),
        (f"{blk}.r", f"{blk}.y.norm_1"),
        (f"{blk}.y.norm_1", f"{blk}.y"),
        (f"{blk}.y", f"{blk}.f.ffn_1"),
        (f"{blk}.f.ffn_1", f"{blk}.f"),
        (f"{blk}.f", f"{blk}.g"),
        (f"{blk}.g", f"{blk}.f_out.ffn_2"),
        (f"{blk}.f_out.ffn_2", f"{blk}.f_out"),
        (f"{blk}.y", f"{blk}.r_2"),
        (f"{blk}.f_out", f"{blk}.r_2"),
        (f"{blk}.r_2", f"{blk}.out.norm_2"),
        (f"{blk}.out.norm_2", f"{blk}.out"),
        (f"{blk}.out", f"{blk}.output"),
    }
    assert {e for e in edges(g) if e[0].startswith(f"{p}.")} == {
        (f"{p}.input", f"{p}.h.encoder.embed_input"),
        (f"{p}.h.encoder.embed_input", f"{p}.h.encoder.stack_encoder_block"),
        (f"{p}.h.encoder.stack_encoder_block", f"{p}.h"),
        (f"{p}.h", f"{p}.picked"),  # h[pred_positions]
        (f"{p}.picked", f"{p}.m.mlm_dense"),
        (f"{p}.m.mlm_dense", f"{p}.m"),
        (f"{p}.m", f"{p}.m_act"),
        (f"{p}.m_act", f"{p}.m_norm.mlm_norm"),
        (f"{p}.m_norm.mlm_norm", f"{p}.m_norm"),
        (f"{p}.m_norm", f"{p}.masked_tokens.mlm_out"),
        (f"{p}.masked_tokens.mlm_out", f"{p}.masked_tokens"),
        (f"{p}.h", f"{p}.cls"),  # h[0]
        (f"{p}.cls", f"{p}.n.nsp_hidden"),
        (f"{p}.n.nsp_hidden", f"{p}.n"),
        (f"{p}.n", f"{p}.n_act"),
        (f"{p}.n_act", f"{p}.is_next.nsp_out"),
        (f"{p}.is_next.nsp_out", f"{p}.is_next"),
        (f"{p}.h", f"{p}.output"),
    }
    # the attention is labelled with its kind and the checker's note (heads, key size)
    label = g.nodes[f"{att}.multihead_w_q"]["label"]
    assert label.startswith("multihead(w_q, w_k, w_v): self-attention, 2 heads, d_k = ")
    assert g.nodes[f"{att}.multihead_w_q"]["type"] == "[Hidden] -> [Head * Head]"
    # the stacked block is drawn inside a box named after its stack
    clusters = g.graph["clusters"]
    box = clusters[clusters[blk].parent]
    assert (box.kind, box.name) == (ClusterKind.COPIES, "stack(encoder_block, 2)")
    assert box.type == "[Hidden] -> [Hidden]"
    assert reversed_edges(g) == set()


def test_mogrifier_repeats_a_program_applied_to_two_values() -> None:
    g = build_graph(checked("mogrifier_rlstm_lm.qvr"))
    r, c, lm = "mog_round", "mog_rlstm_cell", "mogrifier_rlstm_lm"
    # `sample (x_mod, h_mod) <- mogrify(x, h_prev)`: one site node for the pair,
    # read by every gate that reads either half
    mod = f"{c}._x_mod__h_mod_"
    rep = f"{mod}.mogrify.repeat_mog_round"
    st = f"{lm}._h___c_"
    assert kinds(g) == {
        f"{r}.x": IN,
        f"{r}.h": IN,
        f"{r}.q.mog_q": M,
        f"{r}.q": S,
        f"{r}.x_next": V,
        f"{r}.r.mog_r": M,
        f"{r}.r": S,
        f"{r}.h_next": V,
        f"{r}.output": OUT,
        f"{c}.x": IN,
        f"{c}.h_prev": IN,
        f"{c}.c_prev": IN,
        rep: C,
        mod: S,
        f"{c}.i_pre.gate_i": M,
        f"{c}.i_pre": S,
        f"{c}.j_pre.gate_j": M,
        f"{c}.j_pre": S,
        f"{c}.i": V,
        f"{c}.j": V,
        f"{c}.ij": V,
        f"{c}.f_pre.gate_f": M,
        f"{c}.f_pre": S,
        f"{c}.f": V,
        f"{c}.c": V,
        f"{c}.o_pre.gate_o": M,
        f"{c}.o_pre": S,
        f"{c}.h": V,
        f"{c}.output": OUT,
        f"{lm}.input": IN,
        f"{st}.encoder.tok_embed": M,
        f"{st}.encoder.scanl_mog_rlstm_cell": C,
        st: S,
        f"{lm}.next_tokens.lm_head": M,
        f"{lm}.next_tokens": OBS,
        f"{lm}.output": OUT,
    }
    assert edges(g) == {
        (f"{r}.h", f"{r}.q.mog_q"),
        (f"{r}.q.mog_q", f"{r}.q"),
        (f"{r}.q", f"{r}.x_next"),
        (f"{r}.x", f"{r}.x_next"),
        (f"{r}.x_next", f"{r}.r.mog_r"),
        (f"{r}.r.mog_r", f"{r}.r"),
        (f"{r}.r", f"{r}.h_next"),
        (f"{r}.h", f"{r}.h_next"),
        (f"{r}.x_next", f"{r}.output"),
        (f"{r}.h_next", f"{r}.output"),
        (f"{c}.x", rep),
        (f"{c}.h_prev", rep),
        (rep, mod),
        (mod, f"{c}.i_pre.gate_i"),
        (f"{c}.i_pre.gate_i", f"{c}.i_pre"),
        (mod, f"{c}.j_pre.gate_j"),
        (f"{c}.j_pre.gate_j", f"{c}.j_pre"),
        (f"{c}.i_pre", f"{c}.i"),
        (f"{c}.j_pre", f"{c}.j"),
        (f"{c}.i", f"{c}.ij"),
        (f"{c}.j", f"{c}.ij"),
        (f"{c}.ij", f"{c}.f_pre.gate_f"),
        (mod, f"{c}.f_pre.gate_f"),
        (f"{c}.f_pre.gate_f", f"{c}.f_pre"),
        (f"{c}.f_pre", f"{c}.f"),
        (f"{c}.f", f"{c}.c"),
        (f"{c}.c_prev", f"{c}.c"),
        (f"{c}.i", f"{c}.c"),
        (f"{c}.j", f"{c}.c"),
        (f"{c}.c", f"{c}.o_pre.gate_o"),
        (f"{c}.o_pre.gate_o", f"{c}.o_pre"),
        (f"{c}.o_pre", f"{c}.h"),
        (f"{c}.c", f"{c}.h"),
        (f"{c}.h", f"{c}.output"),
        (f"{c}.c", f"{c}.output"),
        (f"{lm}.input", f"{st}.encoder.tok_embed"),
        (f"{st}.encoder.tok_embed", f"{st}.encoder.scanl_mog_rlstm_cell"),
        (f"{st}.encoder.scanl_mog_rlstm_cell", st),
        (st, f"{lm}.next_tokens.lm_head"),
        (f"{lm}.next_tokens.lm_head", f"{lm}.next_tokens"),
        (f"{lm}.next_tokens", f"{lm}.output"),
    }
    assert g.nodes[rep]["label"] == "repeat(mog_round, 2)"
    assert g.nodes[mod]["label"] == "(x_mod, h_mod)"
    assert g.nodes[mod]["type"] == "Embedded * Hidden"
    assert g.graph["clusters"][f"{mod}.mogrify"].label == (
        "let mogrify : Embedded * Hidden -> Embedded * Hidden"
    )
    assert g.nodes[st]["type"] == "[State]"
    assert g.nodes[f"{lm}.next_tokens"]["type"] == "[Token]"


def test_every_example_has_its_own_graph_test() -> None:
    """A new example needs its node and edge sets pinned here too."""
    pinned = {
        "vanilla_rnn_lm",
        "bidirectional_rnn_lm",
        "encoder_decoder",
        "rlstm_lm",
        "bert_mlm",
        "mogrifier_rlstm_lm",
        "linear_regression",
        "transformer_seq2seq",  # test_transformer_graph.py
    }
    assert {p.stem for p in EXAMPLES.glob("*.qvr")} == pinned


def test_drawing_never_imports_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from qvr_core.check import check\n"
        "from qvr_core.graph import draw\n"
        "import qvr_core.cli.diagram, qvr_lsp.features.commands, qvr_lsp.features.codelens\n"
        "import qvr_lsp.runs.run_inference\n"
        "module = check(open('examples/bert_mlm.qvr').read())\n"
        "draw(module, format='dot')\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    root = EXAMPLES.parent
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
