/** A message for the user from anything thrown, including JSON-RPC ResponseErrors. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The server's `data.kind` of a command's error ("run-support", "busy", ...; qvr_lsp/protocol/command_errors.py). */
export function errorKind(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("data" in error)) return undefined;
  const data: unknown = error.data;
  if (typeof data !== "object" || data === null || !("kind" in data)) return undefined;
  return typeof data.kind === "string" ? data.kind : undefined;
}
