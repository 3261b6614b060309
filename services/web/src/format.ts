// How the UI writes times and states.

/** An instant as `2026-12-01 02:00:00Z`, or a dash for none. */
export const time = (s: string | null | undefined): string =>
  s ? s.replace("T", " ").replace(/\.\d+Z$|Z$/, "Z") : "—";

/** A state as words: `not_due` is "not due", `retry_wait` "retry wait". */
export const label = (s: string): string => (s === "not_due" ? "not due" : s.replace("_", " "));
