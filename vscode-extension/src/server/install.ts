/**
 * "Install qvr": creates a virtual environment that the extension owns and pip-installs
 * the server into it, so a user without a Python project still gets one.
 *
 * Pure: processes and files come in through {@link InstallHost}, so the choice of
 * Python, the venv layout and pip's arguments are unit-tested on any platform.
 */
import * as path from "node:path";
import { type DiscoveryHost, PlatformPaths, SERVER_EXECUTABLE } from "./discovery";

/** The server's `requires-python` (pyproject.toml). */
export const MIN_PYTHON: PythonVersion = { major: 3, minor: 11, micro: 0 };
export const DEFAULT_INSTALL_SOURCE = "qvr";
/** The extra of the `qvr` package that runs programs (torch and numpy). */
export const RUN_EXTRA = "run";

export interface PythonVersion {
  major: number;
  minor: number;
  micro: number;
}

export interface RunResult {
  /** The exit status; null when the process could not start or was killed. */
  code: number | null;
  /** stdout and stderr together. */
  output: string;
  /** Why it could not start (ENOENT and the like). */
  error?: string;
}

export interface RunOptions {
  cwd: string;
  /** Each complete line of output as it arrives. */
  onLine?(line: string): void;
  /** Aborting kills the process (and what it started). */
  signal?: AbortSignal;
}

export interface InstallHost extends DiscoveryHost {
  run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult>;
}

export interface VenvLayout {
  root: string;
  bin: string;
  python: string;
  server: string;
}

/** Where a virtual environment keeps its interpreter and console scripts. */
export function venvLayout(root: string, platform: string): VenvLayout {
  const windows = platform === "win32";
  const p = windows ? path.win32 : path.posix;
  const bin = p.join(root, windows ? "Scripts" : "bin");
  const exe = windows ? ".exe" : "";
  return { root, bin, python: p.join(bin, `python${exe}`), server: p.join(bin, `${SERVER_EXECUTABLE}${exe}`) };
}

/** "Python 3.11.7" (what `python --version` prints), also "3.13.0rc1" and "3.12.1+". */
export function parsePythonVersion(text: string): PythonVersion | undefined {
  const match = /(?:^|\s)Python\s+(\d+)\.(\d+)(?:\.(\d+))?/i.exec(text) ?? /^\s*(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (match === null) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), micro: Number(match[3] ?? 0) };
}

export function isSupportedPython(version: PythonVersion): boolean {
  if (version.major !== MIN_PYTHON.major) return version.major > MIN_PYTHON.major;
  return version.minor >= MIN_PYTHON.minor;
}

export function formatVersion(version: PythonVersion): string {
  return `${version.major}.${version.minor}.${version.micro}`;
}

/**
 * `spec` with `extras` added, in a form pip accepts: a requirement (`qvr`,
 * `qvr==0.2`, `qvr[notebook]>=0.1`) gets them inside its brackets, a path
 * (`dist/qvr.whl`, a checkout) gets `[extras]` appended, a URL becomes
 * `qvr[extras] @ URL`. Relative paths are taken from `baseFolder`.
 */
export function requirementWithExtras(
  spec: string,
  extras: readonly string[],
  options: { platform: string; baseFolder?: string; homeDir: string },
): string {
  const trimmed = spec.trim() || DEFAULT_INSTALL_SOURCE;
  const wanted = [...new Set(extras.map((e) => e.trim()).filter((e) => e !== ""))];
  const kind = specKind(trimmed, options.platform);
  if (kind === "url") {
    return wanted.length === 0 ? trimmed : `qvr[${wanted.join(",")}] @ ${trimmed}`;
  }
  if (kind === "path") {
    const file = expandPath(trimmed, options);
    return wanted.length === 0 ? file : `${file}[${wanted.join(",")}]`;
  }
  // name[extras] followed by a version, marker or "@ URL".
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\s*\[([^\]]*)\])?(.*)$/s.exec(trimmed);
  if (match === null || wanted.length === 0) return trimmed;
  const present = (match[2] ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "");
  const all = [...present, ...wanted.filter((e) => !present.includes(e))];
  return `${match[1]}[${all.join(",")}]${match[3]}`;
}

/**
 * Where an install takes qvr from, in words for its notification: the package index
 * for a requirement (`qvr`, `qvr==0.2`: pip's index, as pip is configured), else the
 * wheel, folder or URL itself (a relative path resolved as {@link requirementWithExtras}
 * resolves it).
 */
export function installSourceLabel(spec: string, options: { platform: string; baseFolder?: string; homeDir: string }): string {
  const trimmed = spec.trim() || DEFAULT_INSTALL_SOURCE;
  switch (specKind(trimmed, options.platform)) {
    case "url":
      return trimmed;
    case "path":
      return expandPath(trimmed, options);
    case "requirement":
      return `${trimmed} from the package index`;
  }
}

type SpecKind = "url" | "path" | "requirement";

