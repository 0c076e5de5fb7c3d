// The manifest and the code must agree: commands, settings and packaged files.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { ClientCommands } from "../src/shared/protocol";
import { extensionRoot } from "./helpers/paths";

const manifest = JSON.parse(readFileSync(path.join(extensionRoot, "package.json"), "utf8"));

describe("package.json", () => {
  it("contributes exactly the commands the extension registers", () => {
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(contributed, Object.values(ClientCommands).sort());
    const titles = manifest.contributes.commands.map((c: { category: string; title: string }) => `${c.category}: ${c.title}`);
    assert.deepEqual(titles.sort(), ["QVR: Prior Predictive", "QVR: Restart Server", "QVR: Run Inference", "QVR: Show Diagram"]);
  });

  it("declares every setting the code reads", () => {
    const declared = Object.keys(manifest.contributes.configuration.properties).sort();
    const source = ["src/config.ts"].map((file) => readFileSync(path.join(extensionRoot, file), "utf8")).join("\n");
    const read = [...source.matchAll(/\.(?:get|update)<?[^(]*\(\s*"([^"]+)"/g)].map((m) => `qvr.${m[1]}`).sort();
    assert.deepEqual([...new Set(read)], declared);
  });

  it("has what vsce needs for a clean package", () => {
    for (const field of ["name", "publisher", "version", "license", "repository", "engines", "main", "displayName", "description"]) {
      assert.ok(manifest[field], `package.json has ${field}`);
    }
    assert.equal(manifest.main, "./dist/extension.js");
    assert.deepEqual(manifest.dependencies ?? {}, {}, "everything is bundled");
  });

  it("packages the bundles, grammar and docs and no sources, maps or node_modules", () => {
    const vsce = path.join(extensionRoot, "node_modules", ".bin", "vsce");
    const listed = execFileSync(vsce, ["ls", "--no-dependencies"], { cwd: extensionRoot, encoding: "utf8" })
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "");
    for (const required of [
      "package.json",
      "README.md",
      "LICENSE",
      "language-configuration.json",
      "syntaxes/qvr.tmLanguage.json",
      "media/webview.css",
      "dist/extension.js",
      "dist/webview/diagram.js",
      "dist/webview/loss.js",
      "dist/webview/loss.css",
    ]) {
      assert.ok(listed.includes(required), `the package contains ${required}`);
    }
    for (const file of listed) {
      assert.doesNotMatch(file, /^(src|browser|test|out|scripts|node_modules)\/|\.map$|\.ts$/, `${file} should not ship`);
    }
  });

  it("registers the qvr language with its grammar and configuration", () => {
    const [language] = manifest.contributes.languages;
    assert.deepEqual(language.extensions, [".qvr"]);
    const config = JSON.parse(readFileSync(path.join(extensionRoot, language.configuration), "utf8"));
    assert.equal(config.comments.lineComment, "#");
    assert.match("program bidirectional_rnn_lm : Token -> Token", new RegExp(config.indentationRules.increaseIndentPattern));
    assert.doesNotMatch("    sample h <- backbone", new RegExp(config.indentationRules.increaseIndentPattern));
  });
});
