/** Recent successful attempts' durations kept per task: the estimate's median reads them. */
export const DURATIONS_KEPT = 9;

/**
 * The window with one more duration, the oldest dropped past DURATIONS_KEPT: while it grows, a
 * new array of exactly its length (an array grown by `push` takes room for 16 more numbers, and
 * a window is kept for every task); once full, the same array changed in place.
 */
export function recordDuration(window: number[], ms: number): number[] {
  const d = Math.max(0, Math.round(ms));
  if (window.length < DURATIONS_KEPT) return window.concat(d);
  window.copyWithin(0, window.length - DURATIONS_KEPT + 1);
  window.length = DURATIONS_KEPT;
  window[DURATIONS_KEPT - 1] = d;
  return window;
}

/** The median of recorded durations (the lower middle of an even count); null: none recorded. */
export function medianDuration(window: readonly number[] | undefined): number | null {
  if (!window || window.length === 0) return null;
  const sorted = [...window].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1] as number;
}
