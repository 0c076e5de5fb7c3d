/** The diagram webview: draws what the extension sends, reports clicks and format changes. */
import type { FromDiagramView, ToDiagramView } from "../../src/shared/messages";
import { type DiagramFormat, isDiagramFormat } from "../../src/shared/protocol";
import { currentNonce, element, vscodeApi } from "../vscodeApi";
import { insertSvg } from "./cspSvg";
import { linkNodes } from "./nodeLinks";
import { renderDot, renderMermaid } from "./renderers";

const vscode = vscodeApi<FromDiagramView>();
const nonce = currentNonce();
const container = element("diagram", HTMLElement);
const status = element("status", HTMLElement);
const formatSelect = element("format", HTMLSelectElement);

/** Renders are async; only the newest one may touch the page. */
let latestRender = 0;

function setStatus(message: string, level: "info" | "error" = "info"): void {
  status.textContent = message;
  status.classList.toggle("error", level === "error");
}

async function draw(message: Extract<ToDiagramView, { type: "diagram" }>): Promise<void> {
  const render = ++latestRender;
  if (formatSelect.value !== message.format) formatSelect.value = message.format;
  try {
    const markup = message.format === "dot" ? await renderDot(message.text) : await renderMermaid(message.text, nonce);
    if (render !== latestRender) return;
    const svg = insertSvg(container, markup, nonce);
    svg.classList.add("qvr-diagram", message.format === "dot" ? "qvr-graphviz" : "qvr-mermaid");
    const linked = linkNodes(svg, message.nodes, (range) => vscode.postMessage({ type: "reveal", range }));
    setStatus(linked > 0 ? "Click a node to go to its source." : "");
    document.body.dataset.rendered = String(render);
  } catch (error) {
    if (render !== latestRender) return;
    const text = error instanceof Error ? error.message : String(error);
    // Keep the last good drawing: a half-typed file should not blank the view.
    setStatus(`Could not draw the diagram: ${text}`, "error");
    vscode.postMessage({ type: "renderError", message: text });
  }
}

window.addEventListener("message", (event: MessageEvent<ToDiagramView>) => {
  const message = event.data;
  if (typeof message !== "object" || message === null) return;
  if (message.type === "diagram") {
    void draw(message);
  } else if (message.type === "status") {
    setStatus(message.message, message.level);
  }
});

formatSelect.addEventListener("change", () => {
  const format: unknown = formatSelect.value;
  if (isDiagramFormat(format)) {
    setStatus(`Drawing with ${format === "dot" ? "Graphviz" : "Mermaid"}…`);
    vscode.postMessage({ type: "format", format: format satisfies DiagramFormat });
  }
});

vscode.postMessage({ type: "ready" });
