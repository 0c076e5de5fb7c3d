import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MAX_HEADS,
  MAX_POSITIONS,
  cellSize,
  cellText,
  describeMap,
  layoutHeatmap,
  parseAttention,
  positionTicks,
  scaleMax,
  scaleStops,
} from "../src/shared/attentionChart";
import { formatSummary, summaryAttention } from "../src/inference/summary";
import type { AttentionMap } from "../src/shared/protocol";

/** What the server sends for a 2-head self-attention over 3 positions, padding cut off. */
function sent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    label: "self_attention in encoder_block 1 of 2",
    site: "encoder_block.a",
    combinator: "multihead(w_q, w_k, w_v)",
    kind: "self",
    example: 0,
    basis: "fitted parameters, latent sites at their mean under the guide",
    heads: 2,
    queries: 3,
    keys: 3,
    tokens: ["(0, 0, 0)", "(17, 0, 1)", "(1, 0, 2)"],
    weights: [
      [
        [0.5, 0.25, 0.25],
        [0, 1, 0],
        [0.2, 0.3, 0.5],
      ],
      [
        [1, 0, 0],
        [0.5, 0.5, 0],
        [0.1, 0.1, 0.8],
      ],
    ],
    ...overrides,
  };
}

function parsed(overrides: Record<string, unknown> = {}): AttentionMap {
  const [map] = parseAttention([sent(overrides)]);
  assert.ok(map);
  return map;
}

