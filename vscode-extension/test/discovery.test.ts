import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type DiscoveryHost, type DiscoveryInput, discoverServer } from "../src/server/discovery";

interface FakeMachine {
  platform?: string;
  path?: string;
  executables?: string[];
  /** Interpreters that can import qvr_lsp. */
  withServerModule?: string[];
}

function host(machine: FakeMachine): DiscoveryHost & { probes: string[] } {
  const executables = new Set(machine.executables ?? []);
  const modules = new Set(machine.withServerModule ?? []);
  const probes: string[] = [];
  return {
    platform: machine.platform ?? "linux",
    pathEnv: machine.path,
    homeDir: machine.platform === "win32" ? "C:\\Users\\ada" : "/home/ada",
    probes,
    isExecutable: (file) => executables.has(file),
    hasModule: (python, module) => {
      probes.push(python);
      return module === "qvr_lsp" && modules.has(python);
    },
  };
}

const project = "/work/project";
const input = (overrides: Partial<DiscoveryInput> = {}): DiscoveryInput => ({
  workspaceFolders: [project],
  ...overrides,
});

describe("server discovery order", () => {
  const everything: FakeMachine = {
    path: "/usr/local/bin:/usr/bin",
    executables: [
      "/opt/qvr/qvr-lsp",
      "/opt/py/bin/python",
      `${project}/.venv/bin/qvr-lsp`,
      `${project}/.venv/bin/python`,
      "/usr/bin/python3",
      "/usr/local/bin/qvr-lsp",
    ],
    withServerModule: ["/opt/py/bin/python", `${project}/.venv/bin/python`, "/usr/bin/python3"],
  };

  it("uses qvr.server.path first", () => {
    const found = discoverServer(input({ serverPath: "/opt/qvr/qvr-lsp", pythonPath: "/opt/py/bin/python" }), host(everything));
    assert.deepEqual(found.kind === "found" && found.launch, { command: "/opt/qvr/qvr-lsp", args: [], source: "setting" });
  });

  it("then qvr.server.pythonPath, run as python -m qvr_lsp", () => {
    const found = discoverServer(input({ pythonPath: "/opt/py/bin/python" }), host(everything));
    assert.deepEqual(found.kind === "found" && found.launch, {
      command: "/opt/py/bin/python",
      args: ["-P", "-m", "qvr_lsp"],
      source: "setting",
    });
  });

  it("then the workspace's .venv, preferring its qvr-lsp script", () => {
    const found = discoverServer(input({ activeInterpreter: "/usr/bin/python3" }), host(everything));
    assert.deepEqual(found.kind === "found" && found.launch, {
      command: `${project}/.venv/bin/qvr-lsp`,
      args: [],
      source: "workspace venv",
    });
  });

  it("uses the .venv's python when it has the module but no script", () => {
    const machine = host({
      executables: [`${project}/.venv/bin/python`],
      withServerModule: [`${project}/.venv/bin/python`],
    });
    const found = discoverServer(input(), machine);
    assert.deepEqual(found.kind === "found" && found.launch, {
      command: `${project}/.venv/bin/python`,
      args: ["-P", "-m", "qvr_lsp"],
      source: "workspace venv",
    });
  });

  it("skips a .venv whose python lacks the server", () => {
    const found = discoverServer(
      input({ activeInterpreter: "/usr/bin/python3" }),
      host({ executables: [`${project}/.venv/bin/python`, "/usr/bin/python3"], withServerModule: ["/usr/bin/python3"] }),
    );
    assert.equal(found.kind === "found" && found.launch.source, "active interpreter");
  });

  it("looks in every workspace folder's .venv", () => {
    const found = discoverServer(
      input({ workspaceFolders: ["/a", "/b"] }),
      host({ executables: ["/b/.venv/bin/qvr-lsp"] }),
    );
    assert.equal(found.kind === "found" && found.launch.command, "/b/.venv/bin/qvr-lsp");
  });

  it("then the active interpreter", () => {
    const found = discoverServer(
      input({ activeInterpreter: "/opt/py/bin/python" }),
      host({ ...everything, executables: everything.executables!.filter((e) => !e.includes(".venv")) }),
    );
    assert.deepEqual(found.kind === "found" && found.launch, {
      command: "/opt/py/bin/python",
      args: ["-P", "-m", "qvr_lsp"],
      source: "active interpreter",
    });
  });

  it("accepts an environment folder as the active interpreter", () => {
    const found = discoverServer(
      input({ activeInterpreter: "/opt/conda/envs/qvr" }),
      host({ executables: ["/opt/conda/envs/qvr/bin/qvr-lsp"] }),
    );
    assert.equal(found.kind === "found" && found.launch.command, "/opt/conda/envs/qvr/bin/qvr-lsp");
  });

  it("resolves a bare interpreter name such as the default 'python' on PATH", () => {
    const found = discoverServer(
      input({ activeInterpreter: "python" }),
      host({ path: "/usr/bin", executables: ["/usr/bin/python"], withServerModule: ["/usr/bin/python"] }),
    );
    assert.equal(found.kind === "found" && found.launch.command, "/usr/bin/python");
  });

  it("then qvr-lsp on PATH", () => {
    const found = discoverServer(
      input({ activeInterpreter: "/usr/bin/python3" }),
      host({ path: "/nope:/usr/local/bin", executables: ["/usr/bin/python3", "/usr/local/bin/qvr-lsp"] }),
    );
    assert.deepEqual(found.kind === "found" && found.launch, { command: "/usr/local/bin/qvr-lsp", args: [], source: "PATH" });
  });

  it("reports every place it looked when nothing is found", () => {
    const found = discoverServer(input({ activeInterpreter: "/usr/bin/python3" }), host({ path: "/usr/bin" }));
    assert.equal(found.kind, "notFound");
    assert.ok(found.kind === "notFound");
    assert.equal(found.tried.length, 3);
    assert.match(found.tried[0]!, /\/work\/project\/\.venv\/bin/);
    assert.match(found.tried[1]!, /\/usr\/bin\/python3/);
    assert.match(found.tried[2]!, /PATH/);
  });
});

