/**
 * Checks a run result's `view` (qvr_core/posterior/view.py) before the run view draws it.
 * As with the progress (parseProgress.ts), what is malformed is dropped - a scalar, a
 * chain's numbers, a predictive check - and sizes are bounded above the server's own
 * bounds, so a confused server cannot flood the webview.
 */
import { MAX_CHAINS } from "./parseProgress";
import type {
  ComparisonRow,
  FitBounds,
  FitComparison,
  FitEnergy,
  FitInterval,
  FitScalar,
  FitSensitivity,
  FitSite,
  FitView,
  PredictiveCheck,
  ViewWarning,
} from "./protocol";
import { fields, isNatural, isFiniteNumber, text } from "./fields";

/** The server sends at most 1,000 scalars (`MAX_SCALARS`). */
export const MAX_FIT_SCALARS = 2000;
/** Draws per chain: the server's 500 evenly spaced ones and up to as many divergent ones. */
export const MAX_FIT_POINTS = 1000;
/** Autocorrelation lags (the server: 0 to 100). */
export const MAX_LAGS = 201;
/** Rank histogram bins (twice Sturges' formula: 27 for 10,000 draws a chain). */
export const MAX_RANK_BINS = 64;
/** Replicated draws and values per draw of a predictive check (the server: 50 and 1,000). */
export const MAX_PPC_DRAWS = 100;
export const MAX_PPC_VALUES = 2000;
export const MAX_PPC_SITES = 64;
/** Runs in a comparison: the worker keeps at most 8 (`kept_runs.MAX_KEPT`). */
export const MAX_COMPARISON_ROWS = 8;
const MAX_COMPARISON_WARNINGS = 64;
/** Rows of the sensitivity table: the server computes it for at most 200 scalars. */
export const MAX_SENSITIVITY_ROWS = 400;
const MAX_TEXT = 2000;
const MAX_LABEL = 200;

/** Numbers, null for anything that is not a finite number; undefined when `raw` is not a list. */
function statistics(raw: unknown, limit: number): (number | null)[] | undefined {
  return Array.isArray(raw) ? raw.slice(0, limit).map((v) => (isFiniteNumber(v) ? v : null)) : undefined;
}

/** Finite numbers only (the ones that are not are left out); undefined when `raw` is not a list. */
function finite(raw: unknown, limit: number): number[] | undefined {
  return Array.isArray(raw) ? raw.slice(0, limit).filter(isFiniteNumber) : undefined;
}

/** One list per chain, `chains` of them, each parsed by `item`; undefined when one is malformed. */
function perChain<T>(raw: unknown, chains: number, item: (value: unknown) => T | undefined): T[] | undefined {
  if (!Array.isArray(raw) || raw.length !== chains) return undefined;
  const out: T[] = [];
  for (const value of raw) {
    const parsed = item(value);
    if (parsed === undefined) return undefined;
    out.push(parsed);
  }
  return out;
}

/** The error the server sent in place of a view (`{"error": ...}`), if it did. */
export function fitViewError(raw: unknown): string | undefined {
  const view = fields(raw);
  return view !== undefined && typeof view.error === "string" ? view.error.slice(0, MAX_TEXT) : undefined;
}

