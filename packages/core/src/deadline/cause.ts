import type { GateReason } from "../gate.js";
import { type AttemptView, lastLineOf } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import { describeHold } from "../projection/explain.js";
import { shortInstant } from "../schedule/interval.js";
import {
  type DecideOptions,
  decideTask,
  projectedSlots,
  type Slots,
  type TaskDecision,
  type TaskView,
} from "../task/decide-task.js";
import type { TaskState } from "../task/state.js";
import { intervalLabel } from "./deadline.js";

/** Where the waits of an interval not done end: the task and interval that hold it, and how. */
export interface RootCause {
  /** The task that holds it: the interval's own, or an ancestor's. */
  readonly task: string;
  readonly logicalDate: string;
  readonly state:
    | "done"
    | "failed"
    | "upstream_failed"
    | "abandoned"
    | "cancelled"
    | "running"
    | "queued"
    | "retry_wait"
    | "paused"
    | "retired"
    | "held"
    | "ready"
    | "not_due"
    | "missing"
    | "ended"
    | "stuck";
  /** What it says of itself: `exit 3: no such table orders`, `since 05:40:02Z`, a pause's reason. */
  readonly detail: string | null;
  /** The tasks waited through, from the interval's own to the cause (both included). */
  readonly path: readonly string[];
}

/** Ancestors followed at most (a deeper graph says where it stopped). */
const MAX_DEPTH = 64;

/**
 * The root cause of `taskId`'s interval `logicalDate` not being done: the waits followed as
 * `why` follows them (the core's decision at each step), through a parent that has not finished
 * the slot the interval needs, to the deepest task that holds it: one that failed (with its exit
 * code and last line of stderr), is running, paused, held for a slot, not due yet. A task behind
 * its own earlier interval is held by that one. Pure: reads the projection's slice.
 */
export function rootCause(
  view: TaskView,
  taskId: string,
  logicalDate: string,
  now: number,
  options: DecideOptions = {},
): RootCause {
  const slots = projectedSlots(view);
  const path: string[] = [];
  let id = taskId;
  let at = logicalDate;
  for (let depth = 0; depth < MAX_DEPTH; depth += 1) {
    if (path.at(-1) !== id) path.push(id);
    const task = view.tasks.get(id);
    const here = { task: id, logicalDate: at, path: [...path] };
    if (!task) return { ...here, state: "missing", detail: null };
    // A task never moves past an interval it did not complete (or skip).
    if (task.logicalDate > at) return { ...here, state: "done", detail: null };
    if (task.logicalDate < at && !task.failure && task.status === "active") {
      // Behind: its own earlier interval holds this one.
      at = task.logicalDate;
      continue;
    }
    const next = step(view, task, now, slots, options);
    if ("follow" in next) {
      id = next.follow;
      at = next.at;
      continue;
    }
    return { ...here, logicalDate: next.at ?? task.logicalDate, state: next.state, detail: next.detail };
  }
  return { task: id, logicalDate: at, path, state: "stuck", detail: `more than ${MAX_DEPTH} tasks deep` };
}

type Step =
  | { readonly follow: string; readonly at: string }
  | { readonly state: RootCause["state"]; readonly detail: string | null; readonly at?: string };

function step(view: TaskView, task: TaskState, now: number, slots: Slots, options: DecideOptions): Step {
  const d: TaskDecision = decideTask(view, task, now, slots, options);
  switch (d.kind) {
    case "failed":
    case "fail": {
      const f = d.kind === "failed" ? d.failure : d.event.data;
      if (f.state === "upstream_failed") {
        const parent = failedParent(view, task, f.logicalDate);
        if (parent) return parent;
      }
      return { state: f.state, detail: failureDetail(d.attempt, f.reason), at: f.logicalDate };
    }
    case "blocked":
      return followGate(d.reasons);
    case "running":
      return { state: "running", detail: since(d.attempt) };
    case "queued":
      return { state: "queued", detail: null };
    case "retry_at":
      return {
        state: "retry_wait",
        detail: `attempt ${d.attempt?.attempt ?? "?"} failed, retry due ${shortInstant(d.at)}`,
      };
    case "paused":
      return { state: "paused", detail: d.reason };
    case "retired":
      return { state: "retired", detail: null };
    case "held":
      return { state: "held", detail: describeHold(d.hold, view, now) };
    case "ready":
    case "catchup_jump":
      return { state: "ready", detail: null };
    case "complete":
      return { state: "done", detail: null };
    case "not_due":
      return { state: "not_due", detail: `due ${shortInstant(d.at)}` };
    case "schedule_ended":
      return { state: "ended", detail: `its schedule ended at ${shortInstant(d.endDate)}` };
    case "stuck":
      return { state: "stuck", detail: d.message };
    default: {
      const never: never = d;
      return never;
    }
  }
}

