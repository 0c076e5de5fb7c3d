/**
 * Finds the QVR language server, in this order: the `qvr.server.path` /
 * `qvr.server.pythonPath` settings, each workspace folder's `.venv`, the active
 * Python environment, the environment the extension installs the server into
 * ("managed"), then `qvr-lsp` on PATH.
 *
 * Pure: the file system, environment and Python probes come in through
 * {@link DiscoveryHost}, so every branch is unit-tested, Windows included.
 */
import * as path from "node:path";

export interface DiscoveryHost {
  /** `process.platform`; selects path syntax and executable names. */
  readonly platform: string;
  /** The PATH environment variable. */
  readonly pathEnv: string | undefined;
  readonly homeDir: string;
  /** True when `file` exists and can be executed. */
  isExecutable(file: string): boolean;
  /** True when `python` can import `module` (without importing its dependencies). */
  hasModule(python: string, module: string): boolean;
}

export interface DiscoveryInput {
  /** `qvr.server.path`: a qvr-lsp executable. */
  serverPath?: string;
  /** `qvr.server.pythonPath`: an interpreter to run `-P -m qvr_lsp` with. */
  pythonPath?: string;
  workspaceFolders: readonly string[];
  /** The active Python interpreter (ms-python, or `python.defaultInterpreterPath`). */
  activeInterpreter?: string;
  /** The virtual environment "Install qvr" creates (in the extension's global storage). */
  managedEnvironment?: string;
}

export type LaunchSource = "setting" | "workspace venv" | "active interpreter" | "managed" | "PATH";

export interface ServerLaunch {
  command: string;
  args: string[];
  source: LaunchSource;
}

export type Discovery =
  | { kind: "found"; launch: ServerLaunch; tried: string[] }
  /** A setting names something that cannot be used: say so rather than fall back silently. */
  | { kind: "badSetting"; setting: string; message: string }
  | { kind: "notFound"; tried: string[] };

export const SERVER_EXECUTABLE = "qvr-lsp";
export const SERVER_MODULE = "qvr_lsp";

export function discoverServer(input: DiscoveryInput, host: DiscoveryHost): Discovery {
  const paths = new PlatformPaths(host, input.workspaceFolders[0]);
  const tried: string[] = [];

  const serverPath = nonEmpty(input.serverPath);
  if (serverPath !== undefined) {
    const command = paths.resolveCommand(serverPath);
    if (command === undefined) {
      return {
        kind: "badSetting",
        setting: "qvr.server.path",
        message: `qvr.server.path is "${serverPath}", which is not an executable file.`,
      };
    }
    return { kind: "found", launch: { command, args: [], source: "setting" }, tried };
  }

  const pythonPath = nonEmpty(input.pythonPath);
  if (pythonPath !== undefined) {
    const python = paths.resolveCommand(pythonPath);
    if (python === undefined) {
      return {
        kind: "badSetting",
        setting: "qvr.server.pythonPath",
        message: `qvr.server.pythonPath is "${pythonPath}", which is not an executable file.`,
      };
    }
    if (!host.hasModule(python, SERVER_MODULE)) {
      return {
        kind: "badSetting",
        setting: "qvr.server.pythonPath",
        message: `${python} cannot import ${SERVER_MODULE}: install the server into it with "${python} -m pip install qvr".`,
      };
    }
    return { kind: "found", launch: moduleLaunch(python, "setting"), tried };
  }

  for (const folder of input.workspaceFolders) {
    const venvBin = paths.venvBin(folder);
    const launch = paths.fromBinDir(venvBin, "workspace venv");
    if (launch !== undefined) return { kind: "found", launch, tried };
    tried.push(`${venvBin} (no ${SERVER_EXECUTABLE}, no Python with ${SERVER_MODULE})`);
  }

  const interpreter = nonEmpty(input.activeInterpreter);
  if (interpreter !== undefined) {
    const python = paths.resolveCommand(interpreter);
    // The Python extension may report an environment folder instead of its interpreter.
    const launch =
      python === undefined
        ? paths.fromEnvironmentFolder(interpreter, "active interpreter")
        : paths.fromInterpreter(python, "active interpreter");
    if (launch !== undefined) return { kind: "found", launch, tried };
    tried.push(`the active Python interpreter ${interpreter} (no ${SERVER_MODULE})`);
  } else {
    tried.push("the active Python interpreter (none selected)");
  }

  // After the user's own environments: it exists only because the user asked for it,
  // and a project's pinned server should win over it.
  const managed = nonEmpty(input.managedEnvironment);
  if (managed !== undefined) {
    const launch = paths.fromEnvironmentFolder(managed, "managed");
    if (launch !== undefined) return { kind: "found", launch, tried };
    tried.push(`the extension's environment ${managed} (not installed)`);
  }

  const onPath = paths.searchPath(SERVER_EXECUTABLE);
  if (onPath !== undefined) {
    return { kind: "found", launch: { command: onPath, args: [], source: "PATH" }, tried };
  }
  tried.push(`PATH (no ${SERVER_EXECUTABLE})`);
  return { kind: "notFound", tried };
}