describe("parseAttention", () => {
  it("keeps a well-formed map as the server sent it", () => {
    const map = parsed();
    assert.equal(map.label, "self_attention in encoder_block 1 of 2");
    assert.deepEqual([map.heads, map.queries, map.keys], [2, 3, 3]);
    assert.deepEqual(map.weights, sent().weights);
    assert.deepEqual(map.tokens, ["(0, 0, 0)", "(17, 0, 1)", "(1, 0, 2)"]);
  });

  it("bounds what a confused server sends: caps, weights in [0, 1], ragged grids dropped", () => {
    const big = Array.from({ length: 12 }, () => Array.from({ length: 40 }, () => Array.from({ length: 50 }, () => 0.02)));
    const capped = parsed({ weights: big, heads: 12, queries: 40, keys: 50, tokens: ["a"] });
    assert.equal(capped.weights.length, MAX_HEADS);
    assert.deepEqual([capped.weights[0]?.length, capped.weights[0]?.[0]?.length], [MAX_POSITIONS, MAX_POSITIONS]);
    assert.deepEqual([capped.heads, capped.queries, capped.keys], [12, 40, 50]);
    assert.equal(capped.tokens, null, "too few tokens for the positions: none shown");
    const odd = parsed({ weights: [[[2, -1, null], ["0.5", Number.NaN, 0.5], [0, 0, 1]]], heads: "two", queries: -1 });
    assert.deepEqual(odd.weights, [[[1, 0, 0], [0, 0, 0.5], [0, 0, 1]]]);
    assert.deepEqual([odd.heads, odd.queries, odd.keys], [1, 3, 3]);
    assert.deepEqual(parseAttention([sent({ weights: [[[0.5, 0.5], [1]]] }), sent({ label: 3 }), sent({ weights: [] }), "x"]), []);
    assert.equal(parseAttention(Array.from({ length: 20 }, () => sent())).length, 8);
    assert.deepEqual(parseAttention({ label: "not a list" }), []);
    assert.equal(parsed({ label: "x".repeat(500) }).label.length, 200);
  });

  it("reads a run summary's attention and leaves its weights out of the printed summary", () => {
    const summary = { method: "svi", attention: [sent()], stopped: false };
    assert.equal(summaryAttention(summary).length, 1);
    assert.deepEqual(summaryAttention({ method: "svi" }), []);
    const printed = formatSummary(summary);
    assert.match(printed, /"attention": \[\{"label":"self_attention in encoder_block 1 of 2",/);
    assert.doesNotMatch(printed, /weights|tokens/);
    assert.match(printed, /"stopped": false/);
  });
});

describe("the heatmap of a head", () => {
  const margin = { top: 20, right: 8, bottom: 30, left: 38 };

  it("puts query q, key k at row q, column k, painted relative to the map's largest weight", () => {
    const map = parsed();
    const max = scaleMax(map);
    assert.equal(max, 1);
    const layout = layoutHeatmap(map.weights[0]!, max, margin);
    const cell = cellSize(3, 3);
    assert.equal(cell, 18, "small grids get the largest cells");
    assert.equal(layout.cell, cell);
    assert.deepEqual(layout.plot, { x: 38, y: 20, width: 54, height: 54 });
    assert.deepEqual([layout.width, layout.height], [38 + 54 + 8, 20 + 54 + 30]);
    assert.equal(layout.cells.length, 9);
    const at = (q: number, k: number) => layout.cells.find((c) => c.query === q && c.key === k);
    assert.deepEqual(at(1, 2), { x: 38 + 2 * 18, y: 20 + 18, query: 1, key: 2, value: 0, opacity: 0 });
    assert.equal(at(1, 1)?.opacity, 1);
    assert.equal(at(0, 1)?.opacity, 0.25);
    assert.deepEqual(
      layout.keyTicks.map((t) => [t.label, t.position]),
      [["0", 47], ["1", 65], ["2", 83]],
    );
    assert.deepEqual(layout.queryTicks.map((t) => t.position), [29, 47, 65]);
  });

  it("scales to the largest weight shown, so a long sequence's small weights stay visible", () => {
    const flat = parsed({ weights: [[[0.05, 0.1], [0.1, 0.05]]] });
    assert.equal(scaleMax(flat), 0.1);
    assert.deepEqual(
      layoutHeatmap(flat.weights[0]!, scaleMax(flat), margin).cells.map((c) => c.opacity),
      [0.5, 1, 1, 0.5],
    );
    assert.deepEqual(scaleStops(0.1, 5).map((s) => [s.label, s.opacity]), [["0", 0], ["0.025", 0.25], ["0.05", 0.5], ["0.075", 0.75], ["0.1", 1]]);
    assert.equal(scaleMax(parsed({ weights: [[[0, 0], [0, 0]]] })), 1, "all zero: a scale to 1");
  });

  it("keeps a 32-position grid within 240 pixels and thins its labels", () => {
    assert.equal(cellSize(32, 32), 7);
    assert.equal(cellSize(200, 5), 6, "never below 6 pixels");
    const ticks = positionTicks(32, 7, 0);
    assert.deepEqual(ticks.map((t) => t.label), ["0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20", "22", "24", "26", "28", "30"]);
  });

  it("says what a cell is, with the input at each position, as plain text", () => {
    const map = parsed({ tokens: ["<cls>", "<img src=x onerror=alert(1)>", "&amp;"] });
    assert.equal(cellText(map, 0, 1, 2), "head 1: query 1 (<img src=x onerror=alert(1)>) → key 2 (&amp;): 0");
    assert.equal(cellText(map, 1, 2, 2), "head 2: query 2 (&amp;) → key 2 (&amp;): 0.8");
    assert.equal(cellText(parsed({ tokens: null }), 0, 0, 0), "head 1: query 0 → key 0: 0.5");
  });

  it("describes a map: its step, sizes, what was cut and how it was computed", () => {
    assert.equal(
      describeMap(parsed()),
      "encoder_block.a · multihead(w_q, w_k, w_v) · self-attention · 2 heads · 3 queries × 3 keys · fitted parameters, latent sites at their mean under the guide",
    );
    assert.match(describeMap(parsed({ heads: 10, queries: 40, keys: 40 })), /first 2 of 10 heads · 40 queries × 40 keys · first 3 × 3 shown/);
  });
});
