/**
 * The posterior table of a run, as `qvr run` prints it (qvr_core/cli/fit_table.py):
 * a row per site element shown, a line for each site's other elements, then the
 * warnings with their remedies. One model of the table, two renderings: text for
 * the output channel (`posteriorText`) and HTML in the run view (browser/loss).
 */
import type { LiveDraws, Posterior, PosteriorColumn, PosteriorSite } from "./protocol";

/** Column titles and the row keys they show, in the table's order. */
export const POSTERIOR_COLUMNS: readonly (readonly [title: string, key: PosteriorColumn])[] = [
  ["mean", "mean"],
  ["sd", "sd"],
  ["5%", "q5"],
  ["50%", "q50"],
  ["95%", "q95"],
  ["ess_bulk", "ess_bulk"],
  ["ess_tail", "ess_tail"],
  ["r_hat", "r_hat"],
];

export type TableLine =
  | { kind: "row"; site: string; label: string; cells: string[] }
  /** `text` is "29 more elements of w: worst of all 30: r_hat 1.200, ...". */
  | { kind: "more"; site: string; hidden: number; text: string };

export interface PosteriorTable {
  /** Titles of the columns present (SVI's table has no ess or r_hat). */
  columns: string[];
  lines: TableLine[];
  warnings: { message: string; remedy: string }[];
  /** "no convergence warnings" when the table has R-hat and nothing to warn about. */
  verdict?: string;
}

/** A cell as the command line prints it: ESS whole, R-hat to three decimals, else 3 significant digits. */
export function formatCell(key: string, value: unknown): string {
  if (typeof value !== "number" || !Number.isFinite(value)) return "n/a";
  if (key.startsWith("ess")) return value.toFixed(0);
  if (key === "r_hat") return value.toFixed(3);
  return Number(value.toPrecision(3)).toString();
}

function moreText(name: string, site: PosteriorSite, hidden: number): string {
  const worst =
    site.r_hat_max !== undefined
      ? `: worst of all ${site.size}: r_hat ${formatCell("r_hat", site.r_hat_max)}, ess_bulk ${formatCell("ess", site.ess_bulk_min)}, ess_tail ${formatCell("ess", site.ess_tail_min)}`
      : "";
  return `${hidden} more elements of ${name}${worst}`;
}

export function posteriorTable(posterior: Posterior): PosteriorTable {
  const { rows, sites, warnings } = posterior;
  const present = POSTERIOR_COLUMNS.filter(([, key]) => rows.some((row) => key in row));
  const lines: TableLine[] = [];
  for (const [name, site] of Object.entries(sites)) {
    for (const row of rows) {
      if (row.site !== name) continue;
      lines.push({ kind: "row", site: name, label: row.label, cells: present.map(([, key]) => formatCell(key, row[key])) });
    }
    const hidden = site.size - site.shown;
    if (hidden > 0) lines.push({ kind: "more", site: name, hidden, text: moreText(name, site, hidden) });
  }
  const table: PosteriorTable = {
    columns: present.map(([title]) => title),
    lines,
    warnings: warnings.map(({ message, remedy }) => ({ message, remedy })),
  };
  if (rows.length > 0 && warnings.length === 0 && present.some(([, key]) => key === "r_hat")) {
    table.verdict = "no convergence warnings";
  }
  return table;
}

/** The table as aligned text, each line indented by two spaces; empty without rows or warnings. */
export function posteriorText(table: PosteriorTable): string {
  const rows = table.lines.flatMap((line) => (line.kind === "row" ? [[line.label, ...line.cells]] : []));
  const header = ["", ...table.columns];
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((c) => (c[i] ?? "").length)));
  const aligned = (values: string[]): string =>
    `  ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0))).join("  ")}`.trimEnd();
  const out = rows.length > 0 ? [aligned(header)] : [];
  for (const line of table.lines) {
    out.push(line.kind === "row" ? aligned([line.label, ...line.cells]) : `  ... ${line.text}`);
  }
  for (const warning of table.warnings) out.push(`  warning: ${warning.message}`, `    remedy: ${warning.remedy}`);
  if (table.verdict !== undefined) out.push(`  ${table.verdict}`);
  return out.join("\n");
}

/** "draws per chain: 120, 118, 0, 0 (warmup 500)". */
export function drawsLine(live: LiveDraws): string {
  return `draws per chain: ${live.draws.join(", ")} (warmup ${live.warmup})`;
}

/** The sampler's counts in one line ("divergences 0 · max tree depth hit 0 of 400 · E-BFMI 1.02, 0.97"); undefined for SVI. */
export function samplerLine(posterior: Posterior): string | undefined {
  const parts: string[] = [];
  if (posterior.divergences !== undefined) parts.push(`divergences ${posterior.divergences}`);
  if (posterior.tree_depth_saturated !== undefined) {
    const depth = posterior.max_tree_depth !== undefined ? ` ${posterior.max_tree_depth}` : "";
    parts.push(`max tree depth${depth} hit ${posterior.tree_depth_saturated} of ${posterior.chains * posterior.draws}`);
  }
  if (posterior.e_bfmi !== undefined && posterior.e_bfmi.length > 0) {
    parts.push(`E-BFMI ${posterior.e_bfmi.map((v) => (v === null ? "n/a" : Number(v.toPrecision(3)).toString())).join(", ")}`);
  }
  return parts.length > 0 ? parts.join(" · ") : undefined;
}
