/**
 * The plots after a fit, drawn by uPlot (bundled, canvas, no eval, no style elements: it
 * runs under the webview's CSP as it is): for the scalar picked by a filter box, its trace,
 * rank plot per chain and autocorrelation; the pair plot of two picked scalars with the
 * divergent draws marked; the energy plot with E-BFMI; the forest plot of a site; the
 * predictive check of each observed site. Chains take the trace plots' colours: each is
 * read from the stylesheet's `.chain-N` rule (media/webview.css, the one palette), so a
 * canvas line is the colour of the SVG line of the same chain in any theme.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import {
  type Aligned,
  autocorrSeries,
  bfmiLine,
  boundsLine,
  energyDensities,
  filterScalars,
  forestRange,
  forestRows,
  pairData,
  predictiveCurves,
  rankSeries,
  traceSeries,
} from "../../src/shared/fitCharts";
import { comparisonTable } from "../../src/shared/comparisonTable";
import type { FitComparison, FitScalar, FitView, ViewWarning } from "../../src/shared/protocol";
import { CHAIN_COLOURS, chainClass } from "./chains";
import { htmlElement, svgElement } from "./svg";
import { warningList } from "./warnings";

const SMALL_HEIGHT = 170;
const LARGE_HEIGHT = 300;
const MIN_SMALL_WIDTH = 260;
const GAP = 12;

interface Colours {
  foreground: string;
  grid: string;
  divergent: string;
  chains: string[];
}

interface Selection {
  filter: string;
  scalar: number;
  pairX: number;
  pairY: number;
  site: number;
  combined: boolean;
  check: number;
}

/** Reads the colours the stylesheet gives chains, grid lines and divergent draws, in the current theme. */
function themeColours(host: HTMLElement): Colours {
  const probe = svgElement("svg", { class: "colour-probe", width: 0, height: 0, "aria-hidden": "true" });
  const lines = Array.from({ length: CHAIN_COLOURS }, (_, chain) => svgElement("line", { class: chainClass(chain) }));
  const grid = svgElement("line", { class: "grid" });
  const divergent = svgElement("line", { class: "divergent" });
  probe.append(...lines, grid, divergent);
  host.append(probe);
  const stroke = (line: SVGLineElement): string => getComputedStyle(line).stroke;
  const colours = {
    foreground: getComputedStyle(host).color,
    grid: stroke(grid),
    divergent: stroke(divergent),
    chains: lines.map(stroke),
  };
  probe.remove();
  return colours;
}

/** `colour` (as getComputedStyle writes it: rgb(...)) at `alpha`. */
function faded(colour: string, alpha: number): string {
  const match = /^rgba?\(([^)]+)\)$/.exec(colour.trim());
  if (match === null) return colour;
  const [r, g, b] = match[1]!.split(",").map((part) => part.trim());
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/** Dots or crosses at each point of a series (uPlot draws lines; a scatter is its own path). */
function marks(shape: "dot" | "cross", radius: number): uPlot.Series.PathBuilder {
  return (u, seriesIdx, idx0, idx1) => {
    const xs = u.data[0];
    const ys = u.data[seriesIdx]!;
    const path = new Path2D();
    const r = radius * uPlot.pxRatio;
    for (let i = idx0; i <= idx1; i++) {
      const x = xs[i];
      const y = ys[i];
      if (x === null || x === undefined || y === null || y === undefined) continue;
      const cx = u.valToPos(x, "x", true);
      const cy = u.valToPos(y, "y", true);
      if (shape === "dot") {
        path.moveTo(cx + r, cy);
        path.arc(cx, cy, r, 0, 2 * Math.PI);
      } else {
        path.moveTo(cx - r, cy - r);
        path.lineTo(cx + r, cy + r);
        path.moveTo(cx - r, cy + r);
        path.lineTo(cx + r, cy - r);
      }
    }
    return shape === "dot" ? { fill: path, stroke: null } : { stroke: path, fill: null };
  };
}

