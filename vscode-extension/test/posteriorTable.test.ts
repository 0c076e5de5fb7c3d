import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatPosterior } from "../src/inference/summary";
import { drawsLine, formatCell, posteriorTable, posteriorText, samplerLine } from "../src/shared/posteriorTable";
import { RunState } from "../src/shared/runState";
import { eightSchoolsLive, eightSchoolsPosterior, nutsProgress, sviPosterior } from "./helpers/liveDraws";

describe("posteriorTable", () => {
  it("has a row per element shown, under its site, with the command line's cell formats", () => {
    const table = posteriorTable(eightSchoolsPosterior(true));
    assert.deepEqual(table.columns, ["mean", "sd", "5%", "50%", "95%", "ess_bulk", "ess_tail", "r_hat"]);
    const rows = table.lines.filter((l) => l.kind === "row");
    assert.deepEqual(
      rows.map((r) => r.label),
      ["mu", "tau", ...Array.from({ length: 8 }, (_, i) => `theta_raw[${i}]`)],
    );
    assert.deepEqual(table.lines[0], {
      kind: "row",
      site: "mu",
      label: "mu",
      cells: ["4.38", "1.5", "1.98", "4.38", "6.78", "61", "76", "1.042"],
    });
    assert.equal(table.warnings.length, 1);
    assert.equal(table.verdict, undefined);
  });

  it("says there are no convergence warnings only when it has R-hat and none", () => {
    assert.equal(posteriorTable(eightSchoolsPosterior(false)).verdict, "no convergence warnings");
    assert.equal(posteriorTable(sviPosterior()).verdict, undefined);
    assert.equal(posteriorTable({ ...eightSchoolsPosterior(false), rows: [] }).verdict, undefined);
  });

  it("has no ess or r_hat columns for SVI, and a line for a site's hidden elements", () => {
    const table = posteriorTable(sviPosterior());
    assert.deepEqual(table.columns, ["mean", "sd", "5%", "50%", "95%"]);
    const last = table.lines[table.lines.length - 1];
    assert.deepEqual(last, { kind: "more", site: "w", hidden: 28, text: "28 more elements of w" });
    assert.equal(table.lines.filter((l) => l.kind === "row" && l.site === "w").length, 12);
  });

  it("gives the output channel the same cells, aligned", () => {
    const text = posteriorText(posteriorTable(sviPosterior())).split("\n");
    assert.match(text[0] ?? "", /^ {9}mean\s+sd\s+5%\s+50%\s+95%$/);
    assert.match(text[1] ?? "", /^ {2}mu\s+4\.1\s+0\.31\s+3\.6\s+4\.1\s+4\.6$/);
    assert.equal(text[text.length - 1], "  ... 28 more elements of w");
    assert.equal(formatPosterior({ posterior: sviPosterior() }), text.join("\n"));
  });

  it("formats cells as qvr run does", () => {
    assert.equal(formatCell("mean", 0.012345), "0.0123");
    assert.equal(formatCell("mean", 1234.5), "1230");
    assert.equal(formatCell("ess_bulk", 812.5), "813");
    assert.equal(formatCell("r_hat", 1), "1.000");
    assert.equal(formatCell("sd", null), "n/a");
  });
});

describe("run view lines", () => {
  it("counts the draws per chain and the warmup", () => {
    assert.equal(drawsLine(eightSchoolsLive([120, 118, 0, 0])), "draws per chain: 120, 118, 0, 0 (warmup 500)");
  });

  it("sums up the sampler's counts for NUTS and nothing for SVI", () => {
    assert.equal(samplerLine(eightSchoolsPosterior(true)), "divergences 0 · max tree depth 10 hit 0 of 480 · E-BFMI 1.02, 0.97, 1.1, 0.88");
    assert.equal(samplerLine(sviPosterior()), undefined);
  });
});

describe("RunState", () => {
  it("keeps the last draws through notifications without them, and replays them", () => {
    const state = new RunState();
    const first = eightSchoolsLive([10, 10, 10, 10]);
    const later = eightSchoolsLive([60, 55, 50, 58]);
    state.add(nutsProgress(first));
    state.add(nutsProgress(later));
    state.add(nutsProgress(undefined));
    assert.equal(state.live, later);
    const snapshot = state.snapshot("");
    assert.equal(snapshot?.method, "nuts");
    assert.equal(snapshot?.live, later);
    assert.equal(snapshot?.points.length, 50);
  });

  it("forgets the draws of a previous run", () => {
    const state = new RunState();
    state.add(nutsProgress(eightSchoolsLive(), "a"));
    state.add({ uri: "u", runId: "b", method: "svi", total: 5, points: [[1, 2]], done: false });
    assert.equal(state.live, undefined);
    assert.equal(state.snapshot("")?.live, undefined);
    assert.equal(new RunState().snapshot(""), undefined);
  });
});
