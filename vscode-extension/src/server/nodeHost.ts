/** The real {@link DiscoveryHost} and {@link InstallHost}: the local file system, PATH, processes. */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import { type DiscoveryHost, SAFE_PATH_FLAG } from "./discovery";
import type { InstallHost, RunOptions, RunResult } from "./install";

const PROBE_TIMEOUT_MS = 10_000;

export function createNodeHost(): DiscoveryHost {
  const moduleCache = new Map<string, boolean>();
  return {
    platform: process.platform,
    pathEnv: process.env.PATH,
    homeDir: os.homedir(),
    isExecutable(file: string): boolean {
      try {
        if (!fs.statSync(file).isFile()) return false;
        if (process.platform !== "win32") fs.accessSync(file, fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
    hasModule(python: string, module: string): boolean {
      const key = `${python}\0${module}`;
      let found = moduleCache.get(key);
      if (found === undefined) {
        found = probeModule(python, module);
        moduleCache.set(key, found);
      }
      return found;
    },
  };
}

/**
 * find_spec locates the package without running it, so the probe stays fast.
 * `-P` as in the launch: the probe finds what the server will import, never a
 * folder of the working directory (and a Python before 3.11, too old for the
 * server, fails the probe).
 */
function probeModule(python: string, module: string): boolean {
  const script = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 1)`;
  const result = spawnSync(python, [SAFE_PATH_FLAG, "-c", script], { timeout: PROBE_TIMEOUT_MS, stdio: "ignore", windowsHide: true });
  return result.status === 0;
}

export function createInstallHost(): InstallHost {
  return { ...createNodeHost(), run: runProcess };
}

/** Output kept for the outcome; the whole of it goes to the output channel line by line. */
const KEPT_OUTPUT = 64 * 1024;

function runProcess(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    if (options.signal?.aborted) {
      resolve({ code: null, output: "", error: "cancelled" });
      return;
    }
    const windows = process.platform === "win32";
    const child = spawn(command, args, {
      cwd: options.cwd,
      // Unbuffered, so pip's lines arrive as it works.
      env: { ...process.env, PYTHONUNBUFFERED: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
      // Its own process group, so a cancel also stops what pip started (builds, compilers).
      detached: !windows,
    });
    let output = "";
    let partial = "";
    const take = (chunk: Buffer): void => {
      const text = chunk.toString("utf8");
      output = (output + text).slice(-KEPT_OUTPUT);
      const lines = (partial + text).split(/\r?\n|\r/);
      partial = lines.pop() ?? "";
      for (const line of lines) options.onLine?.(line);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    const kill = (): void => {
      if (child.pid === undefined || child.exitCode !== null) return;
      if (windows) spawn("taskkill", ["/pid", String(child.pid), "/T", "/F"], { windowsHide: true, stdio: "ignore" });
      else {
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {
          child.kill("SIGTERM");
        }
      }
    };
    options.signal?.addEventListener("abort", kill, { once: true });
    let startError: string | undefined;
    child.on("error", (error) => {
      startError = error.message;
    });
    child.on("close", (code) => {
      options.signal?.removeEventListener("abort", kill);
      if (partial !== "") options.onLine?.(partial);
      resolve(startError === undefined ? { code, output } : { code: null, output, error: startError });
    });
  });
}
