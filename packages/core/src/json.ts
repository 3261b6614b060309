/** A `JSON.stringify` replacer that writes bigints (positions, revisions) as strings. */
export const bigintAsString = (_key: string, value: unknown): unknown =>
  typeof value === "bigint" ? value.toString() : value;

/** JSON with bigints as strings (JSON itself has no bigint). */
export function jsonWithBigints(value: unknown, indent?: number): string {
  return JSON.stringify(value, bigintAsString, indent);
}
