// What a workspace may not decide (#46): what "Install qvr" puts into the environment
// every workspace shares, and the folder the server starts in.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { type ServerLaunch, launchDirectory } from "../src/server/discovery";
import { installSourceLabel } from "../src/server/install";
import { INSTALL_SETTINGS, type Inspected, ignoredInstallSettings, readInstallSettings } from "../src/server/installSettings";
import { extensionRoot } from "./helpers/paths";

const manifest = JSON.parse(readFileSync(path.join(extensionRoot, "package.json"), "utf8"));
const properties = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;

/** A configuration's `inspect`, from what each level sets. */
function levels(settings: Record<string, Inspected>): (key: string) => Inspected | undefined {
  return (key) => settings[key];
}

describe("the install settings", () => {
  it("are read from the user's settings", () => {
    const settings = readInstallSettings(
      levels({
        "server.installSource": { globalValue: " /home/ada/wheels/qvr-0.4.0-py3-none-any.whl " },
        "server.installPython": { globalValue: "/usr/bin/python3.12" },
        "server.installConstraints": { globalValue: "/home/ada/cpu.txt" },
        "server.runSupportExtras": { globalValue: ["run", "arviz"] },
      }),
    );
    assert.deepEqual(settings, {
      source: "/home/ada/wheels/qvr-0.4.0-py3-none-any.whl",
      python: "/usr/bin/python3.12",
      constraints: "/home/ada/cpu.txt",
      runSupportExtras: ["run", "arviz"],
    });
  });

  it("ignore what a workspace or a folder sets", () => {
    const planted = {
      workspaceValue: "git+https://example.invalid/evil.git",
      workspaceFolderValue: "./evil",
    };
    const inspect = levels({
      "server.installSource": planted,
      "server.installPython": { workspaceValue: "./evil/python" },
      "server.installConstraints": { workspaceFolderValue: "evil.txt" },
      "server.runSupportExtras": { workspaceValue: ["evil"] },
    });
    assert.deepEqual(readInstallSettings(inspect), { source: "qvr", python: undefined, constraints: undefined, runSupportExtras: ["run"] });
    assert.deepEqual(ignoredInstallSettings(inspect), INSTALL_SETTINGS.map((key) => `qvr.${key}`));
  });

  it("take the user's value over a workspace's, and the defaults for values of the wrong type", () => {
    const inspect = levels({
      "server.installSource": { globalValue: "qvr==0.4.0", workspaceValue: "evil" },
      "server.installPython": { globalValue: 3 },
      "server.runSupportExtras": { globalValue: "run" },
    });
    assert.deepEqual(readInstallSettings(inspect), { source: "qvr==0.4.0", python: undefined, constraints: undefined, runSupportExtras: ["run"] });
    assert.deepEqual(ignoredInstallSettings(inspect), ["qvr.server.installSource"]);
  });

  it("cannot be set in a workspace's settings (machine scope, in the manifest)", () => {
    for (const key of INSTALL_SETTINGS) {
      assert.ok(`qvr.${key}` in properties, `qvr.${key} is declared`);
      assert.ok(["machine", "application"].includes(properties[`qvr.${key}`]!.scope ?? ""), `qvr.${key} is user-level only`);
    }
    const declared = Object.keys(properties).filter((key) => /^qvr\.server\.(install|runSupport)/.test(key));
    assert.deepEqual(declared.sort(), INSTALL_SETTINGS.map((key) => `qvr.${key}`).sort(), "every install setting is read by installSettings.ts");
  });
});

describe("the install notification", () => {
  const posix = { platform: "linux", baseFolder: "/work/project", homeDir: "/home/ada" };

  it("names the source it installs from", () => {
    assert.equal(installSourceLabel("qvr", posix), "qvr from the package index");
    assert.equal(installSourceLabel("  ", posix), "qvr from the package index");
    assert.equal(installSourceLabel("qvr==0.4.0", posix), "qvr==0.4.0 from the package index");
    assert.equal(installSourceLabel("dist/qvr-0.4.0-py3-none-any.whl", posix), "/work/project/dist/qvr-0.4.0-py3-none-any.whl");
    assert.equal(installSourceLabel("~/src/qvr", posix), "/home/ada/src/qvr");
    assert.equal(installSourceLabel("https://example.org/qvr-0.4.0.tar.gz", posix), "https://example.org/qvr-0.4.0.tar.gz");
    assert.equal(
      installSourceLabel("dist\\qvr.whl", { platform: "win32", baseFolder: "C:\\work\\project", homeDir: "C:\\Users\\ada" }),
      "C:\\work\\project\\dist\\qvr.whl",
    );
  });
});

describe("the server's working directory", () => {
  const launch = (command: string, args: string[], source: ServerLaunch["source"]): ServerLaunch => ({ command, args, source });

  it("is the folder of the interpreter or script it starts, never the workspace", () => {
    assert.equal(launchDirectory(launch("/home/ada/.venvs/qvr/bin/python", ["-P", "-m", "qvr_lsp"], "active interpreter"), "linux"), "/home/ada/.venvs/qvr/bin");
    assert.equal(launchDirectory(launch("/usr/local/bin/qvr-lsp", [], "PATH"), "linux"), "/usr/local/bin");
    assert.equal(launchDirectory(launch("/opt/py/bin/python3", ["-P", "-m", "qvr_lsp"], "setting"), "linux"), "/opt/py/bin", "qvr.server.pythonPath");
    assert.equal(
      launchDirectory(launch("C:\\Users\\ada\\venv\\Scripts\\qvr-lsp.exe", [], "managed"), "win32"),
      "C:\\Users\\ada\\venv\\Scripts",
    );
  });

  it("is left to VS Code for a qvr.server.path command (a wrapper may expect the workspace)", () => {
    assert.equal(launchDirectory(launch("/home/ada/bin/my-qvr-lsp", [], "setting"), "linux"), undefined);
  });
});
