/** Entry point: wires the language client, its installer, the diagram view, inference runs and exports together. */
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { inferenceDefaults } from "./config";
import { parseDiagramArguments } from "./diagram/arguments";
import { DiagramPanel } from "./diagram/diagramPanel";
import { ProgramExporter } from "./export/exportProgram";
import { parseCalibrationArguments, qvrCommand, sbcArguments } from "./inference/calibration";
import { LossPanel } from "./inference/lossPanel";
import { InferenceRunner } from "./inference/runInference";
import { type InstallOptions, ServerInstaller } from "./server/installer";
import { ServerManager } from "./server/serverManager";
import { ServerStatusItem } from "./server/statusItem";
import { ClientCommands } from "./shared/protocol";

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("QVR");
  const serverLog = vscode.window.createOutputChannel("QVR Language Server");
  // The environment "Install qvr" creates: per user, shared by every workspace.
  const storage = context.globalStorageUri.fsPath;
  const venv = path.join(storage, "venv");
  server = new ServerManager(output, serverLog, venv);
  const status = new ServerStatusItem();
  const installer = new ServerInstaller(server, status, output, storage, venv);
  const diagram = new DiagramPanel(context.extensionUri, server, output);
  const lossPanel = new LossPanel(context.extensionUri);
  const inference = new InferenceRunner(server, lossPanel, output);
  const exporter = new ProgramExporter(server, output);
  const running = server;
  status.update(server.state);

  context.subscriptions.push(
    output,
    serverLog,
    status,
    diagram,
    lossPanel,
    inference,
    server.onDidChangeState((state) => status.update(state)),
    vscode.commands.registerCommand(ClientCommands.restartServer, () => running.restart()),
    vscode.commands.registerCommand(ClientCommands.installServer, (options?: Partial<InstallOptions>) =>
      installer.install({ runSupport: options?.runSupport === true, upgrade: true }),
    ),
    vscode.commands.registerCommand(ClientCommands.installRunSupport, () => installer.installRunSupport()),
    vscode.commands.registerCommand(ClientCommands.serverActions, () => serverActions(output, serverLog)),
    vscode.commands.registerCommand(ClientCommands.showDiagram, (...args: unknown[]) => {
      diagram.show(diagramTarget(args));
    }),
    vscode.commands.registerCommand(ClientCommands.runInference, (...args: unknown[]) => {
      const [first] = args;
      // From an editor menu VS Code passes the resource as a Uri.
      return inference.run(first instanceof vscode.Uri ? [first.toString()] : args);
    }),
    vscode.commands.registerCommand(ClientCommands.priorPredictive, (...args: unknown[]) => {
      return inference.run(priorArguments(args));
    }),
    vscode.commands.registerCommand(ClientCommands.exportProgram, (...args: unknown[]) => exporter.run(args)),
    vscode.commands.registerCommand(ClientCommands.calibrate, (...args: unknown[]) => calibrate(args, running)),
  );
  // Not awaited: activation should not wait for Python to start.
  void server.start();
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
  server = undefined;
}

/** The run command's arguments for a prior predictive run of what `args` name (the active file by default). */
function priorArguments(args: readonly unknown[]): unknown[] {
  const [first, second] = args;
  const uri = first instanceof vscode.Uri ? first.toString() : typeof first === "string" ? first : undefined;
  const activeUri = vscode.window.activeTextEditor?.document.languageId === "qvr" ? vscode.window.activeTextEditor.document.uri.toString() : undefined;
  const target = uri ?? activeUri;
  if (target === undefined) return [];
  return [{ uri: target, method: "prior", ...(typeof second === "string" ? { program: second } : {}) }];
}

/**
 * "Calibrate": `qvr sbc` of the program in a terminal of its own (inference/calibration.ts),
 * in the document's workspace folder, where the runs' data file setting is read from.
 */
function calibrate(args: readonly unknown[], running: ServerManager): void {
  const target = parseCalibrationArguments(args);
  const editor = vscode.window.activeTextEditor;
  const uri = target.uri !== undefined ? vscode.Uri.parse(target.uri) : editor?.document.languageId === "qvr" ? editor.document.uri : undefined;
  if (uri === undefined || uri.scheme !== "file") {
    void vscode.window.showInformationMessage("QVR: open a saved .qvr file to calibrate its model program.");
    return;
  }
  const folder = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath ?? path.dirname(uri.fsPath);
  const cli = qvrCommand(running.launch, (file) => fs.existsSync(file), process.platform);
  const terminal = vscode.window.createTerminal({
    name: `QVR Calibrate${target.program !== undefined ? `: ${target.program}` : ""}`,
    shellPath: cli.command,
    shellArgs: [...cli.args, ...sbcArguments(uri.fsPath, target.program, inferenceDefaults().data)],
    cwd: folder,
  });
  terminal.show();
}

/** The status bar item's menu. */
async function serverActions(output: vscode.OutputChannel, serverLog: vscode.OutputChannel): Promise<void> {
  const actions: (vscode.QuickPickItem & { run(): unknown })[] = [
    { label: "$(debug-restart) Restart Server", run: () => vscode.commands.executeCommand(ClientCommands.restartServer) },
    {
      label: "$(cloud-download) Install or Update Server",
      description: "qvr in the extension's own environment",
      run: () => vscode.commands.executeCommand(ClientCommands.installServer),
    },
    {
      label: "$(play) Install Run Support",
      description: "PyTorch, for Run Inference and Prior Predictive",
      run: () => vscode.commands.executeCommand(ClientCommands.installRunSupport),
    },
    { label: "$(output) Show Output", description: "QVR", run: () => output.show() },
    { label: "$(output) Show Server Log", description: "QVR Language Server", run: () => serverLog.show() },
  ];
  const picked = await vscode.window.showQuickPick(actions, { title: "QVR Language Server", placeHolder: "Choose an action" });
  await picked?.run();
}

function diagramTarget(args: readonly unknown[]): { uri: vscode.Uri; name?: string } | undefined {
  const [first] = args;
  if (first instanceof vscode.Uri) return { uri: first };
  const parsed = parseDiagramArguments(args);
  return parsed.uri === undefined ? undefined : { uri: vscode.Uri.parse(parsed.uri), name: parsed.name };
}