function axis(colours: Colours, label: string): uPlot.Axis {
  return {
    stroke: colours.foreground,
    label,
    labelSize: 18,
    labelFont: "11px sans-serif",
    font: "10px sans-serif",
    grid: { stroke: faded(colours.grid, 0.5), width: 1 },
    ticks: { stroke: faded(colours.grid, 0.5), width: 1, size: 4 },
  };
}

function options(width: number, height: number, colours: Colours, x: string, y: string, series: uPlot.Series[]): uPlot.Options {
  return {
    width,
    height,
    scales: { x: { time: false } },
    legend: { show: false },
    cursor: { show: false },
    axes: [axis(colours, x), axis(colours, y)],
    series: [{}, ...series],
  };
}

function chainLine(colours: Colours, chain: number): uPlot.Series {
  return {
    label: `chain ${chain + 1}`,
    stroke: colours.chains[chain % CHAIN_COLOURS],
    width: 1.2,
    spanGaps: true,
    points: { show: false },
    ...(chain >= CHAIN_COLOURS ? { dash: [4, 2] } : {}),
  };
}

function alignedData(data: Aligned): uPlot.AlignedData {
  return [data.x, ...data.ys];
}

/** The plots of one fit in `container`; redrawn when its width changes or the picks do. */
export class FitPlots {
  private view: FitView | null = null;
  private error: string | undefined;
  private plots: uPlot[] = [];
  private pick: Selection = { filter: "", scalar: 0, pairX: 0, pairY: 1, site: 0, combined: false, check: 0 };
  private drawnWidth = -1;

  constructor(private readonly container: HTMLElement) {}

  /** A new fit (or none): picks start over. */
  show(view: FitView | null, error?: string): void {
    this.view = view;
    this.error = error;
    const withDraws = view?.scalars.findIndex((s) => s.draws !== null) ?? -1;
    const firstSite = view?.sites.findIndex((site) => site.count > 1) ?? -1;
    this.pick = {
      filter: "",
      scalar: 0,
      pairX: Math.max(0, withDraws),
      pairY: Math.max(0, withDraws) + 1,
      site: Math.max(0, firstSite),
      combined: false,
      check: 0,
    };
    this.render();
  }

  clear(): void {
    this.show(null);
  }

  /** Draws again if the width changed since the last drawing. */
  resize(): void {
    if (this.container.clientWidth !== this.drawnWidth) this.render();
  }

  private render(): void {
    for (const plot of this.plots) plot.destroy();
    this.plots = [];
    const view = this.view;
    this.container.hidden = view === null && this.error === undefined;
    this.drawnWidth = this.container.clientWidth;
    if (view === null) {
      this.container.replaceChildren(...(this.error !== undefined ? [htmlElement("p", "note", this.error)] : []));
      return;
    }
    const prior = view.group === "prior";
    const colours = themeColours(this.container);
    const width = Math.max(MIN_SMALL_WIDTH, this.container.clientWidth);
    const blocks: HTMLElement[] = [];
    if (prior) blocks.push(...this.checks(view, colours, width));
    const mcmc = view.rank_edges !== null || view.energy !== null;
    if (mcmc && view.scalars.length > 0) blocks.push(this.scalarBlock(view, colours, width));
    blocks.push(...this.pairBlock(view, colours, width));
    if (view.energy !== null) blocks.push(this.energyBlock(view, colours, width));
    blocks.push(...this.forestBlock(view, colours, width));
    if (!prior) blocks.push(...comparisonBlock(view));
    if (!prior) blocks.push(...sensitivityBlock(view));
    if (!prior) blocks.push(...this.checks(view, colours, width));
    // A fit with nothing to plot (a network's SVI without latent sites): no section at all.
    this.container.hidden = blocks.length === 0;
    if (blocks.length === 0) {
      this.container.replaceChildren();
      return;
    }
    const bounds = boundsLine(view);
    this.container.replaceChildren(
      htmlElement("h2", undefined, prior ? "Prior predictive check" : "After the fit"),
      ...(bounds !== "" ? [htmlElement("p", "note fit-bounds", bounds)] : []),
      ...blocks,
    );
  }

