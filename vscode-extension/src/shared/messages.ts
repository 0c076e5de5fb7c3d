/**
 * Messages between the extension and its webviews. Everything that comes from a
 * webview is untrusted input: it is parsed into these types before it is acted on.
 */
import {
  type AttentionMap,
  type DiagramFormat,
  type DiagramNode,
  type FitView,
  type InferenceProgress,
  type Posterior,
  type Range,
  isDiagramFormat,
  isRange,
} from "./protocol";

// Extension -> diagram webview.
export type ToDiagramView =
  | { type: "diagram"; uri: string; format: DiagramFormat; text: string; nodes: DiagramNode[] }
  | { type: "status"; level: "info" | "error"; message: string };

// Diagram webview -> extension.
export type FromDiagramView =
  | { type: "ready" }
  | { type: "reveal"; range: Range }
  | { type: "format"; format: DiagramFormat }
  | { type: "renderError"; message: string };

// Extension -> run webview (the loss curve; a NUTS run's traces; the posterior table;
// the plots after a fit; the attention heatmaps).
export type ToLossView =
  | { type: "start"; title: string; method: string; total: number }
  | { type: "progress"; progress: InferenceProgress }
  /**
   * `summary`: the run's summary as JSON text; `posterior`: its table's data (null when it
   * has none); `attention`: each attention's weights for the first example (absent or
   * empty: none); `view`: the draws for the plots after a fit (absent or null: none), or
   * `viewError` when the server could not compute them.
   */
  | {
      type: "finished";
      summary: string;
      posterior: Posterior | null;
      attention?: AttentionMap[];
      view?: FitView | null;
      viewError?: string;
    }
  | { type: "failed"; message: string };

// Run webview -> extension.
export type FromLossView = { type: "ready" };

const MAX_ERROR_LENGTH = 2000;

/** Parses a message from the diagram webview; anything malformed yields undefined. */
export function parseDiagramViewMessage(raw: unknown): FromDiagramView | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const message = raw as Record<string, unknown>;
  switch (message.type) {
    case "ready":
      return { type: "ready" };
    case "reveal":
      return isRange(message.range) ? { type: "reveal", range: message.range } : undefined;
    case "format":
      return isDiagramFormat(message.format) ? { type: "format", format: message.format } : undefined;
    case "renderError":
      return typeof message.message === "string"
        ? { type: "renderError", message: message.message.slice(0, MAX_ERROR_LENGTH) }
        : undefined;
    default:
      return undefined;
  }
}

export function parseLossViewMessage(raw: unknown): FromLossView | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  return (raw as Record<string, unknown>).type === "ready" ? { type: "ready" } : undefined;
}

/** What the diagram panel does in response to its webview. */
export interface DiagramViewActions {
  resend(): void;
  reveal(range: Range): void;
  changeFormat(format: DiagramFormat): void;
  reportRenderError(message: string): void;
}

/** Dispatches one raw webview message; returns whether it was understood. */
export function handleDiagramViewMessage(raw: unknown, actions: DiagramViewActions): boolean {
  const message = parseDiagramViewMessage(raw);
  if (message === undefined) return false;
  switch (message.type) {
    case "ready":
      actions.resend();
      break;
    case "reveal":
      actions.reveal(message.range);
      break;
    case "format":
      actions.changeFormat(message.format);
      break;
    case "renderError":
      actions.reportRenderError(message.message);
      break;
  }
  return true;
}
