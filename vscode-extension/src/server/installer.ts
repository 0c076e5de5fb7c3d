/**
 * "Install qvr", "QVR: Install or Update Server" and "QVR: Install Run Support": run
 * install.ts under a cancellable progress notification, pip's output in the QVR
 * channel, then restart the server from the environment just installed.
 */
import { mkdirSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { ignoredInstallSettingNames, installSettings } from "../config";
import { errorMessage } from "../shared/errors";
import type { ServerLaunch } from "./discovery";
import { type InstallOutcome, installServer, installSourceLabel } from "./install";
import { createInstallHost, createNodeHost } from "./nodeHost";
import { activeInterpreter } from "./pythonEnvironment";
import type { ServerManager } from "./serverManager";
import { commandLine, sourceLabel } from "./status";
import type { ServerStatusItem } from "./statusItem";

export interface InstallOptions {
  /** Add the run extras (torch) as well. */
  runSupport: boolean;
  /** Upgrade qvr if a newer one is available; adding run support alone does not. */
  upgrade: boolean;
}

export class ServerInstaller {
  private running = false;

  /**
   * @param storage the extension's global storage folder, where processes run
   * @param venv the managed environment inside it
   */
  constructor(
    private readonly manager: ServerManager,
    private readonly status: ServerStatusItem,
    private readonly output: vscode.OutputChannel,
    private readonly storage: string,
    private readonly venv: string,
  ) {}

  /** True when the server was installed (and restarted from there). */
  async install(options: InstallOptions): Promise<boolean> {
    // The extension declares untrusted workspaces unsupported; this is the second lock.
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showErrorMessage("QVR installs its server only in a trusted workspace.");
      return false;
    }
    if (this.running) {
      void vscode.window.showInformationMessage("The QVR server is already being installed: see the QVR output channel.");
      return false;
    }
    this.running = true;
    const title = options.runSupport ? "Installing qvr with run support" : options.upgrade ? "Installing or updating qvr" : "Installing qvr";
    const started = Date.now();
    this.status.setActivity(options.runSupport ? "installing run support" : "installing");
    try {
      const settings = installSettings();
      const ignored = ignoredInstallSettingNames();
      if (ignored.length > 0) {
        this.output.appendLine(`Ignored (install settings are read from your user settings only): ${ignored.join(", ")} set in this workspace`);
      }
      const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
      const interpreter = await activeInterpreter(folders[0]?.uri);
      mkdirSync(this.storage, { recursive: true });
      const source = installSourceLabel(settings.source, { platform: process.platform, baseFolder: folders[0]?.uri.fsPath, homeDir: os.homedir() });
      this.output.appendLine(`${title} into ${this.venv} (from ${source}${settings.constraints ? `, constraints ${settings.constraints}` : ""})`);
      const outcome = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `QVR: ${title} from ${source}`, cancellable: true },
        (progress, token) => {
          const abort = new AbortController();
          token.onCancellationRequested(() => abort.abort());
          return installServer(
            {
              venv: this.venv,
              cwd: this.storage,
              source: settings.source,
              constraints: settings.constraints,
              extras: options.runSupport ? settings.runSupportExtras : [],
              runSupportExtras: settings.runSupportExtras,
              upgrade: options.upgrade,
              python: { setting: settings.python, activeInterpreter: interpreter, baseFolder: folders[0]?.uri.fsPath },
              log: (line) => this.output.appendLine(line),
              progress: (message) => progress.report({ message }),
              signal: abort.signal,
            },
            createInstallHost(),
          );
        },
      );
      return await this.finish(outcome, (Date.now() - started) / 1000);
    } catch (error) {
      this.output.appendLine(`The install failed: ${errorMessage(error)}`);
      void this.showFailure(errorMessage(error));
      return false;
    } finally {
      this.running = false;
      this.status.setActivity(undefined);
    }
  }

  /**
   * Run support goes where the server runs: into the managed environment when the
   * server is that one (or none runs yet); another environment is the user's to change.
   */
  async installRunSupport(): Promise<boolean> {
    const launch = this.manager.launch;
    if (launch !== undefined && launch.source !== "managed") {
      const python = environmentPython(launch);
      const pip = python === undefined ? `pip install "qvr[run]"` : `"${python}" -m pip install "qvr[run]"`;
      const choice = await vscode.window.showInformationMessage(
        `The QVR server in use comes from ${sourceLabel(launch.source)} (${commandLine(launch)}). Add run support to that environment with: ${pip}`,
        "Copy Command",
      );
      if (choice === "Copy Command") await vscode.env.clipboard.writeText(pip);
      return false;
    }
    return this.install({ runSupport: true, upgrade: false });
  }

  private async finish(outcome: InstallOutcome, seconds: number): Promise<boolean> {
    switch (outcome.kind) {
      case "cancelled":
        this.output.appendLine("The install was cancelled.");
        return false;
      case "failed":
        this.output.appendLine(outcome.message);
        void this.showFailure(outcome.message);
        return false;
      case "installed":
        this.output.appendLine(`Installed ${outcome.requirement} into ${outcome.layout.root} in ${seconds.toFixed(1)} s.`);
        await this.manager.restart();
        vscode.window.setStatusBarMessage("$(check) QVR server installed", 5000);
        // Discovery prefers the user's own environments: say why the new one is not in use.
        if (this.manager.launch !== undefined && this.manager.launch.source !== "managed") {
          void vscode.window.showInformationMessage(
            `qvr is installed in the extension's environment, but the server from ${sourceLabel(this.manager.launch.source)} comes first and is the one running.`,
          );
        }
        return true;
    }
  }

  private async showFailure(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`Installing qvr failed: ${message}`, "Show Output");
    if (choice === "Show Output") this.output.show();
  }
}

/** The interpreter of the environment a launch runs in: its own, or the one beside its qvr-lsp script. */
function environmentPython(launch: ServerLaunch): string | undefined {
  if (launch.args.includes("-m")) return launch.command;
  const host = createNodeHost();
  const dir = path.dirname(launch.command);
  return [path.join(dir, "python"), path.join(dir, "python.exe")].find((file) => host.isExecutable(file));
}
