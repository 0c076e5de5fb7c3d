/**
 * The language server's JSON contract (docs/lsp.md, "The contract"), shared by the
 * extension, the webview bundles and the tests. The server's commands, request and
 * notification payloads here name the fields qvr_lsp/protocol/contract.py declares
 * (tests/lsp/test_protocol_contract.py compares them): a field the client does not
 * read is still listed, optional.
 */

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export type DiagramFormat = "mermaid" | "dot";
export const DIAGRAM_FORMATS: readonly DiagramFormat[] = ["mermaid", "dot"];

/** Arguments of `workspace/executeCommand` `qvr.diagram`. */
export interface DiagramParams {
  uri: string;
  name?: string;
  format: DiagramFormat;
}

/** A node of a `qvr.diagram` result. */
export interface DiagramNode {
  id: string;
  label: string;
  /** What the node is (input, morphism, sample, ...); not read by the client. */
  kind?: string;
  type: string;
  /** The dimensions of its type ("" when unknown); not read by the client. */
  dims?: string;
  range: Range | null;
  /** "QVRnnn: message" of each error at this node (empty when none). */
  errors: string[];
}

/** Result of `qvr.diagram`. */
export interface DiagramResult {
  format: string;
  text: string;
  nodes: DiagramNode[];
}

export type InferenceMethod = "svi" | "nuts" | "prior";
export const INFERENCE_METHODS: readonly InferenceMethod[] = ["svi", "nuts", "prior"];

/** Arguments of `workspace/executeCommand` `qvr.runInference`. */
export interface InferenceParams {
  uri: string;
  program?: string;
  method: InferenceMethod;
  steps: number;
  lr: number;
  seed: number;
  batch: number;
  seq_len: number;
  /** NUTS chains, advanced together (split over processes for slow models). */
  chains?: number;
  /** NUTS: the mass matrix warmup adapts (nutpie's fisher or low-rank, auto's choice of them, Stan's diag_e or dense_e). */
  mass_matrix?: MassMatrix;
  /** NUTS: where the chains start: multi-path Pathfinder's draws (the default) or the program's forward draws. */
  init?: "pathfinder" | "prior";
  /** NUTS: what samples: qvr's own sampler (the default) or NumPyro's NUTS on the program's NumPyro export. */
  engine?: Engine;
  data?: string;
  /** Where the run computes: the CPU, a CUDA GPU, or a GPU when one is present and the run is large. */
  device?: Device;
  /** SVI only: minibatch SVI over a plate, "PLATE=ROWS" (e.g. "Row=256"); absent: every row each step. */
  subsample?: string;
  /** NUTS: trees of at most 2^max_tree_depth leapfrog steps (10 by default). */
  max_tree_depth?: number;
  /** NUTS: the acceptance warmup tunes the step size to (Stan's adapt_delta, 0.8 by default). */
  target_accept?: number;
  /** SVI: the guide (normal, delta, mvn, lowrank-mvn). */
  guide?: string;
  /** The run's memory budget ("8GB"); the server's setting caps it. */
  memory_budget?: string;
  /** Seconds the run may take; the server's limit caps it. */
  timeout?: number;
  /** The worker process's memory in MB; the server's limit caps it. */
  memory_mb?: number;
}

export type MassMatrix = "diag" | "dense" | "fisher" | "low-rank" | "auto";
export const MASS_MATRICES: readonly MassMatrix[] = ["diag", "dense", "fisher", "low-rank", "auto"];

/** NUTS's default target acceptance (Stan's adapt_delta), as the server's. */
export const STAN_TARGET_ACCEPT = 0.8;

export function isMassMatrix(value: unknown): value is MassMatrix {
  return typeof value === "string" && (MASS_MATRICES as readonly string[]).includes(value);
}

export type Engine = "auto" | "qvr" | "numpyro";
export const ENGINES: readonly Engine[] = ["auto", "qvr", "numpyro"];

export function isEngine(value: unknown): value is Engine {
  return typeof value === "string" && (ENGINES as readonly string[]).includes(value);
}