/** A result's `view`; undefined when it is absent or does not describe chains of draws. */
export function parseFitView(raw: unknown): FitView | undefined {
  const view = fields(raw);
  if (view === undefined) return undefined;
  const { chains, draws } = view;
  if (!isNatural(chains) || chains < 1 || chains > MAX_CHAINS || !isNatural(draws)) return undefined;
  const index = perChain(view.draw_index, chains, (v) => {
    const parsed = finite(v, MAX_FIT_POINTS);
    return parsed !== undefined && parsed.every(isNatural) ? parsed : undefined;
  });
  if (index === undefined) return undefined;
  const diverging =
    perChain(view.diverging, chains, (v) => (Array.isArray(v) ? v.slice(0, MAX_FIT_POINTS).map((f) => f === true) : undefined)) ??
    index.map((chain) => chain.map(() => false));
  const edges = finite(view.rank_edges, MAX_RANK_BINS + 1);
  const rankBins = edges !== undefined && edges.length >= 2 ? edges.length - 1 : 0;
  const scalars: FitScalar[] = [];
  for (const item of Array.isArray(view.scalars) ? view.scalars.slice(0, MAX_FIT_SCALARS) : []) {
    const parsed = fitScalar(item, index, rankBins);
    if (parsed !== undefined) scalars.push(parsed);
  }
  const parsed: FitView = {
    method: text(view.method, MAX_LABEL) ?? "",
    group: text(view.group, MAX_LABEL) ?? "posterior",
    chains,
    draws,
    draw_index: index,
    diverging: diverging.map((flags, c) => index[c]!.map((_, i) => flags[i] === true)),
    divergences: isNatural(view.divergences) ? view.divergences : 0,
    rank_edges: rankBins > 0 ? edges! : null,
    hdi_prob: isFiniteNumber(view.hdi_prob) && view.hdi_prob > 0 && view.hdi_prob < 1 ? view.hdi_prob : 0.94,
    sites: fitSites(view.sites, scalars),
    scalars,
    energy: fitEnergy(view.energy, chains),
    ppc: (Array.isArray(view.ppc) ? view.ppc.slice(0, MAX_PPC_SITES) : []).flatMap((c: unknown) => predictiveCheck(c) ?? []),
    warnings: (Array.isArray(view.warnings) ? view.warnings : []).flatMap((w: unknown) => viewWarning(w) ?? []),
    bounds: fitBounds(view.bounds, scalars.length),
  };
  const note = text(view.ppc_note, MAX_TEXT);
  if (note !== undefined) parsed.ppc_note = note;
  const comparison = parseComparison(view.comparison);
  if (comparison !== undefined) parsed.comparison = comparison;
  const comparisonNote = text(view.comparison_note, MAX_TEXT);
  if (comparisonNote !== undefined) parsed.comparison_note = comparisonNote;
  const sensitivity = parseSensitivity(view.sensitivity);
  if (sensitivity !== undefined) parsed.sensitivity = sensitivity;
  const sensitivityNote = text(view.sensitivity_note, MAX_TEXT);
  if (sensitivityNote !== undefined) parsed.sensitivity_note = sensitivityNote;
  return parsed;
}

/**
 * The view's `sensitivity`; undefined when absent or malformed (no rows, too many). A row
 * without its label is dropped; a sensitivity that is not a finite number is null; a
 * diagnosis without its remedy is no diagnosis.
 */
export function parseSensitivity(raw: unknown): FitSensitivity | undefined {
  const found = fields(raw);
  if (found === undefined || !Array.isArray(found.rows) || found.rows.length === 0 || found.rows.length > MAX_SENSITIVITY_ROWS) {
    return undefined;
  }
  const remedies: Record<string, string> = {};
  for (const [diagnosis, remedy] of Object.entries(fields(found.remedies) ?? {}).slice(0, 8)) {
    const said = text(remedy, MAX_TEXT);
    if (said !== undefined && diagnosis.length <= MAX_LABEL) remedies[diagnosis] = said;
  }
  const number = (value: unknown): number | null => (isFiniteNumber(value) ? value : null);
  const rows = found.rows.flatMap((item: unknown) => {
    const row = fields(item);
    const label = text(row?.label, MAX_LABEL);
    if (row === undefined || label === undefined) return [];
    const diagnosis = text(row.diagnosis, MAX_LABEL);
    return [{ label, prior: number(row.prior), likelihood: number(row.likelihood), diagnosis: diagnosis !== undefined && diagnosis in remedies ? diagnosis : null }];
  });
  if (rows.length === 0) return undefined;
  const priors = (Array.isArray(found.priors) ? found.priors.slice(0, MAX_SENSITIVITY_ROWS) : []).flatMap((p: unknown) => {
    const name = text(p, MAX_LABEL);
    return name !== undefined ? [name] : [];
  });
  return {
    threshold: isFiniteNumber(found.threshold) && found.threshold > 0 ? found.threshold : 0.05,
    priors,
    note: text(found.note, MAX_TEXT) ?? null,
    rows,
    remedies,
  };
}

