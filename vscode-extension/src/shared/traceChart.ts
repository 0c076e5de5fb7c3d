/**
 * Geometry of one trace plot: a line per chain over the draws after warmup, on
 * shared scales so the chains can be compared. Pure numbers and strings; the
 * webview turns them into SVG elements.
 */
import { type ChartBox, type ChartLayout, type Tick, formatNumber, niceTicks, plotArea, round, valueAxis } from "./chart";
import type { TracePlot } from "./protocol";

export interface TraceLayout {
  plot: ChartLayout["plot"];
  /** Per chain, the `points` attribute of its polyline ("" for a chain without draws yet). */
  lines: string[];
  xTicks: Tick[];
  yTicks: Tick[];
  /** Draws that are not finite (null): left out of the lines. */
  missing: number;
}

/** Lays out `trace` in `box`: x spans the draws so far (from 0), y every chain's values. */
export function layoutTrace(trace: TracePlot, box: ChartBox, yTickCount = 4): TraceLayout {
  const plot = plotArea(box);
  const points = trace.chains.flat();
  const values = points.flatMap(([, v]) => (v === null ? [] : [v]));
  const maxDraw = Math.max(1, ...points.map(([draw]) => draw));
  const yAxis = valueAxis(values, yTickCount);
  const x = (draw: number): number => plot.x + (draw / maxDraw) * plot.width;
  const y = (value: number): number => plot.y + plot.height - ((value - yAxis.low) / (yAxis.high - yAxis.low)) * plot.height;
  return {
    plot,
    lines: trace.chains.map((chain) =>
      chain.flatMap(([draw, v]) => (v === null ? [] : [`${round(x(draw))},${round(y(v))}`])).join(" "),
    ),
    xTicks: niceTicks(0, maxDraw, 4)
      .filter((v) => v <= maxDraw)
      .map((value) => ({ value, position: round(x(value)), label: formatNumber(value) })),
    yTicks: yAxis.ticks.map((value) => ({ value, position: round(y(value)), label: formatNumber(value) })),
    missing: points.length - values.length,
  };
}
