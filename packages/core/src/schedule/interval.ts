import { remember } from "../cache.js";
import { ValidationError } from "../errors.js";
import type { TaskSpec } from "../spec.js";
import { firstSlotAtOrAfter, lastSlotEndingBy, nextCronTime, slotBefore } from "./cron.js";

/**
 * A task's position on its schedule, as ISO instants because events store them so. It advances
 * from the schedule, never from the clock. Airflow semantics: the run for the interval
 * [logicalDate, next slot) is due at the end of that interval.
 */
export interface SchedulePosition {
  /** Start of the interval the task runs for next. */
  readonly logicalDate: string;
  /** Start of the interval it last finished; null until its first success. */
  readonly prevIntervalStart: string | null;
  /** When the run for `logicalDate` is due. */
  readonly nextRunDate: string;
}

export type ScheduleSpec = Pick<TaskSpec, "cron" | "timezone" | "startDate" | "catchup">;

export interface DataInterval {
  readonly start: string;
  readonly end: string;
}

/** An instant with an explicit zone: a zoneless time would be read in the process's zone. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

export function parseInstant(text: string, field = "instant"): Date {
  const date = ISO_INSTANT.test(text) ? new Date(text) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime()))
    throw new ValidationError(field, [
      { path: "", message: `"${text}" is not an ISO-8601 instant with a zone` },
    ]);
  return date;
}

/**
 * Instants made lately, by their milliseconds: tasks on one schedule reach the same few, and
 * making the text is most of what advancing a task costs.
 */
const instants = new Map<number, string>();

/** `YYYY-MM-DDTHH:mm:ss.sssZ`. */
export function toInstant(date: Date): string {
  const ms = date.getTime();
  return instants.get(ms) ?? remember(instants, ms, date.toISOString(), 4096);
}

/**
 * Compact forms already made. A listing of a thousand tasks asks for the same few logical dates
 * over and over, and parsing and formatting each was a fifth of the time an API page took.
 */
const shortForms = new Map<string, string>();
const SHORT_FORMS_KEPT = 4096;

/** The compact form used in messages: `2026-11-28T02:00Z`, seconds and millis only when set. */
export function shortInstant(iso: string): string {
  let short = shortForms.get(iso);
  if (short === undefined) {
    short = toInstant(parseInstant(iso)).replace(/(?::00)?\.000Z$/, "Z");
    if (shortForms.size >= SHORT_FORMS_KEPT) shortForms.clear();
    shortForms.set(iso, short);
  }
  return short;
}

export function dataInterval(logicalDate: string, cron: string, timezone: string): DataInterval {
  const start = parseInstant(logicalDate, "logicalDate");
  return { start: toInstant(start), end: toInstant(nextCronTime(cron, timezone, start)) };
}

/**
 * The first position: logical date = first slot at or after startDate, due at the end of its
 * interval. Without catch-up the task starts at the latest interval already due at `now`
 * (the interval that ended last), never before startDate.
 */
export function initialPosition(spec: ScheduleSpec, now: Date): SchedulePosition {
  const { cron, timezone } = spec;
  const first = firstSlotAtOrAfter(cron, timezone, parseInstant(spec.startDate, "startDate"));
  let logical = first;
  if (!spec.catchup) {
    const latest = lastSlotEndingBy(cron, timezone, now);
    if (latest > first) logical = latest;
  }
  return {
    logicalDate: toInstant(logical),
    prevIntervalStart: null,
    nextRunDate: toInstant(nextCronTime(cron, timezone, logical)),
  };
}

/**
 * The success path: the finished interval becomes prevIntervalStart and both dates move one step
 * along the schedule from themselves, never from the clock. A task that is behind therefore
 * stays due after each success until nextRunDate passes `now`: that is all catch-up is.
 */
export function advanceOnSuccess(
  position: SchedulePosition,
  cron: string,
  timezone: string,
): SchedulePosition {
  const logical = parseInstant(position.logicalDate, "logicalDate");
  const runDate = parseInstant(position.nextRunDate, "nextRunDate");
  return {
    logicalDate: toInstant(nextCronTime(cron, timezone, logical)),
    prevIntervalStart: toInstant(logical),
    nextRunDate: toInstant(nextCronTime(cron, timezone, runDate)),
  };
}

export function isDue(position: SchedulePosition, now: Date): boolean {
  return parseInstant(position.nextRunDate, "nextRunDate").getTime() <= now.getTime();
}

/**
 * A backfill: logical date = first slot at or after `from`, and prevIntervalStart = the slot
 * before it, so a child's gate sees this task as finished up to there and waits for the rest.
 */
export function resetTo(cron: string, timezone: string, from: Date): SchedulePosition {
  const logical = firstSlotAtOrAfter(cron, timezone, from);
  return {
    logicalDate: toInstant(logical),
    prevIntervalStart: toInstant(slotBefore(cron, timezone, logical)),
    nextRunDate: toInstant(nextCronTime(cron, timezone, logical)),
  };
}
