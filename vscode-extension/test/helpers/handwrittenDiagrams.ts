/**
 * The bidirectional example drawn by hand in the seeds' flowchart style, for the
 * webview test when the language server cannot run. Ranges are the declarations'
 * names in examples/bidirectional_rnn_lm.qvr.
 */
import type { DiagramNode, DiagramResult } from "../../src/shared/protocol";

function node(id: string, label: string, type: string, line: number, character: number): DiagramNode {
  return {
    id,
    label,
    type,
    range: { start: { line, character }, end: { line, character: character + id.length } },
    errors: [],
  };
}

const nodes: DiagramNode[] = [
  node("tok_embed", "tok_embed", "morphism", 6, 9),
  node("fwd_cell", "fwd_cell", "morphism", 7, 9),
  node("bwd_cell", "bwd_cell", "morphism", 8, 9),
  node("combine", "combine", "morphism", 9, 9),
  node("lm_head", "lm_head", "morphism", 10, 9),
  node("masked_token", "masked_token", "observe", 19, 12),
];

export const bidirectionalMermaid: DiagramResult = {
  format: "mermaid",
  text: `flowchart LR
    tok_embed["tok_embed"] --> fwd_cell["fwd_cell"]
    tok_embed["tok_embed"] --> bwd_cell["bwd_cell"]
    fwd_cell["fwd_cell"] --> combine["combine"]
    bwd_cell["bwd_cell"] --> combine["combine"]
    combine["combine"] --> lm_head["lm_head"]
    lm_head["lm_head"] --> masked_token["masked_token"]
`,
  nodes,
};

export const bidirectionalDot: DiagramResult = {
  format: "dot",
  text: `digraph bidirectional_rnn_lm {
  rankdir=LR;
  node [shape=box];
  subgraph cluster_backbone { label="backbone"; tok_embed; fwd_cell; bwd_cell; combine; }
  tok_embed -> fwd_cell;
  tok_embed -> bwd_cell;
  fwd_cell -> combine;
  bwd_cell -> combine;
  combine -> lm_head;
  lm_head -> masked_token;
  masked_token [shape=ellipse, style=filled, fillcolor=lightgrey];
}
`,
  nodes,
};