/**
 * `-P`: Python does not put the working directory (the workspace) first on
 * `sys.path`, so a `qvr_lsp/`, `argparse.py` or `cattrs.py` in the workspace
 * is never imported in place of the real one.
 */
export const SAFE_PATH_FLAG = "-P";

/**
 * The folder the server runs in: the folder of the command it starts (an environment's
 * `bin`, the interpreter's own), never the workspace that VS Code would give it. Python
 * reads modules from the working directory before any of its own when the
 * environment's `PYTHONPATH` holds an empty entry (`PYTHONPATH=:/x`, a common slip), and
 * `-P` does not take that entry away: in the workspace, a planted `collections.py` would
 * run before the server's first line. A `qvr.server.path` command keeps the workspace (a
 * wrapper script of the user's may rely on it). Undefined: the workspace, as before.
 */
export function launchDirectory(launch: ServerLaunch, platform: string): string | undefined {
  if (launch.source === "setting" && !launch.args.includes("-m")) return undefined;
  const p = platform === "win32" ? path.win32 : path.posix;
  return p.isAbsolute(launch.command) ? p.dirname(launch.command) : undefined;
}

function moduleLaunch(python: string, source: LaunchSource): ServerLaunch {
  return { command: python, args: [SAFE_PATH_FLAG, "-m", SERVER_MODULE], source };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/** Platform-aware path rules, so tests can exercise Windows layouts on Linux. */
export class PlatformPaths {
  readonly windows: boolean;
  readonly p: path.PlatformPath;

  constructor(
    private readonly host: DiscoveryHost,
    private readonly baseFolder: string | undefined,
  ) {
    this.windows = host.platform === "win32";
    this.p = this.windows ? path.win32 : path.posix;
  }

  venvBin(folder: string): string {
    return this.binDir(this.p.join(folder, ".venv"));
  }

  binDir(environment: string): string {
    return this.p.join(environment, this.windows ? "Scripts" : "bin");
  }

  /** A virtual or conda environment's folder (conda on Windows keeps python.exe at its root). */
  fromEnvironmentFolder(value: string, source: LaunchSource): ServerLaunch | undefined {
    const folder = this.expand(value);
    if (!this.p.isAbsolute(folder)) return undefined;
    return this.fromBinDir(this.binDir(folder), source) ?? (this.windows ? this.fromBinDir(folder, source) : undefined);
  }

  /** The server inside an environment's bin directory: its script, else `python -m`. */
  fromBinDir(binDir: string, source: LaunchSource): ServerLaunch | undefined {
    const script = this.executableIn(binDir, SERVER_EXECUTABLE);
    if (script !== undefined) return { command: script, args: [], source };
    const python = this.executableIn(binDir, "python");
    if (python !== undefined && this.host.hasModule(python, SERVER_MODULE)) {
      return moduleLaunch(python, source);
    }
    return undefined;
  }

  /** Prefer the interpreter's own module; fall back to a qvr-lsp script beside it. */
  fromInterpreter(python: string, source: LaunchSource): ServerLaunch | undefined {
    if (this.host.hasModule(python, SERVER_MODULE)) return moduleLaunch(python, source);
    const script = this.executableIn(this.p.dirname(python), SERVER_EXECUTABLE);
    return script === undefined ? undefined : { command: script, args: [], source };
  }

  /**
   * A setting's value as an executable: `~` and `${workspaceFolder}` expanded,
   * relative paths taken from the first workspace folder, bare names looked up on PATH.
   */
  resolveCommand(value: string): string | undefined {
    const expanded = this.expand(value);
    return this.p.isAbsolute(expanded) ? this.executableAt(expanded) : this.searchPath(expanded);
  }

  /** An absolute path, or the bare name itself when `value` has no directory part. */
  expand(value: string): string {
    let expanded = value.replace(/\$\{workspaceFolder\}/g, this.baseFolder ?? "");
    if (expanded === "~" || expanded.startsWith("~/") || expanded.startsWith("~\\")) {
      expanded = this.p.join(this.host.homeDir, expanded.slice(1));
    }
    const bare = !expanded.includes("/") && !(this.windows && expanded.includes("\\"));
    if (bare || this.p.isAbsolute(expanded)) return expanded;
    return this.p.resolve(this.baseFolder ?? this.host.homeDir, expanded);
  }

  searchPath(name: string): string | undefined {
    const separator = this.windows ? ";" : ":";
    for (const dir of (this.host.pathEnv ?? "").split(separator)) {
      if (dir === "") continue;
      const found = this.executableIn(dir, name);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  executableIn(dir: string, name: string): string | undefined {
    return this.executableAt(this.p.join(dir, name));
  }

  /** On Windows, `python` means `python.exe` (and a console script is `qvr-lsp.exe`). */
  private executableAt(file: string): string | undefined {
    const candidates = this.windows && !/\.(exe|cmd|bat)$/i.test(file) ? [`${file}.exe`, file] : [file];
    return candidates.find((candidate) => this.host.isExecutable(candidate));
  }
}
