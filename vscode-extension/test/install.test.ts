import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type InstallHost,
  type InstallRequest,
  type RunOptions,
  type RunResult,
  choosePython,
  installServer,
  isSupportedPython,
  parsePythonVersion,
  pipInstallArgs,
  pipProgressMessage,
  requirementWithExtras,
  venvLayout,
} from "../src/server/install";

describe("Python versions", () => {
  it("are read from what python --version prints", () => {
    assert.deepEqual(parsePythonVersion("Python 3.11.7\n"), { major: 3, minor: 11, micro: 7 });
    assert.deepEqual(parsePythonVersion("Python 3.13.0rc1"), { major: 3, minor: 13, micro: 0 });
    assert.deepEqual(parsePythonVersion("Python 3.12.1+"), { major: 3, minor: 12, micro: 1 });
    assert.deepEqual(parsePythonVersion("Python 3.14"), { major: 3, minor: 14, micro: 0 });
    assert.deepEqual(parsePythonVersion("Python 2.7.18"), { major: 2, minor: 7, micro: 18 });
    assert.equal(parsePythonVersion("pyenv: python3: command not found"), undefined);
    assert.equal(parsePythonVersion(""), undefined);
  });

  it("are supported from 3.11 on", () => {
    const v = (major: number, minor: number) => ({ major, minor, micro: 0 });
    assert.equal(isSupportedPython(v(3, 10)), false);
    assert.equal(isSupportedPython(v(2, 7)), false);
    assert.equal(isSupportedPython(v(3, 11)), true);
    assert.equal(isSupportedPython(v(3, 13)), true);
    assert.equal(isSupportedPython(v(4, 0)), true);
  });
});

describe("the managed environment's layout", () => {
  it("is bin/python and bin/qvr-lsp on POSIX", () => {
    assert.deepEqual(venvLayout("/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv", "linux"), {
      root: "/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv",
      bin: "/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv/bin",
      python: "/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv/bin/python",
      server: "/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv/bin/qvr-lsp",
    });
    assert.equal(venvLayout("/Users/ada/venv", "darwin").server, "/Users/ada/venv/bin/qvr-lsp");
  });

  it("is Scripts\\python.exe and Scripts\\qvr-lsp.exe on Windows", () => {
    assert.deepEqual(venvLayout("C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\qvr.qvr\\venv", "win32"), {
      root: "C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\qvr.qvr\\venv",
      bin: "C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\qvr.qvr\\venv\\Scripts",
      python: "C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\qvr.qvr\\venv\\Scripts\\python.exe",
      server: "C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\qvr.qvr\\venv\\Scripts\\qvr-lsp.exe",
    });
  });
});

describe("the requirement pip installs", () => {
  const posix = { platform: "linux", baseFolder: "/work/project", homeDir: "/home/ada" };
  const windows = { platform: "win32", baseFolder: "C:\\work\\project", homeDir: "C:\\Users\\ada" };

  it("puts extras into a named requirement's brackets", () => {
    assert.equal(requirementWithExtras("qvr", [], posix), "qvr");
    assert.equal(requirementWithExtras("qvr", ["run"], posix), "qvr[run]");
    assert.equal(requirementWithExtras("qvr==0.2.0", ["run"], posix), "qvr[run]==0.2.0");
    assert.equal(requirementWithExtras("qvr >= 0.1", ["run", "arviz"], posix), "qvr[run,arviz] >= 0.1");
    assert.equal(requirementWithExtras("qvr[notebook]>=0.1", ["run"], posix), "qvr[notebook,run]>=0.1");
    assert.equal(requirementWithExtras("qvr[run]", ["run"], posix), "qvr[run]");
    assert.equal(requirementWithExtras("  ", ["run"], posix), "qvr[run]", "blank is the default, qvr");
  });

  it("appends extras to a wheel or a source folder, resolved from the workspace", () => {
    assert.equal(
      requirementWithExtras("/tmp/wheels/qvr-0.1.0-py3-none-any.whl", ["run"], posix),
      "/tmp/wheels/qvr-0.1.0-py3-none-any.whl[run]",
    );
    assert.equal(requirementWithExtras("dist/qvr-0.1.0-py3-none-any.whl", [], posix), "/work/project/dist/qvr-0.1.0-py3-none-any.whl");
    assert.equal(requirementWithExtras("qvr-0.1.0-py3-none-any.whl", ["run"], posix), "/work/project/qvr-0.1.0-py3-none-any.whl[run]");
    assert.equal(requirementWithExtras(".", ["run"], posix), "/work/project[run]");
    assert.equal(requirementWithExtras("~/src/qvr", ["run"], posix), "/home/ada/src/qvr[run]");
    assert.equal(requirementWithExtras("${workspaceFolder}/../qvr", [], posix), "/work/qvr");
    assert.equal(requirementWithExtras("C:\\wheels\\qvr.whl", ["run", "arviz"], windows), "C:\\wheels\\qvr.whl[run,arviz]");
    assert.equal(requirementWithExtras("..\\qvr", [], windows), "C:\\work\\qvr");
  });

  it("names the package of a URL so the extras have something to attach to", () => {
    assert.equal(
      requirementWithExtras("https://example.org/qvr-0.1.0-py3-none-any.whl", ["run"], posix),
      "qvr[run] @ https://example.org/qvr-0.1.0-py3-none-any.whl",
    );
    assert.equal(
      requirementWithExtras("git+https://github.com/qvr-lang/qvr", ["run"], posix),
      "qvr[run] @ git+https://github.com/qvr-lang/qvr",
    );
    assert.equal(requirementWithExtras("https://example.org/qvr.whl", [], posix), "https://example.org/qvr.whl");
    // Already named: a requirement, even though its URL ends in .whl.
    assert.equal(
      requirementWithExtras("qvr @ https://example.org/qvr-0.1.0-py3-none-any.whl", ["run"], posix),
      "qvr[run] @ https://example.org/qvr-0.1.0-py3-none-any.whl",
    );
  });
});

