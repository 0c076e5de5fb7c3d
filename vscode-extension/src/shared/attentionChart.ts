/**
 * The run view's attention heatmaps: the summary's `attention` checked (bounded, every
 * weight a number in [0, 1]) and one head's grid laid out, query rows by key columns.
 * Pure numbers and strings; the webview turns them into SVG elements
 * (browser/loss/attention.ts), so labels go in as text and need no escaping here.
 */
import { type Tick, formatNumber } from "./chart";
import type { AttentionMap } from "./protocol";
import { fields, isNatural, text } from "./fields";

/** The server records at most 8 attentions, 8 heads each and 32 positions per axis. */
export const MAX_ATTENTION_MAPS = 8;
export const MAX_HEADS = 8;
export const MAX_POSITIONS = 32;
const MAX_LABEL = 200;
const MAX_TOKEN = 40;

/** A weight as drawn: a finite number clipped to [0, 1]; anything else is 0. */
function weight(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0;
}

/** `summary.attention`, checked; a malformed entry (no label, a ragged grid) is dropped. */
export function parseAttention(raw: unknown): AttentionMap[] {
  if (!Array.isArray(raw)) return [];
  return raw.slice(0, MAX_ATTENTION_MAPS).flatMap((item: unknown) => {
    const parsed = attentionMap(item);
    return parsed === undefined ? [] : [parsed];
  });
}

function attentionMap(raw: unknown): AttentionMap | undefined {
  const map = fields(raw);
  const label = text(map?.label, MAX_LABEL);
  if (map === undefined || label === undefined || !Array.isArray(map.weights)) return undefined;
  const heads = map.weights.slice(0, MAX_HEADS);
  const first = heads[0];
  if (!Array.isArray(first) || first.length === 0 || !Array.isArray(first[0])) return undefined;
  const rows = Math.min(first.length, MAX_POSITIONS);
  const columns = Math.min((first[0] as unknown[]).length, MAX_POSITIONS);
  const rectangular = (grid: unknown): grid is unknown[][] =>
    Array.isArray(grid) && grid.length >= rows && grid.slice(0, rows).every((row) => Array.isArray(row) && row.length >= columns);
  if (columns === 0 || !heads.every(rectangular)) return undefined;
  const weights = heads.map((grid) => grid.slice(0, rows).map((row) => row.slice(0, columns).map(weight)));
  const tokens = Array.isArray(map.tokens) && map.tokens.every((t) => typeof t === "string") ? map.tokens : undefined;
  const shown = Math.max(rows, columns);
  return {
    label,
    site: text(map.site, MAX_LABEL) ?? "",
    combinator: text(map.combinator, MAX_LABEL) ?? "",
    kind: text(map.kind, MAX_LABEL) ?? "",
    basis: text(map.basis, MAX_LABEL) ?? "",
    heads: isNatural(map.heads) ? Math.max(map.heads, weights.length) : weights.length,
    queries: isNatural(map.queries) ? Math.max(map.queries, rows) : rows,
    keys: isNatural(map.keys) ? Math.max(map.keys, columns) : columns,
    tokens: tokens !== undefined && tokens.length >= shown ? tokens.slice(0, shown).map((t) => t.slice(0, MAX_TOKEN)) : null,
    weights,
  };
}

/** The top of a map's colour scale: its largest weight (1 when every weight is 0). */
export function scaleMax(map: AttentionMap): number {
  let max = 0;
  for (const grid of map.weights) for (const row of grid) for (const w of row) max = Math.max(max, w);
  return max > 0 ? max : 1;
}

/** How strongly a weight is painted, 0 (not at all) to 1 (the scale's top). */
export function intensity(value: number, max: number): number {
  return max > 0 ? Math.round(Math.min(1, Math.max(0, value / max)) * 1000) / 1000 : 0;
}

