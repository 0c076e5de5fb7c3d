/**
 * Builds `qvr.runInference` arguments from the user's settings and whatever the
 * caller supplied: the code lens's arguments, or nothing from the command palette.
 */
import {
  type Device,
  type Engine,
  type InferenceMethod,
  type InferenceParams,
  type MassMatrix,
  isDevice,
  isEngine,
  isInferenceMethod,
  isMassMatrix,
  isSubsample,
  STAN_TARGET_ACCEPT,
} from "../shared/protocol";

/** The `qvr.inference.*` settings. */
export interface InferenceDefaults {
  method: InferenceMethod;
  steps: number;
  lr: number;
  seed: number;
  batch: number;
  seqLen: number;
  chains: number;
  massMatrix: MassMatrix;
  /** NUTS: what samples (qvr's sampler, or NumPyro's on the program's NumPyro export). */
  engine: Engine;
  /** NUTS: the target acceptance, sent as written (the server refuses, naming it, a value
   * outside (0, 1)); only NUTS runs are sent it, and only when it is not Stan's 0.8. */
  targetAccept: number;
  /** A data file, relative to the workspace folder; "" for none. */
  data: string;
  device: Device;
  /** SVI only: "PLATE=ROWS" (e.g. "Row=256"); "" for off. */
  subsample: string;
}

export interface InferenceTarget {
  uri?: string;
  program?: string;
  overrides: Partial<Omit<InferenceParams, "uri" | "program">>;
}

/**
 * Reads the arguments a code lens (or another extension) passes: either one object
 * `{uri, program?, method?, ...}` or positional `(uri, program?)`. Unknown or
 * ill-typed fields are dropped rather than forwarded to the server.
 */
export function parseInferenceArguments(args: readonly unknown[]): InferenceTarget {
  const [first, second] = args;
  if (typeof first === "string") {
    return { uri: first, program: typeof second === "string" ? second : undefined, overrides: {} };
  }
  if (typeof first !== "object" || first === null) return { overrides: {} };
  const raw = first as Record<string, unknown>;
  const overrides: InferenceTarget["overrides"] = {};
  if (isInferenceMethod(raw.method)) overrides.method = raw.method;
  for (const key of ["steps", "seed", "batch", "seq_len", "chains"] as const) {
    const value = raw[key];
    if (isPositiveInteger(value) || (key === "seed" && value === 0)) overrides[key] = value as number;
  }
  if (typeof raw.lr === "number" && raw.lr > 0 && Number.isFinite(raw.lr)) overrides.lr = raw.lr;
  if (typeof raw.data === "string" && raw.data !== "") overrides.data = raw.data;
  if (isMassMatrix(raw.mass_matrix)) overrides.mass_matrix = raw.mass_matrix;
  if (isEngine(raw.engine)) overrides.engine = raw.engine;
  const accept = raw.target_accept;
  if (typeof accept === "number" && accept > 0 && accept < 1) overrides.target_accept = accept;
  if (isDevice(raw.device)) overrides.device = raw.device;
  const subsample = subsampleArgument(raw.subsample);
  if (subsample !== undefined) overrides.subsample = subsample;
  const program = typeof raw.program === "string" ? raw.program : typeof raw.name === "string" ? raw.name : undefined;
  return { uri: typeof raw.uri === "string" ? raw.uri : undefined, program, overrides };
}

export function buildInferenceParams(
  uri: string,
  defaults: InferenceDefaults,
  target: InferenceTarget,
): InferenceParams {
  const params: InferenceParams = {
    uri,
    method: defaults.method,
    steps: defaults.steps,
    lr: defaults.lr,
    seed: defaults.seed,
    batch: defaults.batch,
    seq_len: defaults.seqLen,
    chains: defaults.chains,
    mass_matrix: defaults.massMatrix,
    engine: defaults.engine,
    target_accept: defaults.targetAccept,
    device: defaults.device,
    ...(defaults.data !== "" ? { data: defaults.data } : {}),
    ...(defaults.subsample !== "" ? { subsample: defaults.subsample } : {}),
    ...target.overrides,
  };
  // Minibatches are SVI's: a NUTS or prior run scores every row, and is sent no subsample.
  if (params.method !== "svi") delete params.subsample;
  // The step size's target is NUTS's: an SVI or prior run is sent none (nor refused for
  // one). Stan's default goes unsaid, so a server older than the setting runs as before.
  if (params.method !== "nuts" || params.target_accept === STAN_TARGET_ACCEPT) delete params.target_accept;
  // The engine is NUTS's, and the server's default (auto) goes unsaid, as the target
  // acceptance's default does.
  if (params.method !== "nuts" || params.engine === "auto") delete params.engine;
  if (target.program !== undefined) params.program = target.program;
  return params;
}

/** The run's parameters in a line, for the output channel: NUTS's and the new options only when they apply or differ from the default. */
export function describeInferenceParams(params: InferenceParams): string {
  const parts = [`steps=${params.steps}`, `lr=${params.lr}`, `seed=${params.seed}`, `batch=${params.batch}`, `seq_len=${params.seq_len}`];
  if (params.method === "nuts" && params.chains !== undefined) parts.push(`chains=${params.chains}`);
  if (params.method === "nuts" && params.mass_matrix !== undefined && params.mass_matrix !== "auto") parts.push(`mass_matrix=${params.mass_matrix}`);
  if (params.method === "nuts" && params.engine !== undefined && params.engine !== "auto") parts.push(`engine=${params.engine}`);
  if (params.method === "nuts" && params.target_accept !== undefined && params.target_accept !== STAN_TARGET_ACCEPT) {
    parts.push(`target_accept=${params.target_accept}`);
  }
  if (params.method === "svi" && params.subsample !== undefined) parts.push(`subsample=${params.subsample}`);
  if (params.device !== undefined && params.device !== "cpu") parts.push(`device=${params.device}`);
  return parts.join(", ");
}

/** A lens's subsample: "PLATE=ROWS", or the server's other form `{plate, rows}`, as "PLATE=ROWS"; undefined when neither. */
function subsampleArgument(value: unknown): string | undefined {
  if (isSubsample(value)) return value;
  if (typeof value !== "object" || value === null) return undefined;
  const { plate, rows } = value as Record<string, unknown>;
  if (typeof plate !== "string" || !isPositiveInteger(rows)) return undefined;
  const text = `${plate}=${rows}`;
  return isSubsample(text) ? text : undefined;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value > 0;
}
