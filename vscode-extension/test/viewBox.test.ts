import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_ZOOM, MIN_ZOOM, fitBox, panBox, zoomBox, zoomPercent } from "../src/shared/viewBox";

const content = { x: 0, y: -300, width: 1000, height: 300 };

describe("diagram view box", () => {
  it("fits the drawing with a small margin on every side", () => {
    const fit = fitBox(content);
    assert.ok(fit.x < 0 && fit.y < -300);
    assert.ok(fit.x + fit.width > 1000 && fit.y + fit.height > 0);
    assert.equal(zoomPercent(fit, fit), 100);
  });

  it("zooms about the given point, which stays where it is", () => {
    const fit = fitBox(content);
    const zoomed = zoomBox(fit, fit, 2, 0.25, 0.75);
    assert.equal(zoomPercent(zoomed, fit), 200);
    const before = { x: fit.x + 0.25 * fit.width, y: fit.y + 0.75 * fit.height };
    const after = { x: zoomed.x + 0.25 * zoomed.width, y: zoomed.y + 0.75 * zoomed.height };
    assert.ok(Math.abs(before.x - after.x) < 1e-9 && Math.abs(before.y - after.y) < 1e-9);
  });

  it("keeps the zoom within its bounds", () => {
    const fit = fitBox(content);
    assert.equal(zoomPercent(zoomBox(fit, fit, 1e6), fit), MAX_ZOOM * 100);
    assert.equal(zoomPercent(zoomBox(fit, fit, 1e-6), fit), MIN_ZOOM * 100);
  });

  it("pans by the dragged distance in drawing units", () => {
    const view = { x: 0, y: 0, width: 200, height: 100 };
    // 400 x 100 pixels: "meet" scales by the height, 1 unit per pixel.
    assert.deepEqual(panBox(view, 10, -5, 400, 100), { x: -10, y: 5, width: 200, height: 100 });
  });
});
