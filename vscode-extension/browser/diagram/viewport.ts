/**
 * Shows the drawing fitted to the panel, with pan (drag) and zoom (wheel, the
 * toolbar's buttons, + - 0 keys). A redraw while typing keeps the user's zoom and
 * position; until the user zooms or pans, every drawing is fitted.
 */
import { type Box, fitBox, panBox, zoomBox, zoomPercent } from "../../src/shared/viewBox";

const WHEEL_STEP = 1.15;
const BUTTON_STEP = 1.4;
/** A press that moves less than this is a click (on a node), not a drag. */
const DRAG_THRESHOLD_PX = 4;

export class Viewport {
  private svg: SVGSVGElement | undefined;
  private fit: Box = { x: 0, y: 0, width: 1, height: 1 };
  private view: Box = this.fit;
  private userMoved = false;
  private drag: { x: number; y: number; view: Box; moved: boolean } | undefined;

  constructor(
    private readonly container: HTMLElement,
    private readonly zoomLabel: HTMLElement,
  ) {
    container.addEventListener("wheel", (event) => this.onWheel(event), { passive: false });
    container.addEventListener("pointerdown", (event) => this.onPointerDown(event));
    container.addEventListener("pointermove", (event) => this.onPointerMove(event));
    container.addEventListener("pointerup", () => this.endDrag());
    container.addEventListener("pointercancel", () => this.endDrag());
    // A drag that ends on a node must not also click it.
    container.addEventListener("click", (event) => this.swallowClickAfterDrag(event), true);
  }

  /** Takes over a freshly inserted drawing. */
  show(svg: SVGSVGElement): void {
    this.svg = svg;
    const content = drawingBox(svg);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.style.maxWidth = "none";
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    this.fit = fitBox(content);
    this.apply(this.userMoved ? this.view : this.fit);
  }

  zoomBy(factor: number): void {
    this.userMoved = true;
    this.apply(zoomBox(this.view, this.fit, factor));
  }

  zoomIn(): void {
    this.zoomBy(BUTTON_STEP);
  }

  zoomOut(): void {
    this.zoomBy(1 / BUTTON_STEP);
  }

  fitToPanel(): void {
    this.userMoved = false;
    this.apply(this.fit);
  }

  private apply(view: Box): void {
    this.view = view;
    this.svg?.setAttribute("viewBox", `${view.x} ${view.y} ${view.width} ${view.height}`);
    this.zoomLabel.textContent = `${zoomPercent(view, this.fit)}%`;
  }

  private onWheel(event: WheelEvent): void {
    if (this.svg === undefined) return;
    event.preventDefault();
    const rect = this.container.getBoundingClientRect();
    const factor = event.deltaY < 0 ? WHEEL_STEP : 1 / WHEEL_STEP;
    this.userMoved = true;
    this.apply(
      zoomBox(
        this.view,
        this.fit,
        factor,
        (event.clientX - rect.left) / Math.max(1, rect.width),
        (event.clientY - rect.top) / Math.max(1, rect.height),
      ),
    );
  }

  private onPointerDown(event: PointerEvent): void {
    if (event.button !== 0 || this.svg === undefined) return;
    this.drag = { x: event.clientX, y: event.clientY, view: this.view, moved: false };
  }

  private onPointerMove(event: PointerEvent): void {
    const drag = this.drag;
    if (drag === undefined) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < DRAG_THRESHOLD_PX) return;
    if (!drag.moved) {
      drag.moved = true;
      this.container.setPointerCapture(event.pointerId);
      this.container.classList.add("panning");
    }
    this.userMoved = true;
    const rect = this.container.getBoundingClientRect();
    this.apply(panBox(drag.view, dx, dy, rect.width, rect.height));
  }

  private endDrag(): void {
    this.container.classList.remove("panning");
    // Kept until the click that follows the release has been seen.
    setTimeout(() => (this.drag = undefined), 0);
  }

  private swallowClickAfterDrag(event: MouseEvent): void {
    if (this.drag?.moved) {
      event.stopPropagation();
      event.preventDefault();
    }
  }
}

/** The drawing's own box: its viewBox as the renderer wrote it, else its bounding box. */
function drawingBox(svg: SVGSVGElement): Box {
  const base = svg.viewBox.baseVal;
  if (base !== null && base.width > 0 && base.height > 0) {
    return { x: base.x, y: base.y, width: base.width, height: base.height };
  }
  const bbox = svg.getBBox();
  return { x: bbox.x, y: bbox.y, width: Math.max(1, bbox.width), height: Math.max(1, bbox.height) };
}
