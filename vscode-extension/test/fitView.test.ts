import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatSummary, summaryView } from "../src/inference/summary";
import {
  alignPoints,
  autocorrSeries,
  bandwidth,
  bfmiLine,
  boundsLine,
  energyDensities,
  filterScalars,
  forestRange,
  forestRows,
  kde,
  pairData,
  predictiveCurves,
  rankSeries,
  scatterPoints,
  traceSeries,
} from "../src/shared/fitCharts";
import {
  MAX_FIT_POINTS,
  MAX_FIT_SCALARS,
  MAX_PPC_DRAWS,
  MAX_SENSITIVITY_ROWS,
  fitViewError,
  parseFitView,
  parseSensitivity,
} from "../src/shared/fitView";
import type { FitView, PredictiveCheck } from "../src/shared/protocol";
import { nutsFitView, priorFitView } from "./helpers/fitViews";

function nuts(): FitView {
  const view = parseFitView(nutsFitView().view);
  assert.ok(view, "the fixture parses");
  return view;
}

/** The trapezoid rule's integral of y over x. */
function integral(x: readonly number[], y: readonly (number | null)[]): number {
  let sum = 0;
  for (let i = 1; i < x.length; i++) sum += ((x[i]! - x[i - 1]!) * ((y[i] ?? 0) + (y[i - 1] ?? 0))) / 2;
  return sum;
}

describe("parseFitView", () => {
  it("keeps a real run's view whole: every scalar, its draws, ranks, lags and intervals", () => {
    const raw = nutsFitView().view as { scalars: unknown[] };
    const view = nuts();
    assert.equal(view.method, "nuts");
    assert.deepEqual([view.chains, view.draws], [2, 200]);
    assert.deepEqual(view.scalars.map((s) => s.label), ["mu", "tau", ...Array.from({ length: 8 }, (_, i) => `theta[${i}]`)]);
    assert.equal(view.scalars.length, raw.scalars.length);
    assert.deepEqual(JSON.parse(JSON.stringify(view.scalars)), raw.scalars, "nothing dropped or changed");
    assert.deepEqual(view.sites.map((s) => [s.name, s.first, s.count]), [["mu", 0, 1], ["tau", 1, 1], ["theta", 2, 8]]);
    assert.equal(view.energy?.bfmi.length, 2);
    assert.equal(view.ppc[0]?.site, "y");
    assert.deepEqual(view.warnings.map((w) => w.kind), ["divergences", "e_bfmi"]);
  });

  it("agrees with the run's summary on the divergent draws", () => {
    const { summary } = nutsFitView();
    const view = nuts();
    assert.equal(view.divergences, summary.posterior.divergences);
    assert.deepEqual(view.diverging.map((flags) => flags.filter(Boolean).length), summary.posterior.divergences_per_chain);
  });

  it("rejects what does not describe chains of draws, and drops malformed parts", () => {
    for (const raw of [null, [], "x", {}, { chains: 0, draws: 1, draw_index: [] }, { chains: 2, draws: 3, draw_index: [[0, 1, 2]] }]) {
      assert.equal(parseFitView(raw), undefined, JSON.stringify(raw));
    }
    const raw = nutsFitView().view as Record<string, unknown> & { scalars: Record<string, unknown>[] };
    const broken = {
      ...raw,
      scalars: [
        { ...raw.scalars[0], intervals: { chains: [[1, 2, 3]], combined: [1, 2, 3, 4, 5] } }, // one chain of two
        { ...raw.scalars[1], draws: [[1, 2], [3]], ranks: [[1], [2]], label: "<b>tau</b>" },
        7,
        ...raw.scalars.slice(2),
      ],
      energy: { marginal: [[1]], transition: [], bfmi: [] },
      ppc: [{ site: "y", replicated: [[1, "x", 2], []], observed: "no" }, { site: "z", replicated: [] }],
      warnings: [{ message: "m" }, { remedy: "r" }],
    };
    const view = parseFitView(broken);
    assert.ok(view);
    assert.deepEqual(view.scalars.map((s) => s.label).slice(0, 2), ["<b>tau</b>", "theta[0]"]);
    assert.equal(view.scalars[0]!.draws, null, "values that do not match the kept draws are dropped");
    assert.equal(view.scalars[0]!.ranks, null);
    assert.equal(view.energy, null);
    assert.deepEqual(view.ppc, [{ site: "y", group: "posterior_predictive", kind: "continuous", size: 0, draws: 1, observed: null, replicated: [[1, 2]] }]);
    assert.deepEqual(view.warnings, [{ kind: "", plot: "", message: "m", remedy: "" }]);
  });

  it("bounds what a confused server could send", () => {
    const raw = nutsFitView().view as Record<string, unknown> & { scalars: unknown[]; draw_index: number[][]; diverging: boolean[][] };
    const many = {
      ...raw,
      draw_index: raw.draw_index.map(() => Array.from({ length: MAX_FIT_POINTS + 50 }, (_, i) => i)),
      diverging: raw.diverging.map(() => Array.from({ length: MAX_FIT_POINTS + 50 }, () => false)),
      scalars: Array.from({ length: MAX_FIT_SCALARS + 10 }, () => raw.scalars[0]),
      ppc: [{ site: "y", replicated: Array.from({ length: MAX_PPC_DRAWS + 5 }, () => [1, 2]) }],
    };
    const view = parseFitView(many);
    assert.ok(view);
    assert.ok(view.draw_index.every((index) => index.length === MAX_FIT_POINTS));
    assert.equal(view.scalars.length, MAX_FIT_SCALARS);
    assert.equal(view.ppc[0]!.replicated.length, MAX_PPC_DRAWS);
  });

  it("reads the server's error in place of a view", () => {
    assert.equal(fitViewError({ error: "the fit view could not be computed: ValueError: x" }), "the fit view could not be computed: ValueError: x");
    assert.equal(fitViewError(nutsFitView().view), undefined);
    assert.deepEqual(summaryView({ view: { error: "no" } }), { view: null, viewError: "no" });
    assert.deepEqual(summaryView({ final_loss: 1 }), { view: null });
    assert.equal(summaryView(nutsFitView()).view?.scalars.length, 10);
  });

  it("leaves the view's draws out of the summary the output channel prints", () => {
    const text = formatSummary({ method: "nuts", view: nutsFitView().view, divergences: 2 });
    assert.equal(text, '{\n  "method": "nuts",\n  "divergences": 2\n}');
  });
});

