import { remember } from "./cache.js";
import { formatTaskKey, type TaskKey } from "./keys.js";
import {
  CronScheduleError,
  describeCronProblem,
  lastSlotEndingBy,
  nextCronTime,
  prevCronTime,
  truncate,
} from "./schedule/cron.js";
import { parseInstant, shortInstant, toInstant } from "./schedule/interval.js";
import type { TaskState } from "./task/state.js";

/**
 * The dependency gate, pure. It answers "has every parent finished the interval that covers
 * mine?" and, when not, says why. The plain rule: expected is the parent's most recent slot at or
 * before the child's logical date, and the gate passes when the parent's last finished interval
 * is at or after it. Three refinements: a finer parent must finish every slot inside the child's
 * interval; step crons keep their real step; a parent's failure of a later interval does not
 * block a child whose interval it already finished. A closed gate writes nothing (blocked is not
 * a transition): the caller keeps the reasons for `why is this task not running?`.
 */

export interface GateChild {
  readonly logicalDate: string;
  readonly cron: string;
  readonly timezone: string;
}

export type ParentStatus = "active" | "paused" | "retired";
export type FailedState = "failed" | "upstream_failed" | "abandoned" | "cancelled";

/** What the gate needs to know about one parent, read from its task projection. */
export interface GateParentState {
  readonly cron: string;
  readonly timezone: string;
  readonly status: ParentStatus;
  /** Start of the last interval the parent finished; null if it never has. */
  readonly prevIntervalStart: string | null;
  /** The parent's current instance, when it ended badly and was not yet rerun. */
  readonly failedInterval?: { readonly logicalDate: string; readonly state: FailedState };
}

/** A declared parent, with its state or `undefined` when no task has that key. */
export interface GateParent {
  readonly key: TaskKey;
  readonly state: GateParentState | undefined;
}

export type GateReason =
  | { readonly kind: "parent_missing"; readonly parent: TaskKey }
  | {
      readonly kind: "parent_failed";
      readonly parent: TaskKey;
      readonly logicalDate: string;
      readonly state: FailedState;
      readonly expected: string;
    }
  | {
      readonly kind: "parent_behind";
      readonly parent: TaskKey;
      readonly expected: string;
      readonly actual: string | null;
      readonly paused: boolean;
    }
  | {
      readonly kind: "parent_retired";
      readonly parent: TaskKey;
      readonly expected: string;
      readonly actual: string | null;
    }
  | { readonly kind: "parent_schedule_invalid"; readonly parent: TaskKey; readonly message: string };

export type GateDecision = { readonly open: true } | { readonly open: false; readonly reasons: GateReason[] };

/** The plain rule's expected slot: the parent's most recent slot at or before the child's logical date. */
export function plainExpected(parentCron: string, parentTimezone: string, childLogicalDate: string): string {
  return toInstant(prevCronTime(parentCron, parentTimezone, parseInstant(childLogicalDate, "logicalDate")));
}

/**
 * The parent slot the child needs finished: the plain rule's, or, for a parent finer than the
 * child, the last parent interval inside the child's interval (a daily child of an hourly parent
 * waits for 23:00, not 00:00). For an equal or coarser parent the plain rule's slot is the later one.
 */
export function expectedParentSlot(child: GateChild, parent: { cron: string; timezone: string }): string {
  // A pure function of five strings, asked again for every child of one parent and interval.
  const key = `${child.logicalDate}\u0000${child.cron}\u0000${child.timezone}\u0000${parent.cron}\u0000${parent.timezone}`;
  return (
    expectedSlots.get(key) ?? remember(expectedSlots, key, computeExpectedParentSlot(child, parent), 4096)
  );
}

const expectedSlots = new Map<string, string>();

function computeExpectedParentSlot(child: GateChild, parent: { cron: string; timezone: string }): string {
  const logical = parseInstant(child.logicalDate, "logicalDate");
  const plain = prevCronTime(parent.cron, parent.timezone, logical);
  const childEnd = nextCronTime(child.cron, child.timezone, logical);
  const finer = lastSlotEndingBy(parent.cron, parent.timezone, childEnd);
  return toInstant(new Date(Math.max(finer.getTime(), plain.getTime())));
}

/**
 * The slot of the parent's schedule that its last finished interval is in: a pure function of
 * three strings, asked again at every look at each of its children (timezone -> cron ->
 * prevIntervalStart -> slot: strings the projection keeps, whose hashes the engine keeps too).
 */
function finishedSlot(prevIntervalStart: string, parent: { cron: string; timezone: string }): string {
  let byCron = finishedSlots.get(parent.timezone);
  if (byCron === undefined) byCron = remember(finishedSlots, parent.timezone, new Map(), 64);
  let byStart = byCron.get(parent.cron);
  if (byStart === undefined) byStart = remember(byCron, parent.cron, new Map(), 256);
  const known = byStart.get(prevIntervalStart);
  if (known !== undefined) return known;
  const finished = parseInstant(prevIntervalStart, "prevIntervalStart");
  return remember(byStart, prevIntervalStart, toInstant(truncate(finished, parent)), 4096);
}

const finishedSlots = new Map<string, Map<string, Map<string, string>>>();