  /** A figure with its caption; `draw` puts the plot in its body once the figure is in the page. */
  private figure(kind: string, title: string, data: Record<string, string | number> = {}, width?: number): { figure: HTMLElement; body: HTMLElement } {
    const figure = htmlElement("figure", "fit-plot");
    if (width !== undefined) figure.style.width = `${width}px`; // CSSOM: allowed by the CSP
    figure.dataset.plot = kind;
    for (const [key, value] of Object.entries(data)) figure.dataset[key] = String(value);
    const caption = htmlElement("figcaption", undefined, title);
    const body = htmlElement("div", "fit-canvas");
    body.setAttribute("role", "img");
    body.setAttribute("aria-label", title);
    figure.append(caption, body);
    return { figure, body };
  }

  private plot(body: HTMLElement, opts: uPlot.Options, data: uPlot.AlignedData): void {
    this.plots.push(new uPlot(opts, data, body));
  }

  // ------------------------------------------------------------ one scalar

  private scalarBlock(view: FitView, colours: Colours, width: number): HTMLElement {
    const block = htmlElement("div", "fit-block fit-scalar");
    const matching = filterScalars(view.scalars, this.pick.filter);
    if (!matching.includes(this.pick.scalar) && matching.length > 0) this.pick.scalar = matching[0]!;
    const controls = htmlElement("div", "fit-controls");
    const filter = htmlElement("input");
    filter.type = "search";
    filter.id = "scalar-filter";
    filter.placeholder = "filter: theta, theta[3]";
    filter.value = this.pick.filter;
    filter.setAttribute("aria-label", "Filter the scalars by name");
    const select = this.scalarSelect("scalar", "Scalar", matching.map((i) => view.scalars[i]!), this.pick.scalar);
    const count = htmlElement(
      "span",
      "fit-count",
      matching.length === view.scalars.length ? `${view.scalars.length} scalars` : `${matching.length} of ${view.scalars.length} scalars match`,
    );
    count.setAttribute("aria-live", "polite");
    filter.addEventListener("input", () => {
      this.pick.filter = filter.value;
      this.render();
      const again = this.container.querySelector<HTMLInputElement>("#scalar-filter");
      again?.focus();
      again?.setSelectionRange(filter.value.length, filter.value.length);
    });
    select.select.addEventListener("change", () => {
      this.pick.scalar = Number(select.select.value);
      this.render();
    });
    controls.append(htmlElement("span", "fit-heading", "Each scalar"), filter, select.label, count);
    block.append(controls);
    const scalar = matching.length > 0 ? view.scalars[this.pick.scalar] : undefined;
    if (scalar === undefined) {
      block.append(htmlElement("p", "note", "No scalar matches the filter."));
      return block;
    }
    const row = htmlElement("div", "fit-row");
    block.append(row);
    const figures: (() => void)[] = [];
    const plotWidth = smallWidth(width, 3);
    const trace = traceSeries(view, scalar);
    if (trace !== undefined) {
      const { figure, body } = this.figure("trace", `Trace of ${scalar.label}`, { label: scalar.label, series: trace.ys.length }, plotWidth);
      row.append(figure);
      const series = trace.ys.map((_, c) => chainLine(colours, c));
      figures.push(() => this.plot(body, options(plotWidth, SMALL_HEIGHT, colours, "draw", scalar.label, series), alignedData(trace)));
    }
    const ranks = rankSeries(view, scalar);
    if (ranks !== undefined) {
      const { figure, body } = this.figure(
        "rank",
        `Rank plot of ${scalar.label}: uniform when the chains agree`,
        { label: scalar.label, series: ranks.ys.length },
        plotWidth,
      );
      row.append(figure);
      const series: uPlot.Series[] = ranks.ys.map((_, c) => ({ ...chainLine(colours, c), paths: uPlot.paths.stepped!({ align: 1 }) }));
      series.push({ label: "uniform", stroke: colours.foreground, width: 1, dash: [3, 3], points: { show: false } });
      const data: uPlot.AlignedData = [ranks.x, ...ranks.ys, ranks.x.map(() => ranks.uniform)];
      const opts = options(plotWidth, SMALL_HEIGHT, colours, "rank (all chains)", "draws", series);
      opts.scales = { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(max, ranks.uniform) * 1.1] } };
      figures.push(() => this.plot(body, opts, data));
    }
    const autocorr = autocorrSeries(scalar);
    if (autocorr !== undefined) {
      const { figure, body } = this.figure("autocorr", `Autocorrelation of ${scalar.label}`, { label: scalar.label, series: autocorr.ys.length }, plotWidth);
      row.append(figure);
      const opts = options(plotWidth, SMALL_HEIGHT, colours, "lag", "autocorrelation", autocorr.ys.map((_, c) => chainLine(colours, c)));
      opts.scales = { x: { time: false }, y: { range: [-1, 1] } };
      figures.push(() => this.plot(body, opts, alignedData(autocorr)));
    }
    if (scalar.draws === null) {
      row.append(htmlElement("p", "note", `The draws of ${scalar.label} were left out to keep the view small: its trace is not shown.`));
    }
    for (const draw of figures) draw();
    return block;
  }

  private scalarSelect(id: string, title: string, scalars: readonly FitScalar[], selected: number): { label: HTMLLabelElement; select: HTMLSelectElement } {
    const view = this.view!;
    const label = htmlElement("label");
    const select = htmlElement("select");
    select.id = id;
    for (const scalar of scalars) {
      const option = htmlElement("option", undefined, scalar.label);
      option.value = String(view.scalars.indexOf(scalar));
      option.selected = option.value === String(selected);
      select.append(option);
    }
    label.append(`${title} `, select);
    return { label, select };
  }

  // ------------------------------------------------------------ pair

  private pairBlock(view: FitView, colours: Colours, width: number): HTMLElement[] {
    const drawn = view.scalars.filter((s) => s.draws !== null);
    if (drawn.length < 2) return [];
    const block = htmlElement("div", "fit-block fit-pair");
    const x = view.scalars[this.pick.pairX]?.draws != null ? this.pick.pairX : view.scalars.indexOf(drawn[0]!);
    const y = view.scalars[this.pick.pairY]?.draws != null ? this.pick.pairY : view.scalars.indexOf(drawn[1]!);
    const controls = htmlElement("div", "fit-controls");
    const xs = this.scalarSelect("pair-x", "x", drawn, x);
    const ys = this.scalarSelect("pair-y", "y", drawn, y);
    xs.select.addEventListener("change", () => {
      this.pick.pairX = Number(xs.select.value);
      this.render();
    });
    ys.select.addEventListener("change", () => {
      this.pick.pairY = Number(ys.select.value);
      this.render();
    });
    controls.append(htmlElement("span", "fit-heading", "Pair plot"), xs.label, ys.label);
    block.append(controls, ...plotWarnings(view.warnings, "pair"));
    const a = view.scalars[x]!;
    const b = view.scalars[y]!;
    const pair = pairData(view, a, b);
    if (pair === undefined) return [block];
    const note = pair.divergent > 0 ? `, ${pair.divergent} divergent (✕)` : "";
    const { figure, body } = this.figure("pair", `${b.label} against ${a.label}: ${pair.total} draws${note}`, {
      x: a.label,
      y: b.label,
      points: pair.total,
      divergent: pair.divergent,
    });
    block.append(figure);
    const series: uPlot.Series[] = Array.from({ length: pair.chains }, (_, c) => ({
      label: `chain ${c + 1}`,
      stroke: colours.chains[c % CHAIN_COLOURS],
      fill: faded(colours.chains[c % CHAIN_COLOURS]!, 0.55),
      paths: marks("dot", 2),
      points: { show: false },
    }));
    series.push({ label: "divergent", stroke: colours.divergent, width: 1.6, paths: marks("cross", 4), points: { show: false } });
    const size = Math.min(Math.max(MIN_SMALL_WIDTH, width), 560);
    const opts = options(size, Math.min(LARGE_HEIGHT + 80, size), colours, a.label, b.label, series);
    this.plot(body, opts, alignedData(pair.points));
    return [block];
  }

  // ------------------------------------------------------------ energy

  private energyBlock(view: FitView, colours: Colours, width: number): HTMLElement {
    const block = htmlElement("div", "fit-block fit-energy");
    block.append(htmlElement("div", "fit-controls", ""), ...plotWarnings(view.warnings, "energy"));
    block.firstElementChild!.append(htmlElement("span", "fit-heading", "Energy"));
    const energy = energyDensities(view);
    if (energy === undefined) return block;
    const line = bfmiLine(view);
    const { figure, body } = this.figure("energy", "Marginal energy and energy transitions (all chains): alike when E-BFMI is high", {
      bfmi: view.energy!.bfmi.map((v) => (v === null ? "n/a" : String(v))).join(" "),
    });
    const legend = seriesLegend([
      ["marginal energy (energy − mean)", colours.chains[0]!],
      ["energy transition (its change per draw)", colours.chains[1]!],
    ]);
    figure.append(legend, htmlElement("p", "fit-bfmi", line));
    block.append(figure);
    const series: uPlot.Series[] = [
      { label: "marginal energy", stroke: colours.chains[0], fill: faded(colours.chains[0]!, 0.35), width: 1.5, points: { show: false } },
      { label: "energy transition", stroke: colours.chains[1], fill: faded(colours.chains[1]!, 0.35), width: 1.5, points: { show: false } },
    ];
    const opts = options(Math.min(width, 640), LARGE_HEIGHT - 60, colours, "energy − mean", "density", series);
    this.plot(body, opts, alignedData(energy));
    return block;
  }

  // ------------------------------------------------------------ forest

  private forestBlock(view: FitView, colours: Colours, width: number): HTMLElement[] {
    const sites = view.sites.filter((site) => site.count > 0);
    if (sites.length === 0) return [];
    const block = htmlElement("div", "fit-block fit-forest");
    const controls = htmlElement("div", "fit-controls");
    const label = htmlElement("label");
    const select = htmlElement("select");
    select.id = "forest-site";
    view.sites.forEach((site, i) => {
      if (site.count === 0) return;
      const option = htmlElement("option", undefined, site.omitted > 0 ? `${site.name} (${site.count} of ${site.size})` : site.name);
      option.value = String(i);
      option.selected = i === this.pick.site;
      select.append(option);
    });
    label.append("Site ", select);
    const combined = htmlElement("input");
    combined.type = "checkbox";
    combined.id = "forest-combined";
    combined.checked = this.pick.combined;
    const combinedLabel = htmlElement("label");
    combinedLabel.append(combined, " chains combined");
    select.addEventListener("change", () => {
      this.pick.site = Number(select.value);
      this.render();
    });
    combined.addEventListener("change", () => {
      this.pick.combined = combined.checked;
      this.render();
    });
    controls.append(htmlElement("span", "fit-heading", "Forest plot"), label, ...(view.chains > 1 ? [combinedLabel] : []));
    block.append(controls);
    const site = view.sites[this.pick.site]?.count ? view.sites[this.pick.site]! : sites[0]!;
    const rows = forestRows(view, site, this.pick.combined);
    const hdi = Math.round(view.hdi_prob * 100);
    const { figure, body } = this.figure("forest", `${site.name}: mean (dot), 25–75% (thick) and ${hdi}% HDI (thin)${rows.some((r) => r.chain !== null) ? ", a line per chain" : ""}`, {
      site: site.name,
      rows: rows.length,
    });
    block.append(figure);
    const [low, high] = forestRange(rows);
    const n = rows.length;
    const rowHeight = rows.some((r) => r.chain !== null) ? 9 : 18;
    const labels = rows.map((row, i) => (row.chain === null || row.chain === 0 || rows[i - 1]?.label !== row.label ? row.label : ""));
    const opts = options(Math.min(width, 640), Math.max(120, n * rowHeight + 50), colours, site.name, "", [
      { label: "intervals", stroke: colours.foreground, points: { show: false }, paths: () => null },
    ]);
    opts.scales = { x: { time: false, range: [low, high] }, y: { range: [-0.5, n - 0.5] } };
    const yAxis = opts.axes![1]!;
    yAxis.size = 90;
    yAxis.label = "";
    yAxis.splits = () => rows.map((_, i) => n - 1 - i);
    yAxis.values = (_u, splits) => splits.map((s) => labels[n - 1 - s] ?? "");
    yAxis.grid = { show: false };
    opts.hooks = {
      draw: [
        (u) => {
          const ctx = u.ctx;
          ctx.save();
          rows.forEach((row, i) => {
            const [mean, q25, q75, hdiLow, hdiHigh] = row.interval;
            const y = u.valToPos(n - 1 - i, "y", true);
            const colour = row.chain === null ? colours.chains[0]! : colours.chains[row.chain % CHAIN_COLOURS]!;
            ctx.strokeStyle = colour;
            ctx.fillStyle = colour;
            const segment = (from: number | null | undefined, to: number | null | undefined, lineWidth: number): void => {
              if (from === null || from === undefined || to === null || to === undefined) return;
              ctx.lineWidth = lineWidth * uPlot.pxRatio;
              ctx.beginPath();
              ctx.moveTo(u.valToPos(from, "x", true), y);
              ctx.lineTo(u.valToPos(to, "x", true), y);
              ctx.stroke();
            };
            segment(hdiLow, hdiHigh, 1.2);
            segment(q25, q75, 3.5);
            if (mean !== null && mean !== undefined) {
              ctx.beginPath();
              ctx.arc(u.valToPos(mean, "x", true), y, 3 * uPlot.pxRatio, 0, 2 * Math.PI);
              ctx.fill();
            }
          });
          ctx.restore();
        },
      ],
    };
    this.plot(body, opts, [[low, high], [null, null]]);
    return [block];
  }

  // ------------------------------------------------------------ predictive checks

  private checks(view: FitView, colours: Colours, width: number): HTMLElement[] {
    const prior = view.group === "prior";
    const title = prior ? "Prior predictive check" : "Posterior predictive check";
    if (view.ppc.length === 0) {
      if (view.ppc_note === undefined && (prior || view.method !== "nuts")) return [];
      const block = htmlElement("div", "fit-block fit-ppc");
      block.append(htmlElement("div", "fit-controls"), htmlElement("p", "note", view.ppc_note ?? "This run drew no posterior predictive draws."));
      block.firstElementChild!.append(htmlElement("span", "fit-heading", title));
      return [block];
    }
    const block = htmlElement("div", "fit-block fit-ppc");
    const controls = htmlElement("div", "fit-controls");
    controls.append(htmlElement("span", "fit-heading", prior ? "Prior predictive draws" : title));
    if (view.ppc.length > 1) {
      const label = htmlElement("label");
      const select = htmlElement("select");
      select.id = "ppc-site";
      view.ppc.forEach((check, i) => {
        const option = htmlElement("option", undefined, check.site);
        option.value = String(i);
        option.selected = i === this.pick.check;
        select.append(option);
      });
      select.addEventListener("change", () => {
        this.pick.check = Number(select.value);
        this.render();
      });
      label.append("Observed site ", select);
      controls.append(label);
    }
    block.append(controls);
    const check = view.ppc[this.pick.check] ?? view.ppc[0]!;
    const curves = predictiveCurves(check);
    const what = prior ? "prior predictive" : "posterior predictive";
    const shown = curves.replicated < check.draws ? `${curves.replicated} of ${check.draws}` : `${curves.replicated}`;
    const beyond = curves.beyond > 0 ? `; ${curves.beyond} of their values lie beyond the axis, which spans their middle 99%` : "";
    const { figure, body } = this.figure(
      "ppc",
      `${check.site}: ${curves.observed ? "observed data over " : ""}${shown} ${what} draws (${curves.kind === "discrete" ? "share of each value" : "densities"}${beyond})`,
      { site: check.site, kind: curves.kind, replicated: curves.replicated, observed: curves.observed ? 1 : 0 },
    );
    const legend: [string, string][] = [
      [`${what} draws`, faded(colours.chains[0]!, 0.6)],
      [`${what} (all draws)`, colours.chains[1]!],
    ];
    if (curves.observed) legend.push(["observed", colours.foreground]);
    figure.append(seriesLegend(legend));
    block.append(figure);
    const discrete = curves.kind === "discrete";
    const series: uPlot.Series[] = [];
    for (let i = 0; i < curves.replicated; i++) {
      series.push(
        discrete
          ? { stroke: faded(colours.chains[0]!, 0.5), fill: faded(colours.chains[0]!, 0.35), paths: marks("dot", 1.8), points: { show: false } }
          : { stroke: faded(colours.chains[0]!, 0.3), width: 1, points: { show: false } },
      );
    }
    series.push({ stroke: colours.chains[1], width: 2, dash: [6, 3], points: { show: discrete, size: 5 } });
    if (curves.observed) {
      series.push(
        discrete
          ? { stroke: colours.foreground, fill: faded(colours.foreground, 0.25), width: 1, paths: uPlot.paths.bars!({ size: [0.6, 40] }), points: { show: false } }
          : { stroke: colours.foreground, width: 2.2, points: { show: false } },
      );
    }
    const opts = options(Math.min(width, 720), LARGE_HEIGHT, colours, check.site, discrete ? "share" : "density", series);
    if (discrete) opts.scales = { x: { time: false, range: (_u, min, max) => [min - 0.75, max + 0.75] }, y: { range: (_u, _min, max) => [0, max * 1.1] } };
    this.plot(body, opts, [curves.x, ...curves.ys]);
    return [block];
  }
}

