import { describeGateReason, type GateReason } from "../gate.js";
import { endsInARow } from "../instance/decide-report.js";
import { type AttemptView, lastLineOf } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import { PROCESS_ENDED } from "../reconcile/lost-worker.js";
import { runBlockers } from "../run/blockers.js";
import type { RunState } from "../run/state.js";
import { shortInstant } from "../schedule/interval.js";
import { isExternal } from "../spec.js";
import { instanceStream } from "../streams.js";
import { abandonCommand, markCommand, retryCommand } from "../task/decide-halted.js";
import {
  connectionHolders,
  type DecideOptions,
  decideTask,
  type Hold,
  projectedSlots,
  type Slots,
  type TaskDecision,
  type TaskView,
} from "../task/decide-task.js";
import { queueReadyReason, queueWaitReason } from "../task/queue-wait.js";
import type { TaskState } from "../task/state.js";
import { counted } from "../words.js";
import { aheadOf, type WeightedView } from "./ahead.js";
import {
  describeAwaited,
  describeOutsideBlock,
  describeOutsideFailure,
  reportCommand,
} from "./explain-outside.js";
import type { WorkersProjection } from "./workers.js";

/** Where a task stands, in one word (the `NOW` column of `chronolog tasks`). */
export type TaskCondition =
  | "retired"
  | "paused"
  | "failed"
  | "upstream_failed"
  | "skipped"
  | "running"
  | "queued"
  | "retry_wait"
  | "succeeded"
  | "not_due"
  | "ended"
  | "catching_up"
  | "blocked"
  | "held"
  | "ready"
  | "stuck"
  | "unknown";

export interface Explanation {
  readonly task: string;
  readonly condition: TaskCondition;
  /** One sentence per reason, e.g. "waiting for a slot on connection pg (1 of 1 in use: ...)". */
  readonly reasons: readonly string[];
  readonly logicalDate: string | null;
  readonly nextRunDate: string | null;
  /** The core's decision itself (null: no such task). */
  readonly decision: TaskDecision | null;
  /** What an operator can do where the task stands, each as the command that does it. */
  readonly nextSteps: readonly NextStep[];
}

/** One way out for an operator: an action on a task's interval, and the command that does it. */
export interface NextStep {
  readonly action:
    | "retry"
    | "mark_succeeded"
    | "mark_skipped"
    | "abandon"
    | "resume"
    | "report_succeeded"
    | "report_failed";
  /** The task it acts on (a parent, when that is what holds this one). */
  readonly task: string;
  /** The interval it acts on (null: the task as a whole). */
  readonly interval: string | null;
  /** The command that does it, as it can be run. */
  readonly command: string;
}

/** The ways out of a halted interval: retry it, or mark it succeeded or skipped. */
export function haltedSteps(task: string, interval: string): NextStep[] {
  return [
    { action: "retry", task, interval, command: retryCommand(task, interval) },
    { action: "mark_succeeded", task, interval, command: markCommand(task, interval, "success") },
    { action: "mark_skipped", task, interval, command: markCommand(task, interval, "skipped") },
  ];
}

/** The ways an outside task's awaited interval is reported: succeeded, or failed with why. */
export function reportSteps(task: string, interval: string): NextStep[] {
  const command = reportCommand(task, interval);
  return [
    { action: "report_succeeded", task, interval, command },
    { action: "report_failed", task, interval, command: `${command} --failed "say why"` },
  ];
}

/**
 * An interval closed as upstream_failed while a parent still stands halted goes on once that
 * parent is retried or marked (a retry of it alone would be closed again): the parent's ways out
 * come first, then its own marks. Otherwise, its own ways out.
 */
function upstreamFirst(
  taskId: string,
  interval: string,
  state: string,
  tasks: ReadonlyMap<string, TaskState> | undefined,
): NextStep[] {
  const task = tasks?.get(taskId);
  // An outside task is never run: it is reported again, or marked.
  if (task && isExternal(task.spec))
    return [reportSteps(taskId, interval)[0] as NextStep, ...haltedSteps(taskId, interval).slice(1)];
  const own = haltedSteps(taskId, interval);
  if (state !== "upstream_failed" || !tasks || !task) return own;
  const parents: NextStep[] = [];
  for (const p of task.parents) {
    const parent = tasks.get(formatTaskKey(p));
    const f = parent?.failure;
    if (
      parent &&
      f &&
      f.logicalDate === parent.logicalDate &&
      Date.parse(f.logicalDate) <= Date.parse(interval)
    )
      parents.push(
        ...upstreamFirst(parent.id, f.logicalDate, f.state, tasks).filter((s) => s.task !== taskId),
      );
  }
  return parents.length > 0 ? [...parents, ...own.filter((s) => s.action !== "retry")] : own;
}

