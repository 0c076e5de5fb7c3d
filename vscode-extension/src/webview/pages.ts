/** The two webview pages: the live diagram and the inference run view. */
import type { DiagramFormat } from "../shared/protocol";
import { type WebviewAssets, escapeHtml, renderPage } from "./html";

export function renderDiagramPage(assets: WebviewAssets, format: DiagramFormat, documentName: string): string {
  const option = (value: DiagramFormat, label: string): string =>
    `<option value="${value}"${value === format ? " selected" : ""}>${label}</option>`;
  return renderPage({
    title: `Diagram: ${documentName}`,
    assets,
    allowWasm: true,
    bodyData: { format },
    bodyHtml: `<header class="toolbar">
  <label>Renderer <select id="format">${option("mermaid", "Mermaid")}${option("dot", "Graphviz")}</select></label>
  <span class="zoom" role="group" aria-label="Zoom">
    <button id="zoom-out" type="button" title="Zoom out (-)" aria-label="Zoom out">−</button>
    <span id="zoom-level" aria-live="polite">100%</span>
    <button id="zoom-in" type="button" title="Zoom in (+)" aria-label="Zoom in">+</button>
    <button id="zoom-fit" type="button" title="Fit to the panel (0)">Fit</button>
  </span>
  <span id="status" role="status">${escapeHtml(`Loading the diagram of ${documentName}…`)}</span>
</header>
<main id="diagram" aria-label="Model diagram: drag to pan, wheel to zoom" tabindex="0"></main>
<div id="tooltip" role="tooltip" hidden></div>`,
  });
}

/**
 * The run view: the loss curve; for NUTS the trace plots per chain; the posterior table;
 * once a run ends, the plots of the fit (rank, pair, energy, forest, autocorrelation, the
 * predictive check); for a program with attention, a heatmap per head of each attention.
 */
export function renderLossPage(assets: WebviewAssets, title: string): string {
  return renderPage({
    title,
    assets,
    bodyHtml: `<header class="toolbar"><h1 id="title">${escapeHtml(title)}</h1><span id="status" role="status"></span></header>
<div id="run">
<section id="live" aria-label="Draws per chain" hidden>
  <p id="draws"></p>
  <ul id="legend" aria-label="Chains"></ul>
  <div id="traces"></div>
</section>
<main id="chart" aria-label="Loss curve"></main>
<section id="posterior" aria-label="Posterior summary" hidden></section>
<section id="fit" aria-label="Plots of the fit" hidden></section>
<section id="attention" aria-label="Attention weights" hidden></section>
<details id="details" hidden><summary>Run summary (JSON)</summary><pre id="summary"></pre></details>
</div>`,
  });
}
