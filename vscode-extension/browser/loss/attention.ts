/**
 * A finished run's attention weights: per attention its label and a heatmap per head
 * (query rows, key columns), all heads on one colour scale with its legend. A cell's
 * weight is the opacity of the theme's chart colour; the line under the heatmaps reads
 * out the cell under the pointer.
 */
import {
  type HeatmapLayout,
  type Margin,
  cellSize,
  cellText,
  describeMap,
  layoutHeatmap,
  scaleMax,
  scaleStops,
} from "../../src/shared/attentionChart";
import type { AttentionMap } from "../../src/shared/protocol";
import { htmlElement, svgElement } from "./svg";

const MARGIN: Margin = { top: 20, right: 8, bottom: 30, left: 38 };

function drawGrid(svg: SVGSVGElement, layout: HeatmapLayout, head: number): void {
  const { plot, cell } = layout;
  svg.append(svgElement("rect", { class: "heat-ground", x: plot.x, y: plot.y, width: plot.width, height: plot.height }));
  for (const c of layout.cells) {
    const rect = svgElement("rect", { class: "cell", x: c.x, y: c.y, width: cell, height: cell, "fill-opacity": c.opacity });
    rect.dataset.head = String(head);
    rect.dataset.query = String(c.query);
    rect.dataset.key = String(c.key);
    svg.append(rect);
  }
  const bottom = plot.y + plot.height;
  for (const tick of layout.queryTicks) svg.append(svgElement("text", { class: "tick y", x: plot.x - 4, y: tick.position }, tick.label));
  for (const tick of layout.keyTicks) svg.append(svgElement("text", { class: "tick x", x: tick.position, y: bottom + 11 }, tick.label));
  svg.append(svgElement("text", { class: "axis-label", x: plot.x + plot.width / 2, y: bottom + 25 }, "key"));
  const middle = plot.y + plot.height / 2;
  svg.append(svgElement("text", { class: "axis-label", x: 10, y: middle, transform: `rotate(-90 10 ${middle})` }, "query"));
}

function headPlot(map: AttentionMap, head: number, max: number): SVGSVGElement {
  const layout = layoutHeatmap(map.weights[head] ?? [], max, MARGIN);
  const { width, height } = layout;
  const svg = svgElement("svg", { class: "heatmap", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.dataset.head = String(head + 1);
  svg.append(svgElement("title", {}, `${map.label}, head ${head + 1}: attention weights, a row per query position, a column per key position`));
  svg.append(svgElement("text", { class: "head-title", x: layout.plot.x, y: 13 }, `head ${head + 1}`));
  drawGrid(svg, layout, head);
  return svg;
}

/** The colour scale: a bar as tall as a heatmap, from 0 (bottom) to the largest weight (top). */
function scaleLegend(max: number, barHeight: number): SVGSVGElement {
  const bar = Math.max(60, barHeight);
  const width = 64;
  const height = MARGIN.top + bar + MARGIN.bottom;
  const svg = svgElement("svg", { class: "heat-scale", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(svgElement("title", {}, `Colour scale: 0 to ${max}`));
  const stops = scaleStops(max, 5);
  const bands = 20;
  const band = bar / bands;
  const x = 4;
  svg.append(svgElement("rect", { class: "heat-ground", x, y: MARGIN.top, width: 12, height: bar }));
  for (let i = 0; i < bands; i++) {
    const opacity = Math.round(((i + 0.5) / bands) * 1000) / 1000;
    svg.append(svgElement("rect", { class: "cell", x, y: MARGIN.top + bar - (i + 1) * band, width: 12, height: band, "fill-opacity": opacity }));
  }
  for (const stop of stops) {
    const y = MARGIN.top + bar * (1 - stop.opacity);
    svg.append(svgElement("text", { class: "tick scale", x: x + 16, y }, stop.label));
  }
  return svg;
}

function figure(map: AttentionMap): HTMLElement {
  const element = htmlElement("figure", "attention-map");
  element.dataset.site = map.site;
  const caption = htmlElement("figcaption");
  caption.append(htmlElement("span", "attention-label", map.label), htmlElement("span", "attention-note", describeMap(map)));
  const max = scaleMax(map);
  const heads = htmlElement("div", "heads");
  map.weights.forEach((_grid, head) => heads.append(headPlot(map, head, max)));
  const rows = map.weights[0]?.length ?? 0;
  heads.append(scaleLegend(max, cellSize(rows, map.weights[0]?.[0]?.length ?? 0) * rows));
  const readout = htmlElement("p", "attention-readout", "Point at a cell for its weight.");
  readout.setAttribute("aria-live", "polite");
  heads.addEventListener("pointerover", (event) => {
    const cell = event.target instanceof SVGRectElement ? event.target.dataset : undefined;
    if (cell?.head === undefined || cell.query === undefined || cell.key === undefined) return;
    readout.textContent = cellText(map, Number(cell.head), Number(cell.query), Number(cell.key));
  });
  element.append(caption, heads, readout);
  return element;
}

/** Draws `maps` into `container`, or hides it when there are none. */
export function drawAttention(container: HTMLElement, maps: readonly AttentionMap[]): void {
  container.hidden = maps.length === 0;
  if (maps.length === 0) {
    container.replaceChildren();
    return;
  }
  container.replaceChildren(htmlElement("h2", undefined, "Attention weights of the first example"), ...maps.map(figure));
}
