/**
 * The arithmetic of the diagram's pan and zoom, on SVG view boxes: pure, so it is
 * unit-tested without a browser. The drawing is shown through a view box with
 * `preserveAspectRatio="xMidYMid meet"`, so "fit" is the drawing's own box plus a
 * margin, and zooming keeps the point under the mouse where it is.
 */

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The most a drawing is magnified, and shrunk, relative to fitting the panel. */
export const MAX_ZOOM = 8;
export const MIN_ZOOM = 0.1;
const FIT_MARGIN = 0.04;

export function fitBox(content: Box): Box {
  const margin = Math.max(content.width, content.height) * FIT_MARGIN;
  return {
    x: content.x - margin,
    y: content.y - margin,
    width: Math.max(1, content.width + 2 * margin),
    height: Math.max(1, content.height + 2 * margin),
  };
}

/**
 * `view` zoomed by `factor` (>1 magnifies) about the point (`fx`, `fy`), given as
 * fractions of the view's width and height; clamped to MIN_ZOOM..MAX_ZOOM of `fit`.
 */
export function zoomBox(view: Box, fit: Box, factor: number, fx = 0.5, fy = 0.5): Box {
  const current = fit.width / view.width;
  const target = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, current * factor));
  const scale = current / target;
  const width = view.width * scale;
  const height = view.height * scale;
  return {
    x: view.x + (view.width - width) * fx,
    y: view.y + (view.height - height) * fy,
    width,
    height,
  };
}

/** `view` moved by a drag of (`dx`, `dy`) screen pixels over an element `pixelWidth` wide. */
export function panBox(view: Box, dx: number, dy: number, pixelWidth: number, pixelHeight: number): Box {
  // With "meet" one screen pixel is the larger of the two view-box units per pixel.
  const unit = Math.max(view.width / Math.max(1, pixelWidth), view.height / Math.max(1, pixelHeight));
  return { ...view, x: view.x - dx * unit, y: view.y - dy * unit };
}

/** The zoom relative to fitting, as the percentage the toolbar shows. */
export function zoomPercent(view: Box, fit: Box): number {
  return Math.round((100 * fit.width) / view.width);
}
