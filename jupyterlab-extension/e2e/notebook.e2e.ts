/**
 * `%%qvr` cells in a real JupyterLab, driven by headless Chromium as a user works: the
 * notebook opens with the QVR201 example in a `%%qvr` cell, and the cell gets qvr's
 * squiggle, its diagnostic's tooltip, a hover with types (Control held, jupyterlab-lsp's
 * default), completion on Tab, and, run, its diagram. Every wait is for something to
 * appear on screen, never a fixed delay.
 */
import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { type Browser, chromium, type Locator, type Page } from "playwright-core";

import { JupyterLab } from "./jupyterLab";

const extensionRoot = path.join(__dirname, "..", "..");
const repo = path.join(extensionRoot, "..");
const examples = path.join(repo, "examples");
const PYTHON = process.env.QVR_PYTHON ?? path.join(repo, ".venv", "bin", "python");
const CHROMIUM = process.env.QVR_CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = process.env.QVR_E2E_SHOTS ?? path.join(extensionRoot, "out", "e2e-screenshots");
/** The first check starts the language server (a Python process importing qvr's checker). */
const FIRST_CHECK_MS = 120_000;
/** Running the cells starts a kernel that imports qvr and draws with Graphviz. */
const RUN_MS = 180_000;
const STEP_MS = 30_000;

const NOTEBOOK = "qvr_cells.ipynb";
const PYTHON_CELL = "import numpy as np\nx = np.zeros(3)\n";

function notebookJson(cells: string[]): string {
  return JSON.stringify({
    cells: cells.map((text, i) => ({
      cell_type: "code",
      execution_count: null,
      id: `cell-${i}`,
      metadata: {},
      outputs: [],
      source: text.split(/(?<=\n)/),
    })),
    metadata: {
      kernelspec: { display_name: "Python 3 (ipykernel)", language: "python", name: "python3" },
      language_info: { name: "python" },
    },
    nbformat: 4,
    nbformat_minor: 5,
  });
}