describe("pip's arguments", () => {
  it("install with constraints, upgrading on request, without prompts or progress bars", () => {
    assert.deepEqual(pipInstallArgs({ requirement: "qvr[run]", constraints: "/work/constraints.txt", upgrade: true }), [
      "-I",
      "-m",
      "pip",
      "install",
      "--disable-pip-version-check",
      "--no-input",
      "--progress-bar",
      "off",
      "--no-compile",
      "--upgrade",
      "-c",
      "/work/constraints.txt",
      "qvr[run]",
    ]);
    const plain = pipInstallArgs({ requirement: "qvr", upgrade: false });
    assert.equal(plain.includes("--upgrade"), false);
    assert.equal(plain.includes("-c"), false);
    assert.equal(plain[plain.length - 1], "qvr");
  });

  it("turn pip's progress lines into short messages", () => {
    assert.equal(pipProgressMessage("Collecting torch==2.13.0 (from qvr[run])"), "Collecting torch==2.13.0");
    assert.equal(
      pipProgressMessage("Processing /tmp/qvr-e2e-abc/qvr-0.1.0-py3-none-any.whl"),
      "Processing qvr-0.1.0-py3-none-any.whl",
    );
    assert.equal(pipProgressMessage("  Downloading numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl (16.8 MB)"), "Downloading numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl");
    assert.match(pipProgressMessage("Installing collected packages: mpmath, typing-extensions, sympy, networkx, MarkupSafe, lark, fsspec, filelock, jinja2, torch, qvr")!, /^Installing collected packages .{1,60}\.\.\.$/);
    assert.equal(pipProgressMessage("Successfully installed qvr-0.1.0"), "Successfully installed qvr-0.1.0");
    assert.equal(pipProgressMessage("  Requirement already satisfied: lark>=1.1"), undefined);
  });
});

interface FakeMachine {
  platform?: string;
  path?: string;
  executables?: string[];
  /** What `python --version` prints, by interpreter. */
  versions?: Record<string, string>;
  /** Interpreters that can import torch. */
  withTorch?: string[];
  /** Answers a run other than --version (default: exit 0); may change the machine. */
  onRun?(command: string, args: readonly string[], machine: FakeHost): RunResult | undefined;
}

type FakeHost = InstallHost & { executables: Set<string>; runs: { command: string; args: readonly string[]; cwd: string }[] };

function fakeHost(machine: FakeMachine): FakeHost {
  const executables = new Set(machine.executables ?? []);
  const host: FakeHost = {
    platform: machine.platform ?? "linux",
    pathEnv: machine.path,
    homeDir: machine.platform === "win32" ? "C:\\Users\\ada" : "/home/ada",
    executables,
    runs: [],
    isExecutable: (file) => executables.has(file),
    hasModule: (python, module) => module === "torch" && (machine.withTorch ?? []).includes(python),
    async run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
      host.runs.push({ command, args, cwd: options.cwd });
      if (args[0] === "--version") {
        const version = machine.versions?.[command];
        return version === undefined ? { code: 1, output: "" } : { code: 0, output: version };
      }
      const result = machine.onRun?.(command, args, host) ?? { code: 0, output: "" };
      for (const line of result.output.split("\n")) options.onLine?.(line);
      return result;
    },
  };
  return host;
}

