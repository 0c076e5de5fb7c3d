/**
 * The run summary as JSON for the output channel: one line per field, so a
 * 500-step loss series stays one line instead of five hundred.
 */
export function formatSummary(summary: unknown): string {
  if (typeof summary !== "object" || summary === null || Array.isArray(summary)) {
    return JSON.stringify(summary, null, 2);
  }
  const fields = Object.entries(summary).map(([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  return fields.length === 0 ? "{}" : `{\n${fields.join(",\n")}\n}`;
}

const COLUMNS: readonly [string, string][] = [
  ["mean", "mean"],
  ["sd", "sd"],
  ["5%", "q5"],
  ["50%", "q50"],
  ["95%", "q95"],
  ["ess_bulk", "ess_bulk"],
  ["ess_tail", "ess_tail"],
  ["r_hat", "r_hat"],
];

interface PosteriorRow {
  site: string;
  label: string;
  [column: string]: unknown;
}

interface PosteriorSite {
  size?: number;
  shown?: number;
  r_hat_max?: number | null;
  ess_bulk_min?: number | null;
  ess_tail_min?: number | null;
}

interface Posterior {
  rows?: PosteriorRow[];
  sites?: Record<string, PosteriorSite>;
  warnings?: { message: string; remedy: string }[];
}

function cell(key: string, value: unknown): string {
  if (typeof value !== "number" || !Number.isFinite(value)) return "n/a";
  if (key.startsWith("ess")) return value.toFixed(0);
  if (key === "r_hat") return value.toFixed(3);
  return Number(value.toPrecision(3)).toString();
}

/**
 * The posterior table of a run's summary (`summary.posterior`, what `qvr run`
 * prints): a row per site element shown, a line for a site's other elements,
 * then each warning with its remedy. Empty when the run has no posterior.
 */
export function formatPosterior(summary: unknown): string {
  if (typeof summary !== "object" || summary === null) return "";
  const posterior = (summary as { posterior?: unknown }).posterior;
  if (typeof posterior !== "object" || posterior === null) return "";
  const { rows = [], sites = {}, warnings = [] } = posterior as Posterior;
  const columns = COLUMNS.filter(([, key]) => rows.some((row) => key in row));
  const cells = rows.map((row) => [row.label, ...columns.map(([, key]) => cell(key, row[key]))]);
  const header = ["", ...columns.map(([title]) => title)];
  const widths = header.map((_, i) => Math.max(...[header, ...cells].map((c) => (c[i] ?? "").length)));
  const line = (values: string[]) =>
    `  ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0))).join("  ")}`.trimEnd();
  const out = rows.length > 0 ? [line(header)] : [];
  for (const [name, site] of Object.entries(sites)) {
    rows.forEach((row, i) => {
      const values = cells[i];
      if (row.site === name && values !== undefined) out.push(line(values));
    });
    const hidden = (site.size ?? 0) - (site.shown ?? 0);
    if (hidden > 0) {
      const worst =
        site.r_hat_max !== undefined
          ? `: worst of all ${site.size}: r_hat ${cell("r_hat", site.r_hat_max)}, ess_bulk ${cell("ess", site.ess_bulk_min)}, ess_tail ${cell("ess", site.ess_tail_min)}`
          : "";
      out.push(`  ... ${hidden} more elements of ${name}${worst}`);
    }
  }
  for (const warning of warnings) {
    out.push(`  warning: ${warning.message}`, `    remedy: ${warning.remedy}`);
  }
  if (rows.length > 0 && warnings.length === 0 && columns.some(([, key]) => key === "r_hat")) {
    out.push("  no convergence warnings");
  }
  return out.join("\n");
}
