import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDiagramArguments } from "../src/diagram/arguments";
import { type InferenceDefaults, buildInferenceParams, parseInferenceArguments } from "../src/inference/params";
import { formatSummary } from "../src/inference/summary";

const defaults: InferenceDefaults = { method: "svi", steps: 200, lr: 0.01, seed: 0, batch: 4, seqLen: 8 };

describe("inference arguments", () => {
  it("fill every field from the settings when run from the palette", () => {
    const params = buildInferenceParams("file:///m.qvr", defaults, parseInferenceArguments([]));
    assert.deepEqual(params, { uri: "file:///m.qvr", method: "svi", steps: 200, lr: 0.01, seed: 0, batch: 4, seq_len: 8 });
  });

  it("take the lens's uri, program and overrides", () => {
    const target = parseInferenceArguments([
      { uri: "file:///lens.qvr", program: "bidirectional_rnn_lm", method: "nuts", steps: 20, seed: 0, lr: 0.1, seq_len: 16 },
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
    });
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
