import { type CronExpression, CronExpressionParser } from "cron-parser";
import { remember } from "../cache.js";
import { ChronologError, ValidationError } from "../errors.js";

/**
 * Pure cron arithmetic over cron-parser 5. Every instant comes in as a parameter.
 *
 * The slots of a schedule are what repeated `next()` produces (a spring-forward 02:30 runs at
 * 03:30, a fall-back 02:00 daily runs once, an hourly job every UTC hour). cron-parser's `prev()`
 * disagrees with that on DST days (it drops the moved spring slot and repeats the fall-back
 * one), and a single `next()` from inside the hour after a spring gap skips the moved slot, so
 * both directions below walk forward with `next()` from a safe point before the answer.
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

const validated = new Map<string, CronProblem | null>();
const cursors = new Map<string, CronExpression>();

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function checkTimezone(timezone: string): CronProblem | null {
  if (timezone.trim() === "") return { kind: "invalid_timezone", timezone, message: "must not be empty" };
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
  const key = `${timezone}\u0000${cron}`;
  let problem = validated.get(key);
  if (problem === undefined) {
    problem = checkTimezone(timezone) ?? checkExpression(cron);
    remember(validated, key, problem);
  }
  return problem ? { ok: false, error: problem } : { ok: true, schedule: { cron, timezone } };
}

function assertInstant(date: Date, what: string): number {
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new ValidationError(what, [{ path: "", message: "invalid date" }]);
  return ms;
}

/** Runs `step` on a cached, validated cursor positioned at `at`. */
function evaluate(cron: string, timezone: string, at: number, step: (c: CronExpression) => Date): Date {
  const parsed = parseCron(cron, timezone);
  if (!parsed.ok) throw new CronScheduleError(parsed.error);
  const key = `${timezone}\u0000${cron}`;
  try {
    let cursor = cursors.get(key);
    if (!cursor) {
      const options = { currentDate: new Date(at), tz: timezone, hashSeed: HASH_SEED };
      cursor = remember(cursors, key, CronExpressionParser.parse(cron.trim(), options));
    }
    cursor.reset(new Date(at));
    return step(cursor);
  } catch (error) {
    throw new CronScheduleError({ kind: "evaluation_failed", cron, timezone, message: message(error) });
  }
}

/**
 * Puts the cursor where next() walks the true slot set up to and past `at`: `steps` raw prev()
 * steps back, then 1 ms before that. Starting next() anywhere else can miss a slot: from 03:15
 * on spring-forward day, next() skips that day's 02:30 (moved to 03:30). prevCronTime takes two
 * steps so that one spurious fall-back slot from prev() still leaves it at or before the answer.
 */
function rewind(cursor: CronExpression, at: number, steps: number): void {
  cursor.reset(new Date(at + 1));
  let floor = at;
  for (let i = 0; i < steps; i++) floor = cursor.prev().getTime();
  cursor.reset(new Date(floor - 1));
}

/**
 * Results are memoised: a blocked task asks the same questions on every evaluation, and
 * cron-parser with a time zone costs a fraction of a millisecond per step.
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
    evaluate(cron, timezone, limit, (c) => {
      rewind(c, limit, 1);
      for (;;) {
        const slot = c.next().toDate();
        if (slot.getTime() > limit) return slot;
      }
    }),
  );
}

/**
 * The most recent slot at or before `at` (inclusive: a time exactly on a slot is that slot).
 * croniter gives the same answer when started one second past the anchor.
 */
export function prevCronTime(cron: string, timezone: string, at: Date): Date {
  const limit = assertInstant(at, "at");
  // The answer is the same for every instant from a slot up to the next one: the window of the
  // last answer serves a caller that asks about the clock's "now" again and again (a task with
  // catch-up off, each time it is looked at) without a step of cron-parser each time.
  const windowKey = `${timezone}\u0000${cron}`;
  const known = windows.get(windowKey) ?? remember(windows, windowKey, []);
  for (const w of known) if (w.from <= limit && limit < w.to) return new Date(w.from);
  const slot = prevSlotUncached(cron, timezone, limit);
  const next = nextCronTime(cron, timezone, slot).getTime();
  if (slot.getTime() <= limit && limit < next) {
    known.unshift({ from: slot.getTime(), to: next });
    if (known.length > WINDOWS_PER_SCHEDULE) known.pop();
  }
  return slot;
}

/**
 * Per schedule, the latest few `[from, to)` spans over which prevCronTime's answer is `from`
 * (a few: "now" and the slot before it alternate in lastSlotEndingBy).
 */
const windows = new Map<string, Array<{ from: number; to: number }>>();
const WINDOWS_PER_SCHEDULE = 4;

function prevSlotUncached(cron: string, timezone: string, limit: number): Date {
  return memo("prev", cron, timezone, limit, () =>
    evaluate(cron, timezone, limit, (c) => {
      rewind(c, limit, 2);
      let best: Date | undefined;
      for (;;) {
        const slot = c.next().toDate();
        if (slot.getTime() > limit) break;
        best = slot;
      }
      if (!best) throw new Error(`no slot at or before ${new Date(limit).toISOString()}`);
      return best;
    }),
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
  const cursor = CronExpressionParser.parse(cron.trim(), {
    currentDate: new Date(start),
    tz: "UTC",
    hashSeed: HASH_SEED,
  });
  const first = cursor.next().getTime();
  let last = first;
  let min = Number.POSITIVE_INFINITY;
  for (let n = 0; n < MAX_SAMPLES && (n < 2 || last - first < SAMPLE_SPAN_MS); n++) {
    const slot = cursor.next().getTime();
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
