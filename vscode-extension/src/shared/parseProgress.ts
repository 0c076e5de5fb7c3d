/**
 * Checks what the server sends about a run - `qvr/inferenceProgress` and the
 * summary's posterior - before the extension or a webview acts on it. Whatever is
 * malformed is dropped (a point, a trace, a row, the whole `live` block); nothing
 * throws, and sizes are bounded so a confused server cannot flood the view.
 */
import { POSTERIOR_COLUMNS } from "./posteriorTable";
import type {
  FitWarning,
  InferenceProgress,
  LiveDraws,
  LossPoint,
  Posterior,
  PosteriorRow,
  PosteriorSite,
  TracePlot,
  TracePoint,
} from "./protocol";
import { fields, isNatural, isFiniteNumber, text } from "./fields";

/** The settings allow at most 64 chains. */
export const MAX_CHAINS = 64;
/** The server sends the first 8 scalars of the summary. */
export const MAX_TRACES = 8;
/** The server thins each chain's trace to 200 points; more are thinned here. */
export const MAX_TRACE_POINTS = 200;
/** A dozen rows per site; a model with a hundred sites still fits. */
export const MAX_ROWS = 2000;
const MAX_TEXT = 2000;
const MAX_LABEL = 200;

/** A statistic: a finite number, or null for anything else (the server's NaN). */
function statistic(value: unknown): number | null {
  return isFiniteNumber(value) ? value : null;
}

/** At most `limit` evenly spaced items, the first and the last always among them. */
export function thin<T>(items: readonly T[], limit: number): T[] {
  const n = items.length;
  if (n <= limit) return [...items];
  if (limit < 2) return items.slice(n - Math.max(limit, 0));
  const picks = new Set<number>();
  for (let i = 0; i < limit; i++) picks.add(Math.round((i * (n - 1)) / (limit - 1)));
  return [...picks].sort((a, b) => a - b).map((i) => items[i] as T);
}

/** The params of `qvr/inferenceProgress`; undefined when they do not name a run. */
export function parseInferenceProgress(raw: unknown): InferenceProgress | undefined {
  const message = fields(raw);
  if (message === undefined) return undefined;
  const { uri, runId, method, total, points, done, live } = message;
  if (typeof uri !== "string" || !(typeof runId === "string" || isFiniteNumber(runId))) return undefined;
  const progress: InferenceProgress = {
    uri,
    runId,
    method: text(method, MAX_LABEL) ?? "",
    total: isFiniteNumber(total) && total >= 0 ? total : 0,
    points: Array.isArray(points) ? points.flatMap((p) => lossPoint(p) ?? []) : [],
    done: done === true,
  };
  const parsedLive = live === undefined ? undefined : parseLiveDraws(live);
  if (parsedLive !== undefined) progress.live = parsedLive;
  return progress;
}

function lossPoint(value: unknown): [LossPoint] | undefined {
  if (!Array.isArray(value) || value.length < 2 || !isFiniteNumber(value[0])) return undefined;
  if (value[1] !== null && typeof value[1] !== "number") return undefined;
  return [[value[0], statistic(value[1])]];
}

/** A NUTS run's `live` block; undefined when its chains, warmup or draws are malformed. */
export function parseLiveDraws(raw: unknown): LiveDraws | undefined {
  const live = fields(raw);
  if (live === undefined) return undefined;
  const { chains, warmup, draws, traces, posterior } = live;
  if (!isNatural(chains) || chains < 1 || chains > MAX_CHAINS || !isNatural(warmup)) return undefined;
  if (!Array.isArray(draws) || draws.length !== chains || !draws.every(isNatural)) return undefined;
  const plots: TracePlot[] = [];
  for (const trace of Array.isArray(traces) ? traces : []) {
    const plot = tracePlot(trace, chains);
    if (plot !== undefined) plots.push(plot);
    if (plots.length === MAX_TRACES) break;
  }
  return { chains, warmup, draws: [...draws], traces: plots, posterior: parsePosterior(posterior) ?? null };
}