function checkParent(child: GateChild, { key, state }: GateParent): GateReason | null {
  if (!state) return { kind: "parent_missing", parent: key };
  let expected: string;
  let actual: string | null = null;
  try {
    expected = expectedParentSlot(child, state);
    // Truncation to the parent's own slots (see `truncate`): expected is already a slot; a
    // prevIntervalStart off the grid (say, after a cron change) floors to the slot it is in.
    if (state.prevIntervalStart !== null) actual = finishedSlot(state.prevIntervalStart, state);
  } catch (error) {
    if (!(error instanceof CronScheduleError)) throw error;
    return { kind: "parent_schedule_invalid", parent: key, message: describeCronProblem(error.problem) };
  }
  // ISO instants in one format compare as strings in time order.
  if (actual !== null && actual >= expected) return null;
  // A failure blocks only when it sits in the range the child still needs, not after it.
  const failed = state.failedInterval;
  if (failed && toInstant(parseInstant(failed.logicalDate)) <= expected)
    return {
      kind: "parent_failed",
      parent: key,
      logicalDate: failed.logicalDate,
      state: failed.state,
      expected,
    };
  if (state.status === "retired") return { kind: "parent_retired", parent: key, expected, actual };
  return { kind: "parent_behind", parent: key, expected, actual, paused: state.status === "paused" };
}

/** Every parent is checked, so the answer lists all reasons, not only the first. */
export function evaluateGate(child: GateChild, parents: readonly GateParent[]): GateDecision {
  let reasons: GateReason[] | null = null;
  for (const p of parents) {
    const reason = checkParent(child, p);
    if (reason === null) continue;
    if (reasons === null) reasons = [reason];
    else reasons.push(reason);
  }
  return reasons === null ? { open: true } : { open: false, reasons };
}

function finishedText(actual: string | null): string {
  return actual === null ? "it has finished nothing yet" : `it has finished ${shortInstant(actual)}`;
}

export function describeGateReason(reason: GateReason): string {
  const parent = formatTaskKey(reason.parent);
  switch (reason.kind) {
    case "parent_missing":
      return `parent ${parent} is not declared`;
    case "parent_failed":
      return `waiting for ${parent} to finish ${shortInstant(reason.expected)}; its interval ${shortInstant(reason.logicalDate)} is ${reason.state}`;
    case "parent_behind":
      return `waiting for ${parent} to finish ${shortInstant(reason.expected)}; ${finishedText(reason.actual)}${reason.paused ? " (it is paused)" : ""}`;
    case "parent_retired":
      return `parent ${parent} is retired and will not finish ${shortInstant(reason.expected)}; ${finishedText(reason.actual)}`;
    case "parent_schedule_invalid":
      return `parent ${parent} has an unusable schedule: ${reason.message}`;
  }
}

/**
 * The plain rule, for comparison only: expected is the parent's slot at or before the child's
 * logical date, and it passes when the parent's last finished interval is at or after it, both
 * truncated to the parent's granularity. That granularity is field-based ("which field is not a
 * star"), truncation is in UTC (weeks start on Monday), and none of the three refinements apply.
 */
export function plainGatePasses(
  parentCron: string,
  parentTimezone: string,
  prevIntervalStart: string | null,
  childLogicalDate: string,
): boolean {
  if (prevIntervalStart === null) return false;
  const unit = plainGranularity(parentCron);
  const expected = parseInstant(plainExpected(parentCron, parentTimezone, childLogicalDate));
  return plainTruncate(parseInstant(prevIntervalStart), unit) >= plainTruncate(expected, unit);
}

type PlainUnit = "year" | "month" | "week" | "day" | "hour" | "minute";

function plainGranularity(cron: string): PlainUnit {
  const [minute, hour, dom, month, dow] = cron.trim().split(/\s+/);
  if (dow === undefined) return "minute";
  if (month !== "*" && dom !== "*") return "year";
  if (dom !== "*" && dow === "*") return "month";
  if (dow !== "*") return "week";
  if (hour !== "*") return "day";
  return minute !== "*" ? "hour" : "minute";
}

function plainTruncate(date: Date, unit: PlainUnit): number {
  const y = date.getUTCFullYear();
  const mo = date.getUTCMonth();
  const d = date.getUTCDate();
  switch (unit) {
    case "year":
      return Date.UTC(y, 0, 1);
    case "month":
      return Date.UTC(y, mo, 1);
    case "week":
      return Date.UTC(y, mo, d - ((date.getUTCDay() + 6) % 7));
    case "day":
      return Date.UTC(y, mo, d);
    case "hour":
      return Date.UTC(y, mo, d, date.getUTCHours());
    case "minute":
      return Date.UTC(y, mo, d, date.getUTCHours(), date.getUTCMinutes());
  }
}

/**
 * The gate's view of every parent of `task`, read from `tasks` (the projection's), or from
 * `ahead` for a parent whose next state is decided but not yet in the projection.
 */
export function gateParents(
  tasks: ReadonlyMap<string, TaskState>,
  task: TaskState,
  ahead?: ReadonlyMap<string, TaskState>,
): GateParent[] {
  return task.parents.map((key) => {
    const id = formatTaskKey(key);
    const parent = ahead?.get(id) ?? tasks.get(id);
    return {
      key,
      state: parent && {
        cron: parent.spec.cron,
        timezone: parent.spec.timezone,
        status: parent.status,
        prevIntervalStart: parent.prevIntervalStart,
        ...(parent.failure
          ? { failedInterval: { logicalDate: parent.failure.logicalDate, state: parent.failure.state } }
          : {}),
      },
    };
  });
}

/** The gate for a task's current interval, its parents read from `tasks` (or `ahead`). */
export function gateFor(
  tasks: ReadonlyMap<string, TaskState>,
  task: TaskState,
  ahead?: ReadonlyMap<string, TaskState>,
): GateDecision {
  if (task.parents.length === 0) return { open: true };
  return evaluateGate(
    { logicalDate: task.logicalDate, cron: task.spec.cron, timezone: task.spec.timezone },
    gateParents(tasks, task, ahead),
  );
}
