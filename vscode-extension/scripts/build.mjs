// Bundles the extension (Node, CommonJS), the two webview scripts (browser IIFEs that
// carry mermaid and Graphviz, so nothing is fetched at run time) and, with --tests,
// the node:test files (--e2e: the end-to-end test in a real VS Code).
import * as esbuild from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = new Set(process.argv.slice(2));
const production = args.has("--production");

const common = {
  absWorkingDir: root,
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "warning",
  legalComments: "linked",
};

const testDir = args.has("--e2e") ? "e2e" : "test";
const targets = args.has("--tests") || args.has("--e2e")
  ? [
      {
        ...common,
        entryPoints: readdirSync(join(root, testDir))
          .filter((name) => name.endsWith(".test.ts") || name.endsWith(".e2e.ts"))
          .map((name) => join(testDir, name)),
        outdir: `out/${testDir}`,
        platform: "node",
        format: "cjs",
        target: "node20",
        // Test dependencies load from node_modules as they are.
        packages: "external",
        sourcemap: "inline",
        legalComments: "none",
      },
    ]
  : [
      {
        ...common,
        entryPoints: ["src/extension.ts"],
        outfile: "dist/extension.js",
        platform: "node",
        format: "cjs",
        target: "node18",
        external: ["vscode"],
      },
      {
        ...common,
        entryPoints: { diagram: "browser/diagram/main.ts", loss: "browser/loss/main.ts" },
        outdir: "dist/webview",
        platform: "browser",
        format: "iife",
        target: "chrome114",
      },
    ];

if (args.has("--tests") || args.has("--e2e")) rmSync(join(root, "out", testDir), { recursive: true, force: true });
else rmSync(join(root, "dist"), { recursive: true, force: true });

if (args.has("--watch")) {
  for (const options of targets) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(targets.map((options) => esbuild.build(options)));
}
