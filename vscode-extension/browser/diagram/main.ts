/** The diagram webview: draws what the extension sends, reports clicks and format changes. */
import type { FromDiagramView, ToDiagramView } from "../../src/shared/messages";
import { type DiagramFormat, isDiagramFormat } from "../../src/shared/protocol";
import { currentNonce, element, vscodeApi } from "../vscodeApi";
import { insertSvg } from "./cspSvg";
import { markErrors } from "./errorMarks";
import { linkNodes, nodeFinder } from "./nodeLinks";
import { renderDot, renderMermaid } from "./renderers";
import { Viewport } from "./viewport";

const vscode = vscodeApi<FromDiagramView>();
const nonce = currentNonce();
const container = element("diagram", HTMLElement);
const status = element("status", HTMLElement);
const formatSelect = element("format", HTMLSelectElement);
const tooltip = element("tooltip", HTMLElement);
const viewport = new Viewport(container, element("zoom-level", HTMLElement));
element("zoom-in", HTMLButtonElement).addEventListener("click", () => viewport.zoomIn());
element("zoom-out", HTMLButtonElement).addEventListener("click", () => viewport.zoomOut());
element("zoom-fit", HTMLButtonElement).addEventListener("click", () => viewport.fitToPanel());
container.addEventListener("keydown", (event) => {
  if (event.key === "+" || event.key === "=") viewport.zoomIn();
  else if (event.key === "-") viewport.zoomOut();
  else if (event.key === "0") viewport.fitToPanel();
});

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
    tooltip.hidden = true;
    const svg = insertSvg(container, markup, nonce);
    svg.classList.add("qvr-diagram", message.format === "dot" ? "qvr-graphviz" : "qvr-mermaid");
    dropInlineColours(svg);
    viewport.show(svg);
    const find = nodeFinder(message.nodes);
    const linked = linkNodes(svg, find, (range) => vscode.postMessage({ type: "reveal", range }));
    const marked = markErrors(svg, find, tooltip);
    const errors = marked === 1 ? "1 node has errors (hover it). " : marked > 1 ? `${marked} nodes have errors (hover them). ` : "";
    setStatus(linked > 0 ? `${errors}Click a node to go to its source.` : errors);
    document.body.dataset.rendered = String(render);
  } catch (error) {
    if (render !== latestRender) return;
    const text = error instanceof Error ? error.message : String(error);
    // Keep the last good drawing: a half-typed file should not blank the view.
    setStatus(`Could not draw the diagram: ${text}`, "error");
    vscode.postMessage({ type: "renderError", message: text });
  }
}

/**
 * Mermaid writes a class's colours into style="" with !important, which no stylesheet
 * overrides; without them media/webview.css gives the nodes the theme's colours.
 */
function dropInlineColours(svg: SVGSVGElement): void {
  for (const shape of Array.from(svg.querySelectorAll<SVGElement>("g.node [style]"))) {
    for (const property of ["fill", "stroke", "color"]) shape.style.removeProperty(property);
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
