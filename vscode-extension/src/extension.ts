/** Entry point: wires the language client, the diagram view and inference runs together. */
import * as vscode from "vscode";
import { parseDiagramArguments } from "./diagram/arguments";
import { DiagramPanel } from "./diagram/diagramPanel";
import { LossPanel } from "./inference/lossPanel";
import { InferenceRunner } from "./inference/runInference";
import { ServerManager } from "./server/serverManager";
import { ClientCommands } from "./shared/protocol";

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("QVR");
  const serverLog = vscode.window.createOutputChannel("QVR Language Server");
  server = new ServerManager(output, serverLog);
  const diagram = new DiagramPanel(context.extensionUri, server, output);
  const lossPanel = new LossPanel(context.extensionUri);
  const inference = new InferenceRunner(server, lossPanel, output);
  const running = server;

  context.subscriptions.push(
    output,
    serverLog,
    diagram,
    lossPanel,
    inference,
    vscode.commands.registerCommand(ClientCommands.restartServer, () => running.restart()),
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

function diagramTarget(args: readonly unknown[]): { uri: vscode.Uri; name?: string } | undefined {
  const [first] = args;
  if (first instanceof vscode.Uri) return { uri: first };
  const parsed = parseDiagramArguments(args);
  return parsed.uri === undefined ? undefined : { uri: vscode.Uri.parse(parsed.uri), name: parsed.name };
}
