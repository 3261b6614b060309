import { type CronExpression, CronExpressionParser } from "cron-parser";
import { remember } from "../cache.js";
import { ChronologError, ValidationError } from "../errors.js";

/**
 * Pure cron arithmetic. Every instant comes in as a parameter.
 *
 * cron-parser reads an expression and matches it against the wall clock as if that clock were
 * UTC; this module alone decides which instants a local time stands for in the schedule's zone,
 * from the zone's offsets as Intl reports them. cron-parser's own time-zone mode is not used: its
 * DST handling steps whole hours, so in a zone whose clock moves by 30 minutes
 * (Australia/Lord_Howe) it fails with "loop limit exceeded" at the April change and skips the
 * October change day of a daily 02:00 and the quarters just after its gap.
 *
 * The slots of a schedule, in any zone: every local time the expression matches that occurs
 * once is a slot. A local time that occurs twice (the clock falls back) is one slot, its first
 * occurrence, for a schedule of fixed times (`0 2 * * *`), and two for one that follows the clock
 * (second, minute or hour field starting with `*`: `0 * * * *`, `*\/15 * * * *`), as in Vixie cron.
 * A local time that does not occur (the clock springs forward over it) is one slot for a schedule
 * of fixed times, as long after the jump as it lies after the gap's start (02:30 in a gap from
 * 02:00 to 03:00 runs at 03:30; 02:00 in a gap from 02:00 to 02:30 runs at 02:30), and none for
 * one that follows the clock, which runs at the times that do occur.
 */

/** A cron expression and the IANA time zone its fields are read in. */
export interface CronSchedule {
  readonly cron: string;
  readonly timezone: string;
}

export type CronProblem =
  | { readonly kind: "invalid_expression"; readonly cron: string; readonly message: string }
  | { readonly kind: "invalid_timezone"; readonly timezone: string; readonly message: string }
  | {
      readonly kind: "evaluation_failed";
      readonly cron: string;
      readonly timezone: string;
      readonly message: string;
    };

export function describeCronProblem(problem: CronProblem): string {
  switch (problem.kind) {
    case "invalid_expression":
      return `invalid cron expression "${problem.cron}": ${problem.message}`;
    case "invalid_timezone":
      return `invalid time zone "${problem.timezone}": ${problem.message}`;
    case "evaluation_failed":
      return `cannot evaluate cron "${problem.cron}" in ${problem.timezone}: ${problem.message}`;
  }
}

export class CronScheduleError extends ChronologError {
  readonly type = "cron_schedule" as const;
  constructor(readonly problem: CronProblem) {
    super(describeCronProblem(problem));
    this.name = "CronScheduleError";
  }
}

/**
 * A fixed seed for cron-parser's `H` hashing: without one it calls Math.random on every parse.
 * `H` itself is rejected by parseCron, so the seed never changes a schedule.
 */
const HASH_SEED = "chronolog";
/** Any fixed instant: validation needs one to ask for a first occurrence. */
const REFERENCE = new Date(Date.UTC(2000, 0, 1));

/** Validation memos, of time zones and of expressions: each is checked on its own. */
const validZones = new Map<string, CronProblem | null>();
const validated = new Map<string, CronProblem | null>();

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Zones known valid without a formatter: UTC, which every implementation takes, and the
 * canonical names the runtime lists. A process's first `Intl.DateTimeFormat` costs about 75 ms
 * (the locale data loaded), most of a short command's work; the list costs about 2 ms.
 */
let knownZones: ReadonlySet<string> | undefined;
function isKnownZone(timezone: string): boolean {
  if (timezone === "UTC") return true;
  if (knownZones === undefined) {
    try {
      knownZones = new Set(Intl.supportedValuesOf("timeZone"));
    } catch {
      knownZones = new Set();
    }
  }
  return knownZones.has(timezone);
}

function checkTimezone(timezone: string): CronProblem | null {
  if (timezone.trim() === "") return { kind: "invalid_timezone", timezone, message: "must not be empty" };
  if (isKnownZone(timezone)) return null;
  // Aliases and names in other cases (Etc/UTC, US/Eastern, europe/paris): the formatter decides.
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return null;
  } catch {
    return { kind: "invalid_timezone", timezone, message: "not a known IANA time zone" };
  }
}