/**
 * What an operator can do where a decision leaves the task: a halted interval is retried or
 * marked; an attempt whose lease expired is abandoned; a paused task resumed; a task blocked by a
 * parent halted at the interval it needs names that parent's ways out.
 */
export function nextStepsFor(
  d: TaskDecision,
  taskId: string,
  logicalDate: string,
  tasks?: ReadonlyMap<string, TaskState>,
): NextStep[] {
  switch (d.kind) {
    case "failed":
      return upstreamFirst(taskId, d.failure.logicalDate, d.failure.state, tasks);
    case "fail":
      return upstreamFirst(taskId, d.event.data.logicalDate, d.event.data.state, tasks);
    case "running":
      return d.attempt?.status === "lease_expired"
        ? [
            {
              action: "abandon",
              task: taskId,
              interval: logicalDate,
              command: `${abandonCommand(taskId, logicalDate)} --retry`,
            },
          ]
        : [];
    case "paused":
      return [{ action: "resume", task: taskId, interval: null, command: `chronolog resume ${taskId}` }];
    case "blocked":
      return d.reasons.flatMap((r) => {
        const parent = tasks?.get(formatTaskKey(r.parent));
        const outside = !!parent && isExternal(parent.spec);
        if (r.kind === "parent_failed")
          return outside
            ? upstreamFirst(formatTaskKey(r.parent), r.logicalDate, r.state, tasks)
            : haltedSteps(formatTaskKey(r.parent), r.logicalDate);
        if (parent && outside && r.kind === "parent_behind")
          return reportSteps(parent.id, parent.logicalDate);
        // A parent paused holds its children until it is resumed.
        if (parent && r.kind === "parent_behind" && parent.status === "paused")
          return [
            { action: "resume", task: parent.id, interval: null, command: `chronolog resume ${parent.id}` },
          ];
        return [];
      });
    case "held":
      return d.hold.on === "outside_report" ? reportSteps(taskId, d.hold.logicalDate) : [];
    default:
      return [];
  }
}

/**
 * Why is this task (not) running? The core's `decideTask`, put in words: the same decision the
 * scheduler acts on, read from the projection alone; a task held for a slot also says who is
 * ahead of it for one. Writes nothing.
 */
export function explainTask(
  view: WeightedView & { readonly workers?: Pick<WorkersProjection, "load"> },
  taskId: string,
  nowMs: number,
  options: DecideOptions & { readonly slots?: Slots } = {},
): Explanation {
  const task = view.tasks.get(taskId);
  if (!task) {
    return {
      task: taskId,
      condition: "unknown",
      reasons: [`no task ${taskId} is declared`],
      logicalDate: null,
      nextRunDate: null,
      decision: null,
      nextSteps: [],
    };
  }
  const slots = options.slots ?? projectedSlots(view);
  const decision = decideTask(view, task, nowMs, slots, options);
  const described = describeDecision(decision, view, task.logicalDate, nowMs);
  const { condition } = described;
  const reasons =
    decision.kind === "failed" && isExternal(task.spec)
      ? describeOutsideFailure(task, decision.failure, view)
      : described.reasons;
  // Held for a slot: who a free one goes to first, and why.
  const ahead =
    decision.kind === "held" ? aheadOf(view, task, decision.hold, nowMs, { ...options, slots }) : undefined;
  if (ahead !== undefined && reasons.length > 0) reasons[0] = `${reasons[0]}; ${ahead}`;
  // Ready, and it runs only on a worker of its queue: say where it goes, and how that queue stands.
  const queue = task.spec.queue;
  if (decision.kind === "ready" && queue !== undefined && view.workers)
    reasons.push(queueReadyReason(queue, view.workers.load(queue)));
  return {
    task: taskId,
    condition,
    reasons,
    logicalDate: task.logicalDate,
    nextRunDate: task.nextRunDate,
    decision,
    nextSteps: nextStepsFor(decision, taskId, task.logicalDate, view.tasks),
  };
}

/**
 * The ways out of a run's halted tasks: each task that ended failed, abandoned or cancelled in
 * it and still stands at its date (retrying or marking it reopens the run, and the tasks closed
 * as upstream_failed for it go on after it, so they need no step of their own).
 */
export function runNextSteps(
  tasks: ReadonlyMap<string, { readonly logicalDate: string; readonly status: string }>,
  run: RunState,
): NextStep[] {
  const out: NextStep[] = [];
  for (const id of run.tasks) {
    const o = run.outcomes[id];
    if (o !== "failed" && o !== "abandoned" && o !== "cancelled") continue;
    const t = tasks.get(id);
    if (t && t.status !== "retired" && t.logicalDate === run.logicalDate)
      out.push(...haltedSteps(id, run.logicalDate));
  }
  return out;
}

