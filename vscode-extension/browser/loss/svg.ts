/** SVG elements built through the DOM: text goes in as text, never as markup. */
import type { ChartLayout, Tick } from "../../src/shared/chart";

const SVG_NS = "http://www.w3.org/2000/svg";

export function svgElement<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const created = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) created.setAttribute(name, String(value));
  if (text !== undefined) created.textContent = text;
  return created;
}

/** Where a plot's axes go and how far its tick labels stand from them, in pixels. */
export interface AxesFrame {
  plot: ChartLayout["plot"];
  xTicks: readonly Tick[];
  yTicks: readonly Tick[];
  /** gap between the y axis and its labels, length of an x tick, x labels below the axis */
  yLabelGap: number;
  xTickLength: number;
  xLabelDrop: number;
}

/** The grid at each y tick, the x ticks, both axes and their tick labels. */
export function drawAxesFrame(svg: SVGSVGElement, frame: AxesFrame): void {
  const { plot } = frame;
  const bottom = plot.y + plot.height;
  for (const tick of frame.yTicks) {
    svg.append(svgElement("line", { class: "grid", x1: plot.x, x2: plot.x + plot.width, y1: tick.position, y2: tick.position }));
    svg.append(svgElement("text", { class: "tick y", x: plot.x - frame.yLabelGap, y: tick.position }, tick.label));
  }
  for (const tick of frame.xTicks) {
    svg.append(svgElement("line", { class: "axis", x1: tick.position, x2: tick.position, y1: bottom, y2: bottom + frame.xTickLength }));
    svg.append(svgElement("text", { class: "tick x", x: tick.position, y: bottom + frame.xLabelDrop }, tick.label));
  }
  svg.append(svgElement("line", { class: "axis", x1: plot.x, x2: plot.x + plot.width, y1: bottom, y2: bottom }));
  svg.append(svgElement("line", { class: "axis", x1: plot.x, x2: plot.x, y1: plot.y, y2: bottom }));
}

/** An HTML element with a class and text. */
export function htmlElement<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const created = document.createElement(tag);
  if (className !== undefined) created.className = className;
  if (text !== undefined) created.textContent = text;
  return created;
}
