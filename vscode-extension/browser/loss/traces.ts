/** A NUTS run's trace plots: one small plot per scalar, a line per chain, and their legend. */
import type { LiveDraws, TracePlot } from "../../src/shared/protocol";
import { layoutTrace } from "../../src/shared/traceChart";
import { chainClass } from "./chains";
import { drawAxesFrame, htmlElement, svgElement } from "./svg";

const PLOT_HEIGHT = 150;
const MIN_PLOT_WIDTH = 260;
const GAP = 12;

function tracePlot(trace: TracePlot, width: number): SVGSVGElement {
  const layout = layoutTrace(trace, { width, height: PLOT_HEIGHT, margin: { top: 22, right: 10, bottom: 24, left: 52 } });
  const { plot } = layout;
  const svg = svgElement("svg", { class: "trace", width, height: PLOT_HEIGHT, viewBox: `0 0 ${width} ${PLOT_HEIGHT}`, role: "img" });
  svg.dataset.label = trace.label;
  svg.append(svgElement("title", {}, `Trace of ${trace.label} by draw, a line per chain`));
  const missing = layout.missing > 0 ? ` (${layout.missing} draws not finite)` : "";
  svg.append(svgElement("text", { class: "trace-title", x: plot.x, y: 14 }, `${trace.label}${missing}`));
  drawAxesFrame(svg, { ...layout, yLabelGap: 4, xTickLength: 3, xLabelDrop: 14 });
  layout.lines.forEach((points, chain) => {
    const line = svgElement("polyline", { class: chainClass(chain), points });
    line.dataset.chain = String(chain + 1);
    svg.append(line);
  });
  return svg;
}

/** The legend: a swatch of each chain's line and "chain N". */
export function drawLegend(legend: HTMLElement, chains: number): void {
  const items = Array.from({ length: chains }, (_, chain) => {
    const item = htmlElement("li");
    const swatch = svgElement("svg", { class: "swatch", width: 22, height: 10, viewBox: "0 0 22 10", "aria-hidden": "true" });
    swatch.append(svgElement("line", { class: chainClass(chain), x1: 1, x2: 21, y1: 5, y2: 5 }));
    item.append(swatch, `chain ${chain + 1}`);
    return item;
  });
  legend.replaceChildren(...items);
}

/** The trace plots, as many per row as fit in `container`'s width. */
export function drawTraces(container: HTMLElement, live: LiveDraws): void {
  const width = Math.max(MIN_PLOT_WIDTH, container.clientWidth);
  const columns = Math.max(1, Math.min(live.traces.length, Math.floor((width + GAP) / (MIN_PLOT_WIDTH + GAP))));
  const plotWidth = Math.floor((width - GAP * (columns - 1)) / columns);
  container.replaceChildren(...live.traces.map((trace) => tracePlot(trace, plotWidth)));
}
