/**
 * Owns the language client: finds the server, starts it, restarts it when its
 * settings change or on request, forwards the settings the server reads (strictness,
 * the memory budget, the export target), and reports
 * which server runs (for the status bar).
 */
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { serverConfiguration, serverSettings, setServerPath } from "../config";
import { ClientCommands } from "../shared/protocol";
import { type Discovery, type ServerLaunch, discoverServer, launchDirectory } from "./discovery";
import { NotebookCells } from "./notebookCells";
import { createNodeHost } from "./nodeHost";
import { activeInterpreter } from "./pythonEnvironment";
import { type ServerState, commandLine } from "./status";

export class ServerNotRunningError extends Error {
  constructor() {
    super("The QVR language server is not running. Install it (\"QVR: Install or Update Server\") or fix its path, then run \"QVR: Restart Server\".");
  }
}

/** The not-found notification's buttons. */
const INSTALL = "Install qvr";
const INSTALL_WITH_RUN = "Install with Run Support";
const SET_PATH = "Set Path";
const SHOW_DETAILS = "Show Details";

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** Starts and stops are serialised: a restart during a start waits for it. */
  private transition: Promise<void> = Promise.resolve();
  private readonly createdEmitter = new vscode.EventEmitter<LanguageClient>();
  private readonly startedEmitter = new vscode.EventEmitter<void>();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private currentState: ServerState = { kind: "searching" };
  /** Watches the running client for a crash; dropped before a deliberate stop. */
  private clientWatch: vscode.Disposable | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  /** Shared by successive clients: the server learns of .qvr files changed outside the editor. */
  private readonly qvrFiles = vscode.workspace.createFileSystemWatcher("**/*.qvr");
  /** The diagnostics of notebooks' `%%qvr` cells, which the extension pulls itself (notebookCells.ts). */
  private readonly cellDiagnostics = vscode.languages.createDiagnosticCollection("qvr-notebook-cells");

  /** Fires for each new client before it starts: the place to register notification handlers. */
  readonly onDidCreateClient = this.createdEmitter.event;
  /** Fires when a server has started and answered initialize. */
  readonly onDidStart = this.startedEmitter.event;
  /** Fires whenever which server runs, or whether one does, changes. */
  readonly onDidChangeState = this.stateEmitter.event;

  /** @param managedEnvironment the venv that "Install qvr" creates, searched after the user's own. */
  constructor(
    private readonly log: vscode.OutputChannel,
    private readonly serverLog: vscode.OutputChannel,
    private readonly managedEnvironment: string,
  ) {
    this.disposables.push(
      this.qvrFiles,
      this.cellDiagnostics,
      this.createdEmitter,
      this.startedEmitter,
      this.stateEmitter,
      vscode.workspace.onDidChangeConfiguration((event) => {
        // The install settings matter only to the next install.
        if (event.affectsConfiguration("qvr.server.path") || event.affectsConfiguration("qvr.server.pythonPath")) {
          void this.restart();
        } else if (event.affectsConfiguration("qvr.strict") || event.affectsConfiguration("qvr.run") || event.affectsConfiguration("qvr.export")) {
          this.client
            ?.sendNotification(DidChangeConfigurationNotification.type, { settings: serverConfiguration() })
            .catch((error: unknown) => this.log.appendLine(`Could not send the settings: ${String(error)}`));
        }
      }),
    );
  }

  start(): Promise<void> {
    return this.enqueue(() => this.startClient());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.stopClient();
      await this.startClient();
    });
  }

  get state(): ServerState {
    return this.currentState;
  }

  /** The server being run, or undefined when none was found. */
  get launch(): ServerLaunch | undefined {
    return "launch" in this.currentState ? this.currentState.launch : undefined;
  }

  /** The running client, waiting for a pending start. */
  async runningClient(): Promise<LanguageClient> {
    await this.transition;
    if (this.client === undefined || this.client.state !== State.Running) throw new ServerNotRunningError();
    return this.client;
  }

  async dispose(): Promise<void> {
    for (const disposable of this.disposables) disposable.dispose();
    await this.enqueue(() => this.stopClient());
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.transition = this.transition.then(step, step);
    return this.transition;
  }

  private async startClient(): Promise<void> {
    this.setState({ kind: "searching" });
    const folders = vscode.workspace.workspaceFolders ?? [];
    const discovery = discoverServer(
      {
        ...serverSettings(),
        workspaceFolders: folders.filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath),
        activeInterpreter: await activeInterpreter(folders[0]?.uri),
        managedEnvironment: this.managedEnvironment,
      },
      createNodeHost(),
    );
    if (discovery.kind !== "found") {
      this.setState(discovery.kind === "notFound" ? { kind: "notFound" } : { kind: "badSetting", message: discovery.message });
      void this.reportMissingServer(discovery);
      return;
    }
    const launch = discovery.launch;
    const client = this.createClient(launch);
    this.createdEmitter.fire(client);
    this.setState({ kind: "starting", launch });
    try {
      await client.start();
      this.client = client;
      // pygls sends its name and the package's version (qvr_lsp/protocol/server.py).
      const info = client.initializeResult?.serverInfo;
      const version = info?.version;
      this.log.appendLine(`The language server is running${info ? `: ${info.name} ${version ?? ""}`.trimEnd() : ""}.`);
      this.setState({ kind: "running", launch, version });
      // After the start: the client's own restarts after a crash go Stopped -> Starting -> Running.
      this.clientWatch = client.onDidChangeState((event) => {
        if (this.client !== client) return;
        if (event.newState === State.Stopped) this.setState({ kind: "stopped", launch });
        else if (event.newState === State.Running) this.setState({ kind: "running", launch, version });
      });
      this.startedEmitter.fire();
    } catch (error) {
      this.log.appendLine(`The language server failed to start: ${String(error)}`);
      this.setState({ kind: "failed", launch });
      void client.dispose();
      // Not awaited: commands waiting for the server should fail now, not when the message closes.
      void vscode.window
        .showErrorMessage(`The QVR language server (${commandLine(discovery.launch)}) failed to start.`, "Show Log")
        .then((choice) => {
          if (choice === "Show Log") this.serverLog.show();
        });
    }
  }

  private setState(state: ServerState): void {
    this.currentState = state;
    this.stateEmitter.fire(state);
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.clientWatch?.dispose();
    this.clientWatch = undefined;
    if (client === undefined) return;
    try {
      await client.stop();
    } catch (error) {
      this.log.appendLine(`Stopping the language server: ${String(error)}`);
    }
    await client.dispose();
  }

  private createClient(launch: ServerLaunch): LanguageClient {
    this.log.appendLine(`Starting the QVR language server (${launch.source}): ${commandLine(launch)}`);
    // Started outside the workspace (launchDirectory says why); -P keeps it off sys.path too.
    const executable = { command: launch.command, args: launch.args, transport: TransportKind.stdio, options: { cwd: launchDirectory(launch, process.platform) } };
    const serverOptions: ServerOptions = { run: executable, debug: executable };
    // QVR files only: every feature the server declares is registered for this selector.
    // Notebooks' `%%qvr` cells get hover, completion, signature help and diagnostics
    // through NotebookCells, and ordinary Python cells nothing.
    const cells = new NotebookCells(this.cellDiagnostics);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "qvr" },
        { scheme: "untitled", language: "qvr" },
      ],
      initializationOptions: serverConfiguration(),
      outputChannel: this.serverLog,
      synchronize: { fileEvents: this.qvrFiles },
      middleware: cells.middleware,
    };
    const client = new LanguageClient("qvr", "QVR Language Server", serverOptions, clientOptions);
    cells.attach(client);
    return client;
  }

  private async reportMissingServer(discovery: Exclude<Discovery, { kind: "found" }>): Promise<void> {
    let choice: string | undefined;
    if (discovery.kind === "badSetting") {
      this.log.appendLine(discovery.message);
      choice = await vscode.window.showErrorMessage(discovery.message, SET_PATH, SHOW_DETAILS);
    } else {
      this.log.appendLine("No QVR language server found. Looked in:");
      for (const place of discovery.tried) this.log.appendLine(`  - ${place}`);
      // Three buttons at most: a fourth gets its label cut off. The places searched are in the log.
      choice = await vscode.window.showWarningMessage(
        "QVR language server not found. The extension can install qvr into an environment of its own; Run Support adds PyTorch, for Run Inference.",
        INSTALL,
        INSTALL_WITH_RUN,
        SET_PATH,
      );
    }
    if (choice === INSTALL || choice === INSTALL_WITH_RUN) {
      await vscode.commands.executeCommand(ClientCommands.installServer, { runSupport: choice === INSTALL_WITH_RUN });
    } else if (choice === SET_PATH) {
      const picked = await vscode.window.showOpenDialog({
        canSelectFiles: true,
        canSelectFolders: false,
        canSelectMany: false,
        openLabel: "Use as QVR language server",
        title: "Select the qvr-lsp executable",
      });
      // Changing the setting restarts the server (see the configuration listener).
      if (picked?.[0] !== undefined) await setServerPath(picked[0].fsPath);
    } else if (choice === SHOW_DETAILS) {
      this.log.show();
    }
  }
}
