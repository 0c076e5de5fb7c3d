/**
 * The run view: the loss curve drawn from streamed progress; for a NUTS run the
 * trace plots per chain and the posterior table of the draws so far, replaced by
 * the final summary's table when the run finishes (SVI's too); then the plots of
 * the fit (fit.ts) and, for a program with attention, the heatmaps of its weights.
 */
import { formatNumber } from "../../src/shared/chart";
import type { FromLossView, ToLossView } from "../../src/shared/messages";
import { drawsLine } from "../../src/shared/posteriorTable";
import type { Posterior } from "../../src/shared/protocol";
import { RunState } from "../../src/shared/runState";
import { element, vscodeApi } from "../vscodeApi";
import { drawAttention } from "./attention";
import { FitPlots } from "./fit";
import { drawCurve } from "./lossChart";
import { drawPosterior, drawPosteriorNote } from "./posterior";
import { drawLegend, drawTraces } from "./traces";

const vscode = vscodeApi<FromLossView>();
const chart = element("chart", HTMLElement);
const title = element("title", HTMLElement);
const status = element("status", HTMLElement);
const live = element("live", HTMLElement);
const draws = element("draws", HTMLElement);
const legend = element("legend", HTMLElement);
const traces = element("traces", HTMLElement);
const posterior = element("posterior", HTMLElement);
const attention = element("attention", HTMLElement);
const fit = new FitPlots(element("fit", HTMLElement));
const details = element("details", HTMLElement);
const summary = element("summary", HTMLElement);

let state = new RunState();
let total = 0;
let method = "";
/** The finished run's posterior (null: it has none); undefined while the run goes. */
let final: Posterior | null | undefined;

function isMcmc(): boolean {
  return method === "nuts" || state.live !== undefined;
}

function drawLoss(): void {
  const mcmc = isMcmc();
  const width = Math.max(320, chart.clientWidth);
  const height = mcmc ? 200 : Math.max(220, Math.min(480, Math.round(width * 0.5)));
  const labels = mcmc
    ? { title: "Potential energy by iteration (all chains)", x: "iteration (all chains)", y: "potential" }
    : { title: "Loss by step", x: "step", y: "loss" };
  const layout = drawCurve(chart, state.series.points(), total, height, labels);
  if (layout.last === undefined) return;
  const done = state.series.done ? " (done)" : "";
  status.textContent = mcmc
    ? `iteration ${layout.last.step}/${total || "?"}, potential ${formatNumber(layout.last.loss)}${done}`
    : `step ${layout.last.step}/${total || "?"}, loss ${formatNumber(layout.last.loss)}${done}`;
}

function drawLive(): void {
  const current = state.live;
  live.hidden = current === undefined;
  if (current === undefined) return;
  draws.textContent = drawsLine(current);
  drawLegend(legend, current.chains);
  drawTraces(traces, current);
}

function drawSummary(): void {
  const shown = final !== undefined ? final : state.live?.posterior;
  if (shown !== undefined && shown !== null) {
    posterior.hidden = false;
    drawPosterior(posterior, shown, final !== undefined ? "Posterior" : `Posterior of the draws so far`);
  } else if (final === undefined && state.live !== undefined) {
    posterior.hidden = false;
    drawPosteriorNote(posterior, "The summary table appears once the chains have enough draws.");
  } else {
    posterior.hidden = true;
    posterior.replaceChildren();
  }
}

function redraw(): void {
  document.body.classList.toggle("mcmc", isMcmc());
  drawLoss();
  drawLive();
  drawSummary();
  fit.resize();
}

window.addEventListener("message", (event: MessageEvent<ToLossView>) => {
  const message = event.data;
  if (typeof message !== "object" || message === null) return;
  switch (message.type) {
    case "start":
      state = new RunState();
      total = message.total;
      method = message.method;
      final = undefined;
      title.textContent = message.title;
      status.textContent = "Starting…";
      status.classList.remove("error");
      summary.textContent = "";
      details.hidden = true;
      drawAttention(attention, []);
      fit.clear();
      break;
    case "progress":
      state.add(message.progress);
      total = message.progress.total || total;
      if (message.progress.method !== "") method = message.progress.method;
      break;
    case "finished":
      summary.textContent = message.summary;
      details.hidden = false;
      final = message.posterior;
      drawAttention(attention, message.attention ?? []); // its size does not follow the width
      fit.show(message.view ?? null, message.viewError);
      break;
    case "failed":
      status.textContent = message.message;
      status.classList.add("error");
      return;
  }
  redraw();
});

// Redraw for a new width only: a redraw changes the heights, which must not loop.
let drawnWidth = 0;
new ResizeObserver(() => {
  if (chart.clientWidth === drawnWidth) return;
  drawnWidth = chart.clientWidth;
  redraw();
}).observe(chart);
vscode.postMessage({ type: "ready" });