/** `count` evenly spaced values from 0 to `max`, with their intensity and label. */
export function scaleStops(max: number, count = 5): { value: number; opacity: number; label: string }[] {
  return Array.from({ length: count }, (_, i) => {
    const value = (max * i) / (count - 1);
    return { value, opacity: intensity(value, max), label: formatNumber(Number(value.toPrecision(3))) };
  });
}

/** A cell's side in pixels: a grid of up to 240 pixels, each cell 6 to 18 pixels. */
export function cellSize(queries: number, keys: number): number {
  return Math.max(6, Math.min(18, Math.floor(240 / Math.max(1, queries, keys))));
}

export interface HeatCell {
  x: number;
  y: number;
  query: number;
  key: number;
  value: number;
  opacity: number;
}

export interface HeatmapLayout {
  /** The grid inside the margins. */
  plot: { x: number; y: number; width: number; height: number };
  cell: number;
  cells: HeatCell[];
  /** Query positions down the left edge, key positions along the bottom (0-based). */
  queryTicks: Tick[];
  keyTicks: Tick[];
  /** The whole drawing, margins included. */
  width: number;
  height: number;
}

export interface Margin {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

/** Every `step`-th position (1, 2, 5, 10, ...) so that labels stand at least `spacing` pixels apart. */
export function positionTicks(count: number, cell: number, origin: number, spacing = 14): Tick[] {
  const step = [1, 2, 5, 10, 20, 50].find((s) => s * cell >= spacing) ?? 100;
  const ticks: Tick[] = [];
  for (let i = 0; i < count; i += step) ticks.push({ value: i, position: origin + (i + 0.5) * cell, label: String(i) });
  return ticks;
}

/** One head's grid: `grid[q][k]` a cell at row q, column k, painted relative to `max`. */
export function layoutHeatmap(grid: readonly (readonly number[])[], max: number, margin: Margin): HeatmapLayout {
  const queries = grid.length;
  const keys = grid[0]?.length ?? 0;
  const cell = cellSize(queries, keys);
  const plot = { x: margin.left, y: margin.top, width: keys * cell, height: queries * cell };
  const cells: HeatCell[] = [];
  grid.forEach((row, query) =>
    row.forEach((value, key) =>
      cells.push({ x: plot.x + key * cell, y: plot.y + query * cell, query, key, value, opacity: intensity(value, max) }),
    ),
  );
  return {
    plot,
    cell,
    cells,
    queryTicks: positionTicks(queries, cell, plot.y),
    keyTicks: positionTicks(keys, cell, plot.x),
    width: margin.left + plot.width + margin.right,
    height: margin.top + plot.height + margin.bottom,
  };
}

/** What the view says of a cell: "head 1: query 3 (17) → key 5 (2): 0.1342". */
export function cellText(map: AttentionMap, head: number, query: number, key: number): string {
  const token = (i: number): string => (map.tokens?.[i] !== undefined ? ` (${map.tokens[i]})` : "");
  const value = map.weights[head]?.[query]?.[key] ?? 0;
  return `head ${head + 1}: query ${query}${token(query)} → key ${key}${token(key)}: ${formatNumber(value)}`;
}

/** The line under a map's label: its step, combinator, sizes, what was cut and how it was computed. */
export function describeMap(map: AttentionMap): string {
  const rows = map.weights[0]?.length ?? 0;
  const columns = map.weights[0]?.[0]?.length ?? 0;
  const kind = map.kind === "" ? "attention" : `${map.kind}-attention`;
  const parts = [map.site, map.combinator, kind].filter((part) => part !== "");
  const heads = map.weights.length < map.heads ? `first ${map.weights.length} of ${map.heads} heads` : `${map.heads} head${map.heads === 1 ? "" : "s"}`;
  parts.push(heads, `${map.queries} queries × ${map.keys} keys`);
  if (rows < map.queries || columns < map.keys) parts.push(`first ${rows} × ${columns} shown`);
  if (map.basis !== "") parts.push(map.basis);
  return parts.join(" · ");
}
