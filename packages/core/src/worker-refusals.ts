/**
 * How many of one worker's refused reports are recorded one by one (a `WorkerReportRefused`
 * each) in a window; past that they are still refused, and counted, and the count is recorded
 * once (`WorkerReportRefusalsCounted`): a worker holding a valid token, hostile or broken, may
 * not grow the log faster than that.
 */
export interface RefusalBudget {
  readonly perWindow: number;
  readonly windowMs: number;
}

export const DEFAULT_REFUSAL_BUDGET: RefusalBudget = { perWindow: 20, windowMs: 60_000 };

/** One worker's refusals in its current window. */
export interface RefusalWindow {
  /** When the window opened (epoch ms): at its first refusal. */
  readonly since: number;
  /** Refusals recorded one by one in it. */
  readonly recorded: number;
  /** Refusals past the budget, not recorded yet even as a count. */
  readonly counted: number;
  /** When the first of those was refused (epoch ms). */
  readonly countedSince: number;
  /** The reason of the latest of those. */
  readonly reason: string;
}

/** Refusals counted and not recorded one by one: one event says how many. */
export interface RefusalCount {
  readonly count: number;
  readonly since: number;
  readonly until: number;
  readonly reason: string;
}

export interface RefusalDecision {
  /** The count of the window that ended before these refusals, to record first. */
  readonly count?: RefusalCount;
  /** How many of these refusals to record one by one (the first ones); the rest are counted. */
  readonly record: number;
  readonly window: RefusalWindow;
}

/**
 * `refused` more reports of a worker, the last one's reason `reason`, at `now`: how many are
 * recorded one by one, and the count of a window that ended, if it counted any.
 */
export function decideRefusals(
  window: RefusalWindow | undefined,
  refused: number,
  reason: string,
  now: number,
  budget: RefusalBudget = DEFAULT_REFUSAL_BUDGET,
): RefusalDecision {
  const ended = window !== undefined && now - window.since >= budget.windowMs;
  const count = ended ? countOf(window, now) : undefined;
  const open: RefusalWindow =
    window === undefined || ended
      ? { since: now, recorded: 0, counted: 0, countedSince: now, reason: "" }
      : window;
  const record = Math.max(0, Math.min(refused, budget.perWindow - open.recorded));
  const over = refused - record;
  return {
    ...(count ? { count } : {}),
    record,
    window: {
      since: open.since,
      recorded: open.recorded + record,
      counted: open.counted + over,
      countedSince: over > 0 && open.counted === 0 ? now : open.countedSince,
      reason: over > 0 ? reason : open.reason,
    },
  };
}

/**
 * The count to record now, if any: at the end of the window, or when the worker goes (its
 * window goes on: reconnecting gives it no new budget). `window` undefined: forget the worker.
 */
export function settleRefusals(
  window: RefusalWindow,
  now: number,
  budget: RefusalBudget = DEFAULT_REFUSAL_BUDGET,
): { readonly count?: RefusalCount; readonly window?: RefusalWindow } {
  const count = countOf(window, now);
  if (now - window.since >= budget.windowMs) return count ? { count } : {};
  return { ...(count ? { count } : {}), window: { ...window, counted: 0, reason: "" } };
}

function countOf(window: RefusalWindow, now: number): RefusalCount | undefined {
  if (window.counted === 0) return undefined;
  return { count: window.counted, since: window.countedSince, until: now, reason: window.reason };
}
