import { firstSlotAtOrAfter, nextCronTime } from "../schedule/cron.js";
import { resetTo, type SchedulePosition } from "../schedule/interval.js";
import { counted } from "../words.js";
import type { BackfillWindow, TaskState } from "./state.js";

/**
 * Where an IntervalReset that sets a task back over a range puts it: the walk's start, the
 * range it walks through and the position it returns to afterwards.
 */
export interface WindowReset extends SchedulePosition {
  /** First interval of the range (earlier than `logicalDate` when part of it is already walked). */
  readonly from: string;
  /** Last interval of the range: once it is completed, the task returns to `resume`. */
  readonly until: string;
  readonly resume?: { logicalDate: string; nextRunDate: string; prevIntervalStart: string | null };
  /** The window still pending on the task that this range joins (its id and resume point are kept). */
  readonly joins: BackfillWindow | null;
}

export type WindowDecision =
  | { readonly kind: "reset"; readonly reset: WindowReset }
  | { readonly kind: "refused"; readonly reason: string };

/** How many slots of the task's schedule lie in [from, until], both slots of it. */
export function slotsIn(task: TaskState, from: string, until: string): number {
  const end = Date.parse(until);
  let n = 0;
  for (
    let at = firstSlotAtOrAfter(task.spec.cron, task.spec.timezone, new Date(from));
    at.getTime() <= end;
    at = nextCronTime(task.spec.cron, task.spec.timezone, at)
  )
    n += 1;
  return n;
}

function later(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

function earlier(a: string, b: string): string {
  return Date.parse(a) <= Date.parse(b) ? a : b;
}

/**
 * Whether a window's walk has stopped: the task failed (or was abandoned at) the interval it
 * stands at, so nothing moves until an operator acts. A range that joins such a window takes it
 * over rather than waiting behind it.
 */
export function windowHalted(task: TaskState): boolean {
  return task.backfill !== null && task.failure !== null && task.failure.logicalDate === task.logicalDate;
}

/**
 * The window in words: whose it is (a backfill's id, or a rerun or trigger of one date), its
 * range, and where its walk stands: pending (how far it has come, and the next interval), or
 * stopped at an interval that failed.
 */
export function describeWindow(task: TaskState, window: BackfillWindow): string {
  const from = window.from ?? task.logicalDate;
  const total = slotsIn(task, from, window.until);
  const done =
    Date.parse(task.logicalDate) > Date.parse(from) ? slotsIn(task, from, task.logicalDate) - 1 : 0;
  const whose = window.backfillId ? `backfill ${window.backfillId}` : "a rerun";
  const range = `over ${from} .. ${window.until}`;
  const progress = `${done} of ${counted(total, "interval")} done`;
  if (task.failure && task.failure.logicalDate === task.logicalDate)
    return `${whose} ${range} stopped on ${task.id} at ${task.logicalDate} (${task.failure.state}): ${progress}`;
  return `${whose} ${range} is pending on ${task.id}: ${progress}, next ${task.logicalDate}`;
}

/**
 * Sets `task` back over the range of slots [first, last] (both slots of its schedule). A task
 * never runs again an interval it completed unless a range names it, so:
 * - with no window pending, the task walks from `first` to `last` and returns to where it stands
 *   now, if that is beyond the range;
 * - with a window pending (a backfill or rerun not finished yet), the range joins it when it
 *   overlaps or touches what the window has left to walk (`task.logicalDate` .. its `until`):
 *   the walk covers the union and returns to the window's resume point, the position the task
 *   had before any of them. Every interval of the union is named by one of the ranges.
 * - a range apart from what the window has left is refused: one walk cannot skip the gap, and
 *   walking through it would run intervals nobody named.
 */
export function planWindow(task: TaskState, first: string, last: string): WindowDecision {
  const { cron, timezone } = task.spec;
  const pending = task.backfill;
  if (!pending) {
    const start = resetTo(cron, timezone, new Date(first));
    // Where it stands, recorded even when the range ends there: a cancel returns it there.
    const ahead = Date.parse(task.logicalDate) >= Date.parse(last);
    return {
      kind: "reset",
      reset: {
        ...start,
        from: start.logicalDate,
        until: last,
        ...(ahead
          ? {
              resume: {
                logicalDate: task.logicalDate,
                nextRunDate: task.nextRunDate,
                prevIntervalStart: task.prevIntervalStart,
              },
            }
          : {}),
        joins: null,
      },
    };
  }
  const next = task.logicalDate;
  const afterLast = nextCronTime(cron, timezone, new Date(last)).getTime();
  const afterUntil = nextCronTime(cron, timezone, new Date(pending.until)).getTime();
  if (Date.parse(first) > afterUntil || afterLast < Date.parse(next))
    return {
      kind: "refused",
      reason: `${describeWindow(task, pending)}; ${first} .. ${last} neither overlaps nor touches what it has left (${next} .. ${pending.until}), and one walk cannot skip the gap without running intervals nobody named: wait for it to finish, or name a range that joins it`,
    };
  const until = later(last, pending.until);
  const start = resetTo(cron, timezone, new Date(earlier(first, next)));
  const resume =
    pending.resume && Date.parse(pending.resume.logicalDate) >= Date.parse(until)
      ? pending.resume
      : undefined;
  return {
    kind: "reset",
    reset: {
      ...start,
      from: earlier(first, pending.from ?? next),
      until,
      ...(resume ? { resume } : {}),
      joins: pending,
    },
  };
}
