/**
 * Nodes with errors: the renderers draw the mark (the core puts them in the error
 * class / a red dashed border); here each gets the `qvr-error` class, so the theme's
 * error colour applies, and its messages in a tooltip while the pointer is over it.
 */
import type { NodeFinder } from "./nodeLinks";

export function markErrors(svg: SVGSVGElement, find: NodeFinder, tooltip: HTMLElement): number {
  let marked = 0;
  for (const group of Array.from(svg.querySelectorAll("g.node"))) {
    const node = find(group);
    if (node === undefined || node.errors.length === 0) continue;
    group.classList.add("qvr-error");
    const text = node.errors.join("\n");
    group.setAttribute("aria-description", text);
    group.addEventListener("pointerenter", (event) => show(tooltip, text, event));
    group.addEventListener("pointermove", (event) => show(tooltip, text, event));
    group.addEventListener("pointerleave", () => (tooltip.hidden = true));
    group.addEventListener("focus", () => {
      const box = group.getBoundingClientRect();
      place(tooltip, text, box.left, box.bottom);
    });
    group.addEventListener("blur", () => (tooltip.hidden = true));
    marked += 1;
  }
  return marked;
}

function show(tooltip: HTMLElement, text: string, event: Event): void {
  if (event instanceof MouseEvent) place(tooltip, text, event.clientX + 12, event.clientY + 16);
}

function place(tooltip: HTMLElement, text: string, x: number, y: number): void {
  tooltip.textContent = text;
  tooltip.hidden = false;
  const width = tooltip.offsetWidth;
  const height = tooltip.offsetHeight;
  tooltip.style.left = `${Math.max(4, Math.min(x, window.innerWidth - width - 4))}px`;
  tooltip.style.top = `${Math.max(4, Math.min(y, window.innerHeight - height - 4))}px`;
}
