import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import { Debouncer } from "../src/shared/debounce";

// Mock timers keep this deterministic on a busy machine (Node prints that they are experimental).
describe("Debouncer", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
  afterEach(() => mock.timers.reset());

  it("runs once, 300 ms after the last of a burst of triggers", () => {
    let runs = 0;
    const redraw = new Debouncer(300, () => runs++);
    redraw.trigger();
    mock.timers.tick(200);
    redraw.trigger();
    mock.timers.tick(299);
    assert.equal(runs, 0);
    mock.timers.tick(1);
    assert.equal(runs, 1);
  });

  it("does not run after it is disposed", () => {
    let runs = 0;
    const redraw = new Debouncer(300, () => runs++);
    redraw.trigger();
    redraw.dispose();
    mock.timers.tick(1000);
    assert.equal(runs, 0);
  });
});