/**
 * The view's `comparison`; undefined when it is absent or malformed: an unknown criterion,
 * no rows or more than `MAX_COMPARISON_ROWS`, a row without its name, rank or flags, two rows
 * of one name. A number that is not finite is null (shown "n/a"); a warning without its
 * message or remedy is left out.
 */
export function parseComparison(raw: unknown): FitComparison | undefined {
  const comparison = fields(raw);
  if (comparison === undefined || (comparison.ic !== "loo" && comparison.ic !== "waic")) return undefined;
  const { rows } = comparison;
  if (!Array.isArray(rows) || rows.length === 0 || rows.length > MAX_COMPARISON_ROWS) return undefined;
  const parsed: ComparisonRow[] = [];
  for (const item of rows) {
    const row = comparisonRow(item);
    if (row === undefined || parsed.some((r) => r.name === row.name)) return undefined;
    parsed.push(row);
  }
  const warnings = (Array.isArray(comparison.warnings) ? comparison.warnings.slice(0, MAX_COMPARISON_WARNINGS) : []).flatMap((w: unknown) => {
    const warning = fields(w);
    const message = text(warning?.message, MAX_TEXT);
    const remedy = text(warning?.remedy, MAX_TEXT);
    return message !== undefined && remedy !== undefined ? [{ code: text(warning?.code, MAX_LABEL) ?? "", message, remedy }] : [];
  });
  const notes = (Array.isArray(comparison.notes) ? comparison.notes.slice(0, MAX_COMPARISON_WARNINGS) : []).flatMap((n: unknown) => {
    const note = text(n, MAX_TEXT);
    return note !== undefined ? [note] : [];
  });
  const out: FitComparison = { ic: comparison.ic, scale: text(comparison.scale, MAX_LABEL) ?? "log", rows: parsed, warnings, notes };
  const current = text(comparison.current, MAX_LABEL);
  if (current !== undefined && parsed.some((r) => r.name === current)) out.current = current;
  return out;
}

function comparisonRow(raw: unknown): ComparisonRow | undefined {
  const row = fields(raw);
  const name = text(row?.name, MAX_LABEL);
  if (row === undefined || name === undefined || name === "" || !isNatural(row.rank) || typeof row.warning !== "boolean") return undefined;
  const number = (value: unknown): number | null => (isFiniteNumber(value) ? value : null);
  return {
    name,
    rank: row.rank,
    elpd: number(row.elpd),
    se: number(row.se),
    p: number(row.p),
    d_elpd: number(row.d_elpd),
    dse: number(row.dse),
    weight: number(row.weight),
    warning: row.warning,
    pareto_k_bad: isNatural(row.pareto_k_bad) ? row.pareto_k_bad : 0,
  };
}

function fitScalar(raw: unknown, index: number[][], rankBins: number): FitScalar | undefined {
  const scalar = fields(raw);
  const label = text(scalar?.label, MAX_LABEL);
  if (scalar === undefined || label === undefined) return undefined;
  const chains = index.length;
  const draws = perChain(scalar.draws, chains, (v) => statistics(v, MAX_FIT_POINTS));
  const ranks = perChain(scalar.ranks, chains, (v) => {
    const counts = finite(v, MAX_RANK_BINS);
    return counts !== undefined && counts.length === rankBins && counts.every(isNatural) ? counts : undefined;
  });
  const autocorr = perChain(scalar.autocorr, chains, (v) => statistics(v, MAX_LAGS));
  const intervals = fields(scalar.intervals);
  const perChainIntervals = perChain(intervals?.chains, chains, (v) => interval(v));
  const combined = interval(intervals?.combined);
  if (perChainIntervals === undefined || combined === undefined) return undefined;
  return {
    label,
    site: text(scalar.site, MAX_LABEL) ?? label,
    index: Array.isArray(scalar.index) && scalar.index.every(isNatural) ? [...scalar.index] : [],
    // a chain's values go with its kept draws: the same count or none at all
    draws: draws !== undefined && draws.every((d, c) => d.length === index[c]!.length) ? draws : null,
    ranks: rankBins > 0 && ranks !== undefined ? ranks : null,
    autocorr: autocorr ?? null,
    intervals: { chains: perChainIntervals, combined },
  };
}

