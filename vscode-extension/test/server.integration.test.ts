// Drives the real Python language server the way the extension's client does.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { CancellationTokenSource, ResponseError } from "vscode-jsonrpc/node";
import { parseDiagramArguments } from "../src/diagram/arguments";
import { parseInferenceArguments } from "../src/inference/params";
import {
  ClientCommands,
  type DiagramResult,
  type InferenceParams,
  type InferenceProgress,
  ServerCommands,
  ServerNotifications,
  parseDiagramResult,
} from "../src/shared/protocol";
import { LspServer, fileUri, serverUnavailableReason } from "./helpers/lspServer";
import { examplesDir } from "./helpers/paths";

const ERROR = 1;
const REQUEST_CANCELLED = -32800;

const unavailable = serverUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the language-server integration tests: ${unavailable}`);

describe("the real language server over stdio", { skip: unavailable, timeout: 600_000 }, () => {
  const bidirectionalPath = path.join(examplesDir, "bidirectional_rnn_lm.qvr");
  const bidirectionalText = readFileSync(bidirectionalPath, "utf8");
  const bidirectional = fileUri(bidirectionalPath);
  const scratch = mkdtempSync(path.join(tmpdir(), "qvr-vscode-"));
  const brokenPath = path.join(scratch, "dimension_error.qvr");
  // Combined shrinks to 96 while fan(...) still produces 64 + 64 = 128.
  const brokenText = bidirectionalText.replace("object Combined : Real 128", "object Combined : Real 96");
  const broken = fileUri(brokenPath);
  let server: LspServer;
  let capabilities: Record<string, unknown>;

  before(async () => {
    assert.notEqual(brokenText, bidirectionalText);
    writeFileSync(brokenPath, brokenText);
    server = new LspServer();
    capabilities = (await server.initialize(false)).capabilities;
  });

  after(async () => {
    await server?.shutdown();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("announces the commands the extension calls", () => {
    const provider = capabilities.executeCommandProvider as { commands?: string[] } | undefined;
    assert.ok(provider?.commands?.includes(ServerCommands.diagram), "qvr.diagram");
    assert.ok(provider?.commands?.includes(ServerCommands.runInference), "qvr.runInference");
    assert.ok(capabilities.codeLensProvider, "code lenses");
  });

  it("publishes no errors for the gallery example and a QVR201 for a dimension mismatch", async () => {
    await server.open(bidirectional, bidirectionalText);
    await server.open(broken, brokenText);
    const good = await server.diagnostics(bidirectional, () => true);
    assert.deepEqual(
      good.diagnostics.filter((d) => d.severity === ERROR),
      [],
      "the bidirectional example checks without errors",
    );
    const bad = await server.diagnostics(broken, (p) => p.diagnostics.some((d) => d.code === "QVR201"));
    const mismatch = bad.diagnostics.find((d) => d.code === "QVR201")!;
    assert.equal(mismatch.severity, ERROR);
    assert.match(mismatch.message, /96/);
    assert.match(mismatch.message, /128/);
  });

  let mermaid: DiagramResult;

  it("draws the model as Mermaid with nodes that point back into the source", async () => {
    const raw = await server.executeCommand<unknown>(ServerCommands.diagram, { uri: bidirectional, format: "mermaid" });
    const parsed = parseDiagramResult(raw);
    assert.ok(parsed, `a diagram result: ${JSON.stringify(raw).slice(0, 300)}`);
    mermaid = parsed;
    assert.equal(mermaid.format, "mermaid");
    assert.match(mermaid.text, /^\s*(flowchart|graph)\b/);
    const labels = mermaid.nodes.map((n) => n.label).join("\n");
    for (const name of ["tok_embed", "combine", "lm_head"]) assert.match(labels, new RegExp(`\\b${name}\\b`));
    const lines = bidirectionalText.split("\n");
    const combine = mermaid.nodes.find((n) => n.id === "combine" || n.label.split(/\s|:/)[0] === "combine");
    assert.ok(combine?.range, "the combine node has a source range");
    assert.match(lines[combine.range.start.line] ?? "", /combine/);
    // The webview matches drawn nodes to this list by id.
    for (const node of mermaid.nodes) assert.ok(mermaid.text.includes(node.id), `${node.id} appears in the text`);
  });

  it("draws the same model as Graphviz DOT", async () => {
    const raw = await server.executeCommand<unknown>(ServerCommands.diagram, { uri: bidirectional, format: "dot" });
    const dot = parseDiagramResult(raw);
    assert.ok(dot);
    assert.equal(dot.format, "dot");
    assert.match(dot.text, /digraph/);
    assert.deepEqual(dot.nodes.map((n) => n.id).sort(), mermaid.nodes.map((n) => n.id).sort());
  });

  it("offers code lenses whose commands the extension can run", async () => {
    const lenses = await server.connection.sendRequest<{ command?: { command: string; arguments?: unknown[] } }[] | null>(
      "textDocument/codeLens",
      { textDocument: { uri: bidirectional } },
    );
    const byCommand = new Map((lenses ?? []).map((lens) => [lens.command?.command, lens.command?.arguments]));
    // The lenses name the extension's own commands, with arguments they accept.
    for (const command of [ClientCommands.runInference, ClientCommands.showDiagram]) {
      const args = byCommand.get(command);
      assert.ok(args, `a ${command} lens among ${[...byCommand.keys()].join(", ")}`);
      assert.equal(parseDiagramArguments(args).uri, bidirectional);
      assert.equal(parseInferenceArguments(args).program, "bidirectional_rnn_lm");
    }
  });

  it("offers a model program a Prior predictive lens the extension runs as a prior run", async () => {
    const file = path.join(examplesDir, "models", "eight_schools_centered.qvr");
    const uri = fileUri(file);
    await server.open(uri, readFileSync(file, "utf8"));
    await server.diagnostics(uri, () => true);
    const lenses = await server.connection.sendRequest<{ command?: { title: string; command: string; arguments?: unknown[] } }[] | null>(
      "textDocument/codeLens",
      { textDocument: { uri } },
    );
    const prior = (lenses ?? []).find((lens) => lens.command?.title === "Prior predictive")?.command;
    assert.ok(prior, JSON.stringify(lenses));
    assert.equal(prior.command, ClientCommands.runInference);
    const target = parseInferenceArguments(prior.arguments ?? []);
    assert.deepEqual(target, { uri, program: "eight_schools_centered", overrides: { method: "prior" } });
  });

  it("applies qvr.strict from workspace/didChangeConfiguration", async () => {
    const before = server.published.length;
    await server.connection.sendNotification("workspace/didChangeConfiguration", { settings: { qvr: { strict: true } } });
    const strict = await server.diagnostics(
      bidirectional,
      (p) => server.published.indexOf(p) >= before && p.diagnostics.some((d) => d.code === "QVR203"),
    );
    assert.equal(strict.diagnostics.find((d) => d.code === "QVR203")?.severity, ERROR);
    // back to the default, and wait until the server has re-checked under it: a run asked
    // for next would otherwise race the re-check and meet QVR203 still an error
    const relaxed = server.published.length;
    await server.connection.sendNotification("workspace/didChangeConfiguration", { settings: { qvr: { strict: false } } });
    await server.diagnostics(
      bidirectional,
      (p) => server.published.indexOf(p) >= relaxed && !p.diagnostics.some((d) => d.code === "QVR203" && d.severity === ERROR),
    );
  });

  it("runs inference, streaming the loss curve, and returns a summary", async () => {
    const params: InferenceParams = { uri: bidirectional, method: "svi", steps: 6, lr: 0.01, seed: 0, batch: 2, seq_len: 4 };
    const summary = await server.executeCommand<Record<string, unknown>>(ServerCommands.runInference, params);
    for (const key of ["initial_loss", "final_loss", "losses"]) assert.ok(key in summary, `summary has ${key}`);
    const last = await server.notification<InferenceProgress>(
      ServerNotifications.inferenceProgress,
      (p) => p.uri === bidirectional && p.done,
      10_000,
    );
    assert.ok(typeof last.runId === "string" || typeof last.runId === "number");
    assert.equal(last.total, 6);
    const progress = server.notifications
      .filter((n) => n.method === ServerNotifications.inferenceProgress)
      .map((n) => n.params as InferenceProgress)
      .filter((p) => p.runId === last.runId);
    const steps = new Set(progress.flatMap((p) => p.points.map(([step]) => step)));
    assert.ok(steps.size >= 2, `several loss points arrived: ${[...steps].join(", ")}`);
  });

  it("stops a run when the client sends $/cancelRequest", async () => {
    const params: InferenceParams = { uri: bidirectional, method: "svi", steps: 100_000, lr: 0.01, seed: 1, batch: 2, seq_len: 4 };
    const seen = server.notifications.length;
    const cancellation = new CancellationTokenSource();
    const run = server.executeCommand<unknown>(ServerCommands.runInference, params, cancellation.token);
    await server.notification<InferenceProgress>(
      ServerNotifications.inferenceProgress,
      (p) => p.uri === bidirectional && p.points.length > 0 && server.notifications.findIndex((n) => n.params === p) >= seen,
      180_000,
    );
    const started = Date.now();
    cancellation.cancel();
    await assert.rejects(run, (error: unknown) => error instanceof ResponseError && error.code === REQUEST_CANCELLED);
    assert.ok(Date.now() - started < 30_000, "the run stopped promptly");
  });
});
