// Builds the prebuilt JupyterLab extension into ../qvr/labextension (package.json's
// jupyterlab.outputDir), which the qvr wheel installs where JupyterLab looks, so users
// need no Node.js. No JupyterLab need be installed: @jupyterlab/builder reads the core's
// shared packages from a folder holding the core's package.json, which
// @jupyterlab/core-meta ships as core.package.json. The build is deterministic (webpack's
// content hashes); `--check` fails, leaving the committed files as they were, when they
// are not what the sources build (`npm test` runs it). Module ids by order of use
// (webpack.config.js) keep it so in any folder.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";

const require = createRequire(import.meta.url);
const root = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const output = path.join(root, JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).jupyterlab.outputDir);

/** Every file under `dir`, by its path relative to `dir`. */
function files(dir) {
  const found = new Map();
  const walk = (at) => {
    let entries;
    try {
      entries = readdirSync(path.join(dir, at), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const rel = path.join(at, entry.name);
      if (entry.isDirectory()) walk(rel);
      else found.set(rel, readFileSync(path.join(dir, rel)));
    }
  };
  walk("");
  return found;
}

const check = process.argv.includes("--check");
const before = files(output);
const core = path.join(root, "lib-core");
mkdirSync(core, { recursive: true });
copyFileSync(require.resolve("@jupyterlab/core-meta/core.package.json"), path.join(core, "package.json"));
const builder = require.resolve("@jupyterlab/builder/lib/build-labextension.js");
execFileSync(process.execPath, [builder, "--core-path", core, root], { stdio: check ? "pipe" : "inherit" });
if (check) {
  const after = files(output);
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter(
    (rel) => !before.has(rel) || !after.has(rel) || !before.get(rel).equals(after.get(rel)),
  );
  if (changed.length > 0) {
    rmSync(output, { recursive: true, force: true });
    for (const [rel, content] of before) {
      mkdirSync(path.dirname(path.join(output, rel)), { recursive: true });
      writeFileSync(path.join(output, rel), content);
    }
    console.error(`qvr/labextension is not what jupyterlab-extension/src builds (${changed.join(", ")}): run npm run build:labextension and commit it`);
    process.exit(1);
  }
  console.log(`qvr/labextension is what the sources build (${after.size} files)`);
}
