/** A message for the user from anything thrown, including JSON-RPC ResponseErrors. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
