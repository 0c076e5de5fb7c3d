/** The loss curve (SVI) or the potential energy (NUTS, all chains) by step. */
import { type ChartLayout, layoutChart } from "../../src/shared/chart";
import type { ChartPoint } from "../../src/shared/protocol";
import { drawAxesFrame, svgElement } from "./svg";

export interface CurveLabels {
  title: string;
  x: string;
  y: string;
}

function drawAxes(svg: SVGSVGElement, layout: ChartLayout, labels: CurveLabels): void {
  const { plot } = layout;
  const bottom = plot.y + plot.height;
  drawAxesFrame(svg, { ...layout, yLabelGap: 6, xTickLength: 4, xLabelDrop: 16 });
  svg.append(svgElement("text", { class: "axis-label", x: plot.x + plot.width / 2, y: bottom + 32 }, labels.x));
  const middle = plot.y + plot.height / 2;
  svg.append(svgElement("text", { class: "axis-label", x: 14, y: middle, transform: `rotate(-90 14 ${middle})` }, labels.y));
}

/** Draws the curve into `container`; returns its layout (for the status line). */
export function drawCurve(
  container: HTMLElement,
  points: readonly ChartPoint[],
  total: number,
  height: number,
  labels: CurveLabels,
): ChartLayout {
  const width = Math.max(320, container.clientWidth);
  const layout = layoutChart(points, total, { width, height, margin: { top: 12, right: 24, bottom: 40, left: 64 } });
  const svg = svgElement("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(svgElement("title", {}, labels.title));
  drawAxes(svg, layout, labels);
  svg.append(svgElement("path", { class: "loss", d: layout.path }));
  if (layout.last !== undefined) svg.append(svgElement("circle", { class: "last", cx: layout.last.x, cy: layout.last.y, r: 3 }));
  container.replaceChildren(svg);
  return layout;
}