export type Device = "cpu" | "cuda" | "auto";
export const DEVICES: readonly Device[] = ["cpu", "cuda", "auto"];

export function isDevice(value: unknown): value is Device {
  return typeof value === "string" && (DEVICES as readonly string[]).includes(value);
}

/** `qvr.inference.subsample`'s form (its pattern in package.json): a plate's name, "=", a positive row count. */
export const SUBSAMPLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*=[1-9][0-9]*$/;

export function isSubsample(value: unknown): value is string {
  return typeof value === "string" && SUBSAMPLE_PATTERN.test(value);
}

/** A loss point as the server streams it: [step, loss]; loss is null when it is not a number. */
export type LossPoint = [number, number | null];

/** A point that can be drawn. */
export type ChartPoint = [number, number];

/** Params of the `qvr/inferenceProgress` notification. */
export interface InferenceProgress {
  uri: string;
  /** Distinguishes runs; the server chooses its type (a counter or a UUID). */
  runId: string | number;
  method: string;
  total: number;
  points: LossPoint[];
  done: boolean;
  /** The process running it (null before it starts); not read by the client. */
  workerPid?: number | null;
  /** A NUTS run's draws so far; absent for SVI and prior runs, and before the first draws. */
  live?: LiveDraws;
}

/** A trace point: [draw index (0-based, after warmup), value]; value is null when not finite. */
export type TracePoint = [number, number | null];

/**
 * One scalar's draws after warmup, per chain (`chains[c]`), thinned by the server
 * to at most 200 points per chain, the first and last kept.
 */
export interface TracePlot {
  label: string;
  chains: TracePoint[][];
}

/** The draws of a NUTS run so far, as `qvr/inferenceProgress` carries them. */
export interface LiveDraws {
  /** Chains in the run. */
  chains: number;
  /** Warmup iterations per chain (not part of the traces). */
  warmup: number;
  /** Draws after warmup so far, per chain (length = chains). */
  draws: number[];
  /** Up to 8 scalars: the first rows of the summary (e.g. "mu", "tau", "theta[0]"). */
  traces: TracePlot[];
  /** The summary of the draws so far; null until there are enough draws. */
  posterior: Posterior | null;
}

/** The columns of the posterior table, as keys of its rows. */
export type PosteriorColumn = "mean" | "sd" | "q5" | "q50" | "q95" | "ess_bulk" | "ess_tail" | "r_hat";

/** One element of a site (`theta[3]`); a column is absent when the method has none (SVI: no r_hat). */
export type PosteriorRow = { site: string; label: string; index: number[] } & Partial<
  Record<PosteriorColumn, number | null>
>;

/** A site's size, how many of its elements have rows, and (MCMC) its worst diagnostics. */
export interface PosteriorSite {
  shape: number[];
  size: number;
  shown: number;
  r_hat_max?: number | null;
  ess_bulk_min?: number | null;
  ess_tail_min?: number | null;
}

/** A reason not to trust the fit, with the usual remedy. */
export interface FitWarning {
  kind: string;
  message: string;
  remedy: string;
}

/** `summary.posterior` of a run (qvr_core/inference/summary.py `Summary.to_dict`). */
export interface Posterior {
  chains: number;
  draws: number;
  rows: PosteriorRow[];
  /** In the server's order: the table lists each site's rows under it. */
  sites: Record<string, PosteriorSite>;
  warnings: FitWarning[];
  // The sampler's fields (NUTS only).
  divergences?: number;
  divergences_per_chain?: number[];
  tree_depth_saturated?: number;
  max_tree_depth?: number;
  e_bfmi?: (number | null)[];
}

/**
 * One attention module's weights for the run's first example: an element of the
 * summary's `attention` (qvr_core/runs/attention_record.py). `weights[h][q][k]` is how
 * much query position q of head h looks at key position k; the server keeps at most 8
 * heads and 32 positions per axis, and cuts padding off.
 */