describe("the fit view's plots", () => {
  it("aligns series on their common x values, a gap where a series has no point", () => {
    assert.deepEqual(alignPoints([[[0, 1], [2, 3]], [[1, 5], [2, null]]]), { x: [0, 1, 2], ys: [[1, null, 3], [null, 5, null]] });
    // a scatter: every point an x slot of its own, repeated x values included
    assert.deepEqual(scatterPoints([[[1, 10], [0, 11]], [[1, 20]]]), { x: [0, 1, 1], ys: [[11, 10, null], [null, null, 20]] });
  });

  it("filters the scalars by name, ignoring case and spaces", () => {
    const { scalars } = nuts();
    assert.equal(filterScalars(scalars, "").length, 10);
    assert.deepEqual(filterScalars(scalars, "theta").length, 8);
    assert.deepEqual(filterScalars(scalars, "THETA[3]").map((i) => scalars[i]!.label), ["theta[3]"]);
    assert.deepEqual(filterScalars(scalars, "ta[ 1"), [3]);
    assert.deepEqual(filterScalars(scalars, "sigma"), []);
  });

  it("traces a scalar over the kept draws, a series per chain", () => {
    const view = nuts();
    const trace = traceSeries(view, view.scalars[1]!);
    assert.ok(trace);
    assert.equal(trace.x.length, 200, "all 200 draws of each chain were kept");
    assert.deepEqual(trace.ys.map((y) => y.filter((v) => v !== null).length), [200, 200]);
  });

  it("steps each chain's rank histogram over the bins, its counts summing to its draws", () => {
    const view = nuts();
    for (const scalar of view.scalars) {
      const ranks = rankSeries(view, scalar);
      assert.ok(ranks);
      assert.deepEqual(ranks.x, view.rank_edges);
      for (const counts of ranks.ys) {
        assert.equal(counts.length, ranks.x.length);
        assert.equal(counts.slice(0, -1).reduce((s: number, c) => s + (c ?? 0), 0), view.draws, scalar.label);
      }
      assert.equal(ranks.uniform, view.draws / (ranks.x.length - 1));
    }
  });

  it("gives each chain's autocorrelation by lag, 1 at lag 0", () => {
    const view = nuts();
    const autocorr = autocorrSeries(view.scalars[0]!);
    assert.ok(autocorr);
    assert.equal(autocorr.x.length, 101);
    assert.deepEqual(autocorr.ys.map((y) => y[0]), [1, 1]);
  });

  it("pairs two scalars' draws per chain and puts the divergent draws in a series of their own", () => {
    const view = nuts();
    const pair = pairData(view, view.scalars[1]!, view.scalars[2]!);
    assert.ok(pair);
    assert.equal(pair.chains, 2);
    assert.equal(pair.total, 400);
    assert.equal(pair.divergent, view.divergences);
    assert.equal(pair.points.ys.length, 3);
    const divergentPoints = pair.points.ys[2]!.filter((v) => v !== null);
    assert.equal(divergentPoints.length, view.divergences);
    // every point drawn once: in its chain's series or the divergent one
    assert.equal(pair.points.ys.flat().filter((v) => v !== null).length, 400);
    assert.equal(pairData(view, { ...view.scalars[1]!, draws: null }, view.scalars[2]!), undefined);
  });

  it("estimates densities that integrate to one", () => {
    const values = [0, 0.5, 1, 1.5, 2, 4];
    const x = Array.from({ length: 400 }, (_, i) => -6 + (i * 16) / 399);
    assert.ok(Math.abs(integral(x, kde(values, x)) - 1) < 1e-3);
    assert.ok(bandwidth(values) > 0);
    assert.ok(bandwidth([3, 3, 3]) > 0, "a flat sample still has a width");
    const energy = energyDensities(nuts());
    assert.ok(energy);
    assert.equal(energy.ys.length, 2);
    for (const density of energy.ys) assert.ok(Math.abs(integral(energy.x, density) - 1) < 0.02);
  });

  it("draws a continuous predictive check as densities of each draw, all draws and the data", () => {
    const check = nuts().ppc[0]!;
    const curves = predictiveCurves(check);
    assert.equal(curves.kind, "continuous");
    assert.equal(curves.replicated, 50);
    assert.ok(curves.observed);
    assert.equal(curves.ys.length, 52, "50 draws, their pool, the observed data");
    assert.ok(curves.x[0]! < Math.min(...check.observed!) && curves.x[curves.x.length - 1]! > Math.max(...check.observed!));
  });

  it("spans a heavy-tailed check's middle 99% and the data, and counts what lies beyond", () => {
    const tail = (i: number): number => Math.tan(Math.PI * ((i + 0.5) / 1000 - 0.5)); // Cauchy quantiles
    const replicated = [Array.from({ length: 1000 }, (_, i) => tail(i))];
    const curves = predictiveCurves({ site: "y", group: "prior_predictive", kind: "continuous", size: 1000, draws: 1, observed: [-80, 3], replicated });
    const [low, high] = [curves.x[0]!, curves.x[curves.x.length - 1]!];
    assert.ok(low <= -80 && low > -90, `the axis reaches the data: ${low}`);
    assert.ok(high > 55 && high < 75, `and the 99.5% quantile (58), not the largest draw (318): ${high}`);
    assert.equal(curves.beyond, 9, "4 values below the data's -80, 5 above the 99.5% quantile");
    assert.equal(curves.x.length, 256);
  });

  it("draws a discrete check as the share of each value, binned when there are many", () => {
    const check: PredictiveCheck = { site: "n", group: "posterior_predictive", kind: "discrete", size: 4, draws: 2, observed: [0, 1, 1, 3], replicated: [[0, 0, 1, 2], [1, 1, 1, 1]] };
    const curves = predictiveCurves(check);
    assert.deepEqual(curves.x, [0, 1, 2, 3]);
    assert.deepEqual(curves.ys, [
      [0.5, 0.25, 0.25, 0],
      [0, 1, 0, 0],
      [0.25, 0.625, 0.125, 0],
      [0.25, 0.5, 0, 0.25],
    ]);
    const wide = predictiveCurves({ ...check, observed: null, replicated: [Array.from({ length: 300 }, (_, i) => i)] });
    assert.ok(wide.x.length <= 60 && !wide.observed);
    assert.ok(Math.abs(wide.ys[0]!.reduce((s: number, v) => s + (v ?? 0), 0) - 1) < 1e-9);
  });

  it("lays out a site's forest rows per chain or combined", () => {
    const view = nuts();
    const theta = view.sites[2]!;
    const perChain = forestRows(view, theta, false);
    assert.equal(perChain.length, 16);
    assert.deepEqual(perChain.slice(0, 2).map((r) => [r.label, r.chain]), [["theta[0]", 0], ["theta[0]", 1]]);
    const combined = forestRows(view, theta, true);
    assert.deepEqual(combined.map((r) => r.chain), Array.from({ length: 8 }, () => null));
    const [low, high] = forestRange(combined);
    for (const row of combined) {
      const [mean, q25, q75, hdiLow, hdiHigh] = row.interval as number[];
      assert.ok(q25! <= q75! && hdiLow! < hdiHigh!, row.label);
      for (const value of [mean!, q25!, q75!, hdiLow!, hdiHigh!]) assert.ok(low < value && value < high, row.label);
    }
  });

  it("says E-BFMI per chain and what the server cut", () => {
    const view = nuts();
    assert.match(bfmiLine(view), /^E-BFMI: chain 1 0\.342 · chain 2 0\.263 \(under 0\.3\)$/);
    assert.equal(boundsLine(view), "");
    const cut = { ...view, bounds: { ...view.bounds, scalars: 3000, shown: 1000, with_draws: 700, points: 100 } };
    assert.equal(
      boundsLine(cut),
      "1000 of 3000 scalars are in the view (qvr plot --var draws the others); the first 700 have their draws (for trace and pair plots); 100 of 200 draws a chain are plotted (every divergent one among them)",
    );
  });

  it("has a prior run's view: its prior draws and the prior predictive check", () => {
    const view = parseFitView(priorFitView().view);
    assert.ok(view);
    assert.deepEqual([view.group, view.chains, view.draws], ["prior", 1, 60]);
    assert.equal(view.rank_edges, null);
    assert.equal(view.energy, null);
    assert.equal(view.ppc[0]?.group, "prior_predictive");
    assert.equal(rankSeries(view, view.scalars[0]!), undefined);
  });
});

