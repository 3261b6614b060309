import type { AlertState } from "../alert/alert.js";
import { formatTaskKey } from "../keys.js";
import { shortInstant, toInstant } from "../schedule/interval.js";
import type { DeadlineSpec } from "../spec.js";
import type { DecideOptions, TaskView } from "../task/decide-task.js";
import type { TaskState } from "../task/state.js";
import { describeCause, type RootCause, rootCause } from "./cause.js";
import { deadlineLabel, deadlineOf } from "./deadline.js";
import { type Durations, type Estimate, estimateDone } from "./estimate.js";

/** A task's deadline as `why`, `task` and the API show it: for its first interval not done. */
export interface DeadlineStanding {
  readonly deadline: DeadlineSpec;
  /** The interval it is for: the task's current one (the first it has not done). */
  readonly logicalDate: string;
  /** When that interval must be done. */
  readonly dueAt: string;
  readonly state: "on_track" | "at_risk" | "missed";
  readonly estimate: {
    /** When it would be done at the recent pace; null: not without an operator. */
    readonly doneAt: string | null;
    readonly path: Estimate["path"];
    /** Tasks on the way with no recorded duration yet (counted as taking no time). */
    readonly unknown: readonly string[];
  };
  /** What holds the interval, the waits followed to their end; null when nothing does yet. */
  readonly cause: (RootCause & { readonly text: string }) | null;
  /** The task's latest interval that was done after its deadline, from its alerts. */
  readonly metLate: { readonly logicalDate: string; readonly text: string; readonly at: string } | null;
}

/**
 * The deadline standing of a task's current interval, at `now`: when it is due, whether it is
 * missed or at risk, the estimate and the root cause. Null: the task declares no deadline.
 */
export function deadlineStanding(
  view: TaskView,
  durations: Durations,
  task: TaskState,
  now: number,
  options: DecideOptions & { readonly alerts?: Iterable<AlertState> } = {},
): DeadlineStanding | null {
  const d = task.spec.deadline;
  const due = deadlineOf(task.spec, task.logicalDate);
  if (!d || due === null) return null;
  const e = estimateDone(view, durations, task.id, task.logicalDate, now);
  const late = now >= due;
  const state = late ? "missed" : e.doneAt === null || e.doneAt > due ? "at_risk" : "on_track";
  const c = task.status === "retired" ? null : rootCause(view, task.id, task.logicalDate, now, options);
  return {
    deadline: d,
    logicalDate: task.logicalDate,
    dueAt: toInstant(new Date(due)),
    state,
    estimate: {
      doneAt: e.doneAt === null ? null : toInstant(new Date(e.doneAt)),
      path: e.path,
      unknown: e.unknown,
    },
    cause: c && c.state !== "done" ? { ...c, text: describeCause(c, task.id) } : null,
    metLate: lastMetLate(task, options.alerts),
  };
}

function lastMetLate(task: TaskState, alerts: Iterable<AlertState> | undefined): DeadlineStanding["metLate"] {
  let found: DeadlineStanding["metLate"] = null;
  for (const a of alerts ?? []) {
    const r = a.raised;
    if (r.kind !== "deadline_met_late" || !r.task || formatTaskKey(r.task) !== task.id) continue;
    if (!found || (r.logicalDate ?? "") > found.logicalDate)
      found = { logicalDate: r.logicalDate ?? "", text: r.reason, at: a.raisedAt };
  }
  return found;
}

/** The standing in one line, for `why` and `task`. */
export function describeDeadline(s: DeadlineStanding, now: number): string {
  const label = deadlineLabel(s.deadline);
  const due = shortInstant(s.dueAt);
  const est =
    s.estimate.doneAt === null
      ? "cannot be done without an operator"
      : `estimated done ${shortInstant(s.estimate.doneAt)}`;
  const what =
    s.state === "missed"
      ? `missed its ${label} deadline (${due}, ${ago(Date.parse(s.dueAt), now)} ago)`
      : s.state === "at_risk"
        ? `at risk of missing its ${label} deadline (${due}): ${est}`
        : `on track for its ${label} deadline (${due}): ${est}`;
  return `${shortInstant(s.logicalDate)} ${what}${s.cause ? `; ${s.cause.text}` : ""}`;
}

/** `42m`, `3h05m`, `12s`: a span as the alerts say it. */
export function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? `${String(s % 60).padStart(2, "0")}s` : ""}`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

function ago(at: number, now: number): string {
  return span(now - at);
}

/** What the scheduler's watch over one interval's deadline does at `now`. */
export type DeadlineCheck =
  /** The interval is done: watch the next one. */
  | { readonly kind: "done" }
  /** The deadline passed with the interval not done: raise `deadline_missed` with this reason. */
  | { readonly kind: "missed"; readonly reason: string; readonly cause: RootCause }
  /** It cannot make it at the recent pace: raise `deadline_at_risk` (once), look again at `recheckAt`. */
  | { readonly kind: "at_risk"; readonly reason: string; readonly recheckAt: number }
  /** On track: look again at `recheckAt`. */
  | { readonly kind: "wait"; readonly recheckAt: number };

/** The shortest time between two looks at one interval's estimate. */
export const MIN_RECHECK_MS = 1000;

/**
 * The watch over the deadline of `task`'s interval `logicalDate` (due at `due`), at `now`:
 * done, missed (the reason names the root cause), at risk (unless `riskRaised`), or on track.
 * An interval on track is looked at again halfway to the last moment the work left on its path
 * would still fit before its deadline (the estimate moves with the clock while nothing runs),
 * never more often than MIN_RECHECK_MS, and at its deadline.
 */
export function checkDeadline(
  view: TaskView,
  durations: Durations,
  task: TaskState,
  watched: { readonly logicalDate: string; readonly due: number; readonly riskRaised: boolean },
  now: number,
  options: DecideOptions = {},
): DeadlineCheck {
  const { logicalDate, due } = watched;
  if (task.logicalDate > logicalDate) return { kind: "done" };
  const d = task.spec.deadline as DeadlineSpec;
  const label = deadlineLabel(d);
  if (now >= due) {
    const cause = rootCause(view, task.id, logicalDate, now, options);
    return { kind: "missed", reason: `${label} deadline: ${describeCause(cause, task.id)}`, cause };
  }
  if (watched.riskRaised) return { kind: "wait", recheckAt: due };
  const e = estimateDone(view, durations, task.id, logicalDate, now);
  if (e.doneAt === null || e.doneAt > due) {
    let why: string;
    if (e.doneAt === null) {
      const cause = rootCause(view, task.id, logicalDate, now, options);
      why = `it cannot be done without an operator: ${describeCause(cause, task.id)}`;
    } else {
      const path = e.path.map((s) => `${s.task} ${span(s.ms)}`).join(", then ");
      why = `estimated done ${shortInstant(toInstant(new Date(e.doneAt)))}, ${span(e.doneAt - due)} late, at the recent pace of ${path}`;
    }
    return {
      kind: "at_risk",
      reason: `${label} deadline (${shortInstant(toInstant(new Date(due)))}): ${why}`,
      recheckAt: due,
    };
  }
  // Were nothing to move, the estimate would pass the deadline once the work left on the path
  // no longer fits before it: look again halfway there.
  const left = e.path.reduce((sum, s) => sum + s.ms, 0);
  const spare = due - left - now;
  return { kind: "wait", recheckAt: Math.min(due, now + Math.max(MIN_RECHECK_MS, Math.floor(spare / 2))) };
}