export interface AttentionMap {
  /** Where the source applies it: "self_attention in encoder_block 1 of 2". */
  label: string;
  /** The program and step: "encoder_block.a". */
  site: string;
  /** "multihead(w_q, w_k, w_v)". */
  combinator: string;
  /** "self", "causal" or "cross". */
  kind: string;
  /** What the weights were computed under (fitted parameters, a mean over draws, ...). */
  basis: string;
  /** The module's heads, and the example's query and key positions, shown or not. */
  heads: number;
  queries: number;
  keys: number;
  /** The input at each shown position, when it is discrete; null otherwise. */
  tokens: string[] | null;
  weights: number[][][];
}

/** `[mean, 25%, 75%, HDI low, HDI high]` of a scalar's draws (null: not finite). */
export type FitInterval = (number | null)[];

/** One scalar of a fit's view (an element of a site, `theta[3]`; qvr_core/posterior/view.py). */
export interface FitScalar {
  label: string;
  site: string;
  index: number[];
  /** Per chain, the values at `FitView.draw_index[c]`; null when the server's budget left them out. */
  draws: (number | null)[][] | null;
  /** Per chain, the histogram of its draws' ranks among all draws over `FitView.rank_edges` (MCMC only). */
  ranks: number[][] | null;
  /** Per chain, the autocorrelation at lags 0, 1, ... (MCMC only). */
  autocorr: (number | null)[][] | null;
  intervals: { chains: FitInterval[]; combined: FitInterval };
}

/** A site of the view: its scalars are `scalars[first]` to `scalars[first + count - 1]`; `omitted` were not sent. */
export interface FitSite {
  name: string;
  shape: number[];
  size: number;
  first: number;
  count: number;
  omitted: number;
}

/** The energy plot's data (NUTS): per chain the marginal energy and its transitions, and E-BFMI. */
export interface FitEnergy {
  marginal: number[][];
  transition: number[][];
  bfmi: (number | null)[];
}

export type SupportKind = "continuous" | "discrete";

/** An observed site's observed values and replicated draws (posterior or prior predictive). */
export interface PredictiveCheck {
  site: string;
  group: string;
  kind: SupportKind;
  /** Values per draw, and draws, in the run (the lists hold at most some of them). */
  size: number;
  draws: number;
  observed: number[] | null;
  replicated: number[][];
}

/** A reason to doubt what a plot of the view shows, and the usual remedy. */
export interface ViewWarning {
  kind: string;
  /** The plot it is about: "pair", "energy". */
  plot: string;
  message: string;
  remedy: string;
}

/** What the server cut to keep the view small (`qvr_core.posterior.view` bounds). */
export interface FitBounds {
  max_points: number;
  points: number;
  scalars: number;
  shown: number;
  with_draws: number;
}

/** A finished run's draws for the run view's plots (`result.view` of `qvr.runInference`). */
export interface FitView {
  method: string;
  /** "posterior" or "prior": the group the scalars come from. */
  group: string;
  chains: number;
  /** Draws per chain in the run. */
  draws: number;
  /** Per chain, the draws kept (evenly spaced, and every divergent one). */
  draw_index: number[][];
  /** Per chain, whether each kept draw diverged. */
  diverging: boolean[][];
  /** Divergent draws in the whole run. */
  divergences: number;
  rank_edges: number[] | null;
  hdi_prob: number;
  sites: FitSite[];
  scalars: FitScalar[];
  energy: FitEnergy | null;
  ppc: PredictiveCheck[];
  warnings: ViewWarning[];
  bounds: FitBounds;
  /** Why there is no posterior predictive check, when the server left it out. */
  ppc_note?: string;
  /** The models compared on this run's data (the worker's kept runs, `qvr_lsp/runs/kept_runs.py`). */
  comparison?: FitComparison;
  /** Why there is no comparison (this run alone on its data, no ArviZ, too large). */
  comparison_note?: string;
  /** Power-scaling sensitivity to the prior and the likelihood (qvr_core/posterior/sensitivity.py). */
  sensitivity?: FitSensitivity;
  /** Why there is none (too many scalars, no ArviZ). */
  sensitivity_note?: string;
}

