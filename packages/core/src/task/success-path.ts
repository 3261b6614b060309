import type { DomainEventOf } from "../events/catalog.js";
import { countsForTask, currentAttempt, type InstanceState } from "../instance/state.js";
import { firstSlotAtOrAfter, nextCronTime } from "../schedule/cron.js";
import { advanceOnSuccess, toInstant } from "../schedule/interval.js";
import type { TaskState } from "./state.js";

/**
 * The success path (the schedule advances from the schedule): prev_interval_start :=
 * logical_date; logical_date moves one cron step; next_run_date moves one interval from the
 * previous next_run_date, never from the clock. A task behind schedule therefore stays due:
 * catch-up and backfill need no other code. When a backfill window ends, the task returns to
 * where it was before the backfill.
 */
export function decideIntervalCompleted(
  task: TaskState,
  attempt?: number,
): DomainEventOf<"IntervalCompleted"> {
  const next = advanceOnSuccess(
    {
      logicalDate: task.logicalDate,
      prevIntervalStart: task.prevIntervalStart,
      nextRunDate: task.nextRunDate,
    },
    task.spec.cron,
    task.spec.timezone,
  );
  let nextLogicalDate = next.logicalDate;
  let nextRunDate = next.nextRunDate;
  const { cron, timezone, startDate } = task.spec;
  // An interval that ran on a schedule since changed (its attempt was under way, or its run held
  // it) is followed by the new schedule's first interval on or after its start date, never one
  // before (a backfill, --force or not, walks its own range), and due when that one ends: its
  // run date no longer steps with its logical date.
  if (task.backfill === null) {
    if (Date.parse(nextLogicalDate) < Date.parse(startDate))
      ({ logicalDate: nextLogicalDate, nextRunDate } = slotFrom(task.spec, nextLogicalDate));
    else if (task.nextRunDate !== toInstant(nextCronTime(cron, timezone, new Date(task.logicalDate))))
      nextRunDate = toInstant(nextCronTime(cron, timezone, new Date(nextLogicalDate)));
  }
  const backfill = task.backfill;
  if (backfill && Date.parse(task.logicalDate) >= Date.parse(backfill.until) && backfill.resume) {
    const { resume } = backfill;
    if (Date.parse(resume.logicalDate) > Date.parse(nextLogicalDate)) {
      // Where it stood, on the schedule it has now: a schedule changed during the backfill
      // moves it to the new one's first interval at or after there (and its start date), due
      // when that interval ends (a resume point that is a slot of both may end elsewhere now).
      ({ logicalDate: nextLogicalDate, nextRunDate } = slotFrom(task.spec, resume.logicalDate));
    }
  }
  return {
    type: "IntervalCompleted",
    data: {
      key: task.key,
      logicalDate: task.logicalDate,
      nextLogicalDate,
      nextRunDate,
      ...(attempt !== undefined ? { attempt } : {}),
    },
  };
}

/**
 * The first interval of the task's schedule as it is now that starts at or after `at`, and not
 * before its start date, due when that interval ends: where a task goes back to a position on a
 * schedule that may have changed since it was recorded.
 */
export function slotFrom(
  spec: { readonly cron: string; readonly timezone: string; readonly startDate: string },
  at: string,
): { logicalDate: string; nextRunDate: string } {
  const first = firstSlotAtOrAfter(
    spec.cron,
    spec.timezone,
    new Date(Math.max(Date.parse(at), Date.parse(spec.startDate))),
  );
  return {
    logicalDate: toInstant(first),
    nextRunDate: toInstant(nextCronTime(spec.cron, spec.timezone, first)),
  };
}

/**
 * Whether the interval succeeded, decided here and nowhere else: the completion when `inst` is a
 * success of the task's current interval, dispatched after the task last moved (an attempt from
 * before a backfill moved the task back is an earlier run's) or an outside report held for it,
 * else null.
 */
export function completedInterval(
  task: TaskState,
  inst: InstanceState,
): DomainEventOf<"IntervalCompleted"> | null {
  if (inst.status !== "success" || inst.logicalDate !== task.logicalDate || !countsForTask(inst, task))
    return null;
  return decideIntervalCompleted(task, currentAttempt(inst)?.attempt);
}

/** An interval that ended without success stops the task there until an operator acts. */
export function decideIntervalFailed(
  task: TaskState,
  instance: InstanceState,
): DomainEventOf<"IntervalFailed"> {
  const state =
    instance.status === "upstream_failed" ||
    instance.status === "abandoned" ||
    instance.status === "cancelled"
      ? instance.status
      : "failed";
  return {
    type: "IntervalFailed",
    data: {
      key: task.key,
      logicalDate: task.logicalDate,
      state,
      reason: instance.reason ?? `the instance ended ${instance.status}`,
    },
  };
}
