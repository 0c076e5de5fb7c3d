/** The two webview pages: the live diagram and the inference loss chart. */
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
  <span id="status" role="status">${escapeHtml(`Loading the diagram of ${documentName}…`)}</span>
</header>
<main id="diagram" aria-label="Model diagram"></main>`,
  });
}

export function renderLossPage(assets: WebviewAssets, title: string): string {
  return renderPage({
    title,
    assets,
    bodyHtml: `<header class="toolbar"><h1 id="title">${escapeHtml(title)}</h1><span id="status" role="status"></span></header>
<main id="chart" aria-label="Loss curve"></main>
<pre id="summary"></pre>`,
  });
}