/** One element's sensitivities and priorsense's diagnosis (null: nothing to report). */
export interface SensitivityRow {
  label: string;
  prior: number | null;
  likelihood: number | null;
  diagnosis: string | null;
}

/** `view.sensitivity`: which priors were scaled, a row per element, a remedy per diagnosis. */
export interface FitSensitivity {
  threshold: number;
  priors: string[];
  note: string | null;
  rows: SensitivityRow[];
  remedies: Record<string, string>;
}

/** A run in the comparison, as `az.compare` ranks it (`rank` 0 the best; `d_elpd`, `dse` to the best). */
export interface ComparisonRow {
  name: string;
  rank: number;
  elpd: number | null;
  se: number | null;
  p: number | null;
  d_elpd: number | null;
  dse: number | null;
  weight: number | null;
  /** ArviZ's warning flag: the estimate is unreliable for some observations. */
  warning: boolean;
  /** Observations with Pareto k over ArviZ's threshold (WAIC: a varying log predictive density). */
  pareto_k_bad: number;
}

/** `qvr_core.posterior.comparison.Comparison.to_json()`, with the current run's name. */
export interface FitComparison {
  /** "loo" or "waic". */
  ic: string;
  scale: string;
  rows: ComparisonRow[];
  warnings: { code: string; message: string; remedy: string }[];
  notes: string[];
  /** The row of the run this view is of, when it is among the rows. */
  current?: string;
}

/** A language `qvr.exportProgram` writes a model program in (qvr_core/export/targets.py). */
export type ExportTarget = "stan" | "numpyro" | "pymc";

/** The targets, in the server's order, with the titles its messages and lenses use. */
export const EXPORT_TARGETS: readonly { name: ExportTarget; title: string; description: string }[] = [
  { name: "stan", title: "Stan", description: "a .stan program (CmdStan, CmdStanPy, RStan)" },
  { name: "numpyro", title: "NumPyro", description: "a Python module with a NumPyro model (JAX)" },
  { name: "pymc", title: "PyMC", description: "a Python module with a PyMC model" },
];

/** The target called `value` (any case, blanks around it ignored), or undefined. */
export function exportTarget(value: unknown): ExportTarget | undefined {
  if (typeof value !== "string") return undefined;
  const name = value.trim().toLowerCase();
  return EXPORT_TARGETS.find((t) => t.name === name)?.name;
}

export function exportTitle(target: ExportTarget): string {
  return EXPORT_TARGETS.find((t) => t.name === target)?.title ?? target;
}

/** Arguments of `workspace/executeCommand` `qvr.exportProgram` (also the "Export to ..." lens's). */
export interface ExportParams {
  uri: string;
  program?: string;
  target: ExportTarget;
}

/** A located reason why nothing was exported (QVR701, or the file's errors). */
export interface ExportDiagnostic {
  message: string;
  code: string;
  /** "error", "warning", ...; not read by the client. */
  severity?: string;
  range: Range | null;
}

/** Result of `qvr.exportProgram` (qvr_lsp/features/exports.py): the code, or why there is none. */
export type ExportResult =
  | { ok: true; text: string; target: string; language: string; filename: string; program: string }
  | { ok: false; message: string; diagnostics: ExportDiagnostic[]; programs?: string[] };

/** Checks a `qvr.exportProgram` result; undefined when it is neither shape. */
export function parseExportResult(raw: unknown): ExportResult | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const fields = raw as Record<string, unknown>;
  if (fields.ok === true) {
    const { text, target, language, filename, program } = fields;
    if (typeof text !== "string" || typeof target !== "string" || typeof program !== "string") return undefined;
    return {
      ok: true,
      text,
      target,
      language: typeof language === "string" && language !== "" ? language : "plaintext",
      filename: typeof filename === "string" ? filename : "",
      program,
    };
  }
  if (fields.ok !== false || typeof fields.message !== "string") return undefined;
  const diagnostics: ExportDiagnostic[] = [];
  for (const item of Array.isArray(fields.diagnostics) ? fields.diagnostics : []) {
    if (typeof item !== "object" || item === null) continue;
    const { message, code, range } = item as Record<string, unknown>;
    if (typeof message !== "string") continue;
    diagnostics.push({ message, code: typeof code === "string" ? code : "", range: isRange(range) ? range : null });
  }
  const programs = Array.isArray(fields.programs) ? fields.programs.filter((p): p is string => typeof p === "string") : undefined;
  return { ok: false, message: fields.message, diagnostics, ...(programs !== undefined && programs.length > 0 ? { programs } : {}) };
}

