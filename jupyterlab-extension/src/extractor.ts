/**
 * Which text of a notebook cell is QVR: a `%%qvr` cell, read as the qvr server reads
 * the cells VS Code sends it (qvr_core/text/cells.py).
 *
 * jupyterlab-lsp builds one virtual document per language from a notebook's cells, and
 * asks the registered extractors which text of a Python cell belongs to another language.
 * A `%%qvr` cell is a whole QVR module (the magic checks it alone), so each cell is a
 * standalone document of its own: one cell's names never leak into the next, as in
 * `qvr check` and in VS Code. The document is the whole cell with the magic's line as a
 * comment of the same length (`%%qvr --run` -> `# qvr --run`), so each of its lines and
 * columns is the cell's: the line a hover names is the line the cell shows. The Python
 * document keeps nothing of the cell.
 */
import type { IExtractedCode, IForeignCodeExtractor } from "@jupyterlab/lsp";

const MAGIC = "%%qvr";

/** The QVR document of a cell, or null for a cell that is not `%%qvr`. */
export function qvrText(cell: string): string | null {
  const first = cell.split("\n", 1)[0];
  if (first !== MAGIC && ![" ", "\t", "\r"].some((gap) => first.startsWith(MAGIC + gap))) return null;
  return "# " + cell.slice(2);
}

export class QvrCellExtractor implements IForeignCodeExtractor {
  readonly language = "qvr";
  readonly fileExtension = "qvr";
  readonly standalone = true;
  readonly cellType = ["code"];

  hasForeignCode(code: string, cellType: string): boolean {
    return this.cellType.includes(cellType) && qvrText(code) !== null;
  }

  extractForeignCode(code: string): IExtractedCode[] {
    const text = qvrText(code);
    if (text === null) return [{ foreignCode: null, range: null, virtualShift: null, hostCode: code }];
    const lines = code.split("\n");
    const end = { line: lines.length - 1, column: lines[lines.length - 1].length };
    return [{ foreignCode: text, range: { start: { line: 0, column: 0 }, end }, virtualShift: null, hostCode: "" }];
  }
}
