import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDiagramArguments } from "../src/diagram/arguments";
import {
  type InferenceDefaults,
  buildInferenceParams,
  describeInferenceParams,
  parseInferenceArguments,
} from "../src/inference/params";
import { describeRun, formatPosterior, formatSummary } from "../src/inference/summary";

const defaults: InferenceDefaults = { method: "svi", steps: 200, lr: 0.01, seed: 0, batch: 4, seqLen: 8, chains: 4, massMatrix: "diag", engine: "auto", targetAccept: 0.8, data: "", device: "cpu", subsample: "" };

describe("inference arguments", () => {
  it("fill every field from the settings when run from the palette", () => {
    const params = buildInferenceParams("file:///m.qvr", defaults, parseInferenceArguments([]));
    assert.deepEqual(params, { uri: "file:///m.qvr", method: "svi", steps: 200, lr: 0.01, seed: 0, batch: 4, seq_len: 8, chains: 4, mass_matrix: "diag", device: "cpu" });
  });

  it("send the data file setting, unless the caller names another", () => {
    const withData = { ...defaults, data: "examples/models/eight_schools.json" };
    assert.equal(buildInferenceParams("file:///m.qvr", withData, parseInferenceArguments([])).data, "examples/models/eight_schools.json");
    const target = parseInferenceArguments([{ uri: "file:///m.qvr", data: "other.json" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", withData, target).data, "other.json");
  });

  it("take the lens's uri, program and overrides", () => {
    const target = parseInferenceArguments([
      { uri: "file:///lens.qvr", program: "bidirectional_rnn_lm", method: "nuts", steps: 20, seed: 0, lr: 0.1, seq_len: 16, chains: 2 },
    ]);
    assert.equal(target.uri, "file:///lens.qvr");
    const params = buildInferenceParams(target.uri!, defaults, target);
    assert.deepEqual(params, {
      uri: "file:///lens.qvr",
      program: "bidirectional_rnn_lm",
      method: "nuts",
      steps: 20,
      lr: 0.1,
      seed: 0,
      batch: 4,
      seq_len: 16,
      chains: 2,
      mass_matrix: "diag",
      device: "cpu",
    });
  });

  it("send NUTS runs the target acceptance of the settings or a lens, and no other run", () => {
    const nuts = { ...defaults, method: "nuts" as const, targetAccept: 0.95 };
    assert.equal(buildInferenceParams("file:///m.qvr", nuts, parseInferenceArguments([])).target_accept, 0.95);
    const lens = parseInferenceArguments([{ uri: "file:///m.qvr", target_accept: 0.9 }]);
    assert.equal(buildInferenceParams("file:///m.qvr", nuts, lens).target_accept, 0.9);
    for (const bad of [1, 0, -0.5, "0.9", Number.NaN]) {
      const refused = parseInferenceArguments([{ uri: "file:///m.qvr", target_accept: bad }]);
      assert.equal(buildInferenceParams("file:///m.qvr", nuts, refused).target_accept, 0.95);
    }
    // A setting outside (0, 1) is sent as written: the server refuses it in a line that names it.
    assert.equal(buildInferenceParams("file:///m.qvr", { ...nuts, targetAccept: 1.5 }, parseInferenceArguments([])).target_accept, 1.5);
    const svi = { ...defaults, targetAccept: 1.5 };
    assert.equal("target_accept" in buildInferenceParams("file:///m.qvr", svi, parseInferenceArguments([])), false);
    const prior = parseInferenceArguments([{ uri: "file:///m.qvr", method: "prior", target_accept: 0.9 }]);
    assert.equal("target_accept" in buildInferenceParams("file:///m.qvr", defaults, prior), false);
    // Stan's default goes unsaid: a server older than the setting runs NUTS as before.
    const stan = { ...nuts, targetAccept: 0.8 };
    assert.equal("target_accept" in buildInferenceParams("file:///m.qvr", stan, parseInferenceArguments([])), false);
  });

  it("take the mass matrix from the settings or a lens, and drop one the server does not know", () => {
    const dense = { ...defaults, massMatrix: "dense" as const };
    assert.equal(buildInferenceParams("file:///m.qvr", dense, parseInferenceArguments([])).mass_matrix, "dense");
    const lens = parseInferenceArguments([{ uri: "file:///m.qvr", mass_matrix: "dense" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", defaults, lens).mass_matrix, "dense");
    const bad = parseInferenceArguments([{ uri: "file:///m.qvr", mass_matrix: "full" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", defaults, bad).mass_matrix, "diag");
    const lowRank = parseInferenceArguments([{ uri: "file:///m.qvr", mass_matrix: "low-rank" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", defaults, lowRank).mass_matrix, "low-rank");
  });

  it("send a chosen engine to a NUTS run only, from the settings or a lens, and leave the default (auto) unsaid", () => {
    const nuts = { ...defaults, method: "nuts" as const };
    assert.equal("engine" in buildInferenceParams("file:///m.qvr", nuts, parseInferenceArguments([])), false);
    const qvr = { ...nuts, engine: "qvr" as const };
    assert.equal(buildInferenceParams("file:///m.qvr", qvr, parseInferenceArguments([])).engine, "qvr");
    const numpyro = { ...nuts, engine: "numpyro" as const };
    assert.equal(buildInferenceParams("file:///m.qvr", numpyro, parseInferenceArguments([])).engine, "numpyro");
    const lens = parseInferenceArguments([{ uri: "file:///m.qvr", method: "nuts", engine: "numpyro" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", defaults, lens).engine, "numpyro");
    const bad = parseInferenceArguments([{ uri: "file:///m.qvr", method: "nuts", engine: "stan" }]);
    assert.equal("engine" in buildInferenceParams("file:///m.qvr", defaults, bad), false);
    assert.equal("engine" in buildInferenceParams("file:///m.qvr", numpyro, parseInferenceArguments([{ method: "svi" }])), false);
    const line = describeInferenceParams(buildInferenceParams("file:///m.qvr", numpyro, parseInferenceArguments([])));
    assert.match(line, /engine=numpyro/);
  });

  it("always send the device, from the settings or a lens, and drop one the server does not know", () => {
    assert.equal(buildInferenceParams("file:///m.qvr", defaults, parseInferenceArguments([])).device, "cpu");
    const auto = { ...defaults, device: "auto" as const };
    assert.equal(buildInferenceParams("file:///m.qvr", auto, parseInferenceArguments([])).device, "auto");
    const nuts = buildInferenceParams("file:///m.qvr", auto, parseInferenceArguments([{ uri: "file:///m.qvr", method: "nuts" }]));
    assert.equal(nuts.device, "auto", "every method runs on the device");
    const lens = parseInferenceArguments([{ uri: "file:///m.qvr", device: "cuda" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", defaults, lens).device, "cuda");
    for (const device of ["tpu", "CUDA", "", 0, null]) {
      const bad = parseInferenceArguments([{ uri: "file:///m.qvr", device }]);
      assert.deepEqual(bad.overrides, {}, String(device));
      assert.equal(buildInferenceParams("file:///m.qvr", defaults, bad).device, "cpu");
    }
  });

  it("send the subsample setting only when it is set and the method is SVI", () => {
    assert.equal("subsample" in buildInferenceParams("file:///m.qvr", defaults, parseInferenceArguments([])), false, "empty: off");
    const rows = { ...defaults, subsample: "Row=256" };
    assert.equal(buildInferenceParams("file:///m.qvr", rows, parseInferenceArguments([])).subsample, "Row=256");
    for (const method of ["nuts", "prior"] as const) {
      const other = buildInferenceParams("file:///m.qvr", { ...rows, method }, parseInferenceArguments([]));
      assert.equal("subsample" in other, false, method);
      // ... nor when a lens asks for another method, or for a subsample with one.
      const lens = parseInferenceArguments([{ uri: "file:///m.qvr", method, subsample: "Row=8" }]);
      assert.equal("subsample" in buildInferenceParams("file:///m.qvr", rows, lens), false, method);
    }
  });

  it("take a lens's subsample in either of the server's forms, and drop a malformed one", () => {
    const text = parseInferenceArguments([{ uri: "file:///m.qvr", subsample: "Row=64" }]);
    assert.equal(buildInferenceParams("file:///m.qvr", { ...defaults, subsample: "Row=256" }, text).subsample, "Row=64");
    const object = parseInferenceArguments([{ uri: "file:///m.qvr", subsample: { plate: "School", rows: 4 } }]);
    assert.equal(object.overrides.subsample, "School=4");
    for (const subsample of ["Row=0", "Row=", "=4", "1Row=4", "Row=4.5", "Row = 4", { plate: "Row", rows: 0 }, { plate: "a b", rows: 2 }, 256]) {
      const bad = parseInferenceArguments([{ uri: "file:///m.qvr", subsample }]);
      assert.deepEqual(bad.overrides, {}, JSON.stringify(subsample));
    }
  });

  it("describe the run in a line, naming the device and the subsample when they are not the default", () => {
    const line = (defaults_: InferenceDefaults, args: unknown[] = []) =>
      describeInferenceParams(buildInferenceParams("file:///m.qvr", defaults_, parseInferenceArguments(args)));
    assert.equal(line(defaults), "steps=200, lr=0.01, seed=0, batch=4, seq_len=8");
    assert.equal(line({ ...defaults, device: "cuda" }), "steps=200, lr=0.01, seed=0, batch=4, seq_len=8, device=cuda");
    assert.equal(
      line({ ...defaults, device: "auto", subsample: "Row=256" }),
      "steps=200, lr=0.01, seed=0, batch=4, seq_len=8, subsample=Row=256, device=auto",
    );
    assert.equal(
      line({ ...defaults, method: "nuts", massMatrix: "dense", subsample: "Row=256" }),
      "steps=200, lr=0.01, seed=0, batch=4, seq_len=8, chains=4, mass_matrix=dense",
    );
    assert.equal(
      line({ ...defaults, method: "nuts", massMatrix: "auto" }),
      "steps=200, lr=0.01, seed=0, batch=4, seq_len=8, chains=4",
    );
    assert.equal(
      line({ ...defaults, method: "nuts", massMatrix: "auto", targetAccept: 0.95 }),
      "steps=200, lr=0.01, seed=0, batch=4, seq_len=8, chains=4, target_accept=0.95",
    );
  });

  it("accept positional (uri, program) and a name field", () => {
    assert.deepEqual(parseInferenceArguments(["file:///a.qvr", "p"]), { uri: "file:///a.qvr", program: "p", overrides: {} });
    assert.equal(parseInferenceArguments([{ uri: "file:///a.qvr", name: "q" }]).program, "q");
  });

  it("drop ill-typed values instead of sending them to the server", () => {
    const target = parseInferenceArguments([
      { uri: 3, method: "gibbs", steps: -1, lr: 0, seed: 1.5, batch: "4", seq_len: Number.NaN, extra: true },
    ]);
    assert.deepEqual(target, { uri: undefined, program: undefined, overrides: {} });
  });
});

describe("diagram arguments", () => {
  it("read {uri, name} and positional forms", () => {
    assert.deepEqual(parseDiagramArguments([{ uri: "file:///a.qvr", name: "p" }]), { uri: "file:///a.qvr", name: "p" });
    assert.deepEqual(parseDiagramArguments(["file:///a.qvr"]), { uri: "file:///a.qvr", name: undefined });
    assert.deepEqual(parseDiagramArguments([]), {});
  });
});

describe("formatSummary", () => {
  it("prints valid JSON with one line per field", () => {
    const summary = { method: "svi", initial_loss: 3.5, final_loss: 1.25, losses: [3.5, 2, 1.25], mcmc: { r_hat: 1.01 } };
    const text = formatSummary(summary);
    assert.deepEqual(JSON.parse(text), summary);
    assert.equal(text.split("\n").length, 7);
    assert.match(text, /^ {2}"losses": \[3\.5,2,1\.25\],$/m);
  });

  it("prints anything else as plain JSON", () => {
    assert.equal(formatSummary(null), "null");
    assert.equal(formatSummary({}), "{}");
  });
});

describe("the output channel's line for a run", () => {
  it("says what ran on which data, how long and its last loss, not the summary's JSON", () => {
    const summary = { method: "svi", program: "bert_mlm", data: "synthetic", steps: 1000, seconds: 16.94, losses: [13.2, 11.525182], stopped: false, status: "completed", runId: 6 };
    assert.equal(describeRun(summary), "SVI of bert_mlm on synthetic data: 1,000 steps in 16.9 s, final loss 11.53.");
    assert.equal(describeRun({ method: "nuts", program: "m", data: "d.json", steps: 400, seconds: 2, losses: [], stopped: true }), "NUTS of m on d.json: 400 steps in 2.0 s (stopped before its end).");
    assert.equal(describeRun(null), "The run ended.");
    assert.doesNotMatch(describeRun(summary), /[{"]/);
  });
});

describe("posterior table", () => {
  const summary = {
    method: "nuts",
    posterior: {
      rows: [
        { site: "mu", label: "mu", mean: 0.1234, sd: 1, q5: -1.6, q50: 0.1, q95: 1.7, ess_bulk: 812.4, ess_tail: 640.9, r_hat: 1.0123 },
        { site: "w", label: "w[0]", mean: 2, sd: 0.5, q5: 1, q50: 2, q95: 3, ess_bulk: 90, ess_tail: null, r_hat: 1.001 },
      ],
      sites: { mu: { size: 1, shown: 1 }, w: { size: 30, shown: 1, r_hat_max: 1.2, ess_bulk_min: 12, ess_tail_min: 9 } },
      warnings: [{ kind: "r_hat", message: "R-hat above 1.01", remedy: "run longer chains" }],
    },
  };

  it("lines up a row per element, the hidden elements' worst values and the warnings", () => {
    const lines = formatPosterior(summary).split("\n");
    assert.match(lines[0] ?? "", /mean\s+sd\s+5%\s+50%\s+95%\s+ess_bulk\s+ess_tail\s+r_hat$/);
    assert.match(lines[1] ?? "", /^ {2}mu\s+0\.123\s+1\s+-1\.6\s+0\.1\s+1\.7\s+812\s+641\s+1\.012$/);
    assert.match(lines[2] ?? "", /w\[0\].* n\/a\s+1\.001$/);
    assert.equal(lines[3], "  ... 29 more elements of w: worst of all 30: r_hat 1.200, ess_bulk 12, ess_tail 9");
    assert.deepEqual(lines.slice(4), ["  warning: R-hat above 1.01", "    remedy: run longer chains"]);
  });

  it("is empty for a run without a posterior", () => {
    assert.equal(formatPosterior({ method: "svi", losses: [1, 2] }), "");
  });
});
