/**
 * The data of the run view's plots after a fit, shaped from a `FitView` for the plotting
 * library: x values shared by every series (uPlot's aligned data, nulls where a series
 * has no point), densities on a grid, the rows of a forest plot. Pure numbers and
 * strings; the webview (browser/loss/fit.ts) hands them to uPlot.
 */
import type { FitInterval, FitScalar, FitSite, FitView, PredictiveCheck } from "./protocol";

/** x values and, per series, a y value (or null) at each x. */
export interface Aligned {
  x: number[];
  ys: (number | null)[][];
}

/** Series given as points `[x, y]`, merged onto their sorted common x values (a point per x of its own series). */
export function alignPoints(series: readonly (readonly (readonly [number, number | null])[])[]): Aligned {
  const xs = [...new Set(series.flatMap((points) => points.map(([x]) => x)))].sort((a, b) => a - b);
  const position = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((points) => {
    const column: (number | null)[] = new Array<number | null>(xs.length).fill(null);
    for (const [x, y] of points) column[position.get(x)!] = y;
    return column;
  });
  return { x: xs, ys };
}

/**
 * Scatter points of several series on one x axis: each point its own x slot (x values
 * may repeat across series), so that uPlot, which wants sorted x values, draws each
 * series' points and nothing between them.
 */
export function scatterPoints(series: readonly (readonly (readonly [number, number])[])[]): Aligned {
  const all = series.flatMap((points, s) => points.map(([x, y]) => ({ s, x, y })));
  all.sort((a, b) => a.x - b.x || a.s - b.s);
  return {
    x: all.map((p) => p.x),
    ys: series.map((_, s) => all.map((p) => (p.s === s ? p.y : null))),
  };
}

/** Scalars whose label contains `query` (case and spaces ignored); all of them for an empty query. */
export function filterScalars(scalars: readonly FitScalar[], query: string): number[] {
  const wanted = query.replace(/\s+/g, "").toLowerCase();
  const out: number[] = [];
  scalars.forEach((scalar, i) => {
    if (wanted === "" || scalar.label.replace(/\s+/g, "").toLowerCase().includes(wanted)) out.push(i);
  });
  return out;
}

/** A scalar's trace after the fit: a series per chain over the draws kept. */
export function traceSeries(view: FitView, scalar: FitScalar): Aligned | undefined {
  const draws = scalar.draws;
  if (draws === null) return undefined;
  return alignPoints(view.draw_index.map((index, c) => index.map((draw, i): [number, number | null] => [draw, draws[c]![i] ?? null])));
}

/**
 * A scalar's rank histogram per chain, as steps: x the bins' edges, each chain's counts
 * (its last repeated for the last edge), and the count every bin has when the chains agree.
 */
export function rankSeries(view: FitView, scalar: FitScalar): (Aligned & { uniform: number }) | undefined {
  const edges = view.rank_edges;
  if (edges === null || scalar.ranks === null) return undefined;
  const bins = edges.length - 1;
  return {
    x: [...edges],
    ys: scalar.ranks.map((counts) => [...counts, counts[bins - 1] ?? 0]),
    uniform: view.draws / bins,
  };
}

/** A scalar's autocorrelation per chain by lag. */
export function autocorrSeries(scalar: FitScalar): Aligned | undefined {
  if (scalar.autocorr === null) return undefined;
  const lags = Math.max(0, ...scalar.autocorr.map((chain) => chain.length));
  return { x: Array.from({ length: lags }, (_, i) => i), ys: scalar.autocorr.map((chain) => [...chain]) };
}

export interface PairData {
  /** Per chain its draws' `[x, y]`, divergent ones excluded; the divergent ones of all chains last. */
  points: Aligned;
  chains: number;
  divergent: number;
  /** Kept draws in all (divergent ones included). */
  total: number;
}

/** The pair plot of two scalars: a scatter per chain, and the divergent draws as one more series. */
export function pairData(view: FitView, a: FitScalar, b: FitScalar): PairData | undefined {
  if (a.draws === null || b.draws === null) return undefined;
  const chains: [number, number][][] = [];
  const divergent: [number, number][] = [];
  let total = 0;
  view.draw_index.forEach((index, c) => {
    const own: [number, number][] = [];
    index.forEach((_, i) => {
      const x = a.draws![c]![i];
      const y = b.draws![c]![i];
      if (x === null || x === undefined || y === null || y === undefined) return;
      total += 1;
      (view.diverging[c]![i] ? divergent : own).push([x, y]);
    });
    chains.push(own);
  });
  return { points: scatterPoints([...chains, divergent]), chains: chains.length, divergent: divergent.length, total };
}