describe("%%qvr cells in a real JupyterLab", { timeout: 600_000 }, () => {
  let lab: JupyterLab;
  let browser: Browser;
  let page: Page;
  let shots = 0;
  const mismatch = readFileSync(path.join(examples, "errors", "QVR201_dimension_mismatch.qvr"), "utf8");
  const schools = readFileSync(path.join(examples, "models", "eight_schools_noncentered.qvr"), "utf8");
  const cells = () => page.locator(".jp-Notebook .jp-Cell");
  const qvrCell = () => cells().nth(1);
  const line = (cell: Locator, text: string) => cell.locator(".cm-line", { hasText: text }).first();

  async function screenshot(name: string): Promise<void> {
    shots += 1;
    await page.screenshot({ path: path.join(SHOTS, `${String(shots).padStart(2, "0")}-${name}.png`) });
  }

  /** The middle of `word` in a line of the editor, on screen. */
  async function wordCentre(lineOf: Locator, word: string): Promise<{ x: number; y: number }> {
    const centre = await lineOf.evaluate((element, wanted) => {
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        const at = (node.textContent ?? "").indexOf(wanted);
        if (at < 0) continue;
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + wanted.length);
        const box = range.getBoundingClientRect();
        return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
      }
      return null;
    }, word);
    assert.ok(centre !== null, `"${word}" is on the line`);
    return centre;
  }

  before(async () => {
    lab = new JupyterLab({
      python: PYTHON,
      labextension: path.join(repo, "qvr", "labextension"),
      files: { [NOTEBOOK]: notebookJson(["%load_ext qvr", `%%qvr\n${mismatch}`, PYTHON_CELL, `%%qvr\n${schools}`]) },
      settings: {
        // JupyterLab's language services are off until the user turns them on (README).
        "@jupyterlab/lsp-extension:plugin": { activate: "on" },
        // no "get news?" prompt over the notebook
        "@jupyterlab/apputils-extension:notification": { fetchNews: "false" },
      },
    });
    await lab.start();
    assert.deepEqual(await lab.languageServer(), { listed: true, status: "not_started" }, "jupyter-lsp finds qvr-lsp by its entry point");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(lab.url(`/lab/tree/${NOTEBOOK}`));
    await cells().nth(3).waitFor({ timeout: STEP_MS * 2 });
  });

  after(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it("squiggles the QVR201 of a %%qvr cell as the notebook opens, and says why on hover", async () => {
    const squiggle = qvrCell().locator(".cm-lintRange-error");
    await squiggle.first().waitFor({ state: "attached", timeout: FIRST_CHECK_MS });
    await screenshot("qvr-cell-squiggle");
    assert.equal(await squiggle.count(), 1);
    assert.equal(await squiggle.first().innerText(), "combine");
    const lineNumber = await squiggle.first().evaluate((span) => {
      const lineOf = span.closest(".cm-line");
      return lineOf === null ? -1 : [...(lineOf.parentElement?.children ?? [])].filter((l) => l.classList.contains("cm-line")).indexOf(lineOf) + 1;
    });
    assert.equal(lineNumber, 18, "the squiggle is on the cell's 18th line, `let backbone`");
    await squiggle.first().hover();
    const tooltip = page.locator(".cm-tooltip-hover", { hasText: "cannot compose" });
    await tooltip.waitFor({ timeout: STEP_MS });
    assert.match(await tooltip.innerText(), /cannot compose: fan\(forward_path, backward_path\) produces FwdHidden \* BwdHidden \(64 \+ 64 = 128\) but combine expects Combined \(96\)/);
    await screenshot("qvr-cell-diagnostic-tooltip");
    // The server checked every cell (the squiggle above): neither the Python cell nor the
    // well-typed eight schools cell gets one.
    assert.equal(await cells().nth(2).locator(".cm-lintRange").count(), 0);
    assert.equal(await cells().nth(3).locator(".cm-lintRange-error").count(), 0);
    assert.equal((await lab.languageServer()).status, "started");
  });

  it("hovers a name with its type, on the cell's own line numbers", async () => {
    await page.mouse.move(0, 0);
    const at = await wordCentre(line(qvrCell(), "let forward_path"), "forward_path");
    await page.keyboard.down("Control");
    try {
      await page.mouse.move(at.x, at.y);
      // jupyterlab-lsp opens the tooltip before it renders the markdown into it, so wait
      // for the rendered text, not the empty box.
      const hover = page.locator(".lsp-hover", { hasText: "let forward_path" });
      await hover.waitFor({ timeout: STEP_MS });
      const text = await hover.innerText();
      assert.match(text, /let forward_path : \[Token\] -> FwdHidden/);
      assert.match(text, /output: FwdHidden = R\^64/);
      // `let forward_path` is line 16 of the cell, whose first line is `%%qvr`
      assert.match(text, /declared on line 16\b/);
      await screenshot("qvr-cell-type-hover");
    } finally {
      await page.keyboard.up("Control");
    }
    await page.mouse.move(0, 0);
  });

  it("completes the cell's names on Tab", async () => {
    await line(qvrCell(), "let backbone").click();
    await page.keyboard.press("End");
    await page.keyboard.press("Enter");
    await page.keyboard.type("let again = tok_em");
    await page.keyboard.press("Tab");
    // JupyterLab lists the matches, or puts in the only one at once; either way the name
    // is qvr's (the kernel knows no Python name `tok_em...`).
    // Wait for the list's text, not its box: the list and its documentation panel fill in
    // after the completer opens.
    const completer = page.locator(".jp-Completer");
    const completed = line(qvrCell(), "let again = tok_embed");
    await completer.filter({ hasText: "tok_embed" }).or(completed).first().waitFor({ timeout: STEP_MS });
    await screenshot("qvr-cell-completion");
    if (await completer.isVisible()) {
      await completer.filter({ hasText: "morphism tok_embed : Token -> Embedded" }).waitFor({ timeout: STEP_MS });
      const offered = await completer.innerText();
      assert.match(offered, /tok_embed/);
      assert.match(offered, /morphism tok_embed : Token -> Embedded/);
      await page.keyboard.press("Escape");
      await completer.waitFor({ state: "hidden", timeout: STEP_MS });
    } else {
      assert.equal((await completed.innerText()).trim(), "let again = tok_embed");
      await page.keyboard.press("Control+z"); // the completion, then the typing below
    }
    await page.keyboard.press("Control+z");
    await line(qvrCell(), "let again").waitFor({ state: "detached", timeout: STEP_MS });
  });

  it("runs the cells: the magic reports the QVR201 and draws the eight schools", async () => {
    await page.keyboard.press("Escape"); // command mode
    await page.locator(".lm-MenuBar-item", { hasText: /^Run$/ }).click();
    await page.locator(".lm-Menu-item", { hasText: "Run All Cells" }).first().click();
    const diagram = cells().nth(3).locator(".jp-OutputArea-output.jp-RenderedSVG, .jp-OutputArea-output .jp-RenderedSVG");
    await diagram.first().waitFor({ timeout: RUN_MS });
    await diagram.first().scrollIntoViewIfNeeded();
    await screenshot("qvr-cell-diagram");
    assert.match(await diagram.first().innerHTML(), /<svg|image\/svg\+xml/);
    // The magic's report names the line the squiggle is on: the cell's 18th, `%%qvr` first.
    const report = await qvrCell().locator(".jp-OutputArea").innerText();
    assert.match(report, /cell:18:52: error\[QVR201\]: cannot compose/);
    assert.match(report, /18 \| let backbone = fan\(forward_path, backward_path\) >> combine/);
  });
});
