/** The posterior table in the run view, from the same table model as the output channel's text. */
import { type PosteriorTable, posteriorTable, samplerLine } from "../../src/shared/posteriorTable";
import type { Posterior } from "../../src/shared/protocol";
import { htmlElement } from "./svg";
import { warningList } from "./warnings";

function table(model: PosteriorTable): HTMLTableElement | undefined {
  if (!model.lines.some((line) => line.kind === "row")) return undefined;
  const element = htmlElement("table", "posterior");
  const head = element.createTHead().insertRow();
  head.append(htmlElement("th"), ...model.columns.map((title) => Object.assign(htmlElement("th", undefined, title), { scope: "col" })));
  const body = element.createTBody();
  for (const line of model.lines) {
    const row = body.insertRow();
    if (line.kind === "row") {
      row.append(Object.assign(htmlElement("th", undefined, line.label), { scope: "row" }));
      for (const cell of line.cells) row.append(htmlElement("td", cell === "n/a" ? "na" : undefined, cell));
    } else {
      row.className = "more";
      const cell = htmlElement("td", undefined, `… ${line.text}`);
      cell.colSpan = model.columns.length + 1;
      row.append(cell);
    }
  }
  return element;
}

/** Renders `posterior` into `container`: heading, sampler counts, table, warnings with remedies. */
export function drawPosterior(container: HTMLElement, posterior: Posterior, heading: string): void {
  const model = posteriorTable(posterior);
  const parts: HTMLElement[] = [htmlElement("h2", undefined, heading)];
  const sampler = samplerLine(posterior);
  if (sampler !== undefined) parts.push(htmlElement("p", "sampler", sampler));
  const rendered = table(model);
  if (rendered !== undefined) parts.push(rendered);
  if (model.warnings.length > 0) parts.push(warningList(model.warnings));
  if (model.verdict !== undefined) parts.push(htmlElement("p", "verdict", model.verdict));
  container.replaceChildren(...parts);
}

/** A note in place of the table (a NUTS run before it has enough draws). */
export function drawPosteriorNote(container: HTMLElement, note: string): void {
  container.replaceChildren(htmlElement("p", "note", note));
}
