// Activates the real extension bundle (dist/extension.js) against a fake `vscode`
// module and the real language server: discovery, the language client, and the
// commands, as VS Code would run them.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { ClientCommands, type FitView, type LiveDraws, type Posterior, ServerCommands } from "../src/shared/protocol";
import { FakeVscode } from "./helpers/fakeVscode";
import { fileUri, serverUnavailableReason } from "./helpers/lspServer";
import { examplesDir, extensionRoot, repoRoot } from "./helpers/paths";

const unavailable = serverUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the extension-host tests: ${unavailable}`);

interface ExtensionModule {
  activate(context: unknown): Promise<void>;
  deactivate(): Promise<void>;
}

async function until<T>(what: string, find: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("the extension in a fake VS Code", { skip: unavailable, timeout: 600_000 }, () => {
  const vscode = new FakeVscode(repoRoot);
  const example = fileUri(path.join(examplesDir, "bidirectional_rnn_lm.qvr"));
  let uninstall: () => void;
  let extension: ExtensionModule;
  let storage: string | undefined;

  before(async () => {
    vscode.settings.set("qvr.inference.steps", 8);
    vscode.settings.set("qvr.inference.batch", 2);
    vscode.settings.set("qvr.inference.seqLen", 4);
    uninstall = vscode.install();
    extension = createRequire(__filename)(path.join(extensionRoot, "dist", "extension.js")) as ExtensionModule;
    // No managed environment in it: the workspace's .venv is the server.
    storage = mkdtempSync(path.join(tmpdir(), "qvr-storage-"));
    await extension.activate({ subscriptions: [], extensionUri: vscode.fileUri(extensionRoot), globalStorageUri: vscode.fileUri(storage) });
    // vscode-languageclient registers the server's commands once initialize has answered.
    await until("the server to start", () => vscode.commands.has(ServerCommands.diagram));
  });

  after(async () => {
    await extension?.deactivate();
    uninstall?.();
    if (storage !== undefined) rmSync(storage, { recursive: true, force: true });
  });

  it("finds the workspace's .venv server and registers its commands beside the server's", () => {
    assert.ok(
      vscode.output.some((line) => line.includes("Starting the QVR language server (workspace venv)")),
      vscode.output.join("\n"),
    );
    for (const command of [...Object.values(ClientCommands), ...Object.values(ServerCommands)]) {
      assert.ok(vscode.commands.has(command), command);
    }
    assert.deepEqual(vscode.messages, []);
  });

  it("says in the status bar which server runs and where it came from", () => {
    const item = vscode.statusItems.find((i) => i.id === "qvr.server")!;
    assert.ok(item.visible);
    assert.match(item.text, /^QVR \d+\.\d+\.\d+\S* \(workspace \.venv\)$/);
    // The tooltip is Markdown with its text escaped.
    const tooltip = (typeof item.tooltip === "string" ? item.tooltip : (item.tooltip?.value ?? "")).replace(/\\(.)/g, "$1");
    assert.ok(tooltip.includes("From the workspace's .venv"), tooltip);
    assert.ok(tooltip.includes(`Command: ${path.join(repoRoot, ".venv", "bin")}`), tooltip);
    assert.equal(item.command, ClientCommands.serverActions);
  });

  it("Show Diagram draws the file, switches renderer and reveals a clicked node", async () => {
    // The code lens's arguments: [uri, program].
    await vscode.commands.get(ClientCommands.showDiagram)!(example, "bidirectional_rnn_lm");
    const panel = vscode.panels.find((p) => p.viewType === "qvr.diagram")!;
    assert.match(panel.html, /Content-Security-Policy/);
    assert.equal(panel.title, "Diagram: bidirectional_rnn_lm");
    const mermaid = await until("a Mermaid diagram", () => panel.posted.find((m) => m.type === "diagram"));
    assert.equal(mermaid.format, "mermaid");
    assert.match(String(mermaid.text), /tok_embed/);

    panel.receive({ type: "format", format: "dot" });
    const dot = await until("a DOT diagram", () => panel.posted.find((m) => m.type === "diagram" && m.format === "dot"));
    assert.match(String(dot.text), /digraph/);

    const posted = panel.posted.length;
    panel.receive({ type: "ready" });
    await until("the diagram re-sent to a reloaded view", () => panel.posted.length > posted);

    const nodes = dot.nodes as { label: string; range: unknown }[];
    const combine = nodes.find((n) => n.label === "combine")!;
    panel.receive({ type: "reveal", range: combine.range });
    const revealed = await until("the editor to reveal the node", () => vscode.revealed[0]);
    assert.deepEqual(JSON.parse(JSON.stringify(revealed)), { uri: example, selection: combine.range });
  });

  it("Run Inference reports progress, draws the loss curve and prints the summary", async () => {
    await vscode.commands.get(ClientCommands.runInference)!(example, "bidirectional_rnn_lm");
    const chart = vscode.panels.find((p) => p.viewType === "qvr.inference")!;
    assert.ok(chart.posted.some((m) => m.type === "progress"));
    const outcome = chart.posted[chart.posted.length - 1]!;
    assert.equal(outcome.type, "finished", JSON.stringify(outcome));
    assert.match(String(outcome.summary), /"final_loss"/);
    // The table's data: the guide's draws, without R-hat or ESS.
    const posterior = outcome.posterior as { rows: Record<string, unknown>[] } | null;
    assert.ok(posterior !== null && posterior.rows.length > 0, JSON.stringify(outcome.posterior));
    assert.ok(posterior.rows.every((row) => typeof row.mean === "number" && !("r_hat" in row)));
    // A view that (re)loads gets the whole run replayed: start, every point, outcome.
    const posted = chart.posted.length;
    chart.receive({ type: "ready" });
    const replay = chart.posted.slice(posted);
    assert.deepEqual(replay[0], { type: "start", title: "QVR SVI: bidirectional_rnn_lm", method: "svi", total: 8 });
    const replayed = replay[1]?.progress as { points: unknown[]; method: string; live?: unknown };
    assert.equal(replayed.points.length, 8);
    assert.equal(replayed.method, "svi");
    assert.equal(replayed.live, undefined, "SVI has no draws to trace");
    assert.deepEqual(replay[2], outcome);
    const ours = vscode.progress.find((p) => p.title === "QVR SVI: bidirectional_rnn_lm")!;
    assert.ok(ours.reports.some((r) => /^step \d+\/8, loss /.test(r.message ?? "")), JSON.stringify(ours.reports));
    // the output channel says what ran in words, and leaves the summary's JSON to the view
    assert.ok(vscode.output.some((line) => /SVI of bidirectional_rnn_lm on synthetic data: 8 steps in [\d.]+ s, final loss /.test(line)), vscode.output.join("\n"));
    assert.ok(!vscode.output.some((line) => line.includes('"final_loss"')));
  });

  it("Run Inference with NUTS sends the view every chain's draws and the table, and replays them", async () => {
    const nuts = { method: "nuts", chains: 2, steps: 120, data: "examples/models/eight_schools.json" };
    for (const [key, value] of Object.entries(nuts)) vscode.settings.set(`qvr.inference.${key}`, value);
    try {
      await vscode.commands.get(ClientCommands.runInference)!(fileUri(path.join(examplesDir, "models", "eight_schools_noncentered.qvr")));
      const view = vscode.panels.find((p) => p.viewType === "qvr.inference")!;
      const start = view.posted.map((m) => m.type).lastIndexOf("start");
      const lives = view.posted
        .slice(start)
        .flatMap((m) => (m.type === "progress" ? [(m.progress as { live?: LiveDraws }).live] : []))
        .filter((live): live is LiveDraws => live !== undefined);
      const outcome = view.posted[view.posted.length - 1]!;
      assert.equal(outcome.type, "finished", JSON.stringify(outcome).slice(0, 500));
      const live = lives[lives.length - 1]!;
      assert.deepEqual([live.chains, live.warmup, live.draws], [2, 60, [60, 60]], "the last draws are all of them");
      assert.deepEqual(live.traces.slice(0, 2).map((t) => t.label), ["mu", "tau"]);
      for (const trace of live.traces) {
        assert.deepEqual(trace.chains.map((c) => c.length), [60, 60], trace.label);
      }
      assert.ok(live.posterior !== null && live.posterior.rows.some((row) => typeof row.r_hat === "number"));
      // The finished message carries the summary's table data, R-hat included.
      const posterior = outcome.posterior as Posterior;
      assert.deepEqual(posterior.rows.slice(0, 2).map((r) => r.label), ["mu", "tau"]);
      assert.ok(posterior.rows.every((row) => "r_hat" in row && "ess_bulk" in row));
      // ... and the draws of the plots after the fit, every scalar of the table among them.
      const fit = outcome.view as FitView;
      assert.deepEqual(fit.scalars.map((s) => s.label), posterior.rows.map((r) => r.label));
      assert.deepEqual([fit.chains, fit.draws, fit.draw_index.map((d) => d.length)], [2, 60, [60, 60]]);
      assert.equal(fit.divergences, posterior.divergences);
      assert.equal(fit.ppc[0]?.site, "y", "a NUTS run's posterior predictive check");
      assert.ok(!vscode.output.some((line) => line.includes('"view"')), "the draws stay out of the output channel");
      // A view that (re)loads gets the last draws with the curve.
      const posted = view.posted.length;
      view.receive({ type: "ready" });
      const replayed = view.posted.slice(posted).find((m) => m.type === "progress")?.progress as { live?: LiveDraws };
      assert.deepEqual(replayed.live, live);
      assert.ok(vscode.output.some((line) => /^ {2}mu\s.*\d\.\d{3}$/m.test(line)), "the table in the output channel");
    } finally {
      for (const key of Object.keys(nuts)) vscode.settings.delete(`qvr.inference.${key}`);
    }
  });

  it("Prior Predictive runs the file's prior and sends the view its prior predictive draws", async () => {
    vscode.settings.set("qvr.inference.data", "examples/models/eight_schools.json");
    try {
      const file = fileUri(path.join(examplesDir, "models", "eight_schools_centered.qvr"));
      // As the code lens sends it: the run command with method "prior".
      await vscode.commands.get(ClientCommands.runInference)!({ uri: file, program: "eight_schools_centered", method: "prior" });
      const view = vscode.panels.find((p) => p.viewType === "qvr.inference")!;
      const start = view.posted.filter((m) => m.type === "start").pop()!;
      assert.equal(start.title, "QVR PRIOR: eight_schools_centered");
      const outcome = view.posted[view.posted.length - 1]!;
      assert.equal(outcome.type, "finished", JSON.stringify(outcome).slice(0, 500));
      const fit = outcome.view as FitView;
      assert.deepEqual([fit.group, fit.ppc[0]?.group, fit.ppc[0]?.site], ["prior", "prior_predictive", "y"]);
      // The palette command: the active file, or the one it is given.
      const before = view.posted.length;
      await vscode.commands.get(ClientCommands.priorPredictive)!(file);
      const again = view.posted.slice(before);
      assert.equal(again.find((m) => m.type === "start")?.title, "QVR PRIOR: eight_schools_centered.qvr");
      assert.equal((again[again.length - 1]?.view as FitView | undefined)?.group, "prior");
    } finally {
      vscode.settings.delete("qvr.inference.data");
    }
  });

  it("Export Program opens the exported code beside the source, or says why there is none", async () => {
    const model = fileUri(path.join(examplesDir, "models", "eight_schools_noncentered.qvr"));
    // As the "Export to NumPyro" lens sends it.
    await vscode.commands.get(ClientCommands.exportProgram)!({ uri: model, program: "eight_schools", target: "numpyro" });
    const opened = vscode.untitled[vscode.untitled.length - 1];
    assert.ok(opened !== undefined, vscode.messages.join("\n"));
    assert.equal(opened.language, "python");
    assert.equal(opened.viewColumn, -2, "beside the source");
    assert.match(opened.content, /import numpyro/);
    assert.match(opened.content, /eight_schools_noncentered\.qvr/);
    assert.ok(vscode.output.some((line) => line.includes("save it as eight_schools_noncentered_numpyro.py")));

    // From the palette: the target picked; a program of morphisms is refused in one line.
    const refused = fileUri(path.join(examplesDir, "errors", "QVR701_not_exportable.qvr"));
    vscode.picks.push((items) => (items as { target: string }[]).find((item) => item.target === "stan"));
    const before = vscode.messages.length;
    const count = vscode.untitled.length;
    await vscode.commands.get(ClientCommands.exportProgram)!(refused);
    assert.deepEqual(vscode.picks, [], "the target was asked for");
    assert.equal(vscode.untitled.length, count, "nothing opened");
    const [message] = vscode.messages.slice(before);
    assert.match(message ?? "", /^warning: Nothing exported to Stan: .*`classify` is a program of morphisms/);
  });

  it("cancelling the notification cancels the server's run", async () => {
    vscode.settings.set("qvr.inference.steps", 100_000);
    const before = vscode.progress.length;
    const run = vscode.commands.get(ClientCommands.runInference)!(example, "bidirectional_rnn_lm") as Promise<void>;
    const progress = await until("the run's notification", () =>
      vscode.progress.slice(before).find((p) => p.title.startsWith("QVR SVI")),
    );
    await until("the first loss point", () => progress.reports.length > 0, 120_000);
    const started = Date.now();
    progress.cancel();
    await run;
    assert.ok(Date.now() - started < 15_000, "the run ended promptly");
    const chart = vscode.panels.find((p) => p.viewType === "qvr.inference")!;
    assert.deepEqual(chart.posted[chart.posted.length - 1], { type: "failed", message: "Cancelled." });
  });
});