function smallWidth(width: number, wanted: number): number {
  const columns = Math.max(1, Math.min(wanted, Math.floor((width + GAP) / (MIN_SMALL_WIDTH + GAP))));
  return Math.floor((width - GAP * (columns - 1)) / columns);
}

/** The view's warnings about `plot`, as the posterior table shows its own: ⚠, message, remedy. */
function plotWarnings(warnings: readonly ViewWarning[], plot: string): HTMLElement[] {
  const mine = warnings.filter((w) => w.plot === plot);
  return mine.length === 0 ? [] : [warningList(mine)];
}

/** The model comparison (`FitView.comparison`): a table of the runs, the current one marked, then
 * its warnings with their remedies; or the note saying why there is none. Plain DOM, text only. */
function comparisonBlock(view: FitView): HTMLElement[] {
  if (view.comparison === undefined && view.comparison_note === undefined) return [];
  const block = headedBlock("fit-comparison", "Model comparison");
  if (view.comparison === undefined) {
    block.append(htmlElement("p", "note", view.comparison_note!));
    return [block];
  }
  block.append(...comparisonParts(view.comparison));
  return [block];
}

function comparisonParts(comparison: FitComparison): HTMLElement[] {
  const model = comparisonTable(comparison);
  const table = htmlElement("table", "posterior comparison");
  table.dataset.rows = String(model.lines.length);
  table.createCaption().textContent = model.caption;
  const head = table.createTHead().insertRow();
  head.append(...model.columns.map((title) => Object.assign(htmlElement("th", undefined, title), { scope: "col" })));
  const body = table.createTBody();
  for (const line of model.lines) {
    const row = body.insertRow();
    row.dataset.name = line.name;
    if (line.current) {
      row.className = "current";
      row.setAttribute("aria-current", "true");
    }
    const name = Object.assign(htmlElement("th", "name", line.name), { scope: "row" });
    if (line.current) name.append(htmlElement("span", "this-run", "this run"));
    const warning = htmlElement("td", line.warning !== "" ? "flag" : undefined, line.warning);
    if (line.warningTitle !== "") warning.title = line.warningTitle;
    row.append(
      htmlElement("td", undefined, line.rank),
      name,
      ...line.cells.map((cell) => htmlElement("td", cell === "n/a" ? "na" : undefined, cell)),
      warning,
    );
  }
  const scroll = htmlElement("div", "table-scroll");
  scroll.append(table);
  const parts: HTMLElement[] = [scroll];
  if (model.warnings.length > 0) {
    parts.push(warningList(model.warnings.map((w) => ({ message: w.message, remedy: w.remedy, kind: w.code }))));
  }
  for (const note of model.notes) parts.push(htmlElement("p", "note", note));
  return parts;
}

