/**
 * The run view's data of two real runs of the centred eight schools (test/fixtures, written by
 * test/fixtures/fit_view.py from the worker's own code): NUTS, 2 chains of 200 draws with
 * divergences and a low E-BFMI; and the program's prior. And a real comparison: the view's
 * `comparison` after the non-centred, then the centred eight schools (the current run).
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { extensionRoot } from "./paths";

export interface FitViewFixture {
  /** `qvr.runInference`'s answer without its `view`. */
  summary: Record<string, unknown> & { posterior: { divergences: number; divergences_per_chain: number[] } };
  /** The raw `view`, as the server sends it. */
  view: Record<string, unknown>;
}

function fixture(name: string): FitViewFixture {
  return JSON.parse(readFileSync(path.join(extensionRoot, "test", "fixtures", name), "utf8")) as FitViewFixture;
}

export function nutsFitView(): FitViewFixture {
  return fixture("fit-view-nuts.json");
}

export function priorFitView(): FitViewFixture {
  return fixture("fit-view-prior.json");
}

/** The raw `comparison` of the view (`Comparison.to_json()` with `current`). */
export function comparisonFixture(): Record<string, unknown> & { rows: Record<string, unknown>[] } {
  return JSON.parse(readFileSync(path.join(extensionRoot, "test", "fixtures", "fit-view-comparison.json"), "utf8")) as Record<string, unknown> & {
    rows: Record<string, unknown>[];
  };
}
