/**
 * Geometry of the loss chart: scales, a polyline path and "nice" axis ticks.
 * Pure numbers and strings; the webview turns them into SVG elements.
 */
import type { ChartPoint } from "./protocol";

export interface ChartBox {
  width: number;
  height: number;
  /** Space for the axes' labels. */
  margin: { top: number; right: number; bottom: number; left: number };
}

export interface Tick {
  value: number;
  /** Pixel coordinate along the axis. */
  position: number;
  label: string;
}

export interface ChartLayout {
  path: string;
  xTicks: Tick[];
  yTicks: Tick[];
  /** The plot area inside the margins. */
  plot: { x: number; y: number; width: number; height: number };
  last?: { x: number; y: number; step: number; loss: number };
}

/** The plot area of `box`: what is left inside its margins, at least a pixel each way. */
export function plotArea(box: ChartBox): ChartLayout["plot"] {
  return {
    x: box.margin.left,
    y: box.margin.top,
    width: Math.max(1, box.width - box.margin.left - box.margin.right),
    height: Math.max(1, box.height - box.margin.top - box.margin.bottom),
  };
}

/**
 * A value axis covering `values` with about `count` nice ticks, widened to the
 * outer ticks; a flat (or empty) range still gets a visible span.
 */
export function valueAxis(values: readonly number[], count: number): { low: number; high: number; ticks: number[] } {
  let [low, high] = values.length > 0 ? [Math.min(...values), Math.max(...values)] : [0, 1];
  if (low === high) {
    const pad = Math.abs(low) * 0.1 || 1;
    low -= pad;
    high += pad;
  }
  const ticks = niceTicks(low, high, count);
  return { low: Math.min(low, ticks[0] ?? low), high: Math.max(high, ticks[ticks.length - 1] ?? high), ticks };
}

/** Lays out `points` in `box`; the x axis spans at least [0, total]. */
export function layoutChart(points: readonly ChartPoint[], total: number, box: ChartBox): ChartLayout {
  const plot = plotArea(box);
  const maxStep = Math.max(total, ...points.map((p) => p[0]), 1);
  const minStep = Math.min(0, ...points.map((p) => p[0]));
  const yAxis = valueAxis(points.map((p) => p[1]), 5);

  const x = (step: number): number => plot.x + ((step - minStep) / (maxStep - minStep)) * plot.width;
  const y = (loss: number): number => plot.y + plot.height - ((loss - yAxis.low) / (yAxis.high - yAxis.low)) * plot.height;

  const path = points
    .map((p, i) => `${i === 0 ? "M" : "L"}${round(x(p[0]))},${round(y(p[1]))}`)
    .join(" ");
  const lastPoint = points[points.length - 1];
  return {
    path,
    plot,
    xTicks: niceTicks(minStep, maxStep, 6)
      .filter((v) => v >= minStep && v <= maxStep)
      .map((value) => ({ value, position: round(x(value)), label: formatNumber(value) })),
    yTicks: yAxis.ticks.map((value) => ({ value, position: round(y(value)), label: formatNumber(value) })),
    last:
      lastPoint === undefined
        ? undefined
        : { x: round(x(lastPoint[0])), y: round(y(lastPoint[1])), step: lastPoint[0], loss: lastPoint[1] },
  };
}

/** Round numbers (1, 2 or 5 times a power of ten) covering [low, high]. */
export function niceTicks(low: number, high: number, count: number): number[] {
  if (!(high > low) || count < 1) return [low];
  const rough = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? 10 * magnitude;
  const ticks: number[] = [];
  for (let value = Math.floor(low / step) * step; value <= high + step * 1e-9; value += step) {
    ticks.push(Number(value.toPrecision(12)));
  }
  if (ticks[ticks.length - 1]! < high) ticks.push(Number((ticks[ticks.length - 1]! + step).toPrecision(12)));
  return ticks;
}

export function formatNumber(value: number): string {
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  if (magnitude >= 1e5 || magnitude < 1e-3) return value.toExponential(1);
  return String(Number(value.toPrecision(4)));
}

export function round(value: number): number {
  return Math.round(value * 10) / 10;
}