const STORAGE = "/home/ada/.config/Code/User/globalStorage/qvr.qvr";
const VENV = `${STORAGE}/venv`;
const layout = venvLayout(VENV, "linux");

/** A machine where venv creation and pip work like the real ones. */
const working: FakeMachine = {
  path: "/usr/local/bin:/usr/bin",
  executables: ["/usr/bin/python3"],
  versions: { "/usr/bin/python3": "Python 3.11.2" },
  onRun(_command, args, host) {
    if (args.includes("venv")) host.executables.add(layout.python);
    if (args.includes("pip")) host.executables.add(layout.server);
    return undefined;
  },
};

function request(overrides: Partial<InstallRequest> = {}): InstallRequest & { logged: string[]; messages: string[] } {
  const logged: string[] = [];
  const messages: string[] = [];
  return {
    venv: VENV,
    cwd: STORAGE,
    source: "qvr",
    extras: [],
    runSupportExtras: ["run"],
    upgrade: true,
    python: {},
    log: (line) => logged.push(line),
    progress: (message) => messages.push(message),
    logged,
    messages,
    ...overrides,
  };
}

describe("choosing the Python to create the environment with", () => {
  it("uses qvr.server.installPython when it is new enough, and says so when it is not", async () => {
    const host = fakeHost({
      executables: ["/opt/py311/bin/python", "/opt/py310/bin/python"],
      versions: { "/opt/py311/bin/python": "Python 3.11.9", "/opt/py310/bin/python": "Python 3.10.13" },
    });
    assert.deepEqual(await choosePython({ setting: "/opt/py311/bin/python" }, host, STORAGE), {
      kind: "ok",
      python: "/opt/py311/bin/python",
      version: { major: 3, minor: 11, micro: 9 },
    });
    const old = await choosePython({ setting: "/opt/py310/bin/python" }, host, STORAGE);
    assert.equal(old.kind, "error");
    assert.match(old.kind === "error" ? old.message : "", /qvr\.server\.installPython \(\/opt\/py310\/bin\/python\) is Python 3\.10\.13; the QVR server needs Python 3\.11 or newer/);
    const missing = await choosePython({ setting: "/nope/python" }, host, STORAGE);
    assert.match(missing.kind === "error" ? missing.message : "", /"\/nope\/python", which is not an executable file/);
    // The version probe runs outside the workspace.
    assert.ok(host.runs.every((run) => run.cwd === STORAGE));
  });

  it("then takes the active interpreter, then python3 and python on PATH, skipping old ones", async () => {
    const host = fakeHost({
      path: "/usr/bin:/opt/bin",
      executables: ["/project/.venv/bin/python", "/usr/bin/python3", "/opt/bin/python"],
      versions: {
        "/project/.venv/bin/python": "Python 3.9.18",
        "/usr/bin/python3": "Python 3.10.12",
        "/opt/bin/python": "Python 3.12.1",
      },
    });
    const chosen = await choosePython({ activeInterpreter: "/project/.venv/bin/python" }, host, STORAGE);
    assert.deepEqual(chosen.kind === "ok" && chosen.python, "/opt/bin/python");
    // An environment folder as the active interpreter.
    const fromFolder = await choosePython(
      { activeInterpreter: "/opt/conda/envs/qvr" },
      fakeHost({ executables: ["/opt/conda/envs/qvr/bin/python"], versions: { "/opt/conda/envs/qvr/bin/python": "Python 3.12.0" } }),
      STORAGE,
    );
    assert.equal(fromFolder.kind === "ok" && fromFolder.python, "/opt/conda/envs/qvr/bin/python");
  });

  it("says what each candidate was when none will do", async () => {
    const host = fakeHost({
      path: "/usr/bin",
      executables: ["/usr/bin/python3"],
      versions: { "/usr/bin/python3": "Python 3.9.2" },
    });
    const chosen = await choosePython({}, host, STORAGE);
    assert.ok(chosen.kind === "error");
    assert.match(chosen.message, /needs Python 3\.11 or newer/);
    assert.match(chosen.message, /\/usr\/bin\/python3: Python 3\.9\.2/);
    assert.match(chosen.message, /python on PATH: not found/);
    assert.match(chosen.message, /qvr\.server\.installPython/);
  });

  it("looks for python.exe, then the py launcher, on Windows", async () => {
    const host = fakeHost({
      platform: "win32",
      path: "C:\\Windows;C:\\Python312",
      executables: ["C:\\Windows\\py.exe"],
      versions: { "C:\\Windows\\py.exe": "Python 3.12.4" },
    });
    const chosen = await choosePython({}, host, STORAGE);
    assert.equal(chosen.kind === "ok" && chosen.python, "C:\\Windows\\py.exe");
  });
});