function tracePlot(raw: unknown, chains: number): TracePlot | undefined {
  const plot = fields(raw);
  const label = text(plot?.label, MAX_LABEL);
  if (plot === undefined || label === undefined || !Array.isArray(plot.chains)) return undefined;
  const lines = plot.chains.slice(0, chains).map((line: unknown) => {
    const points = Array.isArray(line) ? line.flatMap((p) => tracePoint(p) ?? []) : [];
    return thin(points, MAX_TRACE_POINTS);
  });
  return { label, chains: lines };
}

function tracePoint(value: unknown): [TracePoint] | undefined {
  if (!Array.isArray(value) || value.length < 2) return undefined;
  const [draw, y] = value as unknown[];
  if (!isFiniteNumber(draw) || draw < 0 || (y !== null && typeof y !== "number")) return undefined;
  return [[draw, statistic(y)]];
}

/** `summary.posterior` (or `live.posterior`); undefined when it is not an object. */
export function parsePosterior(raw: unknown): Posterior | undefined {
  const posterior = fields(raw);
  if (posterior === undefined) return undefined;
  const rows: PosteriorRow[] = [];
  for (const row of Array.isArray(posterior.rows) ? posterior.rows : []) {
    const parsed = posteriorRow(row);
    if (parsed !== undefined) rows.push(parsed);
    if (rows.length === MAX_ROWS) break;
  }
  const sites = Object.fromEntries(
    Object.entries(fields(posterior.sites) ?? {}).flatMap(([name, site]) => {
      const parsed = posteriorSite(site);
      return parsed === undefined ? [] : [[name.slice(0, MAX_LABEL), parsed]];
    }),
  );
  const warnings = (Array.isArray(posterior.warnings) ? posterior.warnings : []).flatMap((w: unknown) => {
    const parsed = fitWarning(w);
    return parsed === undefined ? [] : [parsed];
  });
  const parsed: Posterior = {
    chains: isNatural(posterior.chains) ? posterior.chains : 0,
    draws: isNatural(posterior.draws) ? posterior.draws : 0,
    rows,
    sites,
    warnings,
  };
  const { divergences, divergences_per_chain, tree_depth_saturated, max_tree_depth, e_bfmi } = posterior;
  if (isNatural(divergences)) parsed.divergences = divergences;
  if (Array.isArray(divergences_per_chain) && divergences_per_chain.every(isNatural)) {
    parsed.divergences_per_chain = divergences_per_chain.slice(0, MAX_CHAINS);
  }
  if (isNatural(tree_depth_saturated)) parsed.tree_depth_saturated = tree_depth_saturated;
  if (isNatural(max_tree_depth)) parsed.max_tree_depth = max_tree_depth;
  if (Array.isArray(e_bfmi)) parsed.e_bfmi = e_bfmi.slice(0, MAX_CHAINS).map(statistic);
  return parsed;
}

function posteriorRow(raw: unknown): PosteriorRow | undefined {
  const row = fields(raw);
  const site = text(row?.site, MAX_LABEL);
  if (row === undefined || site === undefined) return undefined;
  const parsed: PosteriorRow = {
    site,
    label: text(row.label, MAX_LABEL) ?? site,
    index: Array.isArray(row.index) && row.index.every(isNatural) ? [...row.index] : [],
  };
  for (const [, key] of POSTERIOR_COLUMNS) {
    if (key in row) parsed[key] = statistic(row[key]);
  }
  return parsed;
}

function posteriorSite(raw: unknown): PosteriorSite | undefined {
  const site = fields(raw);
  if (site === undefined) return undefined;
  const size = isNatural(site.size) ? site.size : 0;
  const parsed: PosteriorSite = {
    shape: Array.isArray(site.shape) && site.shape.every(isNatural) ? [...site.shape] : [],
    size,
    shown: isNatural(site.shown) ? Math.min(site.shown, size) : size,
  };
  for (const key of ["r_hat_max", "ess_bulk_min", "ess_tail_min"] as const) {
    if (key in site) parsed[key] = statistic(site[key]);
  }
  return parsed;
}

function fitWarning(raw: unknown): FitWarning | undefined {
  const warning = fields(raw);
  const message = text(warning?.message, MAX_TEXT);
  if (message === undefined) return undefined;
  return { kind: text(warning?.kind, MAX_LABEL) ?? "", message, remedy: text(warning?.remedy, MAX_TEXT) ?? "" };
}
