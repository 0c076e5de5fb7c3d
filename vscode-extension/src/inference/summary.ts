import { parseAttention } from "../shared/attentionChart";
import { fitViewError, parseFitView } from "../shared/fitView";
import { parsePosterior } from "../shared/parseProgress";
import { posteriorTable, posteriorText } from "../shared/posteriorTable";
import type { AttentionMap, FitView, Posterior } from "../shared/protocol";

/**
 * The run summary as JSON for the output channel: one line per field, so a
 * 500-step loss series stays one line instead of five hundred. The attention
 * weights (thousands of numbers, drawn in the run view) are left out of it, and
 * so is the view's data (the draws the run view plots).
 */
export function formatSummary(summary: unknown): string {
  if (typeof summary !== "object" || summary === null || Array.isArray(summary)) {
    return JSON.stringify(summary, null, 2);
  }
  const fields = Object.entries(summary).filter(([key]) => key !== "view").map(
    ([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(key === "attention" ? withoutWeights(value) : value)}`,
  );
  return fields.length === 0 ? "{}" : `{\n${fields.join(",\n")}\n}`;
}

/**
 * The run in one line for the output channel, as `qvr run` ends: what ran on which data,
 * how long, its last loss, and why it stopped early (the whole summary is the run view's).
 */
export function describeRun(summary: unknown): string {
  if (typeof summary !== "object" || summary === null || Array.isArray(summary)) return "The run ended.";
  const s = summary as Record<string, unknown>;
  const method = typeof s.method === "string" ? s.method.toUpperCase() : "The run";
  const program = typeof s.program === "string" ? ` of ${s.program}` : "";
  const data = typeof s.data === "string" ? ` on ${s.data === "synthetic" ? "synthetic data" : s.data}` : "";
  const steps = typeof s.steps === "number" ? `${s.steps.toLocaleString("en-US")} steps` : "";
  const seconds = typeof s.seconds === "number" && Number.isFinite(s.seconds) ? `${s.seconds.toFixed(1)} s` : "";
  const took = [steps, seconds].filter((x) => x !== "").join(" in ");
  const losses = Array.isArray(s.losses) ? s.losses.filter((x): x is number => typeof x === "number" && Number.isFinite(x)) : [];
  const last = losses.at(-1);
  const loss = last !== undefined ? `, final loss ${Number(last.toPrecision(4))}` : "";
  const stopped = s.stopped === true ? " (stopped before its end)" : "";
  return `${method}${program}${data}${took !== "" ? `: ${took}` : ""}${loss}${stopped}.`;
}

function withoutWeights(attention: unknown): unknown {
  if (!Array.isArray(attention)) return attention;
  return attention.map((entry: unknown) => {
    if (typeof entry !== "object" || entry === null) return entry;
    const { weights: _weights, tokens: _tokens, ...rest } = entry as Record<string, unknown>;
    return rest;
  });
}

/** The attention weights of a run's summary (`summary.attention`), checked; empty when it has none. */
export function summaryAttention(summary: unknown): AttentionMap[] {
  if (typeof summary !== "object" || summary === null) return [];
  return parseAttention((summary as { attention?: unknown }).attention);
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

/** The plots' data of a run's result (`result.view`), checked; or the server's reason it has none. */
export function summaryView(summary: unknown): { view: FitView | null; viewError?: string } {
  if (typeof summary !== "object" || summary === null) return { view: null };
  const raw = (summary as { view?: unknown }).view;
  const error = fitViewError(raw);
  return error !== undefined ? { view: null, viewError: error } : { view: parseFitView(raw) ?? null };
}
