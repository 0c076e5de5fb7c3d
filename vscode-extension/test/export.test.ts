// "Export Program": the arguments a lens or the palette gives, the target list, and the
// server's answer checked before anything is opened.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { parseExportArguments, refusalMessage, targetChoices } from "../src/export/arguments";
import { EXPORT_TARGETS, exportTarget, parseExportResult } from "../src/shared/protocol";
import { extensionRoot } from "./helpers/paths";

const manifest = JSON.parse(readFileSync(path.join(extensionRoot, "package.json"), "utf8"));
const range = { start: { line: 7, character: 8 }, end: { line: 7, character: 16 } };

describe("export arguments", () => {
  it("take the lens's object", () => {
    assert.deepEqual(parseExportArguments([{ uri: "file:///m.qvr", program: "eight_schools", target: "numpyro" }]), {
      uri: "file:///m.qvr",
      program: "eight_schools",
      target: "numpyro",
    });
  });

  it("take positional arguments, and a target in any case", () => {
    assert.deepEqual(parseExportArguments(["file:///m.qvr", "m", " Stan "]), { uri: "file:///m.qvr", program: "m", target: "stan" });
    assert.deepEqual(parseExportArguments(["file:///m.qvr"]), { uri: "file:///m.qvr", program: undefined, target: undefined });
  });

  it("leave out what is not a target or a name, so that it is asked for", () => {
    assert.deepEqual(parseExportArguments([{ uri: "file:///m.qvr", program: "", target: "julia" }]), {
      uri: "file:///m.qvr",
      program: undefined,
      target: undefined,
    });
    assert.deepEqual(parseExportArguments([]), {});
    assert.deepEqual(parseExportArguments([42]), {});
    assert.equal(exportTarget(3), undefined);
  });
});

describe("the target list", () => {
  it("offers every target, the setting's first", () => {
    assert.deepEqual(targetChoices(undefined).map((c) => c.target), ["stan", "numpyro", "pymc"]);
    const choices = targetChoices("pymc");
    assert.deepEqual(choices.map((c) => c.label), ["PyMC", "Stan", "NumPyro"]);
    assert.match(choices[0]!.description, /\(qvr\.export\.target\)$/);
    assert.ok(!choices[1]!.description.includes("qvr.export.target"));
  });

  it("agrees with the setting the manifest declares", () => {
    const setting = manifest.contributes.configuration.properties["qvr.export.target"];
    assert.deepEqual(setting.enum, ["", ...EXPORT_TARGETS.map((t) => t.name)]);
    assert.equal(setting.enumDescriptions.length, setting.enum.length);
    assert.equal(setting.default, "");
  });
});

describe("export results", () => {
  it("keep the code, the language and the file name", () => {
    const raw = { ok: true, text: "import numpyro\n", target: "numpyro", language: "python", filename: "m_numpyro.py", program: "m" };
    assert.deepEqual(parseExportResult(raw), raw);
    const bare = parseExportResult({ ok: true, text: "x", target: "stan", program: "m" });
    assert.deepEqual(bare, { ok: true, text: "x", target: "stan", language: "plaintext", filename: "", program: "m" });
  });

  it("keep a refusal's message, its located diagnostics and the programs to choose from", () => {
    const refused = parseExportResult({
      ok: false,
      message: "not exportable to Stan: `classify` is a program of morphisms (line 8)",
      diagnostics: [{ message: "not exportable", code: "QVR701", range }, { message: "unplaced", range: "nowhere" }, "junk"],
    });
    assert.deepEqual(refused, {
      ok: false,
      message: "not exportable to Stan: `classify` is a program of morphisms (line 8)",
      diagnostics: [
        { message: "not exportable", code: "QVR701", range },
        { message: "unplaced", code: "", range: null },
      ],
    });
    const choose = parseExportResult({ ok: false, message: "name one", diagnostics: [], programs: ["a", 3, "b"] });
    assert.deepEqual(choose, { ok: false, message: "name one", diagnostics: [], programs: ["a", "b"] });
  });

  it("refuse anything else", () => {
    for (const raw of [undefined, null, "text", {}, { ok: true, text: 3 }, { ok: false }, { ok: "yes", message: "m" }]) {
      assert.equal(parseExportResult(raw), undefined, JSON.stringify(raw));
    }
  });

  it("say which target refused", () => {
    const message = refusalMessage("pymc", { ok: false, message: "the file has no model program to export", diagnostics: [] });
    assert.equal(message, "Nothing exported to PyMC: the file has no model program to export");
  });
});