/** The parent a closed gate waits for first: a failed one before one merely behind. */
function followGate(reasons: readonly GateReason[]): Step {
  const failed = reasons.find((r) => r.kind === "parent_failed");
  if (failed?.kind === "parent_failed")
    return { follow: formatTaskKey(failed.parent), at: failed.logicalDate };
  for (const r of reasons) {
    if (r.kind === "parent_behind" || r.kind === "parent_retired")
      return { follow: formatTaskKey(r.parent), at: r.expected };
    if (r.kind === "parent_missing")
      return { state: "missing", detail: `its parent ${formatTaskKey(r.parent)} is not declared` };
    if (r.kind === "parent_schedule_invalid")
      return { state: "stuck", detail: `its parent ${formatTaskKey(r.parent)}'s schedule: ${r.message}` };
  }
  return { state: "stuck", detail: null };
}

/** A parent that stands failed at an interval at or before `logicalDate`: what closed this one. */
function failedParent(view: TaskView, task: TaskState, logicalDate: string): Step | null {
  for (const p of task.parents) {
    const parent = view.tasks.get(formatTaskKey(p));
    const f = parent?.failure;
    if (parent && f && f.logicalDate <= logicalDate) return { follow: parent.id, at: f.logicalDate };
  }
  return null;
}

/** `exit 3: no such table orders`: how the attempt ended, and its last line of stderr. */
export function failureDetail(a: AttemptView | null, reason: string): string {
  const how = a?.exitCode !== null && a?.exitCode !== undefined ? `exit ${a.exitCode}` : reason;
  const last = a ? lastLineOf(a.stderrTail) : undefined;
  return last ? `${how}: ${last}` : how;
}

function since(a: AttemptView | null): string | null {
  const at = a?.startedAt ?? a?.intendedAt;
  return at ? `attempt ${a?.attempt} since ${shortInstant(at)}` : null;
}

/** The cause in words, as an alert and `why` say it: `it waits for X 2026-12-01T03:00Z, which failed (exit 3: ...)`. */
export function describeCause(c: RootCause, self: string): string {
  const what = stateWords(c);
  if (c.task === self) return `it ${what}`;
  return `it waits for ${c.task} ${intervalLabel(c.logicalDate)}, which ${what}`;
}

function stateWords(c: RootCause): string {
  const detail = c.detail ? ` (${c.detail})` : "";
  switch (c.state) {
    case "done":
      return "is done";
    case "failed":
      return `failed${detail}`;
    case "upstream_failed":
      return `was closed as upstream_failed${detail}`;
    case "abandoned":
      return `was abandoned${detail}`;
    case "cancelled":
      return `was cancelled${detail}`;
    case "running":
      return `is running${detail}`;
    case "queued":
      return "is queued for a worker";
    case "retry_wait":
      return `waits for a retry${detail}`;
    case "paused":
      return `is paused${detail}`;
    case "retired":
      return "is retired";
    case "held":
      return `is held: ${c.detail ?? "for a limit"}`;
    case "ready":
      return "is ready to start";
    case "not_due":
      return `is not due yet${detail}`;
    case "missing":
      return `is not declared${detail}`;
    case "ended":
      return `has ended${detail}`;
    case "stuck":
      return `cannot move on${detail}`;
  }
}