function checkExpression(cron: string): CronProblem | null {
  const text = cron.trim();
  const fail = (why: string): CronProblem => ({ kind: "invalid_expression", cron, message: why });
  if (text === "") return fail("must not be empty");
  if (plainTimes(text) !== null) return null;
  if (!text.startsWith("@")) {
    const fields = text.split(/\s+/);
    if (fields.length !== 5 && fields.length !== 6)
      return fail(`expected 5 fields (or 6 with seconds), got ${fields.length}`);
    // `H` picks a pseudo-random value; a schedule must be a function of its text. Three-letter
    // names (THU) are stripped first so their letters are not mistaken for `H`.
    if (fields.some((f) => /H/.test(f.replace(/[a-z]{3}/gi, ""))))
      return fail("hashed values (H) are not supported");
  }
  try {
    CronExpressionParser.parse(text, { currentDate: REFERENCE, tz: "UTC", hashSeed: HASH_SEED }).next();
    return null;
  } catch (error) {
    return fail(message(error));
  }
}

/** Validates an expression and a time zone separately, so the error names the one that is wrong. */
export function parseCron(
  cron: string,
  timezone: string,
): { ok: true; schedule: CronSchedule } | { ok: false; error: CronProblem } {
  let problem = validZones.get(timezone);
  if (problem === undefined) problem = remember(validZones, timezone, checkTimezone(timezone));
  if (!problem) {
    const known = validated.get(cron);
    problem = known === undefined ? remember(validated, cron, checkExpression(cron)) : known;
  }
  return problem ? { ok: false, error: problem } : { ok: true, schedule: { cron, timezone } };
}

function assertInstant(date: Date, what: string): number {
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new ValidationError(what, [{ path: "", message: "invalid date" }]);
  return ms;
}

const SECOND = 1000;
const DAY = 86_400_000;
/** How far the day search goes before it gives up: longer than any valid cron leaves a gap. */
const MAX_DAYS = 15_000;

/**
 * A cron expression ready for wall-clock arithmetic: the times of day it fires at, and a day
 * test. cron-parser reads the fields and answers "is this a cron day?" in UTC, where no clock
 * ever jumps; what a local time means in the zone is decided below, from the zone's offsets.
 */
interface Compiled {
  /** cron-parser's reading; null for a plain expression (every day: see plainTimes). */
  readonly expression: CronExpression | null;
  /** Seconds since local midnight at which the expression fires, ascending. */
  readonly times: readonly number[];
  readonly months: ReadonlySet<number>;
  /**
   * Whether its second, minute or hour field starts with `*` (`*`, `*\/15`, `@hourly`): such a
   * schedule follows the clock, as in Vixie cron, and runs at a repeated local time each time it
   * occurs and never at a local time that does not exist. Any other schedule names fixed times
   * of day: it runs once at a repeated time (the first time it occurs) and, at a time that does
   * not exist, once, that far after the jump.
   */
  readonly followsClock: boolean;
  readonly days: Map<number, boolean>;
}

const compiled = new Map<string, Compiled>();
/** The predefined expressions whose second, minute or hour field is `*`. */
const CLOCK_MACROS = new Set(["@hourly", "@minutely", "@secondly"]);

/** `*`, `*\/STEP` or one value, within 0..max; no leading zeros. */
const PLAIN_FIELD = /^(?:\*(?:\/(?:[1-9]\d?))?|0|[1-9]\d?)$/;

function plainValues(field: string, max: number): number[] | null {
  if (!PLAIN_FIELD.test(field)) return null;
  if (field[0] !== "*") {
    const value = Number(field);
    return value <= max ? [value] : null;
  }
  const step = field.length === 1 ? 1 : Number(field.slice(2));
  if (step > max) return null;
  const values: number[] = [];
  for (let v = 0; v <= max; v += step) values.push(v);
  return values;
}

/**
 * The times of day (seconds since midnight, ascending) of a plain expression: five fields, the
 * minute and the hour each `*`, `*\/STEP` or one value, and every day of every month (`* * *`),
 * as most schedules are (`0 * * * *`, `30 2 * * *`, `*\/15 * * * *`). cron-parser reads these
 * the same way (test/cron-plain.test.ts compares them); they are read here without it, since its
 * dates go through luxon, whose first date asks the runtime for the system's locale (a process's
 * first `Intl.DateTimeFormat`, about 30 ms: most of a short read's own work). Null for any other.
 */
function plainTimes(text: string): number[] | null {
  const fields = text.split(" ");
  if (fields.length !== 5 || fields[2] !== "*" || fields[3] !== "*" || fields[4] !== "*") return null;
  const minutes = plainValues(fields[0] as string, 59);
  const hours = minutes && plainValues(fields[1] as string, 23);
  if (!minutes || !hours) return null;
  const times: number[] = [];
  for (const h of hours) for (const m of minutes) times.push(h * 3600 + m * 60);
  return times;
}

