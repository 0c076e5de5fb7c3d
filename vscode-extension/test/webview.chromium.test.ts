// Loads the real webview pages and bundles into headless Chromium, under the same
// Content-Security-Policy, and checks that diagrams and the loss chart render.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { type Browser, type Page, chromium } from "playwright-core";
import type { ToDiagramView, ToLossView } from "../src/shared/messages";
import { parseFitView } from "../src/shared/fitView";
import { type AttentionMap, type DiagramResult, type FitView, ServerCommands, parseDiagramResult } from "../src/shared/protocol";
import { type WebviewAssets, createNonce } from "../src/webview/html";
import { renderDiagramPage, renderLossPage } from "../src/webview/pages";
import { bidirectionalDot, bidirectionalMermaid } from "./helpers/handwrittenDiagrams";
import { comparisonFixture, nutsFitView, priorFitView } from "./helpers/fitViews";
import { eightSchoolsLive, eightSchoolsPosterior, nutsProgress, sviPosterior } from "./helpers/liveDraws";
import { LspServer, fileUri, serverUnavailableReason } from "./helpers/lspServer";
import { examplesDir, extensionRoot } from "./helpers/paths";

const CHROMIUM = process.env.QVR_CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];
const screenshots = path.join(extensionRoot, "out", "screenshots");

const skip = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM}`;
if (skip !== undefined) console.log(`# skipping the webview tests: ${skip}`);

/** The real server's diagrams when it can run here; otherwise equivalent hand-written ones. */
async function bidirectionalDiagrams(): Promise<{ mermaid: DiagramResult; dot: DiagramResult; source: string }> {
  const unavailable = serverUnavailableReason();
  if (unavailable !== undefined) {
    console.log(`# drawing hand-written diagrams: ${unavailable}`);
    return { mermaid: bidirectionalMermaid, dot: bidirectionalDot, source: "hand-written" };
  }
  const server = new LspServer();
  try {
    return await serverDiagrams(server);
  } catch (error) {
    console.log(`# drawing hand-written diagrams: the server could not draw (${String(error).split("\n")[0]})`);
    return { mermaid: bidirectionalMermaid, dot: bidirectionalDot, source: "hand-written" };
  } finally {
    await server.shutdown();
  }
}

async function serverDiagrams(server: LspServer): Promise<{ mermaid: DiagramResult; dot: DiagramResult; source: string }> {
  await server.initialize(false);
  const file = path.join(examplesDir, "bidirectional_rnn_lm.qvr");
  const uri = fileUri(file);
  await server.open(uri, readFileSync(file, "utf8"));
  await server.diagnostics(uri, () => true);
  const get = async (format: string): Promise<DiagramResult> => {
    const result = parseDiagramResult(await server.executeCommand(ServerCommands.diagram, { uri, format }));
    assert.ok(result, `the server drew ${format}`);
    return result;
  };
  return { mermaid: await get("mermaid"), dot: await get("dot"), source: "the language server" };
}

/** Serves the extension folder plus the generated page, like a webview serves its resources. */
class PageServer {
  private readonly server: Server;
  private page = "";
  origin = "";