/** A decision in words: its condition and one sentence per reason. */
export function describeDecision(
  d: TaskDecision,
  view: Pick<TaskView, "instances"> & Partial<Pick<TaskView, "tasks" | "runs">>,
  logicalDate: string,
  nowMs: number,
): { condition: TaskCondition; reasons: string[] } {
  const at = shortInstant(logicalDate);
  switch (d.kind) {
    case "complete": {
      const mark = view.instances.get(instanceStream(d.event.data.key, logicalDate))?.marked;
      const how = mark ? ` (marked by hand by ${mark.by}: ${mark.reason})` : "";
      return d.outcome === "success"
        ? { condition: "succeeded", reasons: [`${at} succeeded${how}; advancing the schedule`] }
        : { condition: "skipped", reasons: [`${at} was skipped${how}; advancing the schedule`] };
    }
    case "fail":
      return {
        condition: d.event.data.state === "upstream_failed" ? "upstream_failed" : "failed",
        reasons: [
          endedLine(at, d.event.data.state, d.event.data.reason),
          ...interruptedLines(d.event.data.reason),
          ...attemptLines(d.attempt, d.event.data.reason),
        ],
      };
    case "failed": {
      const f = d.failure;
      return {
        condition: f.state === "upstream_failed" ? "upstream_failed" : "failed",
        reasons: [
          `blocked by its own ${f.state} interval ${shortInstant(f.logicalDate)} (a task never advances past an interval it did not complete: retry it, or mark it succeeded or skipped)`,
          endedLine(shortInstant(f.logicalDate), f.state, f.reason),
          ...interruptedLines(f.reason),
          ...attemptLines(d.attempt, f.reason),
        ],
      };
    }
    case "running":
      return {
        condition: "running",
        reasons: [
          `attempt ${d.attempt?.attempt} for ${at} is running on ${d.attempt?.workerId ?? "a worker"}${d.attempt?.status === "lease_expired" ? " (its lease expired: waiting for the worker to report, or for an operator)" : ""}`,
        ],
      };
    case "queued":
      return {
        condition: "queued",
        reasons: [`attempt ${d.attempt?.attempt} for ${at} is dispatched; waiting for a worker to start it`],
      };
    case "retry_at":
      return {
        condition: "retry_wait",
        reasons: [
          `attempt ${d.attempt?.attempt} for ${at} failed (${d.attempt?.endReason ?? "unknown"}); retry due ${toSecond(d.at, "up")}`,
        ],
      };
    case "retired":
      return { condition: "retired", reasons: ["the task is retired"] };
    case "paused":
      return {
        condition: "paused",
        reasons: [`the task is paused${d.reason ? `: ${d.reason}` : " (no reason given)"}`],
      };
    case "schedule_ended":
      return { condition: "ended", reasons: [`the schedule ended at ${shortInstant(d.endDate)}`] };
    case "not_due":
      return { condition: "not_due", reasons: [`the interval ${at} is not due until ${shortInstant(d.at)}`] };
    case "stuck": {
      const what =
        d.step === "advance"
          ? `${at} ${d.outcome === "skipped" ? "was skipped" : "succeeded"} (recorded), but the schedule cannot advance past it`
          : d.step === "fail"
            ? `${at} ended ${d.outcome ?? "badly"} (recorded), but the task's stop at it cannot be recorded`
            : `catch-up is off, but the latest interval to jump to cannot be computed`;
      return {
        condition: "stuck",
        reasons: [
          `${what}: ${d.message}`,
          "the scheduler serves every other task meanwhile; declare the task again with a schedule that works, and it moves on",
        ],
      };
    }
    case "catchup_jump":
      return {
        condition: "catching_up",
        reasons: [
          `catch-up is off: the task jumps from ${at} to the latest interval, ${shortInstant(d.event.data.logicalDate)}`,
        ],
      };
    case "blocked":
      return { condition: "blocked", reasons: d.reasons.map((r) => describeBlock(r, view.tasks)) };
    case "held":
      return { condition: "held", reasons: [describeHold(d.hold, view, nowMs)] };
    case "ready":
      return {
        condition: "ready",
        reasons: [
          d.retry
            ? `attempt ${(d.retry.attempts.at(-1)?.attempt ?? 0) + 1} for ${at} is due (a retry)`
            : `${at} is due and its parents are done`,
        ],
      };
    default: {
      const never: never = d;
      return never;
    }
  }
}

