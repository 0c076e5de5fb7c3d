/**
 * Builds `qvr.runInference` arguments from the user's settings and whatever the
 * caller supplied: the code lens's arguments, or nothing from the command palette.
 */
import {
  type InferenceMethod,
  type InferenceParams,
  type MassMatrix,
  isInferenceMethod,
  isMassMatrix,
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
  /** A data file, relative to the workspace folder; "" for none. */
  data: string;
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
    ...(defaults.data !== "" ? { data: defaults.data } : {}),
    ...target.overrides,
  };
  if (target.program !== undefined) params.program = target.program;
  return params;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value > 0;
}