function interval(raw: unknown): FitInterval | undefined {
  const values = statistics(raw, 5);
  return values !== undefined && values.length === 5 ? values : undefined;
}

function fitSites(raw: unknown, scalars: readonly FitScalar[]): FitSite[] {
  const sites: FitSite[] = [];
  for (const item of Array.isArray(raw) ? raw.slice(0, MAX_FIT_SCALARS) : []) {
    const site = fields(item);
    const name = text(site?.name, MAX_LABEL);
    if (site === undefined || name === undefined) continue;
    const first = isNatural(site.first) ? Math.min(site.first, scalars.length) : scalars.length;
    const count = isNatural(site.count) ? Math.min(site.count, scalars.length - first) : 0;
    sites.push({
      name,
      shape: Array.isArray(site.shape) && site.shape.every(isNatural) ? [...site.shape] : [],
      size: isNatural(site.size) ? site.size : count,
      first,
      count,
      omitted: isNatural(site.omitted) ? site.omitted : 0,
    });
  }
  return sites;
}

function fitEnergy(raw: unknown, chains: number): FitEnergy | null {
  const energy = fields(raw);
  if (energy === undefined) return null;
  const marginal = perChain(energy.marginal, chains, (v) => finite(v, MAX_FIT_POINTS));
  const transition = perChain(energy.transition, chains, (v) => finite(v, MAX_FIT_POINTS));
  const bfmi = statistics(energy.bfmi, MAX_CHAINS);
  if (marginal === undefined || transition === undefined || bfmi === undefined) return null;
  return { marginal, transition, bfmi };
}

function predictiveCheck(raw: unknown): [PredictiveCheck] | undefined {
  const check = fields(raw);
  const site = text(check?.site, MAX_LABEL);
  if (check === undefined || site === undefined || !Array.isArray(check.replicated)) return undefined;
  const replicated: number[][] = [];
  for (const draw of check.replicated.slice(0, MAX_PPC_DRAWS)) {
    const values = finite(draw, MAX_PPC_VALUES);
    if (values !== undefined && values.length > 0) replicated.push(values);
  }
  if (replicated.length === 0) return undefined;
  return [
    {
      site,
      group: text(check.group, MAX_LABEL) ?? "posterior_predictive",
      kind: check.kind === "discrete" ? "discrete" : "continuous",
      size: isNatural(check.size) ? check.size : 0,
      draws: isNatural(check.draws) ? check.draws : replicated.length,
      observed: check.observed === null ? null : (finite(check.observed, MAX_PPC_VALUES) ?? null),
      replicated,
    },
  ];
}

function viewWarning(raw: unknown): [ViewWarning] | undefined {
  const warning = fields(raw);
  const message = text(warning?.message, MAX_TEXT);
  if (warning === undefined || message === undefined) return undefined;
  return [
    {
      kind: text(warning.kind, MAX_LABEL) ?? "",
      plot: text(warning.plot, MAX_LABEL) ?? "",
      message,
      remedy: text(warning.remedy, MAX_TEXT) ?? "",
    },
  ];
}

function fitBounds(raw: unknown, shown: number): FitBounds {
  const bounds = fields(raw) ?? {};
  const number = (key: string, fallback: number): number => (isNatural(bounds[key]) ? (bounds[key] as number) : fallback);
  return {
    max_points: number("max_points", 0),
    points: number("points", 0),
    scalars: number("scalars", shown),
    shown: number("shown", shown),
    with_draws: number("with_draws", shown),
  };
}