export const ServerCommands = {
  diagram: "qvr.diagram",
  runInference: "qvr.runInference",
  exportProgram: "qvr.exportProgram",
} as const;

export const ServerNotifications = {
  inferenceProgress: "qvr/inferenceProgress",
} as const;

/** Client-side VS Code commands; distinct from the server's so both can be registered. */
export const ClientCommands = {
  showDiagram: "qvr.client.showDiagram",
  runInference: "qvr.client.runInference",
  /** A run with method "prior": its prior predictive draws in the run view (also a code lens's, as runInference with method "prior"). */
  priorPredictive: "qvr.client.priorPredictive",
  restartServer: "qvr.client.restartServer",
  /** Creates or updates the extension's own environment with the server (`{ runSupport?: boolean }`). */
  installServer: "qvr.client.installServer",
  /** Adds the `run` extra (torch) to the extension's environment. */
  installRunSupport: "qvr.client.installRunSupport",
  /** The status bar item's menu: restart, install or update, the output channels. */
  serverActions: "qvr.client.serverActions",
  /** Writes a model program in Stan, NumPyro or PyMC (the server's `qvr.exportProgram`) and opens it beside the source; the "Export to ..." lens's. */
  exportProgram: "qvr.client.exportProgram",
  /** Simulation-based calibration of a model program, `qvr sbc` in a terminal (`[{uri, program}]`); the "Calibrate" lens's. */
  calibrate: "qvr.client.calibrate",
} as const;

export function isPosition(value: unknown): value is Position {
  if (typeof value !== "object" || value === null) return false;
  const { line, character } = value as Record<string, unknown>;
  return isNaturalNumber(line) && isNaturalNumber(character);
}

export function isRange(value: unknown): value is Range {
  if (typeof value !== "object" || value === null) return false;
  const { start, end } = value as Record<string, unknown>;
  return isPosition(start) && isPosition(end);
}

function isNaturalNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

export function isDiagramFormat(value: unknown): value is DiagramFormat {
  return typeof value === "string" && (DIAGRAM_FORMATS as readonly string[]).includes(value);
}

export function isInferenceMethod(value: unknown): value is InferenceMethod {
  return typeof value === "string" && (INFERENCE_METHODS as readonly string[]).includes(value);
}

/** The most error messages a node's tooltip shows (the server sends at most five). */
const MAX_NODE_ERRORS = 5;

/**
 * Checks a `qvr.diagram` result before it reaches the webview. Nodes that are
 * malformed are dropped; a node without a usable range is kept but not clickable.
 */
export function parseDiagramResult(raw: unknown): DiagramResult | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const { format, text, nodes } = raw as Record<string, unknown>;
  if (typeof format !== "string" || typeof text !== "string") return undefined;
  const parsedNodes: DiagramNode[] = [];
  for (const node of Array.isArray(nodes) ? nodes : []) {
    if (typeof node !== "object" || node === null) continue;
    const { id, label, type, range, errors } = node as Record<string, unknown>;
    if (typeof id !== "string") continue;
    parsedNodes.push({
      id,
      label: typeof label === "string" ? label : id,
      type: typeof type === "string" ? type : "",
      range: isRange(range) ? range : null,
      errors: Array.isArray(errors)
        ? errors.filter((e): e is string => typeof e === "string").slice(0, MAX_NODE_ERRORS)
        : [],
    });
  }
  return { format, text, nodes: parsedNodes };
}
