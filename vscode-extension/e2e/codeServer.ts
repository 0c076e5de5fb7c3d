/**
 * A real VS Code for the end-to-end test: code-server (VS Code 1.100.3's workbench
 * served on 127.0.0.1) with our packaged .vsix installed, the test's user settings,
 * and a workspace of copied examples. Everything it writes lives under one temporary
 * directory, removed at the end; that includes the extension's global storage, where
 * the extension installs its own language server.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { accessSync, constants, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";

export interface CodeServerOptions {
  /** The directory `scripts/vscode_e2e/install_code_server.sh` installed code-server into. */
  installDir: string;
  vsix: string;
  /** Files and folders copied into the workspace (name -> source path). */
  workspaceFiles: Record<string, string>;
  settings: Record<string, unknown>;
  /** Variables that replace the test's own in code-server's (and so the extension's) environment. */
  env?: NodeJS.ProcessEnv;
}

/** `pathEnv` without the directories that hold an executable `name`. */
export function pathWithout(name: string, pathEnv = process.env.PATH ?? ""): string {
  return pathEnv
    .split(path.delimiter)
    .filter((dir) => dir !== "" && !isExecutable(path.join(dir, name)))
    .join(path.delimiter);
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * pip's cache and configuration as the user has them: code-server gets its own XDG
 * folders, which would otherwise hide both from the pip the extension runs.
 */
export function userPipEnvironment(): NodeJS.ProcessEnv {
  const cache = process.env.PIP_CACHE_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), ".cache"), "pip");
  const config = [
    process.env.PIP_CONFIG_FILE,
    path.join(process.env.XDG_CONFIG_HOME ?? path.join(homedir(), ".config"), "pip", "pip.conf"),
    path.join(homedir(), ".pip", "pip.conf"),
  ].find((file) => file !== undefined && existsSync(file));
  return { PIP_CACHE_DIR: cache, ...(config !== undefined ? { PIP_CONFIG_FILE: config } : {}) };
}

/** Settings that keep a fresh workbench quiet: no trust prompt, welcome page, tips or update checks. */
const QUIET_SETTINGS = {
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "chat.disableAIFeatures": true,
  "files.autoSave": "off",
  "editor.hover.delay": 200,
};

export class CodeServer {
  readonly root: string;
  readonly workspace: string;
  private process: ChildProcess | undefined;
  private logText = "";
  port = 0;

  constructor(private readonly options: CodeServerOptions) {
    this.root = mkdtempSync(path.join(tmpdir(), "qvr-e2e-"));
    this.workspace = path.join(this.root, "workspace");
  }

  get binary(): string {
    return path.join(this.options.installDir, "node_modules", ".bin", "code-server");
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.workspace)}`;
  }

  /** code-server's own state stays in the temporary root, never in $HOME. */
  private env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      ...this.options.env,
      XDG_CONFIG_HOME: path.join(this.root, "home", "config"),
      XDG_DATA_HOME: path.join(this.root, "home", "data"),
      XDG_CACHE_HOME: path.join(this.root, "home", "cache"),
    };
  }

  /** The folder VS Code gives an extension for its files (`context.globalStorageUri`). */
  globalStorage(extensionId: string): string {
    return path.join(this.root, "user-data", "User", "globalStorage", extensionId);
  }

  private dirs(): string[] {
    return ["--user-data-dir", path.join(this.root, "user-data"), "--extensions-dir", path.join(this.root, "extensions")];
  }

  async start(): Promise<void> {
    if (!existsSync(this.binary)) {
      throw new Error(`no code-server at ${this.binary}: run ./dev setup (or scripts/vscode_e2e/install_code_server.sh)`);
    }
    mkdirSync(this.workspace, { recursive: true });
    for (const [name, source] of Object.entries(this.options.workspaceFiles)) {
      cpSync(source, path.join(this.workspace, name), { recursive: true });
    }
    const userDir = path.join(this.root, "user-data", "User");
    mkdirSync(userDir, { recursive: true });
    writeFileSync(
      path.join(userDir, "settings.json"),
      JSON.stringify({ ...QUIET_SETTINGS, ...this.options.settings }, null, 2),
    );
    execFileSync(this.binary, [...this.dirs(), "--install-extension", this.options.vsix, "--force"], {
      env: this.env(),
      stdio: "pipe",
      timeout: 120_000,
    });
    this.port = await freePort();
    const child = spawn(
      this.binary,
      [
        "--auth",
        "none",
        "--bind-addr",
        `127.0.0.1:${this.port}`,
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        ...this.dirs(),
        this.workspace,
      ],
      { env: this.env(), stdio: ["ignore", "pipe", "pipe"] },
    );
    this.process = child;
    const keep = (chunk: Buffer): void => {
      this.logText = (this.logText + chunk.toString()).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    await this.waitHealthy(60_000);
  }

  private async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.process?.exitCode !== null && this.process?.exitCode !== undefined) break;
      try {
        const response = await fetch(`http://127.0.0.1:${this.port}/healthz`);
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`code-server did not come up:\n${this.logText}`);
  }

  /** The log of the extension host, where the extension's and the server's errors go. */
  extensionHostLog(): string {
    return this.logText;
  }

  readWorkspaceFile(name: string): string {
    return readFileSync(path.join(this.workspace, name), "utf8");
  }

  /** Stops code-server (and so the extension host and language server it started) and removes its files. */
  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    // QVR_E2E_KEEP=1 keeps the workspace and the logs (user-data/logs) to look at.
    if (process.env.QVR_E2E_KEEP === "1") console.log(`# kept ${this.root}`);
    // Retried: the language server's workers can outlive code-server by a moment and write
    // into its folders (ArviZ's cache/arviz/daily_warning) while they are being removed.
    else rmSync(this.root, { recursive: true, force: true, maxRetries: 5 });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
