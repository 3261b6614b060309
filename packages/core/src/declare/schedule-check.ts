import { CronExpressionParser } from "cron-parser";
import { remember } from "../cache.js";
import type { IssueCollector, Located } from "./issues.js";

/**
 * The values of a schedule, checked where they are written: a cron expression, a time zone, a
 * date. A catalogue repeats a few of each over thousands of tasks, so each answer is kept.
 */

const ALLOWED_CRON_ALIASES = new Set([
  "@yearly",
  "@annually",
  "@monthly",
  "@weekly",
  "@daily",
  "@hourly",
  "@minutely",
  "@weekdays",
  "@weekends",
]);

/** A fixed reference instant for cron checks, so validation never reads the clock. */
const CRON_CHECK_FROM = new Date(Date.UTC(2000, 0, 1));

/** Cron and time zone written at one level (a workflow, or a task's own overrides). */
export function checkSchedule(
  decl: { cron?: string | undefined; timezone?: string | undefined },
  at: Located,
  task: string | undefined,
  issues: IssueCollector,
): void {
  if (decl.cron !== undefined) {
    const problem = cronProblem(decl.cron);
    if (problem) issues.error("cron", { file: at.file, path: `${at.path}.cron` }, problem, task);
  }
  if (decl.timezone !== undefined && !isTimeZone(decl.timezone)) {
    issues.error(
      "timezone",
      { file: at.file, path: `${at.path}.timezone` },
      `unknown time zone ${JSON.stringify(decl.timezone)} (use an IANA name such as UTC or Europe/Paris)`,
      task,
    );
  }
}

/** A declared date as a UTC instant; a catalogue repeats a few, and each answer is kept. */
export function toInstant(value: string): string {
  return (
    declaredInstants.get(value) ??
    remember(declaredInstants, value, new Date(value).toISOString(), CRON_PROBLEMS_KEPT)
  );
}

/** Declared date -> its instant. */
const declaredInstants = new Map<string, string>();

/** Undefined when the expression is a usable 5-field cron (or an allowed @alias). */
export function cronProblem(expression: string): string | undefined {
  // A catalogue repeats a few expressions over thousands of tasks, and parsing one is most of
  // what checking a declaration costs: each expression's answer is kept.
  const known = cronProblems.get(expression);
  if (known !== undefined) return known === "" ? undefined : known;
  const problem = findCronProblem(expression);
  remember(cronProblems, expression, problem ?? "", CRON_PROBLEMS_KEPT);
  return problem;
}

/** Expression -> its problem, or "" for none. */
const cronProblems = new Map<string, string>();
const CRON_PROBLEMS_KEPT = 1024;

function findCronProblem(expression: string): string | undefined {
  const expr = expression.trim();
  if (expr.startsWith("@")) {
    if (!ALLOWED_CRON_ALIASES.has(expr)) {
      return `invalid cron ${JSON.stringify(expression)}: unknown alias (use one of ${[...ALLOWED_CRON_ALIASES].join(", ")})`;
    }
  } else {
    const fields = expr.split(/\s+/).filter((f) => f !== "");
    if (fields.length !== 5) {
      return `invalid cron ${JSON.stringify(expression)}: expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
    }
    // `H` (hashed) picks a pseudo-random value: a schedule must be a function of its text. Month
    // and weekday names (THU) are removed first so their letters are not taken for `H`.
    if (fields.some((f) => /H/i.test(f.replace(/[a-z]{3}/gi, "")))) {
      return `invalid cron ${JSON.stringify(expression)}: hashed values (H) are not supported`;
    }
  }
  try {
    CronExpressionParser.parse(expr, {
      tz: "UTC",
      currentDate: CRON_CHECK_FROM,
      hashSeed: "chronolog",
    }).next();
    return undefined;
  } catch (e) {
    return `invalid cron ${JSON.stringify(expression)}: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/**
 * Whether the runtime knows this IANA time zone name. Asking costs a formatter (tens of
 * microseconds), and every task of a catalogue asks for its zone: each answer is kept.
 */
export function isTimeZone(name: string): boolean {
  const known = timeZones.get(name);
  if (known !== undefined) return known;
  return remember(timeZones, name, findTimeZone(name), CRON_PROBLEMS_KEPT);
}

/** Zone name -> whether the runtime knows it. */
const timeZones = new Map<string, boolean>();

function findTimeZone(name: string): boolean {
  if (name.trim() === "") return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
