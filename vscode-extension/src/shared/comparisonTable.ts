/**
 * The model comparison of the run view (`FitView.comparison`, from the worker's kept runs):
 * a row per run as `az.compare` ranks it, the current run's row marked, then the warnings
 * with their remedies. The model of the table; browser/loss/fit.ts renders it as DOM.
 */
import type { FitComparison } from "./protocol";

export interface ComparisonLine {
  rank: string;
  name: string;
  current: boolean;
  /** elpd, se, p, d_elpd, dse, weight: the columns between the name and the warning. */
  cells: string[];
  /** "⚠" with its reason when ArviZ flagged the estimate, else "". */
  warning: string;
  warningTitle: string;
}

export interface ComparisonTable {
  /** Column titles: rank, name, elpd_loo, se, p_loo, d_elpd, dse, weight, warning. */
  columns: string[];
  lines: ComparisonLine[];
  /** "PSIS-LOO, log scale: higher elpd is better" */
  caption: string;
  warnings: { code: string; message: string; remedy: string }[];
  notes: string[];
}

/** A number as `qvr compare` prints it: two decimals; "n/a" when there is none. */
export function formatComparisonCell(value: number | null): string {
  return value === null ? "n/a" : value.toFixed(2);
}

export function comparisonTable(comparison: FitComparison): ComparisonTable {
  const ic = comparison.ic;
  const what = ic === "loo" ? "PSIS-LOO" : "WAIC";
  const better = comparison.scale === "log" ? "higher elpd is better" : "lower is better";
  const lines = [...comparison.rows]
    .sort((a, b) => a.rank - b.rank)
    .map((row) => ({
      rank: String(row.rank),
      name: row.name,
      current: row.name === comparison.current,
      cells: [row.elpd, row.se, row.p, row.d_elpd, row.dse, row.weight].map(formatComparisonCell),
      warning: row.warning ? "⚠" : "",
      warningTitle: row.warning
        ? `${what} is unreliable for ${row.pareto_k_bad} observation${row.pareto_k_bad === 1 ? "" : "s"} of this run (see the warnings below)`
        : "",
    }));
  return {
    columns: ["rank", "name", `elpd_${ic}`, "se", `p_${ic}`, "d_elpd", "dse", "weight", "warning"],
    lines,
    caption: `${what} of the runs of this session on the same data (${comparison.scale} scale: ${better}; weight: stacking)`,
    warnings: comparison.warnings,
    notes: comparison.notes,
  };
}