const ALL_MONTHS: ReadonlySet<number> = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);

function compile(cron: string): Compiled {
  const known = compiled.get(cron);
  if (known) return known;
  const plain = plainTimes(cron.trim());
  if (plain !== null)
    return remember(compiled, cron, {
      expression: null,
      times: plain,
      months: ALL_MONTHS,
      followsClock: followsClockOf(cron.trim()),
      days: new Map(),
    });
  const expression = CronExpressionParser.parse(cron.trim(), {
    currentDate: REFERENCE,
    tz: "UTC",
    hashSeed: HASH_SEED,
  });
  const { second, minute, hour, month } = expression.fields;
  const numbers = (values: readonly unknown[]) =>
    [...new Set(values.filter((v): v is number => typeof v === "number"))].sort((a, b) => a - b);
  const times: number[] = [];
  for (const h of numbers(hour.values))
    for (const m of numbers(minute.values))
      for (const s of numbers(second.values)) times.push(h * 3600 + m * 60 + s);
  return remember(compiled, cron, {
    expression,
    times,
    months: new Set(numbers(month.values)),
    followsClock: followsClockOf(cron.trim()),
    days: new Map(),
  });
}

function followsClockOf(text: string): boolean {
  const timeFields = text.startsWith("@") ? [] : text.split(/\s+/).slice(0, -3);
  return CLOCK_MACROS.has(text.toLowerCase()) || timeFields.some((f) => f.startsWith("*"));
}

/** Whether local day `day` (days since 1970-01-01 on the wall clock) is a day of the schedule. */
function isCronDay(c: Compiled, day: number): boolean {
  if (c.expression === null) return true;
  const known = c.days.get(day);
  if (known !== undefined) return known;
  const start = day * DAY;
  const month = new Date(start).getUTCMonth() + 1;
  // The first time of day matches every time field, so only month and day are in question.
  const matches =
    c.months.has(month) && c.expression.includesDate(new Date(start + (c.times[0] ?? 0) * SECOND));
  return remember(c.days, day, matches, 4096);
}