function specKind(spec: string, platform: string): SpecKind {
  if (/^[A-Za-z][A-Za-z0-9+.-]+:\/\//.test(spec)) return "url";
  // `qvr @ https://...`: a named requirement, whatever its URL ends with.
  if (/^[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*@\s/.test(spec)) return "requirement";
  if (spec.startsWith("~") || spec.startsWith(".") || spec.startsWith("${workspaceFolder}")) return "path";
  if ((platform === "win32" ? path.win32 : path.posix).isAbsolute(spec)) return "path";
  // A requirement never holds a slash; pip takes `x.whl` and `x.tar.gz` as files.
  if (/[/\\]/.test(spec) || /\.(whl|zip|tar\.gz|tgz)$/i.test(spec)) return "path";
  return "requirement";
}

function expandPath(value: string, options: { platform: string; baseFolder?: string; homeDir: string }): string {
  const p = options.platform === "win32" ? path.win32 : path.posix;
  let expanded = value.replace(/\$\{workspaceFolder\}/g, options.baseFolder ?? "");
  if (expanded === "~" || expanded.startsWith("~/") || expanded.startsWith("~\\")) {
    expanded = p.join(options.homeDir, expanded.slice(1));
  }
  return p.resolve(options.baseFolder ?? options.homeDir, expanded);
}

export interface PipInstall {
  requirement: string;
  /** A constraints file (`-c`): pins that pip must honour, such as a CPU-only torch. */
  constraints?: string;
  /** Upgrade the server (Install or Update); adding run support leaves it as it is. */
  upgrade: boolean;
}

/**
 * The arguments after the venv's python. `-I`: nothing from PYTHONPATH, the user's
 * site-packages or the working directory gets between Python and pip. No prompts,
 * no progress bars (the output goes to an output channel). `--no-compile`: pip would
 * byte-compile every file of PyTorch, half of its install time; Python compiles what
 * it imports on first use instead, into the venv (which is the user's to write).
 */
export function pipInstallArgs(install: PipInstall): string[] {
  return [
    "-I",
    "-m",
    "pip",
    "install",
    "--disable-pip-version-check",
    "--no-input",
    "--progress-bar",
    "off",
    "--no-compile",
    ...(install.upgrade ? ["--upgrade"] : []),
    ...(install.constraints ? ["-c", install.constraints] : []),
    install.requirement,
  ];
}

/** A short progress message from a line of pip's output, or undefined for the rest. */
export function pipProgressMessage(line: string): string | undefined {
  const text = line.trim();
  const match = /^(Collecting|Downloading|Processing|Building wheel for|Installing collected packages:|Successfully installed)\s+(.*)$/.exec(text);
  if (match === null) return undefined;
  const [, verb, rest] = match;
  const detail = rest!.replace(/\s+\(.*\)$/, "").replace(/^.*[/\\]/, "");
  const shown = detail.length > 60 ? `${detail.slice(0, 57)}...` : detail;
  return `${verb!.replace(/:$/, "")} ${shown}`;
}

export interface PythonChoice {
  /** `qvr.server.installPython`. */
  setting?: string;
  activeInterpreter?: string;
  baseFolder?: string;
}

export type ChosenPython =
  | { kind: "ok"; python: string; version: PythonVersion }
  | { kind: "error"; message: string };

/**
 * The interpreter to create the venv with: the setting (which must do), else the
 * first of the active interpreter and `python3` / `python` on PATH (`python` / `py`
 * on Windows) that is new enough. The message says what each one was.
 */
export async function choosePython(choice: PythonChoice, host: InstallHost, cwd: string): Promise<ChosenPython> {
  const paths = new PlatformPaths(host, choice.baseFolder);
  const need = `${MIN_PYTHON.major}.${MIN_PYTHON.minor}`;
  const setting = choice.setting?.trim();
  if (setting) {
    const python = resolveInterpreter(paths, setting);
    if (python === undefined) {
      return { kind: "error", message: `qvr.server.installPython is "${setting}", which is not an executable file.` };
    }
    const version = await pythonVersion(host, python, cwd);
    if (version === undefined) return { kind: "error", message: `qvr.server.installPython (${python}) did not report a Python version.` };
    if (!isSupportedPython(version)) {
      return {
        kind: "error",
        message: `qvr.server.installPython (${python}) is Python ${formatVersion(version)}; the QVR server needs Python ${need} or newer.`,
      };
    }
    return { kind: "ok", python, version };
  }

  const notes: string[] = [];
  const candidates: { name: string; python: string | undefined }[] = [];
  const active = choice.activeInterpreter?.trim();
  if (active) candidates.push({ name: `the active interpreter ${active}`, python: resolveInterpreter(paths, active) });
  for (const name of paths.windows ? ["python", "py"] : ["python3", "python"]) {
    candidates.push({ name: `${name} on PATH`, python: paths.searchPath(name) });
  }
  for (const candidate of candidates) {
    if (candidate.python === undefined) {
      notes.push(`${candidate.name}: not found`);
      continue;
    }
    const version = await pythonVersion(host, candidate.python, cwd);
    if (version !== undefined && isSupportedPython(version)) return { kind: "ok", python: candidate.python, version };
    notes.push(`${candidate.python}: ${version === undefined ? "no version reported" : `Python ${formatVersion(version)}`}`);
  }
  return {
    kind: "error",
    message: `The QVR server needs Python ${need} or newer, and none was found (${notes.join("; ")}). Install Python ${need}+ or set qvr.server.installPython to one.`,
  };
}

function resolveInterpreter(paths: PlatformPaths, value: string): string | undefined {
  const command = paths.resolveCommand(value);
  if (command !== undefined) return command;
  // An environment folder, as the Python extension may report one.
  const folder = paths.expand(value);
  if (!paths.p.isAbsolute(folder)) return undefined;
  return paths.executableIn(paths.binDir(folder), "python") ?? (paths.windows ? paths.executableIn(folder, "python") : undefined);
}

async function pythonVersion(host: InstallHost, python: string, cwd: string): Promise<PythonVersion | undefined> {
  const result = await host.run(python, ["--version"], { cwd });
  return result.code === 0 ? parsePythonVersion(result.output) : undefined;
}

export interface InstallRequest {
  /** The managed environment's folder. */
  venv: string;
  /** Where processes run: never the workspace, whose files Python could pick up. */
  cwd: string;
  /** `qvr.server.installSource`. */
  source: string;
  constraints?: string;
  /** Extras to add (run support); an update also keeps run support already there. */
  extras: readonly string[];
  /** The extras that run support means (`qvr.server.runSupportExtras`). */
  runSupportExtras: readonly string[];
  upgrade: boolean;
  python: PythonChoice;
  log(line: string): void;
  progress(message: string): void;
  signal?: AbortSignal;
}

export type InstallOutcome =
  | { kind: "installed"; layout: VenvLayout; requirement: string; python?: string }
  | { kind: "cancelled" }
  | { kind: "failed"; message: string };

export async function installServer(request: InstallRequest, host: InstallHost): Promise<InstallOutcome> {
  const layout = venvLayout(request.venv, host.platform);
  const cancelled = (): boolean => request.signal?.aborted === true;
  let createdWith: string | undefined;

  if (!host.isExecutable(layout.python)) {
    request.progress("Finding Python");
    const chosen = await choosePython(request.python, host, request.cwd);
    if (cancelled()) return { kind: "cancelled" };
    if (chosen.kind === "error") return { kind: "failed", message: chosen.message };
    createdWith = chosen.python;
    request.log(`Creating ${layout.root} with ${chosen.python} (Python ${formatVersion(chosen.version)})`);
    request.progress("Creating the environment");
    // --clear: a venv left half-made (cancelled, or its Python since removed) starts over.
    const venv = await host.run(chosen.python, ["-I", "-m", "venv", "--clear", layout.root], {
      cwd: request.cwd,
      onLine: request.log,
      signal: request.signal,
    });
    if (cancelled()) return { kind: "cancelled" };
    if (venv.code !== 0 || !host.isExecutable(layout.python)) {
      return {
        kind: "failed",
        message: `Could not create a virtual environment with ${chosen.python}${venv.error ? ` (${venv.error})` : ""}. On Debian and Ubuntu, install the python3-venv package.`,
      };
    }
  }

  const keepsRunSupport = request.upgrade && createdWith === undefined && host.hasModule(layout.python, "torch");
  const extras = [...request.extras, ...(keepsRunSupport ? request.runSupportExtras : [])];
  const requirement = requirementWithExtras(request.source, extras, {
    platform: host.platform,
    baseFolder: request.python.baseFolder,
    homeDir: host.homeDir,
  });
  const args = pipInstallArgs({ requirement, constraints: request.constraints?.trim() || undefined, upgrade: request.upgrade });
  request.log(`${layout.python} ${args.join(" ")}`);
  request.progress(`Installing ${requirement}`);
  const pip = await host.run(layout.python, args, {
    cwd: request.cwd,
    onLine: (line) => {
      request.log(line);
      const message = pipProgressMessage(line);
      if (message !== undefined) request.progress(message);
    },
    signal: request.signal,
  });
  if (cancelled()) return { kind: "cancelled" };
  if (pip.code !== 0) {
    const last = lastLines(pip.output);
    return { kind: "failed", message: `pip could not install ${requirement}${pip.error ? ` (${pip.error})` : ""}${last ? `: ${last}` : "."}` };
  }
  if (!host.isExecutable(layout.server)) {
    return { kind: "failed", message: `pip installed ${requirement}, but ${layout.server} is missing: is it the qvr package?` };
  }
  return { kind: "installed", layout, requirement, python: createdWith };
}

/** The error pip ended with, for the notification (the whole output is in the channel). */
function lastLines(output: string): string {
  const lines = output.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "");
  const error = lines.filter((l) => /^ERROR:/.test(l));
  const shown = (error.length > 0 ? error : lines).slice(-2).join(" ");
  return shown.length > 300 ? `${shown.slice(0, 297)}...` : shown;
}
