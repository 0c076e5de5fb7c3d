/**
 * Reading untrusted JSON from the server: an object's fields, natural and finite
 * numbers, and bounded text. Every parser of the server's messages uses these, so a
 * value is accepted or refused the same way everywhere.
 */

export type Fields = Record<string, unknown>;

/** The fields of a plain object, or undefined for anything else (arrays, null). */
export function fields(value: unknown): Fields | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Fields) : undefined;
}

export function isNatural(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

export function isFiniteNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** A string cut to `limit` characters, or undefined for anything else. */
export function text(value: unknown, limit: number): string | undefined {
  return typeof value === "string" ? value.slice(0, limit) : undefined;
}
