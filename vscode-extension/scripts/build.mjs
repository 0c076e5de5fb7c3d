// Bundles the extension (Node, CommonJS), the two webview scripts (browser IIFEs that
// carry mermaid and Graphviz, so nothing is fetched at run time) and, with --tests,
// the node:test files.
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

const targets = args.has("--tests")
  ? [
      {
        ...common,
        entryPoints: readdirSync(join(root, "test"))
          .filter((name) => name.endsWith(".test.ts"))
          .map((name) => join("test", name)),
        outdir: "out/test",
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

if (args.has("--tests")) rmSync(join(root, "out", "test"), { recursive: true, force: true });
else rmSync(join(root, "dist"), { recursive: true, force: true });

if (args.has("--watch")) {
  for (const options of targets) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(targets.map((options) => esbuild.build(options)));
}