  constructor() {
    this.server = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      if (url.pathname === "/") {
        response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        response.end(this.page);
        return;
      }
      if (url.pathname === "/test-shim.js") {
        response.writeHead(200, { "content-type": "text/javascript" });
        response.end(SHIM);
        return;
      }
      const file = path.join(extensionRoot, path.normalize(url.pathname));
      const allowed = ["/dist/webview/", "/media/"].some((prefix) => url.pathname.startsWith(prefix));
      if (!allowed || !file.startsWith(extensionRoot) || !existsSync(file)) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": file.endsWith(".css") ? "text/css" : "text/javascript" });
      response.end(readFileSync(file));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  assets(bundle: string): WebviewAssets {
    const assets: WebviewAssets = {
      cspSource: this.origin,
      nonce: createNonce(),
      scriptUri: `${this.origin}/dist/webview/${bundle}`,
      styleUri: `${this.origin}/media/webview.css`,
    };
    // The stylesheet esbuild emits beside a bundle that imports CSS (the run view's uPlot).
    const styles = bundle.replace(/\.js$/, ".css");
    if (existsSync(path.join(extensionRoot, "dist", "webview", styles))) assets.bundleStyleUri = `${this.origin}/dist/webview/${styles}`;
    return assets;
  }

  /** The page exactly as generated, with the acquireVsCodeApi shim loaded first under the same nonce. */
  serve(html: string, nonce: string): void {
    const shim = `<script nonce="${nonce}" src="${this.origin}/test-shim.js"></script>\n`;
    const index = html.indexOf("<script ");
    assert.ok(index > 0);
    this.page = html.slice(0, index) + shim + html.slice(index);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

// Stands in for VS Code: records what the page posts and every CSP violation.
const SHIM = `
window.__posted = [];
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || "") + " at " + e.sourceFile.split("/").pop() + ":" + e.lineNumber + ":" + e.columnNumber);
});
window.acquireVsCodeApi = () => ({
  postMessage: (message) => window.__posted.push(message),
  getState: () => undefined,
  setState: () => undefined,
});
`;

async function posted(page: Page): Promise<{ type: string; [key: string]: unknown }[]> {
  return page.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted);
}

async function violations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
}

async function send(page: Page, message: ToDiagramView | ToLossView): Promise<void> {
  await page.evaluate((m) => window.postMessage(m, "*"), message);
}

describe("webviews in headless Chromium", { skip, timeout: 240_000 }, () => {
  let browser: Browser;
  let pages: PageServer;
  let diagrams: Awaited<ReturnType<typeof bidirectionalDiagrams>>;

  before(async () => {
    diagrams = await bidirectionalDiagrams();
    pages = new PageServer();
    await pages.listen();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
    mkdirSync(screenshots, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await pages?.close();
  });

  async function openDiagramPage(theme: "vscode-light" | "vscode-dark"): Promise<Page> {
    const assets = pages.assets("diagram.js");
    pages.serve(renderDiagramPage(assets, "mermaid", "bidirectional_rnn_lm.qvr"), assets.nonce);
    const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("requestfailed", (request) => errors.push(`request failed: ${request.url()}`));
    page.on("request", (request) => {
      if (!request.url().startsWith(pages.origin)) errors.push(`remote request: ${request.url()}`);
    });
    await page.goto(`${pages.origin}/`);
    await page.evaluate((cls) => {
      document.body.classList.add(cls);
      // The colours VS Code's dark theme would provide.
      if (cls === "vscode-dark") {
        document.body.style.setProperty("--vscode-editor-background", "#1e1e1e");
        document.body.style.setProperty("--vscode-foreground", "#cccccc");
      }
    }, theme);
    await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
    (page as Page & { qvrErrors?: string[] }).qvrErrors = errors;
    return page;
  }

  async function drawAndRead(page: Page, diagram: DiagramResult, format: "mermaid" | "dot"): Promise<string> {
    const previous = await page.evaluate(() => document.body.dataset.rendered ?? "0");
    await send(page, { type: "diagram", uri: "file:///bidirectional_rnn_lm.qvr", format, text: diagram.text, nodes: diagram.nodes });
    await page.waitForFunction((p) => (document.body.dataset.rendered ?? "0") !== p, previous, { timeout: 60_000 });
    const status = await page.textContent("#status");
    assert.doesNotMatch(status ?? "", /Could not draw/, status ?? "");
    return (await page.textContent("#diagram svg")) ?? "";
  }

  it(`renders the bidirectional model's Mermaid diagram with its labels, under the CSP`, async () => {
    const page = await openDiagramPage("vscode-light");
    const text = await drawAndRead(page, diagrams.mermaid, "mermaid");
    for (const label of ["tok_embed", "combine", "lm_head"]) assert.match(text, new RegExp(label), `${label} is drawn (${diagrams.source})`);
    assert.ok((await page.locator("#diagram svg g.node").count()) >= diagrams.mermaid.nodes.length);
    await page.screenshot({ path: path.join(screenshots, "diagram-mermaid.png"), fullPage: true });
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("reveals a node's source range when the node is clicked", async () => {
    const page = await openDiagramPage("vscode-light");
    await drawAndRead(page, diagrams.mermaid, "mermaid");
    const linked = page.locator("#diagram svg g.node.qvr-linked");
    assert.ok((await linked.count()) >= diagrams.mermaid.nodes.filter((n) => n.range !== null).length, "every node with a range is clickable");
    const combine = diagrams.mermaid.nodes.find((n) => n.id === "combine" || n.label.startsWith("combine"));
    assert.ok(combine?.range);
    await linked.filter({ hasText: combine.label.split("\n")[0]! }).first().click();
    const reveal = (await posted(page)).filter((m) => m.type === "reveal");
    assert.deepEqual(reveal, [{ type: "reveal", range: combine.range }]);
    await page.close();
  });

  it("switches to Graphviz, rendered by the bundled WebAssembly build", async () => {
    const page = await openDiagramPage("vscode-dark");
    await drawAndRead(page, diagrams.mermaid, "mermaid");
    await page.screenshot({ path: path.join(screenshots, "diagram-mermaid-dark.png"), fullPage: true });
    await page.selectOption("#format", "dot");
    assert.deepEqual((await posted(page)).filter((m) => m.type === "format"), [{ type: "format", format: "dot" }]);
    const text = await drawAndRead(page, diagrams.dot, "dot");
    for (const label of ["tok_embed", "combine", "lm_head"]) assert.match(text, new RegExp(label));
    assert.equal(await page.locator("#diagram svg.qvr-graphviz").count(), 1);
    assert.ok((await page.locator("#diagram svg g.node.qvr-linked").count()) >= 3, "Graphviz nodes are clickable too");
    await page.screenshot({ path: path.join(screenshots, "diagram-graphviz-dark.png"), fullPage: true });
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("fits the drawing to the panel, zooms and pans, and draws in the theme's colours", async () => {
    const page = await openDiagramPage("vscode-dark");
    await drawAndRead(page, diagrams.mermaid, "mermaid");
    const fitted = await page.evaluate(() => {
      const main = document.getElementById("diagram")!.getBoundingClientRect();
      const drawing = document.querySelector("#diagram svg > g")!.getBoundingClientRect();
      return { width: main.width, height: main.height, drawingWidth: drawing.width, drawingHeight: drawing.height };
    });
    // The panel below the toolbar is the drawing's, and the drawing fills it in one direction.
    assert.ok(fitted.height > 500, `the diagram area takes the panel's height (${fitted.height})`);
    assert.ok(
      fitted.drawingWidth > 0.85 * fitted.width || fitted.drawingHeight > 0.85 * fitted.height,
      `fitted: ${JSON.stringify(fitted)}`,
    );
    assert.equal(await page.textContent("#zoom-level"), "100%");
    const viewBox = async (): Promise<string | null> => page.getAttribute("#diagram svg", "viewBox");
    const fit = await viewBox();
    await page.click("#zoom-in");
    assert.equal(await page.textContent("#zoom-level"), "140%");
    const box = await page.locator("#diagram").boundingBox();
    assert.ok(box);
    await page.mouse.move(box.x + 200, box.y + 200);
    await page.mouse.down();
    await page.mouse.move(box.x + 260, box.y + 230, { steps: 4 });
    await page.mouse.up();
    const panned = await viewBox();
    assert.notEqual(panned, fit);
    assert.deepEqual((await posted(page)).filter((m) => m.type === "reveal"), [], "a drag is not a click");
    await page.mouse.wheel(0, 200);
    assert.equal(await page.textContent("#zoom-level"), "122%");
    await page.click("#zoom-fit");
    assert.equal(await viewBox(), fit);
    // The theme's colours, not the renderer's: text in the foreground colour.
    const colours = await page.evaluate(() => {
      const label = document.querySelector("#diagram svg g.node.qvr-linked .nodeLabel, #diagram svg g.node.qvr-linked text")!;
      const sample = document.querySelector("#diagram svg g.node.sample circle")!;
      return { label: getComputedStyle(label).color, sample: getComputedStyle(sample).fill };
    });
    assert.equal(colours.label, "rgb(204, 204, 204)");
    assert.notEqual(colours.sample, "rgb(255, 255, 255)", "no light fill left on a dark theme");
    await page.close();
  });

  it("marks nodes with errors and shows their message over the node", async () => {
    const page = await openDiagramPage("vscode-light");
    const message = "QVR201: cannot compose: fan(forward_path, backward_path) produces 128 but combine expects 96";
    const nodes = diagrams.dot.nodes.map((n) => (n.label.split("\n")[0] === "combine" ? { ...n, errors: [message] } : n));
    await drawAndRead(page, { ...diagrams.dot, nodes }, "dot");
    const marked = page.locator("#diagram svg g.node.qvr-error");
    assert.equal(await marked.count(), 1);
    assert.match((await marked.textContent()) ?? "", /combine/);
    assert.match((await page.textContent("#status")) ?? "", /1 node has errors/);
    await marked.hover();
    const tooltip = page.locator("#tooltip");
    await tooltip.waitFor({ state: "visible" });
    assert.equal(await tooltip.textContent(), message);
    await page.screenshot({ path: path.join(screenshots, "diagram-error-mark.png"), fullPage: true });
    await page.mouse.move(1, 1);
    await tooltip.waitFor({ state: "hidden" });
    await page.close();
  });

  it("keeps the last drawing and shows the error when a diagram does not parse", async () => {
    const page = await openDiagramPage("vscode-light");
    await drawAndRead(page, diagrams.mermaid, "mermaid");
    await send(page, { type: "diagram", uri: "file:///x.qvr", format: "mermaid", text: "flowchart LR\n  a -->", nodes: [] });
    await page.waitForFunction(() => /Could not draw/.test(document.getElementById("status")?.textContent ?? ""));
    assert.match((await page.textContent("#diagram svg")) ?? "", /tok_embed/);
    assert.ok((await posted(page)).some((m) => m.type === "renderError"));
    await page.close();
  });

  async function openRunPage(title: string, viewport = { width: 800, height: 500 }): Promise<Page> {
    const assets = pages.assets("loss.js");
    pages.serve(renderLossPage(assets, title), assets.nonce);
    const page = await browser.newPage({ viewport });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    (page as Page & { qvrErrors?: string[] }).qvrErrors = errors;
    await page.goto(`${pages.origin}/`);
    await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
    return page;
  }

  it("draws the loss curve from streamed progress", async () => {
    const page = await openRunPage("QVR SVI: bidirectional_rnn_lm");
    await send(page, { type: "start", title: "QVR SVI: bidirectional_rnn_lm", method: "svi", total: 40 });
    const losses = Array.from({ length: 21 }, (_, i): [number, number] => [i * 2, 6 * Math.exp(-i / 6) + 1]);
    for (let i = 0; i < losses.length; i += 5) {
      const progress = { uri: "file:///m.qvr", runId: "r1", method: "svi", total: 40, points: losses.slice(i, i + 5), done: false };
      await send(page, { type: "progress", progress });
    }
    await send(page, { type: "finished", summary: '{\n  "final_loss": 1.2\n}', posterior: null });
    const d = await page.getAttribute("#chart svg path.loss", "d");
    assert.equal(d?.split(" ").length, losses.length);
    assert.match((await page.textContent("#status")) ?? "", /step 40\/40/);
    assert.match((await page.textContent("#summary")) ?? "", /final_loss/);
    await page.screenshot({ path: path.join(screenshots, "loss.png"), fullPage: true });
    assert.deepEqual(await violations(page), []);
    await page.close();
  });

  it("draws a NUTS run's trace plots per chain and its table with warnings, updating as draws arrive", async () => {
    const page = await openRunPage("QVR NUTS: eight_schools", { width: 1000, height: 900 });
    await send(page, { type: "start", title: "QVR NUTS: eight_schools", method: "nuts", total: 4000 });
    // Early draws: traces, but too few draws for a summary yet.
    await send(page, { type: "progress", progress: nutsProgress({ ...eightSchoolsLive([12, 10, 0, 0]), posterior: null }) });
    assert.equal(await page.textContent("#draws"), "draws per chain: 12, 10, 0, 0 (warmup 500)");
    assert.match((await page.textContent("#posterior")) ?? "", /once the chains have enough draws/);
    assert.equal(await page.locator("#traces svg.trace").count(), 8);
    assert.equal(await page.locator("#traces svg.trace polyline[points='']").count(), 16, "chains 3 and 4 have no draws yet");
    // More draws: every chain drawn, and the table of the draws so far.
    const live = eightSchoolsLive([120, 118, 96, 100]);
    live.traces[7]!.label = "<img src=x onerror=alert(1)>";
    live.posterior!.warnings[0]!.remedy = "run <b>longer</b> chains";
    await send(page, { type: "progress", progress: nutsProgress(live) });
    assert.equal(await page.textContent("#draws"), "draws per chain: 120, 118, 96, 100 (warmup 500)");
    const plots = await page.evaluate(() =>
      Array.from(document.querySelectorAll("#traces svg.trace"), (svg) => ({
        label: svg.querySelector(".trace-title")?.textContent ?? "",
        lines: Array.from(svg.querySelectorAll("polyline"), (line) => ({
          points: (line.getAttribute("points") ?? "").split(" ").length,
          stroke: getComputedStyle(line).stroke,
        })),
        ticks: svg.querySelectorAll("text.tick").length,
      })),
    );
    assert.deepEqual(
      plots.map((p) => p.label),
      ["mu", "tau", "theta_raw[0]", "theta_raw[1]", "theta_raw[2]", "theta_raw[3]", "theta_raw[4]", "<img src=x onerror=alert(1)>"],
    );
    for (const plot of plots) {
      assert.deepEqual(plot.lines.map((l) => l.points), [120, 118, 96, 100], plot.label);
      assert.equal(new Set(plot.lines.map((l) => l.stroke)).size, 4, `a colour per chain in ${plot.label}: ${plot.lines.map((l) => l.stroke)}`);
      assert.ok(plot.ticks >= 4, "axis ticks");
    }
    const legend = await page.evaluate(() =>
      Array.from(document.querySelectorAll("#legend li"), (li) => [li.textContent, getComputedStyle(li.querySelector("line")!).stroke]),
    );
    assert.deepEqual(legend.map(([text]) => text), ["chain 1", "chain 2", "chain 3", "chain 4"]);
    assert.deepEqual(legend.map(([, stroke]) => stroke), plots[0]!.lines.map((l) => l.stroke), "the legend's colours are the lines'");
    const header = await page.locator("#posterior table.posterior thead th").allTextContents();
    assert.deepEqual(header, ["", "mean", "sd", "5%", "50%", "95%", "ess_bulk", "ess_tail", "r_hat"]);
    const rows = page.locator("#posterior table.posterior tbody tr");
    assert.equal(await rows.count(), 10);
    assert.deepEqual(await rows.first().locator("th, td").allTextContents(), ["mu", "4.38", "1.5", "1.98", "4.38", "6.78", "61", "76", "1.042"]);
    const warning = page.locator("#posterior li.warning");
    assert.equal(await warning.count(), 1);
    assert.ok(await warning.isVisible());
    assert.match((await warning.textContent()) ?? "", /⚠warning: R-hat above 1\.01.*remedy: run <b>longer<\/b> chains/);
    assert.equal(await page.locator("img, #posterior b").count(), 0, "server text is shown as text");
    assert.equal(await page.locator("#posterior .verdict").count(), 0);
    assert.match((await page.textContent("#posterior .sampler")) ?? "", /divergences 0 .* E-BFMI 1\.02, 0\.97, 1\.1, 0\.88/);
    // The potential energy stays, under the traces and the table.
    assert.ok(await page.locator("#chart svg path.loss").isVisible());
    const order = await page.evaluate(() => ["live", "posterior", "chart"].map((id) => document.getElementById(id)!.getBoundingClientRect().top));
    assert.ok(order[0]! < order[1]! && order[1]! < order[2]!, `traces, table, then the potential: ${order}`);
    await page.screenshot({ path: path.join(screenshots, "run-nuts-live.png"), fullPage: true });
    // The final draws converge; a progress without draws keeps them.
    await send(page, { type: "progress", progress: nutsProgress(eightSchoolsLive([1000, 1000, 1000, 1000], false)) });
    await send(page, { type: "progress", progress: nutsProgress(undefined) });
    assert.equal(await page.textContent("#draws"), "draws per chain: 1000, 1000, 1000, 1000 (warmup 500)");
    assert.equal(await page.textContent("#posterior .verdict"), "no convergence warnings");
    assert.equal(await page.locator("#posterior li.warning").count(), 0);
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("shows a finished SVI run's loss curve and its table, without R-hat or ESS", async () => {
    const page = await openRunPage("QVR SVI: regression");
    await page.evaluate(() => {
      document.body.classList.add("vscode-dark");
      document.body.style.setProperty("--vscode-editor-background", "#1e1e1e");
      document.body.style.setProperty("--vscode-foreground", "#cccccc");
    });
    await send(page, { type: "start", title: "QVR SVI: regression", method: "svi", total: 100 });
    const points = Array.from({ length: 101 }, (_, i): [number, number] => [i, 50 * Math.exp(-i / 20) + 3]);
    await send(page, { type: "progress", progress: { uri: "file:///r.qvr", runId: 2, method: "svi", total: 100, points, done: true } });
    assert.equal(await page.locator("#posterior").isVisible(), false, "no table before the run ends");
    await send(page, { type: "finished", summary: '{\n  "method": "svi"\n}', posterior: sviPosterior() });
    assert.equal(await page.locator("#live").isVisible(), false);
    assert.equal(await page.getAttribute("#chart svg path.loss", "d").then((d) => d?.split(" ").length), 101);
    const header = await page.locator("#posterior table.posterior thead th").allTextContents();
    assert.deepEqual(header, ["", "mean", "sd", "5%", "50%", "95%"]);
    const rows = page.locator("#posterior table.posterior tbody tr");
    assert.equal(await rows.count(), 14);
    assert.deepEqual(await rows.first().locator("th, td").allTextContents(), ["mu", "4.1", "0.31", "3.6", "4.1", "4.6"]);
    assert.equal(await rows.last().textContent(), "… 28 more elements of w");
    assert.equal(await page.locator("#posterior li.warning, #posterior .verdict").count(), 0);
    const order = await page.evaluate(() => ["chart", "posterior"].map((id) => document.getElementById(id)!.getBoundingClientRect().top));
    assert.ok(order[0]! < order[1]!, "the loss curve, then the table");
    await page.screenshot({ path: path.join(screenshots, "run-svi-finished.png"), fullPage: true });
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("draws each attention as a heatmap per head on one colour scale, its labels as text", async () => {
    const page = await openRunPage("QVR SVI: bert_mlm", { width: 1000, height: 900 });
    await send(page, { type: "start", title: "QVR SVI: bert_mlm", method: "svi", total: 3 });
    assert.equal(await page.locator("#attention").isVisible(), false, "nothing before the run ends");
    // Two heads over 13 real positions: head 1 looks at the next position, head 2 at all alike.
    const n = 13;
    const grid = (f: (q: number, k: number) => number): number[][] =>
      Array.from({ length: n }, (_, q) => Array.from({ length: n }, (_, k) => f(q, k)));
    const map = (label: string, block: number): AttentionMap => ({
      label,
      site: "encoder_block.a",
      combinator: "multihead(w_q, w_k, w_v)",
      kind: "self",
      basis: "fitted parameters, latent sites at their mean under the guide",
      heads: 2,
      queries: n,
      keys: n,
      tokens: Array.from({ length: n }, (_, i) => (i === 1 ? "<b>x</b>" : `(${i + 3}, 0, ${i})`)),
      weights: [grid((q, k) => (k === (q + block) % n ? 0.9 : 0.1 / (n - 1))), grid(() => 1 / n)],
    });
    const attention = [map("<img src=x onerror=alert(1)> in encoder_block 1 of 2", 1), map("self_attention in encoder_block 2 of 2", 2)];
    await send(page, { type: "finished", summary: '{\n  "method": "svi"\n}', posterior: null, attention });
    assert.ok(await page.locator("#attention").isVisible());
    assert.deepEqual(await page.locator("#attention .attention-label").allTextContents(), [
      "<img src=x onerror=alert(1)> in encoder_block 1 of 2",
      "self_attention in encoder_block 2 of 2",
    ]);
    assert.equal(await page.locator("#attention img, #attention b").count(), 0, "server text is shown as text");
    assert.match((await page.locator("#attention .attention-note").first().textContent()) ?? "", /encoder_block\.a · multihead\(w_q, w_k, w_v\) · self-attention · 2 heads · 13 queries × 13 keys/);
    const figures = await page.evaluate(() =>
      Array.from(document.querySelectorAll("#attention figure.attention-map"), (figure) => ({
        heads: Array.from(figure.querySelectorAll("svg.heatmap"), (svg) => ({
          title: svg.querySelector(".head-title")?.textContent ?? "",
          cells: svg.querySelectorAll("rect.cell").length,
          strongest: Array.from(svg.querySelectorAll("rect.cell"))
            .filter((rect) => rect.getAttribute("fill-opacity") === "1")
            .map((rect) => `${(rect as SVGRectElement).dataset.query}>${(rect as SVGRectElement).dataset.key}`)
            .slice(0, 2),
          fill: getComputedStyle(svg.querySelector("rect.cell")!).fill,
          ticks: svg.querySelectorAll("text.tick").length,
        })),
        scale: Array.from(figure.querySelectorAll("svg.heat-scale text.tick"), (text) => text.textContent),
      })),
    );
    assert.equal(figures.length, 2);
    for (const [i, figure] of figures.entries()) {
      assert.deepEqual(figure.heads.map((h) => [h.title, h.cells]), [["head 1", n * n], ["head 2", n * n]]);
      assert.deepEqual(figure.heads[0]!.strongest, i === 0 ? ["0>1", "1>2"] : ["0>2", "1>3"], "the strongest weight is painted in full");
      assert.deepEqual(figure.scale, ["0", "0.225", "0.45", "0.675", "0.9"]);
      for (const head of figure.heads) {
        assert.equal(head.fill, "rgb(26, 115, 232)", "the chart colour (the theme's charts.blue in VS Code)");
        assert.ok(head.ticks >= 14, "position labels on both axes");
      }
    }
    await page.locator("#attention svg.heatmap rect.cell[data-head='0'][data-query='1'][data-key='2']").first().hover();
    assert.equal(await page.locator("#attention .attention-readout").first().textContent(), "head 1: query 1 (<b>x</b>) → key 2 ((5, 0, 2)): 0.9");
    await page.screenshot({ path: path.join(screenshots, "run-attention.png"), fullPage: true });
    // A new run clears them.
    await send(page, { type: "start", title: "QVR SVI: bert_mlm", method: "svi", total: 3 });
    assert.equal(await page.locator("#attention").isVisible(), false);
    assert.equal(await page.locator("#attention figure").count(), 0);
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });
  /** Per figure of the fit view: its kind, data attributes, and how many of its canvas pixels are painted. */
  async function fitFigures(page: Page): Promise<{ plot: string; data: Record<string, string>; painted: number; width: number }[]> {
    return page.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLElement>("#fit figure.fit-plot"), (figure) => {
        let painted = 0;
        let width = 0;
        for (const canvas of Array.from(figure.querySelectorAll("canvas"))) {
          width = Math.max(width, canvas.width);
          const pixels = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data;
          for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) painted++;
        }
        return { plot: figure.dataset.plot ?? "", data: { ...figure.dataset } as Record<string, string>, painted, width };
      }),
    );
  }

  /** Whether a figure's canvas has a pixel of about `rgb` (a chain's colour). */
  async function hasColour(page: Page, selector: string, rgb: string): Promise<boolean> {
    return page.evaluate(
      ([sel, colour]) => {
        const [r, g, b] = /\d+/g[Symbol.match](colour)!.map(Number);
        const canvas = document.querySelector<HTMLCanvasElement>(sel)!;
        const pixels = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 0; i < pixels.length; i += 4) {
          if (pixels[i + 3]! > 200 && Math.abs(pixels[i]! - r!) + Math.abs(pixels[i + 1]! - g!) + Math.abs(pixels[i + 2]! - b!) < 30) return true;
        }
        return false;
      },
      [selector, rgb] as const,
    );
  }

  it("draws a finished NUTS run's rank, pair, energy, forest, autocorrelation and predictive plots with uPlot, under the CSP", async () => {
    const fixture = nutsFitView();
    const view: FitView | undefined = parseFitView(fixture.view);
    assert.ok(view);
    const page = await openRunPage("QVR NUTS: eight_schools_centered", { width: 1100, height: 900 });
    await send(page, { type: "start", title: "QVR NUTS: eight_schools_centered", method: "nuts", total: 800 });
    await send(page, { type: "progress", progress: nutsProgress(eightSchoolsLive([200, 200, 200, 200], false)) });
    assert.equal(await page.locator("#fit").isVisible(), false, "no plots of the fit while it runs");
    await send(page, { type: "finished", summary: '{\n  "method": "nuts"\n}', posterior: eightSchoolsPosterior(false), view });
    await page.locator("#fit figure.fit-plot[data-plot='ppc'] canvas").waitFor();
    const figures = await fitFigures(page);
    assert.deepEqual(figures.map((f) => f.plot), ["trace", "rank", "autocorr", "pair", "energy", "forest", "ppc"]);
    for (const figure of figures) assert.ok(figure.painted > 500, `${figure.plot} is drawn: ${figure.painted} pixels`);
    const byPlot = Object.fromEntries(figures.map((f) => [f.plot, f.data]));
    assert.deepEqual([byPlot.trace!.label, byPlot.trace!.series, byPlot.rank!.series], ["mu", "2", "2"]);
    // The pair plot: 2 chains x 200 draws, the divergent ones marked, and the warning with its remedy beside it.
    assert.deepEqual([byPlot.pair!.x, byPlot.pair!.y, byPlot.pair!.points], ["mu", "tau", "400"]);
    assert.equal(Number(byPlot.pair!.divergent), view.divergences);
    assert.ok(view.divergences > 0, "the fixture's run diverged");
    assert.ok(await hasColour(page, "#fit figure[data-plot='pair'] canvas", "rgb(229, 20, 0)"), "the divergent draws' crosses");
    const pairWarning = page.locator("#fit .fit-pair li.warning[data-kind='divergences']");
    assert.match((await pairWarning.textContent()) ?? "", /⚠warning: 2 of 400 draws after warmup diverged \(marked ✕ in the pair plot\).*remedy: raise the target acceptance/);
    // E-BFMI per chain under the energy plot, and the low one's warning.
    assert.equal(await page.textContent("#fit .fit-bfmi"), "E-BFMI: chain 1 0.342 · chain 2 0.263 (under 0.3)");
    assert.match((await page.textContent("#fit .fit-energy li.warning[data-kind='e_bfmi']")) ?? "", /E-BFMI under 0\.3 \(chain 2: 0\.263\).*remedy: reparameterise/);
    // The chains are the trace plots' colours (media/webview.css .chain-0, .chain-1).
    assert.ok(await hasColour(page, "#fit figure[data-plot='trace'] canvas", "rgb(31, 119, 180)"), "chain 1's blue");
    assert.ok(await hasColour(page, "#fit figure[data-plot='trace'] canvas", "rgb(255, 127, 14)"), "chain 2's orange");
    assert.deepEqual([byPlot.forest!.site, byPlot.forest!.rows], ["theta", "16"]);
    assert.deepEqual([byPlot.ppc!.site, byPlot.ppc!.kind, byPlot.ppc!.replicated, byPlot.ppc!.observed], ["y", "continuous", "50", "1"]);
    await page.screenshot({ path: path.join(screenshots, "run-fit-nuts.png"), fullPage: true });

    // Every scalar is reachable: the filter narrows the list, the pick redraws its plots.
    await page.fill("#scalar-filter", "theta[3");
    await page.locator("#fit figure[data-plot='trace'][data-label='theta[3]']").waitFor();
    assert.deepEqual(await page.locator("#scalar option").allTextContents(), ["theta[3]"]);
    assert.equal(await page.textContent("#fit .fit-count"), "1 of 10 scalars match");
    assert.equal(await page.getAttribute("#fit figure[data-plot='rank']", "data-label"), "theta[3]");
    await page.fill("#scalar-filter", "theta");
    await page.locator("#fit .fit-count", { hasText: "8 of 10 scalars match" }).waitFor();
    await page.selectOption("#scalar", { label: "theta[6]" });
    await page.locator("#fit figure[data-plot='autocorr'][data-label='theta[6]']").waitFor();
    // The pair plot picks two scalars; the forest combines the chains.
    await page.selectOption("#pair-y", { label: "theta[0]" });
    await page.locator("#fit figure[data-plot='pair'][data-y='theta[0]']").waitFor();
    assert.equal(await page.getAttribute("#fit figure[data-plot='pair']", "data-divergent"), String(view.divergences));
    await page.check("#forest-combined");
    await page.locator("#fit figure[data-plot='forest'][data-rows='8']").waitFor();
    await page.selectOption("#forest-site", { label: "tau" });
    await page.locator("#fit figure[data-plot='forest'][data-site='tau'][data-rows='1']").waitFor();
    assert.equal((await fitFigures(page)).length, 7);
    // A narrower panel draws them again to its width.
    await page.setViewportSize({ width: 700, height: 900 });
    await page.waitForFunction(() => {
      const canvas = document.querySelector<HTMLCanvasElement>("#fit figure[data-plot='energy'] canvas");
      return canvas !== null && canvas.width / window.devicePixelRatio <= 700;
    });
    await page.screenshot({ path: path.join(screenshots, "run-fit-nuts-narrow.png"), fullPage: true });
    // A new run clears them.
    await send(page, { type: "start", title: "QVR NUTS: eight_schools_centered", method: "nuts", total: 800 });
    assert.equal(await page.locator("#fit").isVisible(), false);
    assert.equal(await page.locator("#fit canvas").count(), 0);
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("draws the model comparison of the runs on the same data, the current run marked, under the CSP", async () => {
    const raw = nutsFitView().view;
    const view = parseFitView({ ...raw, comparison: comparisonFixture() });
    assert.ok(view?.comparison);
    const page = await openRunPage("QVR NUTS: eight_schools_centered", { width: 1100, height: 900 });
    await send(page, { type: "start", title: "QVR NUTS: eight_schools_centered", method: "nuts", total: 400 });
    await send(page, { type: "finished", summary: '{\n  "method": "nuts"\n}', posterior: eightSchoolsPosterior(false), view });
    const table = page.locator("#fit .fit-comparison table.comparison");
    await table.waitFor();
    assert.equal(await table.getAttribute("data-rows"), "2");
    assert.deepEqual(
      (await table.locator("thead th").allTextContents()).map((t) => t.trim()),
      ["rank", "name", "elpd_loo", "se", "p_loo", "d_elpd", "dse", "weight", "warning"],
    );
    const rows = await table.locator("tbody tr").evaluateAll((trs) =>
      trs.map((tr) => ({ current: tr.classList.contains("current"), aria: tr.getAttribute("aria-current"), cells: Array.from(tr.children, (c) => c.textContent) })),
    );
    assert.deepEqual(rows, [
      { current: true, aria: "true", cells: ["0", "eight_schools_centered.eight_schools_centeredthis run", "-30.35", "1.16", "0.64", "0.00", "0.00", "1.00", "⚠"] },
      { current: false, aria: null, cells: ["1", "eight_schools_noncentered.eight_schools", "-30.86", "1.39", "0.94", "0.51", "0.36", "0.00", "⚠"] },
    ]);
    // The current run's row stands out (bold), and the table is styled as the posterior table.
    const weights = await table.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => getComputedStyle(tr.querySelector("td")!).fontWeight));
    assert.deepEqual(weights, ["700", "400"]);
    assert.equal(await table.evaluate((t) => getComputedStyle(t).borderCollapse), "collapse");
    const warnings = page.locator("#fit .fit-comparison li.warning");
    assert.equal(await warnings.count(), 4);
    assert.match((await warnings.nth(3).textContent()) ?? "", /^⚠warning: eight_schools_noncentered\.eight_schools is within two standard errors .*remedy: prefer the simpler/);
    assert.equal(await page.locator("#fit .fit-comparison li.warning[data-kind='divergences'] .remedy").count(), 1);
    // Under the forest plot, before the predictive check; no figure of its own.
    const order = await page.evaluate(() => Array.from(document.querySelectorAll("#fit > .fit-block"), (b) => b.className));
    assert.deepEqual(order.slice(-3), ["fit-block fit-forest", "fit-block fit-comparison", "fit-block fit-ppc"]);
    await page.locator("#fit .fit-comparison").screenshot({ path: path.join(screenshots, "run-fit-comparison.png") });
    // Names are text, never markup; a run alone on its data shows the note instead.
    const hostile = parseFitView({ ...raw, comparison: { ...comparisonFixture(), rows: comparisonFixture().rows.map((r, i) => ({ ...r, name: `<img src=x onerror=alert(${i})>` })), current: "<img src=x onerror=alert(0)>" } });
    await send(page, { type: "finished", summary: "{}", posterior: null, view: hostile });
    await page.locator("#fit .fit-comparison tr.current th", { hasText: "<img src=x onerror=alert(0)>" }).waitFor();
    assert.equal(await page.locator("#fit img").count(), 0);
    await send(page, { type: "finished", summary: "{}", posterior: null, view: parseFitView({ ...raw, comparison_note: "run another model on the same data to compare" }) });
    await page.locator("#fit .fit-comparison .note", { hasText: "run another model on the same data to compare" }).waitFor();
    assert.equal(await page.locator("#fit table.comparison").count(), 0);
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("draws a prior run's prior predictive check and its prior draws, in a dark theme", async () => {
    const view = parseFitView(priorFitView().view);
    assert.ok(view);
    const page = await openRunPage("QVR PRIOR: eight_schools_centered", { width: 1000, height: 800 });
    await page.evaluate(() => {
      document.body.classList.add("vscode-dark");
      document.body.style.setProperty("--vscode-editor-background", "#1e1e1e");
      document.body.style.setProperty("--vscode-foreground", "#cccccc");
    });
    await send(page, { type: "start", title: "QVR PRIOR: eight_schools_centered", method: "prior", total: 60 });
    await send(page, { type: "finished", summary: '{\n  "method": "prior"\n}', posterior: null, view });
    await page.locator("#fit figure.fit-plot[data-plot='ppc'] canvas").waitFor();
    assert.equal(await page.textContent("#fit h2"), "Prior predictive check");
    const figures = await fitFigures(page);
    assert.deepEqual(figures.map((f) => f.plot), ["ppc", "pair", "forest"], "no rank, autocorrelation or energy: no sampler");
    for (const figure of figures) assert.ok(figure.painted > 500, `${figure.plot} is drawn`);
    const ppc = figures[0]!.data;
    assert.deepEqual([ppc.site, ppc.kind, ppc.replicated, ppc.observed], ["y", "continuous", "50", "0"]);
    assert.match((await page.textContent("#fit figure[data-plot='ppc'] figcaption")) ?? "", /^y: 50 of 60 prior predictive draws \(densities; 4 of their values lie beyond the axis, which spans their middle 99%\)$/);
    await page.screenshot({ path: path.join(screenshots, "run-fit-prior.png"), fullPage: true });
    assert.deepEqual(await violations(page), []);
    assert.deepEqual((page as Page & { qvrErrors?: string[] }).qvrErrors, []);
    await page.close();
  });

  it("shows no plots for a fit without scalars or observed sites", async () => {
    const raw = nutsFitView().view;
    const empty = parseFitView({ ...raw, method: "svi", chains: 1, draw_index: [[]], diverging: [[]], scalars: [], sites: [], energy: null, ppc: [], warnings: [], rank_edges: null });
    assert.ok(empty);
    const page = await openRunPage("QVR SVI: bert_mlm");
    await send(page, { type: "start", title: "QVR SVI: bert_mlm", method: "svi", total: 3 });
    await send(page, { type: "finished", summary: "{}", posterior: null, view: empty });
    await page.locator("#details:not([hidden])").waitFor();
    assert.equal(await page.locator("#fit").isVisible(), false);
    assert.equal(await page.locator("#fit *").count(), 0);
    await page.close();
  });

  it("shows the server's reason when it could not compute the plots", async () => {
    const page = await openRunPage("QVR NUTS: m");
    await send(page, { type: "start", title: "QVR NUTS: m", method: "nuts", total: 10 });
    await send(page, { type: "finished", summary: "{}", posterior: null, view: null, viewError: "the fit view could not be computed: ValueError: <b>x</b>" });
    assert.equal(await page.textContent("#fit .note"), "the fit view could not be computed: ValueError: <b>x</b>");
    assert.equal(await page.locator("#fit b").count(), 0);
    assert.deepEqual(await violations(page), []);
    await page.close();
  });
});
