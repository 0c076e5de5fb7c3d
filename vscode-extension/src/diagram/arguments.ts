/**
 * Reads "Show Diagram" arguments from a code lens: `{uri, name?}` (the shape of the
 * server's `qvr.diagram` arguments) or positional `(uri, name?)`.
 */
export interface DiagramArguments {
  uri?: string;
  name?: string;
}

export function parseDiagramArguments(args: readonly unknown[]): DiagramArguments {
  const [first, second] = args;
  if (typeof first === "string") return { uri: first, name: typeof second === "string" ? second : undefined };
  if (typeof first !== "object" || first === null) return {};
  const { uri, name, program } = first as Record<string, unknown>;
  return {
    uri: typeof uri === "string" ? uri : undefined,
    name: typeof name === "string" ? name : typeof program === "string" ? program : undefined,
  };
}