describe("installing the server", () => {
  it("creates the environment, then pip-installs the source with its constraints", async () => {
    const host = fakeHost(working);
    const req = request({ source: "/tmp/w/qvr-0.1.0-py3-none-any.whl", constraints: "/work/constraints.txt", extras: ["run"] });
    const outcome = await installServer(req, host);
    assert.deepEqual(outcome, {
      kind: "installed",
      layout,
      requirement: "/tmp/w/qvr-0.1.0-py3-none-any.whl[run]",
      python: "/usr/bin/python3",
    });
    assert.deepEqual(
      host.runs.map((run) => [run.command, ...run.args].join(" ")),
      [
        "/usr/bin/python3 --version",
        `/usr/bin/python3 -I -m venv --clear ${VENV}`,
        `${layout.python} -I -m pip install --disable-pip-version-check --no-input --progress-bar off --no-compile --upgrade -c /work/constraints.txt /tmp/w/qvr-0.1.0-py3-none-any.whl[run]`,
      ],
    );
    assert.ok(host.runs.every((run) => run.cwd === STORAGE), "never in the workspace");
    assert.ok(req.messages.includes("Creating the environment"));
  });

  it("reuses an existing environment, and an update keeps the run support it has", async () => {
    const host = fakeHost({ ...working, executables: [layout.python, layout.server], withTorch: [layout.python] });
    const outcome = await installServer(request({ runSupportExtras: ["run", "arviz"] }), host);
    assert.equal(outcome.kind === "installed" && outcome.requirement, "qvr[run,arviz]");
    assert.equal(host.runs.length, 1, "pip alone");
    assert.equal(outcome.kind === "installed" && outcome.python, undefined);
  });

  it("adds run support without upgrading qvr", async () => {
    const host = fakeHost({ ...working, executables: [layout.python, layout.server] });
    const outcome = await installServer(request({ extras: ["run"], upgrade: false }), host);
    assert.equal(outcome.kind === "installed" && outcome.requirement, "qvr[run]");
    assert.equal(host.runs[0]!.args.includes("--upgrade"), false);
  });

  it("stops before creating anything when no Python will do", async () => {
    const host = fakeHost({ ...working, versions: { "/usr/bin/python3": "Python 3.10.4" } });
    const outcome = await installServer(request(), host);
    assert.ok(outcome.kind === "failed");
    assert.match(outcome.message, /needs Python 3\.11 or newer.*Python 3\.10\.4/);
    assert.equal(host.runs.filter((run) => run.args[0] !== "--version").length, 0);
  });

  it("says what to install when the venv module is missing", async () => {
    const host = fakeHost({
      ...working,
      onRun: (_command, args) =>
        args.includes("venv") ? { code: 1, output: "The virtual environment was not created successfully because ensurepip is not available." } : undefined,
    });
    const outcome = await installServer(request(), host);
    assert.ok(outcome.kind === "failed");
    assert.match(outcome.message, /python3-venv/);
  });

  it("reports pip's error", async () => {
    const host = fakeHost({
      ...working,
      onRun(_command, args, machine) {
        if (args.includes("venv")) machine.executables.add(layout.python);
        if (args.includes("pip")) return { code: 1, output: "Collecting qvr\nERROR: No matching distribution found for qvr" };
        return undefined;
      },
    });
    const outcome = await installServer(request(), host);
    assert.ok(outcome.kind === "failed");
    assert.match(outcome.message, /pip could not install qvr: ERROR: No matching distribution found for qvr/);
  });

  it("fails when pip succeeded but left no qvr-lsp", async () => {
    const host = fakeHost({ ...working, executables: [layout.python], onRun: () => undefined });
    const outcome = await installServer(request({ source: "some-other-package" }), host);
    assert.ok(outcome.kind === "failed");
    assert.match(outcome.message, /qvr-lsp is missing/);
  });

  it("stops when cancelled", async () => {
    const abort = new AbortController();
    const host = fakeHost({
      ...working,
      onRun(_command, args, machine) {
        if (args.includes("venv")) machine.executables.add(layout.python);
        if (args.includes("pip")) {
          abort.abort();
          return { code: null, output: "" };
        }
        return undefined;
      },
    });
    assert.deepEqual(await installServer(request({ signal: abort.signal }), host), { kind: "cancelled" });
  });
});
