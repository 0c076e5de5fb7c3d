/** The loss-chart webview: an SVG line chart drawn from streamed progress. */
import { type ChartLayout, formatNumber, layoutChart } from "../../src/shared/chart";
import { LossSeries } from "../../src/shared/lossSeries";
import type { FromLossView, ToLossView } from "../../src/shared/messages";
import { element, vscodeApi } from "../vscodeApi";

const SVG_NS = "http://www.w3.org/2000/svg";
const vscode = vscodeApi<FromLossView>();
const chart = element("chart", HTMLElement);
const title = element("title", HTMLElement);
const status = element("status", HTMLElement);
const summary = element("summary", HTMLElement);

let series = new LossSeries();
let total = 0;

function svgElement<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const created = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) created.setAttribute(name, String(value));
  if (text !== undefined) created.textContent = text;
  return created;
}

function drawAxes(svg: SVGSVGElement, layout: ChartLayout): void {
  const { plot } = layout;
  const bottom = plot.y + plot.height;
  for (const tick of layout.yTicks) {
    svg.append(svgElement("line", { class: "grid", x1: plot.x, x2: plot.x + plot.width, y1: tick.position, y2: tick.position }));
    svg.append(svgElement("text", { class: "tick y", x: plot.x - 6, y: tick.position }, tick.label));
  }
  for (const tick of layout.xTicks) {
    svg.append(svgElement("line", { class: "axis", x1: tick.position, x2: tick.position, y1: bottom, y2: bottom + 4 }));
    svg.append(svgElement("text", { class: "tick x", x: tick.position, y: bottom + 16 }, tick.label));
  }
  svg.append(svgElement("line", { class: "axis", x1: plot.x, x2: plot.x + plot.width, y1: bottom, y2: bottom }));
  svg.append(svgElement("line", { class: "axis", x1: plot.x, x2: plot.x, y1: plot.y, y2: bottom }));
  svg.append(svgElement("text", { class: "axis-label", x: plot.x + plot.width / 2, y: bottom + 32 }, "step"));
  const middle = plot.y + plot.height / 2;
  svg.append(svgElement("text", { class: "axis-label", x: 14, y: middle, transform: `rotate(-90 14 ${middle})` }, "loss"));
}

function redraw(): void {
  const width = Math.max(320, chart.clientWidth);
  const height = Math.max(220, Math.min(480, Math.round(width * 0.5)));
  const points = series.points();
  const layout = layoutChart(points, total, {
    width,
    height,
    margin: { top: 12, right: 24, bottom: 40, left: 64 },
  });
  const svg = svgElement("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(svgElement("title", {}, "Loss by step"));
  drawAxes(svg, layout);
  svg.append(svgElement("path", { class: "loss", d: layout.path }));
  if (layout.last !== undefined) {
    svg.append(svgElement("circle", { class: "last", cx: layout.last.x, cy: layout.last.y, r: 3 }));
    status.textContent = `step ${layout.last.step}/${total || "?"}, loss ${formatNumber(layout.last.loss)}${series.done ? " (done)" : ""}`;
  }
  chart.replaceChildren(svg);
}

window.addEventListener("message", (event: MessageEvent<ToLossView>) => {
  const message = event.data;
  if (typeof message !== "object" || message === null) return;
  switch (message.type) {
    case "start":
      series = new LossSeries();
      total = message.total;
      title.textContent = message.title;
      status.textContent = "Starting…";
      status.classList.remove("error");
      summary.textContent = "";
      break;
    case "progress":
      series.add(message.progress);
      total = message.progress.total || total;
      break;
    case "finished":
      summary.textContent = message.summary;
      break;
    case "failed":
      status.textContent = message.message;
      status.classList.add("error");
      return;
  }
  redraw();
});

new ResizeObserver(() => redraw()).observe(chart);
vscode.postMessage({ type: "ready" });
