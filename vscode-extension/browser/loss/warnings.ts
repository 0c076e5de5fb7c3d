/**
 * A list of warnings as every part of the run view shows them: ⚠, message, remedy
 * (the posterior table's, the fit plots', the model comparison's). Plain DOM, text only.
 */
import { htmlElement } from "./svg";

export interface ShownWarning {
  message: string;
  remedy: string;
  /** Set as `data-kind` on the item, for tests and styles. */
  kind?: string;
}

export function warningList(warnings: readonly ShownWarning[]): HTMLUListElement {
  const list = htmlElement("ul", "warnings");
  for (const warning of warnings) {
    const item = htmlElement("li", "warning");
    if (warning.kind !== undefined) item.dataset.kind = warning.kind;
    item.append(
      htmlElement("span", "mark", "⚠"),
      htmlElement("strong", undefined, "warning: "),
      htmlElement("span", "message", warning.message),
      htmlElement("span", "remedy", `remedy: ${warning.remedy}`),
    );
    list.append(item);
  }
  return list;
}