/** One sentence for what holds a task back, with the numbers. */
export function describeHold(
  h: Hold,
  view: Pick<TaskView, "instances"> & Partial<Pick<TaskView, "tasks" | "runs">>,
  nowMs: number,
): string {
  switch (h.on) {
    case "connection": {
      const holders = connectionHolders(view, h.connection).map((i) => {
        const a = i.attempts.at(-1);
        return `${formatTaskKey(i.key)} since ${clock(a?.startedAt ?? a?.intendedAt ?? null, nowMs)}`;
      });
      const more = h.inUse - holders.length;
      if (more > 0) holders.push(`${more} being dispatched`);
      return `waiting for a slot on connection ${h.connection} (${h.inUse} of ${h.limit} in use${holders.length > 0 ? `: ${holders.join(", ")}` : ""})`;
    }
    case "connection_undeclared":
      return `waiting for connection ${h.connection} to be declared`;
    case "run_slots":
      return `waiting for a slot in run ${h.workflow}@${shortInstant(h.logicalDate)} (${h.inUse} of ${h.limit} in use)`;
    case "active_runs": {
      // Runs that cannot finish say why: otherwise this task would wait without a cause in sight.
      const blocked = new Set<string>();
      for (const r of view.runs?.values() ?? [])
        if (r.workflow === h.workflow)
          for (const b of runBlockers(view.tasks ?? new Map(), r)) blocked.add(b);
      return `waiting for a run of workflow ${h.workflow} to finish (${h.active} of ${counted(h.limit, "run")} going)${blocked.size > 0 ? `; they cannot finish: ${[...blocked].join("; ")}` : ""}`;
    }
    case "run_failed_fast":
      return `run ${h.runId} failed fast: nothing new starts in it`;
    case "render_failed":
      return `its payload does not render (${h.message}): held until its declaration changes`;
    case "queue":
      return queueWaitReason(h.queue, h);
    case "earlier_attempt":
      return `attempt ${h.attempt ?? "?"} of ${shortInstant(h.logicalDate)}, from before the task was moved back, is still in flight`;
    case "outside_report":
      return describeAwaited(h.task, h.logicalDate, view);
    default: {
      const never: never = h;
      return never;
    }
  }
}

/** "`at` ended `state`: `reason`", the reason's own "`state`: " said once ("abandoned: abandoned: ..."). */
function endedLine(at: string, state: string, reason: string): string {
  return `${at} ended ${state}: ${reason.startsWith(`${state}: `) ? reason.slice(state.length + 2) : reason}`;
}

/**
 * Why an interval a shutdown, or the end of its scheduler process, interrupted is not run again
 * (only one that is not idempotent ends so).
 */
function interruptedLines(reason: string): string[] {
  if (!reason.startsWith("interrupted: ")) return [];
  if (!reason.includes(PROCESS_ENDED))
    return [
      "a shutdown interrupted it after it started; the task is not idempotent, so it is not run again on its own (its side effect may have happened): retry it, or mark it, once you know",
    ];
  const inARow = endsInARow(reason);
  return [
    inARow !== undefined
      ? `its scheduler process ended (killed or crashed) while it ran, the ${inARow}th time in a row; it is not run again on its own, as its run may be what ends it: retry it, or mark it, once you know`
      : "its scheduler process ended (killed or crashed) while it ran; it is not run again on its own, as the task is not idempotent (its side effect may have happened): retry it, or mark it, once you know",
  ];
}

/** The attempt that ended an interval: how it ended (unless `said`), and the last line of its stderr. */
function attemptLines(a: AttemptView | null, said: string): string[] {
  if (!a) return [];
  const ended = a.endReason ?? a.status;
  const out = ended === said ? [] : [`attempt ${a.attempt} ended: ${ended}`];
  const last = lastLineOf(a.stderrTail);
  if (last) out.push(`last line of stderr: ${last}`);
  return out;
}

/** An instant to the second: `2026-11-30T07:02:11Z`. */
function toSecond(iso: string, round: "down" | "up" = "down"): string {
  const ms = Date.parse(iso);
  // A time still to come is never shown before it is (a retry due at .929 is due at the next second).
  const at = round === "up" ? Math.ceil(ms / 1000) * 1000 : ms;
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `07:02:11Z` on the day of `nowMs`, the whole instant otherwise. */
function clock(iso: string | null, nowMs: number): string {
  if (!iso) return "an unknown time";
  const whole = toSecond(iso);
  return whole.slice(0, 10) === new Date(nowMs).toISOString().slice(0, 10) ? whole.slice(11) : whole;
}

/** A closed gate's reason in words; a parent that is an outside task waits for its report. */
function describeBlock(r: GateReason, tasks: ReadonlyMap<string, TaskState> | undefined): string {
  return describeOutsideBlock(r, tasks) ?? describeGateReason(r);
}
