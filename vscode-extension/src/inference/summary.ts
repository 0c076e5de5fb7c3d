/**
 * The run summary as JSON for the output channel: one line per field, so a
 * 500-step loss series stays one line instead of five hundred.
 */
export function formatSummary(summary: unknown): string {
  if (typeof summary !== "object" || summary === null || Array.isArray(summary)) {
    return JSON.stringify(summary, null, 2);
  }
  const fields = Object.entries(summary).map(([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  return fields.length === 0 ? "{}" : `{\n${fields.join(",\n")}\n}`;
}
