import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseCalibrationArguments, qvrCommand, sbcArguments } from "../src/inference/calibration";

describe("the Calibrate lens", () => {
  it("takes the lens's {uri, program} and the palette's [uri, program]", () => {
    assert.deepEqual(parseCalibrationArguments([{ uri: "file:///m.qvr", program: "schools" }]), { uri: "file:///m.qvr", program: "schools" });
    assert.deepEqual(parseCalibrationArguments(["file:///m.qvr"]), { uri: "file:///m.qvr" });
    assert.deepEqual(parseCalibrationArguments([{ uri: 3 }]), {});
    assert.deepEqual(parseCalibrationArguments([]), {});
  });

  it("runs qvr from the server's environment", () => {
    const none = () => false;
    // python -P -m qvr_lsp: the same interpreter, -P kept
    const module = { command: "/env/bin/python", args: ["-P", "-m", "qvr_lsp"], source: "setting" as const };
    assert.deepEqual(qvrCommand(module, none, "linux"), { command: "/env/bin/python", args: ["-P", "-m", "qvr_cli"] });
    // a qvr-lsp executable: the qvr beside it, where there is one
    const exe = { command: "/env/bin/qvr-lsp", args: [], source: "PATH" as const };
    assert.deepEqual(qvrCommand(exe, (f) => f === "/env/bin/qvr", "linux"), { command: "/env/bin/qvr", args: [] });
    const win = { command: "C:\\env\\Scripts\\qvr-lsp.exe", args: [], source: "PATH" as const };
    assert.deepEqual(qvrCommand(win, (f) => f === "C:\\env\\Scripts\\qvr.exe", "win32"), { command: "C:\\env\\Scripts\\qvr.exe", args: [] });
    // anything else (a custom qvr.server.path, no server yet): qvr on PATH
    assert.deepEqual(qvrCommand(exe, none, "linux"), { command: "qvr", args: [] });
    assert.deepEqual(qvrCommand({ command: "/opt/my-server", args: ["--flag"], source: "setting" }, none, "linux"), { command: "qvr", args: [] });
    assert.deepEqual(qvrCommand(undefined, none, "linux"), { command: "qvr", args: [] });
  });

  it("names the file, the program and the runs' data file as arguments of their own", () => {
    assert.deepEqual(sbcArguments("/w/a b;rm -rf ~.qvr", "schools", "data/eight schools.json"), [
      "sbc",
      "/w/a b;rm -rf ~.qvr",
      "--program",
      "schools",
      "--data",
      "data/eight schools.json",
    ]);
    assert.deepEqual(sbcArguments("/w/m.qvr", undefined, ""), ["sbc", "/w/m.qvr"]);
  });
});