/** Evenly spaced grid of `count` points over the values, widened by a bandwidth each side. */
export function grid(values: readonly number[], pad: number, count = 128): number[] {
  if (values.length === 0) return [];
  let low = Math.min(...values) - pad;
  let high = Math.max(...values) + pad;
  if (!(high > low)) {
    low -= 1;
    high += 1;
  }
  return Array.from({ length: count }, (_, i) => low + ((high - low) * i) / (count - 1));
}

/** Silverman's rule of thumb (0.9 min(sd, IQR/1.34) n^-1/5), a small positive number for a flat sample. */
export function bandwidth(values: readonly number[]): number {
  const n = values.length;
  if (n < 2) return 1;
  const mean = values.reduce((s, v) => s + v, 0) / n;
  const sd = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1));
  const sorted = [...values].sort((a, b) => a - b);
  const quantile = (p: number): number => {
    const at = p * (n - 1);
    const low = Math.floor(at);
    return sorted[low]! + (sorted[Math.min(low + 1, n - 1)]! - sorted[low]!) * (at - low);
  };
  const spread = Math.min(sd, (quantile(0.75) - quantile(0.25)) / 1.34) || sd;
  const h = 0.9 * spread * n ** -0.2;
  return h > 0 && Number.isFinite(h) ? h : Math.abs(mean) * 0.01 || 1;
}

/** A Gaussian kernel density estimate of `values` at each point of `at` (it integrates to 1). */
export function kde(values: readonly number[], at: readonly number[], h = bandwidth(values)): number[] {
  const n = values.length;
  if (n === 0) return at.map(() => 0);
  const norm = 1 / (n * h * Math.sqrt(2 * Math.PI));
  return at.map((x) => {
    let sum = 0;
    for (const v of values) sum += Math.exp(-0.5 * ((x - v) / h) ** 2);
    return sum * norm;
  });
}

/** The energy plot: densities of the marginal energy and of the energy transitions, all chains pooled. */
export function energyDensities(view: FitView): Aligned | undefined {
  if (view.energy === null) return undefined;
  const marginal = view.energy.marginal.flat();
  const transition = view.energy.transition.flat();
  if (marginal.length < 2 || transition.length < 2) return undefined;
  const hm = bandwidth(marginal);
  const ht = bandwidth(transition);
  const x = grid([...marginal, ...transition], 3 * Math.max(hm, ht));
  return { x, ys: [kde(marginal, x, hm), kde(transition, x, ht)] };
}

export interface PredictiveCurves {
  kind: PredictiveCheck["kind"];
  /** Values (continuous: a grid; discrete: the values seen, in order). */
  x: number[];
  /** Series: each replicated draw's, then their pooled one, then the observed one (when there is). */
  ys: (number | null)[][];
  replicated: number;
  observed: boolean;
  /** Replicated values beyond the x axis (continuous: it spans their middle 99% and the data). */
  beyond: number;
}

/** The share of replicated values a continuous check's axis may leave out, half each side. */
export const TAILS = 0.01;
/** Grid points of a continuous check's densities. */
const CHECK_GRID = 256;

/** Most distinct values a discrete check shows one by one; more are binned to whole-number bins. */
export const MAX_CATEGORIES = 60;

/**
 * A predictive check: the density (continuous) or the share of each value (discrete) of
 * every replicated draw, of all of them pooled, and of the observed data.
 */
export function predictiveCurves(check: PredictiveCheck): PredictiveCurves {
  const samples = [...check.replicated, check.replicated.flat(), ...(check.observed !== null ? [check.observed] : [])];
  const observed = check.observed !== null && check.observed.length > 0;
  if (check.kind === "discrete") {
    const { x, bin } = categories(samples.flat());
    const ys = samples.map((values) => shares(values, x, bin));
    return { kind: "discrete", x, ys, replicated: check.replicated.length, observed, beyond: 0 };
  }
  // Heavy tails (a prior predictive's, often) would squeeze the data into one grid cell: the
  // axis spans the replicated values' middle 99% and every observed value.
  const pooled = check.replicated.flat();
  const sorted = [...pooled].sort((a, b) => a - b);
  const seen = observed ? check.observed! : [];
  const low = Math.min(quantileOf(sorted, TAILS / 2), ...seen);
  const high = Math.max(quantileOf(sorted, 1 - TAILS / 2), ...seen);
  const inside = (v: number): boolean => v >= low && v <= high;
  const h = bandwidth([...pooled.filter(inside), ...seen]);
  const x = grid([low, high], Math.min(3 * h, (high - low) * 0.1 || 3 * h), CHECK_GRID);
  const ys = samples.map((values) => kde(values, x, h));
  return { kind: "continuous", x, ys, replicated: check.replicated.length, observed, beyond: pooled.filter((v) => !inside(v)).length };
}

