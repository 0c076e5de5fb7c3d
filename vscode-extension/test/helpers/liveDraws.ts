/**
 * A NUTS run's progress as the server sends it (qvr_lsp/run_progress.py, the
 * `live` block; the posterior as qvr_core/inference/summary.py `Summary.to_dict`),
 * for eight schools with 4 chains part-way through.
 */
import type { InferenceProgress, LiveDraws, Posterior, TracePlot } from "../../src/shared/protocol";

/** Deterministic wiggles, distinct per chain and scalar. */
function trace(label: string, scalar: number, draws: readonly number[], centre: number, spread: number): TracePlot {
  return {
    label,
    chains: draws.map((n, chain) =>
      Array.from({ length: n }, (_, i): [number, number] => [
        i,
        centre + spread * Math.sin(0.37 * i + 1.3 * chain + 0.7 * scalar) + 0.2 * spread * Math.cos(1.7 * i * (chain + 1)),
      ]),
    ),
  };
}

export function eightSchoolsPosterior(warn: boolean): Posterior {
  const row = (site: string, label: string, index: number[], mean: number, rHat: number) => ({
    site,
    index,
    label,
    mean,
    sd: 1.5,
    q5: mean - 2.4,
    q50: mean,
    q95: mean + 2.4,
    ess_bulk: warn ? 61.2 : 812.4,
    ess_tail: warn ? 75.9 : 640.9,
    r_hat: rHat,
  });
  const thetas = Array.from({ length: 8 }, (_, i) => row("theta_raw", `theta_raw[${i}]`, [i], 0.1 * i, 1.001 + 0.001 * i));
  return {
    chains: 4,
    draws: 120,
    rows: [row("mu", "mu", [], 4.38, warn ? 1.042 : 1.002), row("tau", "tau", [], 3.6, 1.004), ...thetas],
    sites: {
      mu: { shape: [], size: 1, shown: 1, r_hat_max: warn ? 1.042 : 1.002, ess_bulk_min: 61.2, ess_tail_min: 75.9 },
      tau: { shape: [], size: 1, shown: 1, r_hat_max: 1.004, ess_bulk_min: 61.2, ess_tail_min: 75.9 },
      theta_raw: { shape: [8], size: 8, shown: 8, r_hat_max: 1.008, ess_bulk_min: 61.2, ess_tail_min: 75.9 },
    },
    warnings: warn
      ? [
          {
            kind: "r_hat",
            message: "R-hat above 1.01 (worst mu: 1.042): the chains disagree, they have not converged to one distribution",
            remedy: "run longer chains (more --steps, of which half are warmup) and more than one chain",
          },
        ]
      : [],
    divergences: 0,
    divergences_per_chain: [0, 0, 0, 0],
    tree_depth_saturated: 0,
    max_tree_depth: 10,
    e_bfmi: [1.02, 0.97, 1.1, 0.88],
  };
}

export function eightSchoolsLive(draws: number[] = [120, 118, 96, 100], warn = true): LiveDraws {
  const labels = ["mu", "tau", ...Array.from({ length: 6 }, (_, i) => `theta_raw[${i}]`)];
  return {
    chains: draws.length,
    warmup: 500,
    draws,
    traces: labels.map((label, i) => trace(label, i, draws, i === 1 ? 3.6 : 4.4 - i, i === 1 ? 2 : 3)),
    posterior: eightSchoolsPosterior(warn),
  };
}

export function nutsProgress(live: LiveDraws | undefined, runId: string | number = "r1"): InferenceProgress {
  const progress: InferenceProgress = {
    uri: "file:///eight_schools_noncentered.qvr",
    runId,
    method: "nuts",
    total: 4000,
    points: Array.from({ length: 50 }, (_, i): [number, number] => [i * 40, 30 + 10 * Math.exp(-i / 8) + Math.sin(i)]),
    done: false,
  };
  if (live !== undefined) progress.live = live;
  return progress;
}

/** An SVI run's posterior: guide draws have no R-hat or ESS, and no convergence warnings. */
export function sviPosterior(): Posterior {
  const row = (site: string, label: string, index: number[], mean: number) => ({
    site,
    index,
    label,
    mean,
    sd: 0.31,
    q5: mean - 0.5,
    q50: mean,
    q95: mean + 0.5,
  });
  return {
    chains: 1,
    draws: 1000,
    rows: [row("mu", "mu", [], 4.1), ...Array.from({ length: 12 }, (_, i) => row("w", `w[${i}]`, [i], 0.01 * i))],
    sites: { mu: { shape: [], size: 1, shown: 1 }, w: { shape: [40], size: 40, shown: 12 } },
    warnings: [],
  };
}
