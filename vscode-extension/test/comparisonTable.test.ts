import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { comparisonTable, formatComparisonCell } from "../src/shared/comparisonTable";
import { MAX_COMPARISON_ROWS, parseComparison, parseFitView } from "../src/shared/fitView";
import { comparisonFixture, nutsFitView } from "./helpers/fitViews";

const CENTRED = "eight_schools_centered.eight_schools_centered";
const NONCENTRED = "eight_schools_noncentered.eight_schools";

describe("the model comparison of the run view", () => {
  it("reads a real comparison: its rows, warnings with remedies and the current run", () => {
    const parsed = parseComparison(comparisonFixture());
    assert.ok(parsed);
    assert.equal(parsed.ic, "loo");
    assert.deepEqual(parsed.rows.map((r) => [r.name, r.rank]), [[CENTRED, 0], [NONCENTRED, 1]]);
    assert.equal(parsed.current, CENTRED);
    assert.ok(parsed.warnings.length > 0 && parsed.warnings.every((w) => w.message !== "" && w.remedy !== ""));
  });

  it("comes with the view, or its note does", () => {
    const raw = nutsFitView().view;
    assert.equal(parseFitView(raw)?.comparison, undefined);
    const view = parseFitView({ ...raw, comparison: comparisonFixture() });
    assert.equal(view?.comparison?.rows.length, 2);
    const alone = parseFitView({ ...raw, comparison_note: "run another model on the same data" });
    assert.deepEqual([alone?.comparison, alone?.comparison_note], [undefined, "run another model on the same data"]);
    assert.equal(parseFitView({ ...raw, comparison: { ...comparisonFixture(), ic: "bic" } })?.comparison, undefined, "the view stands without it");
  });

  it("rejects a malformed comparison", () => {
    const good = comparisonFixture();
    const row = good.rows[0]!;
    const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ ...row, name: `m${i}`, rank: i }));
    assert.equal(parseComparison(undefined), undefined);
    assert.equal(parseComparison([good]), undefined);
    assert.equal(parseComparison({ ...good, ic: "aic" }), undefined);
    assert.equal(parseComparison({ ...good, rows: [] }), undefined);
    assert.equal(parseComparison({ ...good, rows: "x" }), undefined);
    assert.equal(parseComparison({ ...good, rows: rows(MAX_COMPARISON_ROWS) })?.rows.length, MAX_COMPARISON_ROWS);
    assert.equal(parseComparison({ ...good, rows: rows(MAX_COMPARISON_ROWS + 1) }), undefined, "more runs than the worker keeps");
    assert.equal(parseComparison({ ...good, rows: [row, row] }), undefined, "two rows of one name");
    assert.equal(parseComparison({ ...good, rows: [{ ...row, name: 3 }] }), undefined);
    assert.equal(parseComparison({ ...good, rows: [{ ...row, rank: -1 }] }), undefined);
    assert.equal(parseComparison({ ...good, rows: [{ ...row, warning: "yes" }] }), undefined);
    // Numbers that are not finite are shown n/a; a current run that is not a row marks none.
    const odd = parseComparison({ ...good, rows: [{ ...row, elpd: "NaN", se: null }], current: "elsewhere" });
    assert.deepEqual([odd?.rows[0]?.elpd, odd?.rows[0]?.se, odd?.current], [null, null, undefined]);
    const warnings = parseComparison({ ...good, warnings: [{ code: "x", message: "m" }, { message: "m", remedy: "r" }, 5] })?.warnings;
    assert.deepEqual(warnings, [{ code: "", message: "m", remedy: "r" }]);
    assert.equal(parseComparison({ ...good, rows: [{ ...row, name: "x".repeat(5000) }] })?.rows[0]?.name.length, 200);
  });

  it("makes the table: rank, name, the numbers, the warning mark, the current run's row marked", () => {
    const table = comparisonTable(parseComparison(comparisonFixture())!);
    assert.deepEqual(table.columns, ["rank", "name", "elpd_loo", "se", "p_loo", "d_elpd", "dse", "weight", "warning"]);
    assert.deepEqual(
      table.lines.map((l) => [l.rank, l.name, l.current, ...l.cells, l.warning]),
      [
        ["0", CENTRED, true, "-30.35", "1.16", "0.64", "0.00", "0.00", "1.00", "⚠"],
        ["1", NONCENTRED, false, "-30.86", "1.39", "0.94", "0.51", "0.36", "0.00", "⚠"],
      ],
    );
    assert.match(table.lines[0]!.warningTitle, /^PSIS-LOO is unreliable for 2 observations of this run/);
    assert.match(table.caption, /^PSIS-LOO .*log scale: higher elpd is better/);
    assert.deepEqual(table.warnings.map((w) => w.code), ["pareto_k", "divergences", "pareto_k", "indistinct"]);
    assert.equal(formatComparisonCell(null), "n/a");
    // The rows in rank order whatever order they came in; WAIC's own titles.
    const waic = comparisonTable({ ...parseComparison(comparisonFixture())!, ic: "waic", rows: [...parseComparison(comparisonFixture())!.rows].reverse() });
    assert.deepEqual(waic.lines.map((l) => l.rank), ["0", "1"]);
    assert.equal(waic.columns[4], "p_waic");
    assert.equal(comparisonTable({ ...parseComparison(comparisonFixture())!, rows: [{ ...parseComparison(comparisonFixture())!.rows[1]!, warning: false }] }).lines[0]!.warning, "");
  });
});