/** The `p` quantile of sorted values (linear between neighbours). */
function quantileOf(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const at = p * (sorted.length - 1);
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (at - below);
}

/** The values a discrete check shows: each distinct value, or whole-number bins when there are many. */
function categories(values: readonly number[]): { x: number[]; bin: number } {
  const distinct = [...new Set(values)].sort((a, b) => a - b);
  if (distinct.length <= MAX_CATEGORIES) return { x: distinct, bin: 0 };
  const low = distinct[0]!;
  const high = distinct[distinct.length - 1]!;
  const bin = Math.ceil((high - low + 1) / MAX_CATEGORIES);
  return { x: Array.from({ length: Math.ceil((high - low + 1) / bin) }, (_, i) => low + i * bin), bin };
}

function shares(values: readonly number[], x: readonly number[], bin: number): number[] {
  const counts = new Array<number>(x.length).fill(0);
  const position = new Map(x.map((v, i) => [v, i]));
  const low = x[0] ?? 0;
  for (const v of values) {
    const i = bin === 0 ? position.get(v) : Math.floor((v - low) / bin);
    if (i !== undefined && i >= 0 && i < counts.length) counts[i]! += 1;
  }
  return values.length === 0 ? counts : counts.map((c) => c / values.length);
}

export interface ForestRow {
  /** "theta[3]", with "chain 2" when the rows are per chain. */
  label: string;
  /** The chain (0-based) a row is of; null for chains combined. */
  chain: number | null;
  interval: FitInterval;
}

/** The forest plot of a site: a row per element, or per element and chain. */
export function forestRows(view: FitView, site: FitSite, combined: boolean): ForestRow[] {
  const rows: ForestRow[] = [];
  for (const scalar of view.scalars.slice(site.first, site.first + site.count)) {
    if (combined || view.chains === 1) {
      rows.push({ label: scalar.label, chain: null, interval: scalar.intervals.combined });
    } else {
      scalar.intervals.chains.forEach((interval, chain) => rows.push({ label: scalar.label, chain, interval }));
    }
  }
  return rows;
}

/** The value range the rows' intervals span (a unit around a single value). */
export function forestRange(rows: readonly ForestRow[]): [number, number] {
  const values = rows.flatMap((row) => row.interval.filter((v): v is number => v !== null));
  if (values.length === 0) return [0, 1];
  const low = Math.min(...values);
  const high = Math.max(...values);
  const pad = (high - low) * 0.05 || Math.abs(low) * 0.1 || 1;
  return [low - pad, high + pad];
}

/** "E-BFMI: chain 1 0.45 · chain 2 0.25 (under 0.3)". */
export function bfmiLine(view: FitView, threshold = 0.3): string {
  if (view.energy === null) return "";
  const parts = view.energy.bfmi.map((v, c) => `chain ${c + 1} ${v === null ? "n/a" : Number(v.toPrecision(3))}${v !== null && v < threshold ? " (under 0.3)" : ""}`);
  return `E-BFMI: ${parts.join(" · ")}`;
}

/** What the server left out of the view, in a line; "" when it sent everything. */
export function boundsLine(view: FitView): string {
  const { bounds } = view;
  const parts: string[] = [];
  if (bounds.shown < bounds.scalars) {
    parts.push(`${bounds.shown} of ${bounds.scalars} scalars are in the view (qvr plot --var draws the others)`);
  }
  if (bounds.with_draws < bounds.shown) {
    parts.push(`the first ${bounds.with_draws} have their draws (for trace and pair plots)`);
  }
  if (bounds.points > 0 && bounds.points < view.draws) {
    parts.push(`${bounds.points} of ${view.draws} draws a chain are plotted (every divergent one among them)`);
  }
  return parts.join("; ");
}
