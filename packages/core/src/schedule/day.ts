import { ValidationError } from "../errors.js";
import { firstSlotAtOrAfter, nextCronTime } from "./cron.js";
import { parseInstant, shortInstant, toInstant } from "./interval.js";

/**
 * Dates as people type them. Where a command or the HTTP API takes a date, it takes a day
 * (`2026-12-01`) or an instant with its time and zone (`2026-12-01T03:30Z`). An instant means
 * itself. A day means the intervals whose logical date falls on that day in the zone of the
 * task's schedule: as a range's start, the first of them; as a range's end, the last of them
 * (`--to 2026-12-02` includes the intervals on the 2nd); as an interval, the one interval that
 * starts that day (an hourly task has 24 of them, so it needs the time).
 */
export type DateArg =
  | { readonly text: string; readonly day: string; readonly instant?: undefined }
  | { readonly text: string; readonly instant: string; readonly day?: undefined };

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const EXAMPLES =
  "use a day (2026-11-30) or an instant with its zone (2026-11-30T02:00Z or 2026-11-30T02:00:00.000Z)";

/** A day or an instant, from what was typed for `field` (a ValidationError otherwise). */
export function dateArg(text: string, field: string): DateArg {
  const m = DAY.exec(text);
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const check = new Date(Date.UTC(y, mo - 1, d));
    if (check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d)
      throw new ValidationError(field, [{ path: "", message: `"${text}" is not a day of the calendar` }]);
    return { text, day: text };
  }
  try {
    return { text, instant: parseInstant(text, field).toISOString() };
  } catch {
    throw new ValidationError(field, [
      { path: "", message: `"${text}" is not an instant or a day: ${EXAMPLES}` },
    ]);
  }
}

const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** The calendar day (`YYYY-MM-DD`) an instant falls on in `timezone`. */
export function dayIn(timezone: string, at: Date): string {
  let f = dayFormats.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", {
      timeZone: timezone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    });
    dayFormats.set(timezone, f);
  }
  let y = "";
  let m = "";
  let d = "";
  for (const part of f.formatToParts(at)) {
    if (part.type === "year") y = part.value;
    else if (part.type === "month") m = part.value;
    else if (part.type === "day") d = part.value;
  }
  return `${y}-${m}-${d}`;
}

function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00.000Z`);
  return new Date(d.getTime() + 86_400_000).toISOString().slice(0, 10);
}

/**
 * The first instant of `day` in `timezone`: its midnight, or where the clock jumps over midnight,
 * the end of the jump (the schedule arithmetic's fixed-time rule for a local time that does not
 * occur gives exactly that).
 */
export function dayStart(day: string, timezone: string): Date {
  const MIDNIGHT = "0 0 * * *";
  // Every zone's midnight lies within 14 hours of UTC's: start before the earliest and step.
  let at = firstSlotAtOrAfter(
    MIDNIGHT,
    timezone,
    new Date(Date.parse(`${day}T00:00:00.000Z`) - 15 * 3_600_000),
  );
  while (dayIn(timezone, at) < day) at = nextCronTime(MIDNIGHT, timezone, at);
  return at;
}

/** The instants `[start, end)` that make up `day` in `timezone`. */
export function dayBounds(day: string, timezone: string): { start: Date; end: Date } {
  return { start: dayStart(day, timezone), end: dayStart(nextDay(day), timezone) };
}

/** A range's first bound for a schedule in `timezone`: the day's first instant, or the instant. */
export function rangeStart(arg: DateArg, timezone: string): Date {
  return arg.day !== undefined ? dayStart(arg.day, timezone) : new Date(arg.instant);
}

/** A range's last bound (inclusive) in `timezone`: the day's last instant, or the instant. */
export function rangeEnd(arg: DateArg, timezone: string): Date {
  return arg.day !== undefined
    ? new Date(dayBounds(arg.day, timezone).end.getTime() - 1)
    : new Date(arg.instant);
}

/** The slots of a schedule whose logical date falls on `day` in the schedule's zone. */
export function slotsOnDay(cron: string, timezone: string, day: string): string[] {
  const { start, end } = dayBounds(day, timezone);
  const out: string[] = [];
  for (let at = firstSlotAtOrAfter(cron, timezone, start); at < end; at = nextCronTime(cron, timezone, at))
    out.push(toInstant(at));
  return out;
}

/**
 * The one interval (its logical date) that `arg` names on a schedule: an instant is taken as it
 * is; a day names the interval that starts on it in the schedule's zone, and is refused, saying
 * which intervals there are, when none or several start that day.
 */
export function intervalOn(
  arg: DateArg,
  schedule: { readonly cron: string; readonly timezone: string; readonly startDate?: string },
  field: string,
  what: string,
): string {
  if (arg.day === undefined) return arg.instant;
  const { cron, timezone, startDate } = schedule;
  // A task's intervals start at its first (on the day it starts, those before are none of its).
  const first =
    startDate === undefined ? undefined : firstSlotAtOrAfter(cron, timezone, new Date(startDate)).getTime();
  const slots = slotsOnDay(cron, timezone, arg.day).filter(
    (s) => first === undefined || Date.parse(s) >= first,
  );
  if (slots.length === 1) return slots[0] as string;
  const zone = `${cron} (${timezone})`;
  if (slots.length === 0) {
    const { start } = dayBounds(arg.day, timezone);
    const next = toInstant(
      new Date(Math.max(firstSlotAtOrAfter(cron, timezone, start).getTime(), first ?? 0)),
    );
    throw new ValidationError(field, [
      {
        path: "",
        message: `no interval of ${what} starts on ${arg.day} in its zone (${zone}); the next starts ${shortInstant(next)}`,
      },
    ]);
  }
  throw new ValidationError(field, [
    {
      path: "",
      message: `${arg.day} holds ${slots.length} intervals of ${what} (${zone}), ${shortInstant(slots[0] as string)} .. ${shortInstant(slots.at(-1) as string)}: name one with its time, e.g. ${shortInstant(slots[0] as string)}`,
    },
  ]);
}