describe("parseSensitivity", () => {
  const raw = {
    threshold: 0.05,
    priors: ["mu", "tau"],
    note: null,
    rows: [
      { site: "mu", index: [], label: "mu", prior: 0.098, likelihood: 0.112, diagnosis: "prior-data conflict" },
      { site: "theta", index: [0], label: "theta[0]", prior: 0.01, likelihood: Number.NaN, diagnosis: null },
      { label: 7 },
      { label: "tau", prior: 0.2, likelihood: 0.03, diagnosis: "no such diagnosis" },
    ],
    remedies: { "prior-data conflict": "check the prior against the data" },
  };

  it("keeps each labelled row, a number that is not finite as null, a diagnosis only with its remedy", () => {
    const parsed = parseSensitivity(raw);
    assert.ok(parsed);
    assert.deepEqual(parsed.priors, ["mu", "tau"]);
    assert.deepEqual(
      parsed.rows.map((r) => [r.label, r.prior, r.likelihood, r.diagnosis]),
      [
        ["mu", 0.098, 0.112, "prior-data conflict"],
        ["theta[0]", 0.01, null, null],
        ["tau", 0.2, 0.03, null],
      ],
    );
    assert.equal(parsed.remedies["prior-data conflict"], "check the prior against the data");
  });

  it("drops a sensitivity without rows or with more than the bound, and rides along a view", () => {
    assert.equal(parseSensitivity({ ...raw, rows: [] }), undefined);
    assert.equal(parseSensitivity({ ...raw, rows: Array.from({ length: MAX_SENSITIVITY_ROWS + 1 }, () => raw.rows[0]) }), undefined);
    assert.equal(parseSensitivity("no"), undefined);
    const view = parseFitView({ ...(nutsFitView().view as object), sensitivity: raw, sensitivity_note: undefined });
    assert.equal(view?.sensitivity?.rows.length, 3);
    const noted = parseFitView({ ...(nutsFitView().view as object), sensitivity_note: "too many scalars" });
    assert.equal(noted?.sensitivity, undefined);
    assert.equal(noted?.sensitivity_note, "too many scalars");
  });
});
