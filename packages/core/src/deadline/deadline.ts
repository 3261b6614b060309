import { firstSlotAtOrAfter, nextCronTime, prevCronTime } from "../schedule/cron.js";
import { parseInstant, shortInstant, toInstant } from "../schedule/interval.js";
import { type DeadlineSpec, durationMs, type TaskSpec } from "../spec.js";

/** What a deadline needs of a task's declaration. */
export type DeadlineTask = Pick<TaskSpec, "cron" | "timezone" | "deadline">;

/**
 * The deadline of the interval starting at `logicalDate`, in ms: `within` after its end, or the
 * first `at` local time (the task's timezone) at or after its end, on the day it ends unless
 * that time is before its end. Null: the task declares no deadline.
 */
export function deadlineOf(task: DeadlineTask, logicalDate: string): number | null {
  const d = task.deadline;
  if (!d) return null;
  const end = nextCronTime(task.cron, task.timezone, parseInstant(logicalDate, "logicalDate"));
  return deadlineAfterEnd(d, task.timezone, end.getTime());
}

/** The deadline of an interval that ends at `endMs`. */
export function deadlineAfterEnd(d: DeadlineSpec, timezone: string, endMs: number): number {
  if (d.within !== undefined) return endMs + (durationMs(d.within) ?? 0);
  const [hh, mm] = (d.at as string).split(":");
  return firstSlotAtOrAfter(`${Number(mm)} ${Number(hh)} * * *`, timezone, new Date(endMs)).getTime();
}

/** The deadline as it is said: `06:00` or `4h`. */
export function deadlineLabel(d: DeadlineSpec): string {
  return d.at ?? (d.within as string);
}

/** An interval as messages name it: the day alone for a midnight (UTC) start, `2026-12-01`. */
export function intervalLabel(logicalDate: string): string {
  const short = shortInstant(logicalDate);
  return short.endsWith("T00:00Z") ? short.slice(0, 10) : short;
}

/** How much of a deadline's promise a task can break in one look: intervals walked at most. */
const MAX_STEPS = 2000;

/**
 * The first interval at or after `from` whose deadline is after `afterMs`, and that deadline:
 * the interval to watch next. Intervals long past are stepped over from near `afterMs`, not
 * one by one from `from`. Null: no deadline, or none within MAX_STEPS intervals.
 */
export function nextWatched(
  task: DeadlineTask,
  from: string,
  afterMs: number,
): { logicalDate: string; deadline: number } | null {
  const d = task.deadline;
  if (!d) return null;
  // A deadline is at most `within` (or a day, for `at`) after its interval's end: an interval
  // that ends before `afterMs - lag` has a deadline at or before `afterMs`.
  const lag = d.within !== undefined ? (durationMs(d.within) ?? 0) : 86_400_000 + 3_600_000;
  let start = parseInstant(from, "logicalDate");
  const near = prevCronTime(task.cron, task.timezone, new Date(afterMs - lag));
  if (near.getTime() > start.getTime()) start = near;
  for (let i = 0; i < MAX_STEPS; i += 1) {
    const end = nextCronTime(task.cron, task.timezone, start);
    const deadline = deadlineAfterEnd(d, task.timezone, end.getTime());
    if (deadline > afterMs) return { logicalDate: toInstant(start), deadline };
    start = end;
  }
  return null;
}

/** The interval after `logicalDate` on the task's schedule. */
export function nextInterval(task: Pick<TaskSpec, "cron" | "timezone">, logicalDate: string): string {
  return toInstant(nextCronTime(task.cron, task.timezone, parseInstant(logicalDate, "logicalDate")));
}
