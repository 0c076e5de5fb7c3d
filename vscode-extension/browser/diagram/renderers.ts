/** Mermaid and Graphviz, both bundled: the diagram renders with no network. */
import { instance as vizInstance, type Viz } from "@viz-js/viz";
import mermaid from "mermaid";
import { withCspSafeStyles } from "./cspSvg";

let renderCount = 0;
let mermaidReady = false;
let viz: Promise<Viz> | undefined;

/**
 * Both renderers draw in their light style; media/webview.css recolours the finished
 * drawing with the theme's colours. Mermaid's dark theme would leave light text on the light fills
 * that a diagram's own classDefs choose.
 */
export async function renderMermaid(text: string, nonce: string): Promise<string> {
  if (!mermaidReady) {
    mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      theme: "default",
      // Plain SVG text: no <foreignObject> HTML inside the drawing.
      flowchart: { htmlLabels: false },
    });
    mermaidReady = true;
  }
  renderCount += 1;
  const { svg } = await withCspSafeStyles(nonce, () => mermaid.render(`qvr-mermaid-${renderCount}`, text));
  return svg;
}

export async function renderDot(text: string): Promise<string> {
  viz ??= vizInstance();
  return (await viz).renderString(text, { format: "svg", engine: "dot" });
}
