/** Renders rows as an aligned text table. */
export function table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  // (Not Math.max(...column): spread into a call, a million rows overflow the stack.)
  const widths = headers.map((h) => h.length);
  for (const r of rows)
    for (let i = 0; i < widths.length; i++) {
      const n = (r[i] ?? "").length;
      if (n > (widths[i] as number)) widths[i] = n;
    }
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (c ?? "").padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** `2026-11-28T02:00:00.000Z` -> `2026-11-28T02:00Z`; null -> `-`. */
export function short(iso: string | null | undefined): string {
  if (!iso) return "-";
  return iso.replace(/(?::00)?\.000Z$/, "Z");
}

/**
 * A listing: its rows as a table, or, when there are none, `empty` (a sentence such as "no
 * alerts") instead of a header over nothing.
 */
export function listing(
  headers: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  empty: string,
): string {
  return rows.length === 0 ? empty : table(headers, rows);
}
