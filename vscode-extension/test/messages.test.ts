import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type DiagramViewActions,
  handleDiagramViewMessage,
  parseDiagramViewMessage,
  parseLossViewMessage,
} from "../src/shared/messages";
import { parseDiagramResult } from "../src/shared/protocol";

const range = { start: { line: 7, character: 9 }, end: { line: 7, character: 17 } };

function recorder(): { actions: DiagramViewActions; calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    actions: {
      resend: () => calls.push(["resend"]),
      reveal: (r) => calls.push(["reveal", r]),
      changeFormat: (f) => calls.push(["changeFormat", f]),
      reportRenderError: (m) => calls.push(["reportRenderError", m]),
    },
  };
}

describe("diagram view messages", () => {
  it("reveals the clicked node's range", () => {
    const { actions, calls } = recorder();
    assert.equal(handleDiagramViewMessage({ type: "reveal", range }, actions), true);
    assert.deepEqual(calls, [["reveal", range]]);
  });

  it("re-sends the diagram when the view (re)loads", () => {
    const { actions, calls } = recorder();
    handleDiagramViewMessage({ type: "ready" }, actions);
    assert.deepEqual(calls, [["resend"]]);
  });

  it("switches between Mermaid and Graphviz", () => {
    const { actions, calls } = recorder();
    handleDiagramViewMessage({ type: "format", format: "dot" }, actions);
    handleDiagramViewMessage({ type: "format", format: "mermaid" }, actions);
    assert.deepEqual(calls, [
      ["changeFormat", "dot"],
      ["changeFormat", "mermaid"],
    ]);
  });

  it("passes render errors on, truncated", () => {
    const { actions, calls } = recorder();
    handleDiagramViewMessage({ type: "renderError", message: "x".repeat(10_000) }, actions);
    assert.equal((calls[0]![1] as string).length, 2000);
  });

  it("ignores malformed and unknown messages without acting", () => {
    const { actions, calls } = recorder();
    const bad: unknown[] = [
      null,
      undefined,
      "reveal",
      42,
      {},
      { type: "unknown" },
      { type: "reveal" },
      { type: "reveal", range: { start: { line: -1, character: 0 }, end: { line: 0, character: 0 } } },
      { type: "reveal", range: { start: { line: 1.5, character: 0 }, end: { line: 2, character: 0 } } },
      { type: "reveal", range: { start: { line: "1", character: 0 }, end: { line: 2, character: 0 } } },
      { type: "format", format: "svg" },
      { type: "format" },
      { type: "renderError", message: 3 },
    ];
    for (const message of bad) assert.equal(handleDiagramViewMessage(message, actions), false, JSON.stringify(message));
    assert.deepEqual(calls, []);
  });

  it("keeps only the fields it knows", () => {
    const parsed = parseDiagramViewMessage({ type: "reveal", range, command: "rm -rf" });
    assert.deepEqual(parsed, { type: "reveal", range });
  });
});

describe("loss view messages", () => {
  it("accepts ready and nothing else", () => {
    assert.deepEqual(parseLossViewMessage({ type: "ready" }), { type: "ready" });
    assert.equal(parseLossViewMessage({ type: "progress" }), undefined);
    assert.equal(parseLossViewMessage(null), undefined);
  });
});

describe("parseDiagramResult", () => {
  it("accepts the server's result and drops malformed nodes", () => {
    const result = parseDiagramResult({
      format: "mermaid",
      text: "flowchart LR\n  a --> b",
      nodes: [
        { id: "a", label: "a", type: "morphism", range, errors: ["QVR201: cannot compose", 7] },
        { id: "b", label: "b", type: "site", range: null },
        { label: "no id" },
        null,
        { id: "c", range: { start: {} }, errors: "not a list" },
      ],
    });
    assert.deepEqual(result, {
      format: "mermaid",
      text: "flowchart LR\n  a --> b",
      nodes: [
        { id: "a", label: "a", type: "morphism", range, errors: ["QVR201: cannot compose"] },
        { id: "b", label: "b", type: "site", range: null, errors: [] },
        { id: "c", label: "c", type: "", range: null, errors: [] },
      ],
    });
  });

  it("rejects results without text", () => {
    assert.equal(parseDiagramResult(null), undefined);
    assert.equal(parseDiagramResult({ format: "mermaid" }), undefined);
  });
});
