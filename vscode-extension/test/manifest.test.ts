// The manifest and the code must agree: commands, settings and packaged files; and the
// Marketplace metadata and the packaged .vsix are what a user gets.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { inflateRawSync } from "node:zlib";
import { ClientCommands } from "../src/shared/protocol";
import { extensionRoot } from "./helpers/paths";

const manifest = JSON.parse(readFileSync(path.join(extensionRoot, "package.json"), "utf8"));

/** The width and height of a PNG, from its IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a PNG signature");
  assert.equal(png.toString("ascii", 12, 16), "IHDR");
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** Every file of a zip (a .vsix), read through its central directory. */
function readZip(zip: Buffer): Map<string, Buffer> {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(end >= 0, "a zip's end of central directory");
  const count = zip.readUInt16LE(end + 10);
  let entry = zip.readUInt32LE(end + 16);
  const files = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    assert.equal(zip.readUInt32LE(entry), 0x02014b50, "a central directory entry");
    const method = zip.readUInt16LE(entry + 10);
    const size = zip.readUInt32LE(entry + 20);
    const nameLength = zip.readUInt16LE(entry + 28);
    const skip = nameLength + zip.readUInt16LE(entry + 30) + zip.readUInt16LE(entry + 32);
    const name = zip.toString("utf8", entry + 46, entry + 46 + nameLength);
    const local = zip.readUInt32LE(entry + 42);
    const data = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const stored = zip.subarray(data, data + size);
    files.set(name, method === 8 ? inflateRawSync(stored) : Buffer.from(stored));
    entry += 46 + skip;
  }
  return files;
}

describe("package.json", () => {
  it("contributes exactly the commands the extension registers", () => {
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(contributed, Object.values(ClientCommands).sort());
    const titles = manifest.contributes.commands.map((c: { category: string; title: string }) => `${c.category}: ${c.title}`);
    assert.deepEqual(titles.sort(), [
      "QVR: Calibrate Model (Simulation-Based Calibration)",
      "QVR: Export Program to Stan, NumPyro or PyMC...",
      "QVR: Install Run Support",
      "QVR: Install or Update Server",
      "QVR: Prior Predictive",
      "QVR: Restart Server",
      "QVR: Run Inference",
      "QVR: Server Actions",
      "QVR: Show Diagram",
    ]);
  });

  it("declares every setting the code reads", () => {
    const declared = Object.keys(manifest.contributes.configuration.properties).sort();
    const files = ["src/config.ts", "src/server/installSettings.ts"];
    const source = files.map((file) => readFileSync(path.join(extensionRoot, file), "utf8")).join("\n");
    const read = [...source.matchAll(/(?:\.get|\.update|\binspect)<?[^(]*\(\s*"([^"]+)"/g)].map((m) => `qvr.${m[1]}`).sort();
    assert.deepEqual([...new Set(read)], declared);
  });

  it("has what vsce needs for a clean package", () => {
    for (const field of ["name", "publisher", "version", "license", "repository", "engines", "main", "displayName", "description"]) {
      assert.ok(manifest[field], `package.json has ${field}`);
    }
    assert.equal(manifest.main, "./dist/extension.js");
    assert.deepEqual(manifest.dependencies ?? {}, {}, "everything is bundled");
  });

  it("has the Marketplace and Open VSX metadata", () => {
    assert.equal(manifest.license, "MIT");
    assert.equal(manifest.icon, "media/icon.png");
    assert.deepEqual(pngSize(readFileSync(path.join(extensionRoot, manifest.icon))), { width: 128, height: 128 });
    assert.match(manifest.galleryBanner.color, /^#[0-9a-f]{6}$/i);
    assert.ok(["dark", "light"].includes(manifest.galleryBanner.theme));
    assert.match(manifest.repository.url, /^https:\/\/github\.com\/qvr-lang\/qvr/);
    assert.match(manifest.homepage, /^https:\/\//);
    assert.match(manifest.bugs.url, /^https:\/\/github\.com\/qvr-lang\/qvr\/issues$/);
    // The Marketplace's own categories (vsce rejects others), and keywords for its search.
    const known = ["Programming Languages", "Linters", "Formatters", "Visualization", "Machine Learning", "Data Science", "Notebooks", "Other"];
    assert.ok(manifest.categories.includes("Programming Languages"));
    for (const category of manifest.categories) assert.ok(known.includes(category), category);
    assert.ok(manifest.keywords.length >= 3 && manifest.keywords.length <= 30);
    for (const keyword of ["qvr", "probabilistic programming", "language server"]) assert.ok(manifest.keywords.includes(keyword), keyword);
    // The README is the Marketplace page: how to get the server, with no image vsce would refuse.
    const readme = readFileSync(path.join(extensionRoot, "README.md"), "utf8");
    assert.match(readme, /Install qvr/);
    assert.doesNotMatch(readme, /!\[[^\]]*\]\((?!https:)/, "images only over https");
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

  describe("the packaged .vsix", () => {
    let dir: string;
    let files: Map<string, Buffer>;

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), "qvr-vsix-"));
      // vsce's packing step without its prepublish build, which would rebuild dist/ under the other tests.
      const vsce = createRequire(path.join(extensionRoot, "package.json"))("@vscode/vsce/out/package") as {
        pack(options: { cwd: string; packagePath: string; dependencies: boolean }): Promise<unknown>;
      };
      const vsix = path.join(dir, "qvr.vsix");
      await vsce.pack({ cwd: extensionRoot, packagePath: vsix, dependencies: false });
      files = readZip(readFileSync(vsix));
    });

    after(() => {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it("holds the icon, the bundles and the docs", () => {
      for (const required of [
        "extension/package.json",
        "extension/readme.md",
        "extension/LICENSE.txt",
        "extension/changelog.md",
        "extension/media/icon.png",
        "extension/media/webview.css",
        "extension/dist/extension.js",
        "extension/dist/webview/diagram.js",
        "extension/dist/webview/loss.js",
        "extension/syntaxes/qvr.tmLanguage.json",
      ]) {
        assert.ok(files.has(required), `the .vsix holds ${required}: ${[...files.keys()].join(", ")}`);
      }
      assert.deepEqual(files.get("extension/media/icon.png"), readFileSync(path.join(extensionRoot, "media", "icon.png")));
      assert.match(files.get("extension.vsixmanifest")!.toString("utf8"), /Path="extension\/media\/icon\.png"/);
    });

    it("holds no source, tests, maps or node_modules", () => {
      for (const name of files.keys()) {
        assert.doesNotMatch(
          name,
          /^extension\/(src|browser|test|e2e|out|scripts|node_modules)\/|\.map$|\.ts$|\.vsix$|tsconfig|eslint/,
          `${name} should not ship`,
        );
      }
    });
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
