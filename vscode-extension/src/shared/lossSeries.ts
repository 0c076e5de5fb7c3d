/**
 * The loss curve of one inference run, built from `qvr/inferenceProgress`
 * notifications. Points are keyed by step, so a server that re-sends the whole
 * series and one that sends only new points both produce the same curve.
 */
import type { ChartPoint, InferenceProgress } from "./protocol";

export class LossSeries {
  private readonly byStep = new Map<number, number>();
  runId: string | number | undefined;
  total = 0;
  done = false;

  /** Adds a notification's points; a new runId starts a fresh curve. */
  add(progress: InferenceProgress): void {
    if (progress.runId !== this.runId) {
      this.byStep.clear();
      this.runId = progress.runId;
      this.done = false;
    }
    this.total = progress.total;
    this.done = this.done || progress.done;
    for (const point of progress.points) {
      if (isDrawable(point)) this.byStep.set(point[0], point[1]);
    }
  }

  points(): ChartPoint[] {
    return [...this.byStep.entries()].sort((a, b) => a[0] - b[0]);
  }
}

function isDrawable(value: unknown): value is ChartPoint {
  return (
    Array.isArray(value) &&
    value.length >= 2 &&
    typeof value[0] === "number" &&
    typeof value[1] === "number" &&
    Number.isFinite(value[0]) &&
    Number.isFinite(value[1])
  );
}