describe("the extension's managed environment", () => {
  const managed = "/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv";

  it("comes after the user's own environments", () => {
    const machine = host({
      executables: [`${project}/.venv/bin/qvr-lsp`, `${managed}/bin/qvr-lsp`, "/usr/bin/python3"],
      withServerModule: ["/usr/bin/python3"],
    });
    const venv = discoverServer(input({ managedEnvironment: managed }), machine);
    assert.equal(venv.kind === "found" && venv.launch.source, "workspace venv");
    const active = discoverServer(
      input({ workspaceFolders: ["/elsewhere"], activeInterpreter: "/usr/bin/python3", managedEnvironment: managed }),
      machine,
    );
    assert.equal(active.kind === "found" && active.launch.source, "active interpreter");
  });

  it("comes before qvr-lsp on PATH, and runs its qvr-lsp script", () => {
    const found = discoverServer(
      input({ managedEnvironment: managed }),
      host({ path: "/usr/local/bin", executables: [`${managed}/bin/qvr-lsp`, `${managed}/bin/python`, "/usr/local/bin/qvr-lsp"] }),
    );
    assert.deepEqual(found.kind === "found" && found.launch, { command: `${managed}/bin/qvr-lsp`, args: [], source: "managed" });
  });

  it("is Scripts\\qvr-lsp.exe on Windows", () => {
    const winManaged = "C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\qvr.qvr\\venv";
    const found = discoverServer(
      { workspaceFolders: ["C:\\work\\project"], managedEnvironment: winManaged },
      host({ platform: "win32", executables: [`${winManaged}\\Scripts\\qvr-lsp.exe`] }),
    );
    assert.deepEqual(found.kind === "found" && found.launch, {
      command: `${winManaged}\\Scripts\\qvr-lsp.exe`,
      args: [],
      source: "managed",
    });
  });

  it("is listed among the places searched while it is not installed", () => {
    const found = discoverServer(input({ managedEnvironment: managed }), host({ path: "/usr/bin" }));
    assert.ok(found.kind === "notFound");
    assert.deepEqual(
      found.tried.map((place) => place.replace(/ \(.*$/, "")),
      [`${project}/.venv/bin`, "the active Python interpreter", `the extension's environment ${managed}`, "PATH"],
    );
  });
});

describe("settings that point nowhere", () => {
  it("report the bad qvr.server.path instead of silently using another server", () => {
    const found = discoverServer(
      input({ serverPath: "/missing/qvr-lsp" }),
      host({ executables: [`${project}/.venv/bin/qvr-lsp`] }),
    );
    assert.equal(found.kind, "badSetting");
    assert.ok(found.kind === "badSetting");
    assert.equal(found.setting, "qvr.server.path");
    assert.match(found.message, /\/missing\/qvr-lsp/);
  });

  it("report a pythonPath without the server module, with the install command", () => {
    const found = discoverServer(input({ pythonPath: "/usr/bin/python3" }), host({ executables: ["/usr/bin/python3"] }));
    assert.ok(found.kind === "badSetting");
    assert.equal(found.setting, "qvr.server.pythonPath");
    assert.match(found.message, /pip install qvr/);
  });

  it("treat blank settings as unset", () => {
    const found = discoverServer(input({ serverPath: "  ", pythonPath: "" }), host({ executables: [`${project}/.venv/bin/qvr-lsp`] }));
    assert.equal(found.kind === "found" && found.launch.source, "workspace venv");
  });
});

describe("setting values", () => {
  it("expand ~ and ${workspaceFolder} and resolve relative paths from the workspace", () => {
    const machine = host({ executables: ["/home/ada/bin/qvr-lsp", `${project}/tools/qvr-lsp`] });
    const home = discoverServer(input({ serverPath: "~/bin/qvr-lsp" }), machine);
    assert.equal(home.kind === "found" && home.launch.command, "/home/ada/bin/qvr-lsp");
    const folder = discoverServer(input({ serverPath: "${workspaceFolder}/tools/qvr-lsp" }), machine);
    assert.equal(folder.kind === "found" && folder.launch.command, `${project}/tools/qvr-lsp`);
    const relative = discoverServer(input({ serverPath: "tools/qvr-lsp" }), machine);
    assert.equal(relative.kind === "found" && relative.launch.command, `${project}/tools/qvr-lsp`);
  });

  it("look bare names up on PATH", () => {
    const found = discoverServer(
      input({ serverPath: "qvr-lsp" }),
      host({ path: "/a:/b", executables: ["/b/qvr-lsp"] }),
    );
    assert.equal(found.kind === "found" && found.launch.command, "/b/qvr-lsp");
  });
});

describe("Windows layouts", () => {
  const winProject = "C:\\work\\project";

  it("find .venv\\Scripts\\qvr-lsp.exe", () => {
    const found = discoverServer(
      { workspaceFolders: [winProject] },
      host({ platform: "win32", executables: [`${winProject}\\.venv\\Scripts\\qvr-lsp.exe`] }),
    );
    assert.equal(found.kind === "found" && found.launch.command, `${winProject}\\.venv\\Scripts\\qvr-lsp.exe`);
  });

  it("find python.exe in .venv\\Scripts and qvr-lsp.exe on a ;-separated PATH", () => {
    const venvPython = `${winProject}\\.venv\\Scripts\\python.exe`;
    const viaVenv = discoverServer(
      { workspaceFolders: [winProject] },
      host({ platform: "win32", executables: [venvPython], withServerModule: [venvPython] }),
    );
    assert.deepEqual(viaVenv.kind === "found" && viaVenv.launch.args, ["-P", "-m", "qvr_lsp"]);
    const viaPath = discoverServer(
      { workspaceFolders: [winProject] },
      host({ platform: "win32", path: "C:\\Python\\Scripts;C:\\tools", executables: ["C:\\tools\\qvr-lsp.exe"] }),
    );
    assert.equal(viaPath.kind === "found" && viaPath.launch.command, "C:\\tools\\qvr-lsp.exe");
  });
});

describe("cost", () => {
  it("does not start Python when an executable setting decides", () => {
    const machine = host({ executables: ["/opt/qvr/qvr-lsp"] });
    discoverServer(input({ serverPath: "/opt/qvr/qvr-lsp" }), machine);
    assert.deepEqual(machine.probes, []);
  });
});
