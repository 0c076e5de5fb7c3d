import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ServerLaunch } from "../src/server/discovery";
import { commandLine, sourceLabel, statusView } from "../src/server/status";

const managed: ServerLaunch = { command: "/home/ada/.config/Code/User/globalStorage/qvr.qvr/venv/bin/qvr-lsp", args: [], source: "managed" };

describe("the status bar item", () => {
  it("names the running server's version and where it came from", () => {
    const view = statusView({ kind: "running", launch: managed, version: "0.1.0" });
    assert.equal(view.text, "QVR 0.1.0 (managed)");
    assert.equal(view.tooltip[0], "QVR language server 0.1.0");
    assert.ok(view.tooltip.includes(`Command: ${managed.command}`));
    assert.equal(view.severity, undefined);
    assert.equal(statusView({ kind: "running", launch: { ...managed, source: "workspace venv" } }).text, "QVR (workspace .venv)");
  });

  it("labels every source", () => {
    assert.deepEqual(
      (["setting", "workspace venv", "active interpreter", "managed", "PATH"] as const).map(sourceLabel),
      ["setting", "workspace .venv", "active interpreter", "managed", "PATH"],
    );
  });

  it("quotes command parts with spaces", () => {
    assert.equal(
      commandLine({ command: "C:\\Program Files\\Python312\\python.exe", args: ["-P", "-m", "qvr_lsp"], source: "setting" }),
      '"C:\\Program Files\\Python312\\python.exe" -P -m qvr_lsp',
    );
  });

  it("warns when there is no server and shows an install in progress over any state", () => {
    const missing = statusView({ kind: "notFound" });
    assert.equal(missing.text, "$(warning) QVR: no server");
    assert.equal(missing.severity, "warning");
    assert.equal(statusView({ kind: "failed", launch: managed }).severity, "error");
    assert.equal(statusView({ kind: "notFound" }, "installing").text, "$(sync~spin) QVR: installing");
    assert.match(statusView({ kind: "starting", launch: managed }).text, /^\$\(loading~spin\) QVR \(managed\)$/);
  });
});