/** First index of `times` with a value >= `value`. */
function lowerBound(times: readonly number[], value: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((times[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The first wall-clock time at or after `wall` the expression matches. Wall-clock times are
 * milliseconds since 1970-01-01T00:00 of the local clock, as if that clock were UTC.
 */
function wallAtOrAfter(c: Compiled, wall: number): number {
  let day = Math.floor(wall / DAY);
  let second = Math.ceil((wall - day * DAY) / SECOND);
  for (let i = 0; i < MAX_DAYS; i++, day++, second = 0) {
    if (!isCronDay(c, day)) continue;
    const at = c.times[lowerBound(c.times, second)];
    if (at !== undefined) return day * DAY + at * SECOND;
  }
  throw new Error(`no time matches within ${MAX_DAYS} days after ${new Date(wall).toISOString()}`);
}

/** The last wall-clock time at or before `wall` the expression matches. */
function wallAtOrBefore(c: Compiled, wall: number): number {
  let day = Math.floor(wall / DAY);
  let second = Math.floor((wall - day * DAY) / SECOND);
  for (let i = 0; i < MAX_DAYS; i++, day--, second = 86_399) {
    if (!isCronDay(c, day)) continue;
    const at = c.times[lowerBound(c.times, second + 1) - 1];
    if (at !== undefined) return day * DAY + at * SECOND;
  }
  throw new Error(`no time matches within ${MAX_DAYS} days before ${new Date(wall).toISOString()}`);
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const WALL = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/;

/** The zone's offset from UTC at instant `ms`, in milliseconds (to the second), from Intl. */
function readOffset(timezone: string, ms: number): number {
  // UTC is UTC at every instant: no formatter (a process's first costs about 30 ms).
  if (timezone === "UTC") return 0;
  let format = formatters.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    remember(formatters, timezone, format);
  }
  const whole = Math.floor(ms / SECOND) * SECOND;
  const m = WALL.exec(format.format(whole));
  if (!m) throw new Error(`cannot read the local time of ${new Date(ms).toISOString()}`);
  const [, month, day, year, hour, minute, second] = m.map(Number) as number[];
  const wall = Date.UTC(year as number, (month as number) - 1, day as number, hour, minute, second);
  return wall - whole;
}

/** Per zone and UTC day, the offset all day long, or null on a day the offset changes. */
const dayOffsets = new Map<string, number | null>();

/**
 * The zone's offset at instant `ms`. A UTC day that starts and ends on the same offset is taken
 * to keep it all day (zones change their offset months apart), so most questions are answered
 * from the memo of that day.
 */
function offsetAt(timezone: string, ms: number): number {
  const day = Math.floor(ms / DAY);
  const key = `${timezone}\u0000${day}`;
  let steady = dayOffsets.get(key);
  if (steady === undefined) {
    const start = readOffset(timezone, day * DAY);
    steady = remember(
      dayOffsets,
      key,
      start === readOffset(timezone, (day + 1) * DAY - SECOND) ? start : null,
      8192,
    );
  }
  return steady ?? readOffset(timezone, ms);
}

/**
 * The instants a wall-clock time occurs at in a zone, from the offsets a day either side (any
 * instant showing `wall` lies within 14 hours of it; one clock change at most is assumed in that
 * window). `before` and `after` are the offsets either side of a change, equal if there is none.
 */
interface Occurrences {
  readonly instants: readonly number[];
  readonly before: number;
  readonly after: number;
}

function occurrences(timezone: string, wall: number): Occurrences {
  const before = offsetAt(timezone, wall - DAY);
  const after = offsetAt(timezone, wall + DAY);
  if (before === after) return { instants: [wall - before], before, after };
  const instants: number[] = [];
  for (const offset of [before, after])
    if (offsetAt(timezone, wall - offset) === offset) instants.push(wall - offset);
  instants.sort((a, b) => a - b);
  return { instants, before, after };
}

/**
 * The slots a matching wall-clock time gives: where it occurs once, that instant; where the
 * clock falls back and it occurs twice, both for a schedule that follows the clock, the first
 * for one of fixed times; where the clock springs forward over it, none for a schedule that
 * follows the clock, and for one of fixed times the instant it would have been on the offset
 * before the jump, i.e. as long after the jump as it lies after the start of the gap (02:30 on a
 * day the clock jumps from 02:00 to 03:00 runs at 03:30).
 */
function slotsOf(c: Compiled, timezone: string, wall: number): { slots: readonly number[]; jump: number } {
  const o = occurrences(timezone, wall);
  const jump = Math.abs(o.after - o.before);
  if (o.instants.length === 0) return { slots: c.followsClock ? [] : [wall - o.before], jump };
  if (o.instants.length === 2 && !c.followsClock) return { slots: [o.instants[0] as number], jump };
  return { slots: o.instants, jump };
}

/**
 * The lowest and highest offsets of the zone from a day before `at` to a day after it. A slot
 * near `at` stands for a wall-clock time `at` plus one of them: on a change's day a slot can lie
 * up to the change's jump away from where the current offset alone would put it.
 */
function offsetsAround(timezone: string, at: number): { low: number; high: number } {
  const offsets = [offsetAt(timezone, at - DAY), offsetAt(timezone, at), offsetAt(timezone, at + DAY)];
  return { low: Math.min(...offsets), high: Math.max(...offsets) };
}

/**
 * The first slot strictly after `after`. Matching wall-clock times are visited in order from
 * the earliest that can give a slot after `after`; once a slot is found, later wall times can
 * give an earlier slot only within a clock change's jump of it, so the walk goes that far on.
 */
function nextSlot(c: Compiled, timezone: string, after: number): number {
  let wall = wallAtOrAfter(c, after + offsetsAround(timezone, after).low);
  let best = Number.POSITIVE_INFINITY;
  let limit = Number.POSITIVE_INFINITY;
  for (;;) {
    const { slots, jump } = slotsOf(c, timezone, wall);
    for (const slot of slots)
      if (slot > after && slot < best) {
        best = slot;
        limit = Math.max(limit === Number.POSITIVE_INFINITY ? wall : limit, wall + jump);
      }
    const next = wallAtOrAfter(c, wall + SECOND);
    if (next > limit) return best;
    wall = next;
  }
}

/** The last slot at or before `at`: nextSlot's walk, backwards. */
function prevSlot(c: Compiled, timezone: string, at: number): number {
  let wall = wallAtOrBefore(c, at + offsetsAround(timezone, at).high);
  let best = Number.NEGATIVE_INFINITY;
  let limit = Number.NEGATIVE_INFINITY;
  for (;;) {
    const { slots, jump } = slotsOf(c, timezone, wall);
    for (const slot of slots)
      if (slot <= at && slot > best) {
        best = slot;
        limit = Math.min(limit === Number.NEGATIVE_INFINITY ? wall : limit, wall - jump);
      }
    const next = wallAtOrBefore(c, wall - SECOND);
    if (next < limit) return best;
    wall = next;
  }
}

/** Runs `step` on the compiled form of a validated schedule, with a typed error if it fails. */
function evaluate(cron: string, timezone: string, step: (c: Compiled) => number): Date {
  const parsed = parseCron(cron, timezone);
  if (!parsed.ok) throw new CronScheduleError(parsed.error);
  try {
    return new Date(step(compile(cron)));
  } catch (error) {
    throw new CronScheduleError({ kind: "evaluation_failed", cron, timezone, message: message(error) });
  }
}

/**
 * Results are memoised (a pure function of the question): a blocked task asks the same
 * questions on every evaluation.
 */
const results = new Map<string, number>();

function memo(kind: string, cron: string, timezone: string, at: number, compute: () => Date): Date {
  const key = `${kind}\u0000${timezone}\u0000${cron}\u0000${at}`;
  const known = results.get(key);
  return new Date(known ?? remember(results, key, compute().getTime()));
}

/** The first slot strictly after `after`. */
export function nextCronTime(cron: string, timezone: string, after: Date): Date {
  const limit = assertInstant(after, "after");
  return memo("next", cron, timezone, limit, () =>
    evaluate(cron, timezone, (c) => nextSlot(c, timezone, limit)),
  );
}

/**
 * The most recent slot at or before `at` (inclusive: a time exactly on a slot is that slot).
 * croniter gives the same answer when started one second past the anchor.
 */
export function prevCronTime(cron: string, timezone: string, at: Date): Date {
  const limit = assertInstant(at, "at");
  return memo("prev", cron, timezone, limit, () =>
    evaluate(cron, timezone, (c) => prevSlot(c, timezone, limit)),
  );
}

/** The first slot at or after `at`. */
export function firstSlotAtOrAfter(cron: string, timezone: string, at: Date): Date {
  return nextCronTime(cron, timezone, new Date(assertInstant(at, "at") - 1));
}

/** The slot strictly before `at`. */
export function slotBefore(cron: string, timezone: string, at: Date): Date {
  return prevCronTime(cron, timezone, new Date(assertInstant(at, "at") - 1));
}

/**
 * The start of the last interval `[slot, next slot)` that ends at or before `at`. If `p` is the
 * last slot at or before `at`, the interval starting at `p` ends after `at` (unless p == at, in
 * which case it starts there), so the answer is always the slot before `p`.
 */
export function lastSlotEndingBy(cron: string, timezone: string, at: Date): Date {
  return slotBefore(cron, timezone, prevCronTime(cron, timezone, at));
}

const granularities = new Map<string, number>();
const MAX_SAMPLES = 2000;
const SAMPLE_SPAN_MS = 400 * 86_400_000;

/**
 * The step of the schedule in milliseconds: the shortest gap between consecutive slots, sampled
 * from `around` over at least 400 days or 2000 slots (every cron repeats its pattern within a
 * year, leap days aside, and the intra-day pattern shows within the first day that has slots).
 * Measured on the wall clock, i.e. the fields evaluated without DST, so a daily job is 24 hours
 * even though its DST days last 23 or 25. A monthly `0 0 1 * *` is 28 days (February, the
 * shortest month), so the answer is the finest step the schedule ever takes.
 */
export function cronGranularityMs(cron: string, timezone: string, around: Date = REFERENCE): number {
  const parsed = parseCron(cron, timezone);
  if (!parsed.ok) throw new CronScheduleError(parsed.error);
  const start = assertInstant(around, "around");
  const key = `${start}\u0000${cron}`;
  const known = granularities.get(key);
  if (known !== undefined) return known;
  const c = compile(cron);
  const first = wallAtOrAfter(c, start + 1);
  let last = first;
  let min = Number.POSITIVE_INFINITY;
  for (let n = 0; n < MAX_SAMPLES && (n < 2 || last - first < SAMPLE_SPAN_MS); n++) {
    const slot = wallAtOrAfter(c, last + SECOND);
    min = Math.min(min, slot - last);
    last = slot;
  }
  return remember(granularities, key, min);
}

/**
 * Truncates `date` to the granularity of a schedule: the most recent slot of that schedule at or
 * before `date`. This is the faithful generalisation of the plain rule's field-based truncation (which
 * floors to the start of the minute/hour/day/week/month/year picked from which field has a
 * star): it floors to the start of the schedule's own period, so `0 *\/6 * * *` keeps 06:00,
 * 12:00 and 18:00 apart instead of collapsing them into the day, and it honours the time zone.
 */
export function truncate(date: Date, granularity: CronSchedule): Date {
  return prevCronTime(granularity.cron, granularity.timezone, date);
}
