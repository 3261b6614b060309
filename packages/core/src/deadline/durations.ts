/** Recent successful attempts' durations kept per task: the estimate's median reads them. */
export const DURATIONS_KEPT = 9;

/**
 * The window with one more duration, the oldest dropped past DURATIONS_KEPT: O(1), the window
 * changed in place (the projection's own).
 */
export function recordDuration(window: number[], ms: number): number[] {
  window.push(Math.max(0, Math.round(ms)));
  if (window.length > DURATIONS_KEPT) window.shift();
  return window;
}

/** The median of recorded durations (the lower middle of an even count); null: none recorded. */
export function medianDuration(window: readonly number[] | undefined): number | null {
  if (!window || window.length === 0) return null;
  const sorted = [...window].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1] as number;
}
