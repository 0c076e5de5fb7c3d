/**
 * Owns the language client: finds the server, starts it, restarts it when its
 * settings change or on request, and forwards the strictness setting.
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
import { type Discovery, type ServerLaunch, discoverServer } from "./discovery";
import { createNodeHost } from "./nodeHost";
import { activeInterpreter } from "./pythonEnvironment";

export class ServerNotRunningError extends Error {
  constructor() {
    super("The QVR language server is not running. Run \"QVR: Restart Server\" after fixing its path.");
  }
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** Starts and stops are serialised: a restart during a start waits for it. */
  private transition: Promise<void> = Promise.resolve();
  private readonly createdEmitter = new vscode.EventEmitter<LanguageClient>();
  private readonly startedEmitter = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Shared by successive clients: the server learns of .qvr files changed outside the editor. */
  private readonly qvrFiles = vscode.workspace.createFileSystemWatcher("**/*.qvr");

  /** Fires for each new client before it starts: the place to register notification handlers. */
  readonly onDidCreateClient = this.createdEmitter.event;
  /** Fires when a server has started and answered initialize. */
  readonly onDidStart = this.startedEmitter.event;

  constructor(
    private readonly log: vscode.OutputChannel,
    private readonly serverLog: vscode.OutputChannel,
  ) {
    this.disposables.push(
      this.qvrFiles,
      this.createdEmitter,
      this.startedEmitter,
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("qvr.server")) {
          void this.restart();
        } else if (event.affectsConfiguration("qvr.strict") || event.affectsConfiguration("qvr.run")) {
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
    const folders = vscode.workspace.workspaceFolders ?? [];
    const discovery = discoverServer(
      {
        ...serverSettings(),
        workspaceFolders: folders.filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath),
        activeInterpreter: await activeInterpreter(folders[0]?.uri),
      },
      createNodeHost(),
    );
    if (discovery.kind !== "found") {
      void this.reportMissingServer(discovery);
      return;
    }
    const client = this.createClient(discovery.launch);
    this.createdEmitter.fire(client);
    try {
      await client.start();
      this.client = client;
      this.startedEmitter.fire();
    } catch (error) {
      this.log.appendLine(`The language server failed to start: ${String(error)}`);
      void client.dispose();
      // Not awaited: commands waiting for the server should fail now, not when the message closes.
      void vscode.window
        .showErrorMessage(`The QVR language server (${describe(discovery.launch)}) failed to start.`, "Show Log")
        .then((choice) => {
          if (choice === "Show Log") this.serverLog.show();
        });
    }
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    try {
      await client.stop();
    } catch (error) {
      this.log.appendLine(`Stopping the language server: ${String(error)}`);
    }
    await client.dispose();
  }

  private createClient(launch: ServerLaunch): LanguageClient {
    this.log.appendLine(`Starting the QVR language server (${launch.source}): ${describe(launch)}`);
    const executable = { command: launch.command, args: launch.args, transport: TransportKind.stdio };
    const serverOptions: ServerOptions = { run: executable, debug: executable };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "qvr" },
        { scheme: "untitled", language: "qvr" },
      ],
      initializationOptions: serverConfiguration(),
      outputChannel: this.serverLog,
      synchronize: { fileEvents: this.qvrFiles },
    };
    return new LanguageClient("qvr", "QVR Language Server", serverOptions, clientOptions);
  }

  private async reportMissingServer(discovery: Exclude<Discovery, { kind: "found" }>): Promise<void> {
    let message: string;
    if (discovery.kind === "badSetting") {
      message = discovery.message;
      this.log.appendLine(message);
    } else {
      message =
        "QVR language server not found. Install it into your project's environment (pip install qvr, which provides qvr-lsp) or set its path.";
      this.log.appendLine("No QVR language server found. Looked in:");
      for (const place of discovery.tried) this.log.appendLine(`  - ${place}`);
    }
    const choice = await vscode.window.showErrorMessage(message, "Set Path", "Show Details");
    if (choice === "Set Path") {
      const picked = await vscode.window.showOpenDialog({
        canSelectFiles: true,
        canSelectFolders: false,
        canSelectMany: false,
        openLabel: "Use as QVR language server",
        title: "Select the qvr-lsp executable",
      });
      // Changing the setting restarts the server (see the configuration listener).
      if (picked?.[0] !== undefined) await setServerPath(picked[0].fsPath);
    } else if (choice === "Show Details") {
      this.log.show();
    }
  }
}

function describe(launch: ServerLaunch): string {
  return [launch.command, ...launch.args].join(" ");
}
