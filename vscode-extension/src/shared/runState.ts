/**
 * What is known of the current run from its `qvr/inferenceProgress` notifications:
 * the loss (or potential) curve and a NUTS run's latest draws. The panel keeps one
 * to bring a (re)loaded webview up to date; the webview keeps one to draw from.
 */
import { LossSeries } from "./lossSeries";
import type { InferenceProgress, LiveDraws } from "./protocol";

export class RunState {
  series = new LossSeries();
  method = "";
  /** The latest draws; a notification without them keeps the previous ones. */
  live: LiveDraws | undefined;

  /** Adds a notification; a new runId starts over. */
  add(progress: InferenceProgress): void {
    if (progress.runId !== this.series.runId) {
      this.method = "";
      this.live = undefined;
    }
    this.series.add(progress);
    if (progress.method !== "") this.method = progress.method;
    if (progress.live !== undefined) this.live = progress.live;
  }

  /** One notification that carries everything known, or undefined before the first. */
  snapshot(uri: string): InferenceProgress | undefined {
    const runId = this.series.runId;
    if (runId === undefined) return undefined;
    const progress: InferenceProgress = {
      uri,
      runId,
      method: this.method,
      total: this.series.total,
      points: this.series.points(),
      done: this.series.done,
    };
    if (this.live !== undefined) progress.live = this.live;
    return progress;
  }
}
