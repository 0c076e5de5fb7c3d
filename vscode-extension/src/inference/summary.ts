import { parsePosterior } from "../shared/parseProgress";
import { posteriorTable, posteriorText } from "../shared/posteriorTable";
import type { Posterior } from "../shared/protocol";

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

/** The posterior of a run's summary (`summary.posterior`), checked; undefined when it has none. */
export function summaryPosterior(summary: unknown): Posterior | undefined {
  if (typeof summary !== "object" || summary === null) return undefined;
  return parsePosterior((summary as { posterior?: unknown }).posterior);
}

/**
 * The posterior table of a run's summary, as `qvr run` prints it: a row per site
 * element shown, a line for a site's other elements, then each warning with its
 * remedy. Empty when the run has no posterior.
 */
export function formatPosterior(summary: unknown): string {
  const posterior = summaryPosterior(summary);
  return posterior === undefined ? "" : posteriorText(posteriorTable(posterior));
}
