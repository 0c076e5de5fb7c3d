import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ChartBox } from "../src/shared/chart";
import { layoutTrace } from "../src/shared/traceChart";

const box: ChartBox = { width: 300, height: 150, margin: { top: 20, right: 10, bottom: 30, left: 50 } };
const plot = { x: 50, y: 20, width: 240, height: 100 };

function parse(points: string): [number, number][] {
  return points === "" ? [] : points.split(" ").map((p) => p.split(",").map(Number) as [number, number]);
}

describe("layoutTrace", () => {
  it("puts every chain on the same scales: x from draw 0 to the last, y over all chains' values", () => {
    const layout = layoutTrace(
      {
        label: "mu",
        chains: [
          [[0, 0], [50, 10], [100, 5]],
          [[0, -10], [40, 0]],
        ],
      },
      box,
    );
    assert.deepEqual(layout.plot, plot);
    const [first, second] = layout.lines.map(parse);
    assert.equal(layout.lines.length, 2);
    // Draw 0 at the left edge, draw 100 (the last of all) at the right edge.
    assert.equal(first?.[0]?.[0], plot.x);
    assert.equal(first?.[2]?.[0], plot.x + plot.width);
    assert.equal(second?.[1]?.[0], plot.x + 0.4 * plot.width);
    // The ticks cover [-10, 10]; -10 at the bottom, 10 at the top.
    assert.equal(second?.[0]?.[1], plot.y + plot.height);
    assert.equal(first?.[1]?.[1], plot.y);
    assert.equal(first?.[0]?.[1], second?.[1]?.[1], "0 lies at the same height in both chains");
    assert.deepEqual(
      layout.yTicks.map((t) => t.label),
      ["-10", "-5", "0", "5", "10"],
    );
    assert.deepEqual(
      layout.xTicks.map((t) => [t.label, t.position]),
      [["0", 50], ["50", 170], ["100", 290]],
    );
    assert.equal(layout.missing, 0);
  });

  it("leaves out draws that are not finite and counts them", () => {
    const layout = layoutTrace({ label: "tau", chains: [[[0, 1], [1, null], [2, 3]], []] }, box);
    assert.equal(parse(layout.lines[0] ?? "").length, 2);
    assert.equal(layout.lines[1], "");
    assert.equal(layout.missing, 1);
  });

  it("gives a flat or empty trace a visible span", () => {
    const flat = layoutTrace({ label: "c", chains: [[[0, 2], [1, 2]]] }, box);
    const ys = parse(flat.lines[0] ?? "").map((p) => p[1]);
    assert.ok(ys.every((y) => y > plot.y && y < plot.y + plot.height), `${ys}`);
    const empty = layoutTrace({ label: "c", chains: [[], []] }, box);
    assert.deepEqual(empty.lines, ["", ""]);
    assert.ok(empty.yTicks.length >= 2);
  });
});