/** The prior sensitivity (`FitView.sensitivity`): a row per element with its prior and likelihood
 * sensitivity and priorsense's diagnosis, then each diagnosis with its remedy; or the note saying
 * why there is none. Plain DOM, text only. */
function sensitivityBlock(view: FitView): HTMLElement[] {
  if (view.sensitivity === undefined && view.sensitivity_note === undefined) return [];
  const block = headedBlock("fit-sensitivity", "Prior sensitivity");
  const found = view.sensitivity;
  if (found === undefined) {
    block.append(htmlElement("p", "note", view.sensitivity_note!));
    return [block];
  }
  const table = htmlElement("table", "posterior sensitivity");
  table.dataset.rows = String(found.rows.length);
  const scaled = found.note ?? "the top-level ones";
  // A note above the table, not its caption: a caption is as wide as the table, and this
  // one (three narrow columns) squeezed the sentence into a centred column.
  block.append(
    htmlElement(
      "p",
      "note",
      `How far each posterior moves when the prior or the likelihood is power-scaled (priorsense, by ArviZ); ` +
        `${found.threshold} and over is sensitive. Priors scaled: ${found.priors.join(", ")} (${scaled}).`,
    ),
  );
  const head = table.createTHead().insertRow();
  head.append(...["", "prior", "likelihood", "diagnosis"].map((title) => Object.assign(htmlElement("th", undefined, title), { scope: "col" })));
  const body = table.createTBody();
  const cell = (value: number | null): HTMLElement => htmlElement("td", value === null ? "na" : undefined, value === null ? "n/a" : value.toFixed(3));
  for (const row of found.rows) {
    const line = body.insertRow();
    if (row.diagnosis !== null) line.className = "flagged";
    line.append(Object.assign(htmlElement("th", "name", row.label), { scope: "row" }), cell(row.prior), cell(row.likelihood), htmlElement("td", row.diagnosis !== null ? "flag" : undefined, row.diagnosis ?? "-"));
  }
  const scroll = htmlElement("div", "table-scroll");
  scroll.append(table);
  block.append(scroll);
  const flagged = [...new Set(found.rows.flatMap((r) => (r.diagnosis !== null ? [r.diagnosis] : [])))];
  if (flagged.length > 0) {
    block.append(
      warningList(
        flagged.map((diagnosis) => ({
          message: `${diagnosis}: ${found.rows.filter((r) => r.diagnosis === diagnosis).map((r) => r.label).join(", ")}`,
          remedy: found.remedies[diagnosis] ?? "",
          kind: "sensitivity",
        })),
      ),
    );
  } else {
    block.append(htmlElement("p", "note", "No parameter is sensitive to its prior beyond the threshold."));
  }
  return [block];
}

/** A block of the run view with its heading (the comparison's, the sensitivity's). */
function headedBlock(kind: string, heading: string): HTMLElement {
  const block = htmlElement("div", `fit-block ${kind}`);
  const controls = htmlElement("div", "fit-controls");
  controls.append(htmlElement("span", "fit-heading", heading));
  block.append(controls);
  return block;
}

/** A legend of series by colour (canvas series have no element to style). */
function seriesLegend(entries: readonly (readonly [string, string])[]): HTMLElement {
  const list = htmlElement("ul", "fit-legend");
  for (const [text, colour] of entries) {
    const item = htmlElement("li");
    const swatch = htmlElement("span", "fit-swatch");
    swatch.style.backgroundColor = colour; // CSSOM, which the CSP allows (an inline style attribute it would not)
    item.append(swatch, text);
    list.append(item);
  }
  return list;
}
