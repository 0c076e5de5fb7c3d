/**
 * Reads "Export Program" arguments: the "Export to ..." code lens's `{uri, program, target}`
 * (the shape of the server's `qvr.exportProgram` arguments), positional `(uri, program?,
 * target?)`, or nothing (the palette: the active file, the target picked from a list).
 */
import { EXPORT_TARGETS, type ExportResult, type ExportTarget, exportTarget, exportTitle } from "../shared/protocol";

export interface ExportRequest {
  uri?: string;
  program?: string;
  target?: ExportTarget;
}

export function parseExportArguments(args: readonly unknown[]): ExportRequest {
  const [first, second, third] = args;
  if (typeof first === "string") {
    return { uri: first, program: nonEmpty(second), target: exportTarget(third) };
  }
  if (typeof first !== "object" || first === null) return {};
  const { uri, program, name, target } = first as Record<string, unknown>;
  return { uri: nonEmpty(uri), program: nonEmpty(program) ?? nonEmpty(name), target: exportTarget(target) };
}

/** The quick pick's entries: every target, the one of `qvr.export.target` first. */
export function targetChoices(setting: ExportTarget | undefined): { label: string; description: string; target: ExportTarget }[] {
  const ordered = [...EXPORT_TARGETS].sort((a, b) => Number(b.name === setting) - Number(a.name === setting));
  return ordered.map((t) => ({
    label: t.title,
    description: t.name === setting ? `${t.description} (qvr.export.target)` : t.description,
    target: t.name,
  }));
}

/** The notification for a refusal: the server's one line (its diagnostics are in Problems
 * when `qvr.export.target` names this target). */
export function refusalMessage(target: ExportTarget, result: Extract<ExportResult, { ok: false }>): string {
  return `Nothing exported to ${exportTitle(target)}: ${result.message}`;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}
