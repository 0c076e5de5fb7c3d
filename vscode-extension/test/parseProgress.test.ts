import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MAX_TRACES,
  MAX_TRACE_POINTS,
  parseInferenceProgress,
  parseLiveDraws,
  parsePosterior,
  thin,
} from "../src/shared/parseProgress";
import { eightSchoolsLive, eightSchoolsPosterior, nutsProgress, sviPosterior } from "./helpers/liveDraws";

/** What JSON on the wire gives: a deep copy without undefined fields. */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe("parseInferenceProgress", () => {
  it("keeps a well-formed notification as it is, live block included", () => {
    const progress = nutsProgress(eightSchoolsLive());
    assert.deepEqual(parseInferenceProgress(wire(progress)), progress);
  });

  it("keeps an SVI notification without a live block", () => {
    const progress = { uri: "file:///m.qvr", runId: 3, method: "svi", total: 10, points: [[1, 2.5], [2, null]], done: true };
    assert.deepEqual(parseInferenceProgress({ ...progress, workerPid: 123 }), progress);
  });

  it("ignores a notification that does not name a run", () => {
    for (const raw of [null, 3, "x", [], {}, { uri: "file:///m.qvr" }, { runId: 1 }, { uri: 1, runId: 1 }, { uri: "u", runId: {} }]) {
      assert.equal(parseInferenceProgress(raw), undefined, JSON.stringify(raw));
    }
  });

  it("drops malformed points and fields instead of failing", () => {
    const parsed = parseInferenceProgress({
      uri: "u",
      runId: "r",
      method: 7,
      total: "ten",
      points: [[1, 2], "x", [2], ["3", 4], [4, "5"], [5, null], null],
      done: "yes",
    });
    assert.deepEqual(parsed, { uri: "u", runId: "r", method: "", total: 0, points: [[1, 2], [5, null]], done: false });
  });

  it("drops a malformed live block and keeps the rest of the notification", () => {
    const base = nutsProgress(undefined);
    for (const live of [
      null,
      "live",
      [],
      { ...eightSchoolsLive(), chains: 0 },
      { ...eightSchoolsLive(), chains: 65 },
      { ...eightSchoolsLive(), chains: 2.5 },
      { ...eightSchoolsLive(), warmup: -1 },
      { ...eightSchoolsLive(), draws: [1, 2, 3] },
      { ...eightSchoolsLive(), draws: [1, 2, 3, "4"] },
      { ...eightSchoolsLive(), draws: undefined },
    ]) {
      assert.deepEqual(parseInferenceProgress(wire({ ...base, live })), base, JSON.stringify(live).slice(0, 80));
    }
  });
});

describe("parseLiveDraws", () => {
  it("drops malformed traces and points, keeps the rest", () => {
    const live = parseLiveDraws({
      chains: 2,
      warmup: 10,
      draws: [3, 2],
      traces: [
        { label: "mu", chains: [[[0, 1], [1, null], [2, "x"], [-1, 4], [3]], [[0, 2], "bad", [1, 3]], [[0, 9]]] },
        { label: 5, chains: [] },
        { label: "tau" },
        "sigma",
        { label: "empty", chains: [] },
      ],
      posterior: "not an object",
    });
    assert.deepEqual(live, {
      chains: 2,
      warmup: 10,
      draws: [3, 2],
      // The third line is beyond the run's two chains.
      traces: [
        { label: "mu", chains: [[[0, 1], [1, null]], [[0, 2], [1, 3]]] },
        { label: "empty", chains: [] },
      ],
      posterior: null,
    });
  });

  it("keeps at most 8 traces and thins a chain to 200 points, first and last kept", () => {
    const long = Array.from({ length: 1000 }, (_, i) => [i, i / 10]);
    const traces = Array.from({ length: 12 }, (_, i) => ({ label: `x[${i}]`, chains: [long] }));
    const live = parseLiveDraws({ chains: 1, warmup: 0, draws: [1000], traces, posterior: null });
    assert.equal(live?.traces.length, MAX_TRACES);
    const line = live?.traces[0]?.chains[0] ?? [];
    assert.equal(line.length, MAX_TRACE_POINTS);
    assert.deepEqual(line[0], [0, 0]);
    assert.deepEqual(line[line.length - 1], [999, 99.9]);
    assert.ok(line.every((p, i) => i === 0 || p[0] > line[i - 1]![0]), "in order, without repeats");
  });
});

describe("thin", () => {
  it("keeps short series and spreads the kept points evenly", () => {
    assert.deepEqual(thin([1, 2, 3], 5), [1, 2, 3]);
    assert.deepEqual(thin([0, 1, 2, 3, 4, 5, 6, 7, 8], 3), [0, 4, 8]);
    assert.deepEqual(thin([0, 1, 2, 3, 4], 1), [4]);
    assert.deepEqual(thin([0, 1, 2], 0), []);
  });
});

describe("parsePosterior", () => {
  it("keeps the server's posterior as it is (NUTS and SVI)", () => {
    for (const posterior of [eightSchoolsPosterior(true), sviPosterior()]) {
      assert.deepEqual(parsePosterior(wire(posterior)), posterior);
    }
  });

  it("turns NaN (null on the wire) and junk statistics into null, and drops malformed rows, sites and warnings", () => {
    const parsed = parsePosterior({
      chains: 2,
      draws: "many",
      rows: [
        { site: "mu", label: "mu", mean: 1, sd: null, r_hat: "1.0", ess_bulk: Number.NaN },
        { label: "no site" },
        "row",
        { site: "w", index: [0, "1"] },
      ],
      sites: { mu: { size: 1, shown: 1, r_hat_max: null }, w: { size: 3, shown: 9 }, bad: "x", __proto__: { size: 1 } },
      warnings: [{ kind: "r_hat", message: "high", remedy: "longer" }, { kind: "x" }, { message: "m" }],
      e_bfmi: [0.5, null, "x"],
      divergences: -1,
    });
    assert.deepEqual(parsed, {
      chains: 2,
      draws: 0,
      rows: [
        { site: "mu", label: "mu", index: [], mean: 1, sd: null, r_hat: null, ess_bulk: null },
        { site: "w", label: "w", index: [] },
      ],
      sites: { mu: { shape: [], size: 1, shown: 1, r_hat_max: null }, w: { shape: [], size: 3, shown: 3 } },
      warnings: [
        { kind: "r_hat", message: "high", remedy: "longer" },
        { kind: "", message: "m", remedy: "" },
      ],
      e_bfmi: [0.5, null, null],
    });
  });

  it("takes a site named like an Object property as a site, not a prototype", () => {
    const parsed = parsePosterior(JSON.parse('{"rows": [], "sites": {"__proto__": {"size": 2, "shown": 1}, "constructor": {"size": 1, "shown": 1}}}'));
    assert.deepEqual(Object.keys(parsed?.sites ?? {}), ["__proto__", "constructor"]);
    assert.equal(Object.getPrototypeOf(parsed?.sites), Object.prototype);
  });

  it("is undefined for anything but an object", () => {
    for (const raw of [undefined, null, 1, "p", [1]]) assert.equal(parsePosterior(raw), undefined);
  });
});
