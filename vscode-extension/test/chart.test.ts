import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatNumber, layoutChart, niceTicks } from "../src/shared/chart";
import { LossSeries } from "../src/shared/lossSeries";
import type { InferenceProgress, LossPoint } from "../src/shared/protocol";

const progress = (runId: string, points: LossPoint[], done = false): InferenceProgress => ({
  uri: "file:///m.qvr",
  runId,
  method: "svi",
  total: 100,
  points,
  done,
});

describe("LossSeries", () => {
  it("gives the same curve for cumulative and incremental notifications", () => {
    const cumulative = new LossSeries();
    cumulative.add(progress("r", [[0, 5], [10, 4]]));
    cumulative.add(progress("r", [[0, 5], [10, 4], [20, 3]]));
    const incremental = new LossSeries();
    incremental.add(progress("r", [[0, 5], [10, 4]]));
    incremental.add(progress("r", [[20, 3]]));
    assert.deepEqual(cumulative.points(), [[0, 5], [10, 4], [20, 3]]);
    assert.deepEqual(incremental.points(), cumulative.points());
  });

  it("starts over for a new run and remembers completion", () => {
    const series = new LossSeries();
    series.add(progress("a", [[0, 9]]));
    series.add(progress("b", [[0, 2]], true));
    assert.deepEqual(series.points(), [[0, 2]]);
    assert.equal(series.done, true);
    assert.equal(series.runId, "b");
  });

  it("skips points that cannot be drawn, such as the server's null for a NaN loss", () => {
    const series = new LossSeries();
    series.add(progress("r", [[0, Number.NaN], [1, 2], ["2", 3] as unknown as [number, number], [3, Infinity], [4, null]]));
    assert.deepEqual(series.points(), [[1, 2]]);
  });
});

describe("layoutChart", () => {
  const box = { width: 400, height: 200, margin: { top: 10, right: 10, bottom: 30, left: 50 } };

  it("maps the first step to the left and the lowest loss to the bottom", () => {
    const layout = layoutChart([[0, 10], [50, 5], [100, 1]], 100, box);
    const coords = layout.path.split(" ").map((s) => s.slice(1).split(",").map(Number));
    assert.equal(layout.path.startsWith("M"), true);
    assert.equal(coords.length, 3);
    assert.equal(coords[0]![0], 50);
    assert.equal(coords[2]![0], 390);
    // Lower loss is drawn lower on screen: larger y.
    assert.ok(coords[2]![1]! > coords[0]![1]!);
    for (const [, y] of coords) assert.ok(y! >= 10 && y! <= 170);
    assert.deepEqual(layout.last && [layout.last.step, layout.last.loss], [100, 1]);
  });

  it("spans the planned number of steps while the run is still going", () => {
    const layout = layoutChart([[0, 3], [10, 2]], 100, box);
    const lastX = Number(layout.path.split(" ")[1]!.slice(1).split(",")[0]);
    assert.equal(lastX, 50 + 34);
    assert.ok(layout.xTicks.some((t) => t.value === 100));
  });

  it("draws nothing but axes before the first point, and a flat curve mid-height", () => {
    assert.equal(layoutChart([], 10, box).path, "");
    const flat = layoutChart([[0, 2], [5, 2]], 5, box);
    const ys = flat.path.split(" ").map((s) => Number(s.split(",")[1]));
    assert.equal(ys[0], ys[1]);
    assert.ok(ys[0]! > 10 && ys[0]! < 170);
  });
});

describe("niceTicks", () => {
  it("uses round steps that cover the range", () => {
    assert.deepEqual(niceTicks(0, 100, 5), [0, 20, 40, 60, 80, 100]);
    assert.deepEqual(niceTicks(0, 7, 4), [0, 2, 4, 6, 8]);
    const ticks = niceTicks(3.21, 5.67, 5);
    assert.ok(ticks[0]! <= 3.21 && ticks[ticks.length - 1]! >= 5.67);
  });
});

describe("formatNumber", () => {
  it("is short for any magnitude", () => {
    assert.equal(formatNumber(3.214159), "3.214");
    assert.equal(formatNumber(1234.5678), "1235");
    assert.equal(formatNumber(0), "0");
    assert.equal(formatNumber(2.5e-5), "2.5e-5");
    assert.equal(formatNumber(123456789), "1.2e+8");
  });
});
