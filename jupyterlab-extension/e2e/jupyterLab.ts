/**
 * A real JupyterLab for the end-to-end test: `jupyter lab` of the given Python (the
 * project's .venv, which has JupyterLab, jupyterlab-lsp and qvr installed) with this
 * checkout's prebuilt jupyterlab-qvr, on 127.0.0.1 with a random token. Everything it
 * writes (notebooks, settings, config, runtime files) lives under one temporary folder;
 * the user's own Jupyter configuration is not read. The server runs in a process group of
 * its own, so stopping it also stops the kernel and the language server it started.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

export interface JupyterLabOptions {
  python: string;
  /** The prebuilt extension (qvr/labextension: package.json and static/). */
  labextension: string;
  /** Files written into the served folder (name -> text). */
  files: Record<string, string>;
  /** User settings, as the Settings Editor saves them (plugin id -> settings). */
  settings: Record<string, Record<string, unknown>>;
}

export class JupyterLab {
  readonly root = mkdtempSync(path.join(tmpdir(), "qvr-lab-e2e-"));
  readonly notebooks = path.join(this.root, "notebooks");
  readonly token = randomBytes(16).toString("hex");
  port = 0;
  private readonly runtime = path.join(this.root, "runtime");
  private process: ChildProcess | undefined;
  private logText = "";

  constructor(private readonly options: JupyterLabOptions) {}

  url(route: string): string {
    return `http://127.0.0.1:${this.port}${route}?token=${this.token}`;
  }

  log(): string {
    return this.logText;
  }

  async start(): Promise<void> {
    if (!existsSync(path.join(this.options.labextension, "package.json"))) {
      throw new Error(`no prebuilt extension at ${this.options.labextension}: npm run build:labextension`);
    }
    mkdirSync(this.notebooks, { recursive: true });
    for (const [name, text] of Object.entries(this.options.files)) writeFileSync(path.join(this.notebooks, name), text);
    // JupyterLab finds a prebuilt extension in a folder named as the extension.
    const extensions = path.join(this.root, "labextensions");
    mkdirSync(extensions);
    symlinkSync(path.resolve(this.options.labextension), path.join(extensions, "jupyterlab-qvr"), "dir");
    const settings = path.join(this.root, "settings");
    for (const [plugin, values] of Object.entries(this.options.settings)) {
      const [pkg, name] = plugin.split(":");
      mkdirSync(path.join(settings, pkg), { recursive: true });
      writeFileSync(path.join(settings, pkg, `${name}.jupyterlab-settings`), JSON.stringify(values));
    }
    const args = [
      "-m",
      "jupyter",
      "lab",
      "--no-browser",
      "--ServerApp.port=0", // a free port of the server's choosing, written to its runtime file
      "--ServerApp.ip=127.0.0.1",
      `--IdentityProvider.token=${this.token}`,
      `--ServerApp.root_dir=${this.notebooks}`,
      `--LabApp.extra_labextensions_path=${extensions}`,
      `--LabApp.user_settings_dir=${settings}`,
      `--LabApp.workspaces_dir=${path.join(this.root, "workspaces")}`,
      ...(process.getuid?.() === 0 ? ["--allow-root"] : []),
    ];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      JUPYTER_CONFIG_DIR: path.join(this.root, "config"),
      JUPYTER_DATA_DIR: path.join(this.root, "data"),
      JUPYTER_RUNTIME_DIR: this.runtime,
      IPYTHONDIR: path.join(this.root, "ipython"),
    };
    const child = spawn(this.options.python, args, { cwd: this.notebooks, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    this.process = child;
    const keep = (chunk: Buffer): void => {
      this.logText = (this.logText + chunk.toString()).slice(-30_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    await this.waitUp(90_000);
  }

  /** Whether jupyter-lsp lists the qvr-lsp server, and its session's status. */
  async languageServer(): Promise<{ listed: boolean; status: string | undefined }> {
    const response = await fetch(this.url("/lsp/status"));
    const status = (await response.json()) as { sessions: Record<string, { status: string }> };
    const session = status.sessions["qvr-lsp"];
    return { listed: session !== undefined, status: session?.status };
  }

  /** Waits for the server's runtime file (jpserver-PID.json, which names its port) and
   * then for its API to answer. */
  private async waitUp(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.process?.exitCode !== null && this.process?.exitCode !== undefined) break;
      try {
        if (this.port === 0) {
          const file = readdirSync(this.runtime).find((name) => /^jpserver-\d+\.json$/.test(name));
          if (file !== undefined) this.port = (JSON.parse(readFileSync(path.join(this.runtime, file), "utf8")) as { port: number }).port;
        }
        if (this.port !== 0 && (await fetch(this.url("/api/status"))).ok) return;
      } catch {
        // no runtime folder yet, a file half written, or not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`JupyterLab did not come up:\n${this.logText}`);
  }

  /** Stops the server, its kernels and language servers (the whole process group), and removes its files. */
  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (child?.pid !== undefined && child.exitCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      process.kill(-child.pid, "SIGTERM");
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, 10_000);
      await exited;
      clearTimeout(timer);
      try {
        process.kill(-child.pid, "SIGKILL"); // a kernel or server that outlived its parent
      } catch {
        // none did
      }
    }
    if (process.env.QVR_E2E_KEEP === "1") console.log(`# kept ${this.root}`);
    else rmSync(this.root, { recursive: true, force: true, maxRetries: 5 });
  }
}
