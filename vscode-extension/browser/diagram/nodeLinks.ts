/**
 * Connects the drawn SVG back to the server's node list so that a click on a node
 * reveals its source. Mermaid names node groups `…flowchart-<id>-<n>`; Graphviz puts
 * the node's DOT id in the group's <title>. The label is the last resort.
 */
import type { DiagramNode, Range } from "../../src/shared/protocol";

const MERMAID_NODE_ID = /(?:^|-)flowchart-(.+)-\d+$/;

/** Finds the server's node of a drawn node group. */
export type NodeFinder = (group: Element) => DiagramNode | undefined;

export function nodeFinder(nodes: readonly DiagramNode[]): NodeFinder {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const byLabel = uniqueLabels(nodes);
  return (group) => findNode(group, byId, byLabel);
}

export function linkNodes(svg: SVGSVGElement, find: NodeFinder, onReveal: (range: Range) => void): number {
  let linked = 0;
  for (const group of Array.from(svg.querySelectorAll("g.node"))) {
    const node = find(group);
    if (node?.range == null) continue;
    const range = node.range;
    group.classList.add("qvr-linked");
    group.setAttribute("tabindex", "0");
    group.setAttribute("role", "button");
    group.setAttribute("aria-label", `${node.label} (${node.type}): go to source`);
    group.addEventListener("click", () => onReveal(range));
    group.addEventListener("keydown", (event) => {
      if (event instanceof KeyboardEvent && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        onReveal(range);
      }
    });
    linked += 1;
  }
  return linked;
}

function findNode(
  group: Element,
  byId: ReadonlyMap<string, DiagramNode>,
  byLabel: ReadonlyMap<string, DiagramNode>,
): DiagramNode | undefined {
  const dataId = group.getAttribute("data-id");
  if (dataId !== null && byId.has(dataId)) return byId.get(dataId);
  const mermaidId = MERMAID_NODE_ID.exec(group.id)?.[1];
  if (mermaidId !== undefined && byId.has(mermaidId)) return byId.get(mermaidId);
  const title = group.querySelector(":scope > title")?.textContent?.trim();
  if (title !== undefined && byId.has(title)) return byId.get(title);
  const text = group.textContent?.replace(/\s+/g, " ").trim() ?? "";
  return byLabel.get(text);
}

/** Labels that name exactly one node, keyed with normalised whitespace. */
function uniqueLabels(nodes: readonly DiagramNode[]): Map<string, DiagramNode> {
  const counts = new Map<string, number>();
  const result = new Map<string, DiagramNode>();
  for (const node of nodes) {
    const key = node.label.replace(/\s+/g, " ").trim();
    counts.set(key, (counts.get(key) ?? 0) + 1);
    result.set(key, node);
  }
  for (const [key, count] of counts) if (count > 1) result.delete(key);
  return result;
}
