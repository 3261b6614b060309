import type { DomainEventOf } from "../events/catalog.js";
import { type GateReason, gateFor } from "../gate.js";
import {
  type AttemptView,
  countsForTask,
  currentAttempt,
  type InstanceState,
  isTerminal,
} from "../instance/state.js";
import { type RunState, runIdOf } from "../run/state.js";
import { lastSlotEndingBy, nextCronTime, slotBefore } from "../schedule/cron.js";
import { toInstant } from "../schedule/interval.js";
import { type ConnectionSpec, isExternal, type WorkflowSpec } from "../spec.js";
import { instanceStream } from "../streams.js";
import { type QueueRoom, queueHasRoom } from "./queue-wait.js";
import type { TaskFailure, TaskState } from "./state.js";
import { completedInterval, decideIntervalCompleted, decideIntervalFailed } from "./success-path.js";

/**
 * Where a task stands and what happens next: the one decision, made here and nowhere else. The
 * scheduler acts on it (writes the event it carries, dispatches a `ready` task, waits on a
 * `held` one); `why`, `tasks` and `task` print it. Pure: the projection's slice and `now` in,
 * a closed union out.
 */
export type TaskDecision =
  /** The current interval's attempt succeeded (or was skipped): record it and advance. */
  | {
      readonly kind: "complete";
      readonly outcome: "success" | "skipped";
      readonly event: DomainEventOf<"IntervalCompleted">;
    }
  /** The current interval ended badly: record that the task stops at it. */
  | {
      readonly kind: "fail";
      readonly event: DomainEventOf<"IntervalFailed">;
      readonly attempt: AttemptView | null;
    }
  /** Stopped at an interval it did not complete, until an operator reruns or abandons it. */
  | { readonly kind: "failed"; readonly failure: TaskFailure; readonly attempt: AttemptView | null }
  | { readonly kind: "running"; readonly instance: InstanceState; readonly attempt: AttemptView | null }
  | { readonly kind: "queued"; readonly instance: InstanceState; readonly attempt: AttemptView | null }
  /** The last attempt failed; the next one is due at `at`. */
  | {
      readonly kind: "retry_at";
      readonly at: string;
      readonly instance: InstanceState;
      readonly attempt: AttemptView | null;
    }
  | { readonly kind: "retired" }
  | { readonly kind: "paused"; readonly reason: string | null }
  | { readonly kind: "schedule_ended"; readonly endDate: string }
  | { readonly kind: "not_due"; readonly at: string }
  /**
   * The schedule could not be moved (computing its next slot failed): the outcome of the
   * interval stands recorded, and the task waits until its declaration changes.
   */
  | {
      readonly kind: "stuck";
      readonly step: "advance" | "fail" | "catchup";
      readonly outcome: InstanceState["status"] | null;
      readonly message: string;
    }
  /** Catch-up is off and the task is more than one interval behind: jump to the latest. */
  | { readonly kind: "catchup_jump"; readonly event: DomainEventOf<"IntervalReset"> }
  /** A parent has not finished the interval that covers the task's (blocked is not a transition). */
  | { readonly kind: "blocked"; readonly reasons: readonly GateReason[] }
  /** Free to start but for a limit, or an attempt of the interval still in flight. */
  | { readonly kind: "held"; readonly hold: Hold }
  /** Dispatch now: a first attempt, or `retry`'s next one. */
  | { readonly kind: "ready"; readonly retry: InstanceState | null; readonly run: RunAdmission | null };

export type Hold =
  | {
      readonly on: "connection";
      readonly connection: string;
      readonly inUse: number;
      readonly limit: number;
    }
  | { readonly on: "connection_undeclared"; readonly connection: string }
  | {
      readonly on: "run_slots";
      readonly runId: string;
      readonly workflow: string;
      readonly logicalDate: string;
      readonly inUse: number;
      readonly limit: number;
    }
  | { readonly on: "active_runs"; readonly workflow: string; readonly active: number; readonly limit: number }
  | { readonly on: "run_failed_fast"; readonly runId: string }
  /** An attempt of this interval from before the task was moved (a backfill) is still running. */
  | { readonly on: "earlier_attempt"; readonly logicalDate: string; readonly attempt: number | null }
  /** Its payload or cache key does not render: held until its declaration changes. */
  | { readonly on: "render_failed"; readonly message: string }
  /** An outside task: its interval is done when whoever produces its data reports it. */
  | { readonly on: "outside_report"; readonly task: string; readonly logicalDate: string }

  /** No worker serving its queue has a free slot (none connected, or all busy). */
  | ({ readonly on: "queue"; readonly queue: string } & QueueRoom);

/** The run a ready task of a workflow joins, and whether its dispatch starts it. */
export interface RunAdmission {
  readonly runId: string;
  readonly workflow: string;
  readonly logicalDate: string;
  /** Null: the run is going. Otherwise RunStarted is written first, at this expected revision. */
  readonly start: null | {
    readonly trigger: "schedule" | "backfill";
    /**
     * The run stream's revision as the projection knows it: "no_stream" for a run it does not
     * hold, which may be one it no longer holds (the writer then reads the log and reopens it).
     */
    readonly revision: bigint | "no_stream";
    /** Who asked for the backfill that reopens it. */
    readonly requestedBy?: string;
  };
}

/** The slice of the projection a decision reads (the scheduler's projection is one). */
export interface TaskView {
  readonly tasks: ReadonlyMap<string, TaskState>;
  readonly instances: ReadonlyMap<string, InstanceState>;
  readonly connections: ReadonlyMap<string, ConnectionSpec>;
  readonly workflows: ReadonlyMap<string, WorkflowSpec>;
  readonly runs: ReadonlyMap<string, RunState>;
}

/**
 * How many slots of each limit are in use. Read from the projection alone by `projectedSlots`;
 * the scheduler's own counts add the dispatches it is writing that the projection does not
 * show yet, and those it admits during one pass.
 */
export interface Slots {
  /** Attempts queued or running on the connection. */
  connectionInUse(connection: string): number;
  /** Tasks of the run holding one of its `maxActiveTasks` slots. */
  runSlotsInUse(runId: string, run: RunState | undefined): number;
  /** Runs of the workflow going. */
  activeRuns(workflow: string): number;
  /** Whether the run's RunStarted is already decided (it does not count against maxActiveRuns again). */
  runStarting(runId: string): boolean;
  /**
   * The workers serving a queue and their slots in use; absent where the workers are not known
   * (a task with a queue is then not held for one).
   */
  queueRoom?(queue: string): QueueRoom;
}

export interface DecideOptions {
  /** Parents whose next state is decided but not yet in the view (a success being written). */
  readonly ahead?: ReadonlyMap<string, TaskState>;
  /**
   * Why the task's payload (or cache key) does not render for its current interval, if it does
   * not. Rendering is not the core's: `why` renders, the scheduler says what its render found.
   */
  readonly renderProblem?: (task: TaskState) => string | undefined;
}

/** The whole decision for `task` at `now`: its standing, then the limits it must fit in. */
export function decideTask(
  view: TaskView,
  task: TaskState,
  now: number,
  slots: Slots = projectedSlots(view),
  options: DecideOptions = {},
): TaskDecision {
  const standing = decideStanding(view, task, now, options);
  return standing.kind === "ready" ? admitTask(view, task, standing, slots) : standing;
}

/**
 * Everything but the limits: what the task's current interval needs, and whether it is free to
 * start. A `ready` answer still has to pass `admitTask`; the scheduler makes the two calls apart
 * (standing for every task it looks at, then admission in the order free slots are given out),
 * which is `decideTask` exactly.
 */
export function decideStanding(
  view: TaskView,
  task: TaskState,
  now: number,
  options: DecideOptions = {},
): TaskDecision {
  if (task.status === "retired") return { kind: "retired" };
  // The interval's attempt stream, if in play: the current instance when dispatched after the
  // task last moved, else an attempt from before a backfill moved the task back.
  const stream = view.instances.get(instanceStream(task.key, task.logicalDate));
  const inst = stream && countsForTask(stream, task) ? stream : undefined;
  if (inst) {
    const attempt = currentAttempt(inst) ?? null;
    switch (inst.status) {
      case "success":
        // (`inst` is the current interval's, dispatched since the task moved: it completes.)
        return guarded("advance", inst.status, () => ({
          kind: "complete",
          outcome: "success",
          event: completedInterval(task, inst) as DomainEventOf<"IntervalCompleted">,
        }));
      case "skipped":
        return guarded("advance", inst.status, () => ({
          kind: "complete",
          outcome: "skipped",
          event: decideIntervalCompleted(task),
        }));
      case "queued":
        return { kind: "queued", instance: inst, attempt };
      case "running":
        return { kind: "running", instance: inst, attempt };
      case "retry_wait": {
        if (inst.retryAt && Date.parse(inst.retryAt) > now)
          return { kind: "retry_at", at: inst.retryAt, instance: inst, attempt };
        if (task.status === "paused") return paused(task);
        const problem = options.renderProblem?.(task);
        if (problem !== undefined) return { kind: "held", hold: { on: "render_failed", message: problem } };
        return { kind: "ready", retry: inst, run: null };
      }
      case "failed":
      case "upstream_failed":
      case "abandoned":
      case "cancelled":
        if (task.failure && task.failure.logicalDate === task.logicalDate)
          return { kind: "failed", failure: task.failure, attempt };
        return guarded("fail", inst.status, () => ({
          kind: "fail",
          event: decideIntervalFailed(task, inst),
          attempt,
        }));
      default: {
        const never: never = inst.status;
        return never;
      }
    }
  }
  if (task.failure && task.failure.logicalDate === task.logicalDate)
    return { kind: "failed", failure: task.failure, attempt: null };
  if (task.status === "paused") return paused(task);
  if (task.spec.endDate && Date.parse(task.logicalDate) > Date.parse(task.spec.endDate))
    return { kind: "schedule_ended", endDate: task.spec.endDate };
  if (Date.parse(task.nextRunDate) > now) return { kind: "not_due", at: task.nextRunDate };
  if (!task.spec.catchup && !task.backfill) {
    const jump = guarded("catchup", null, () => {
      const event = catchupJump(task, now);
      return event ? { kind: "catchup_jump", event } : null;
    });
    if (jump) return jump;
  }
  // Never dispatched: it waits for its producer's report of the interval.
  if (isExternal(task.spec))
    return { kind: "held", hold: { on: "outside_report", task: task.id, logicalDate: task.logicalDate } };
  const gate = gateFor(view.tasks, task, options.ahead);
  if (!gate.open) return { kind: "blocked", reasons: gate.reasons };
  // An attempt of this interval from before a backfill moved the task away and back: never
  // start a second one beside it.
  const earlier = stream;
  if (earlier && !isTerminal(earlier))
    return {
      kind: "held",
      hold: {
        on: "earlier_attempt",
        logicalDate: task.logicalDate,
        attempt: currentAttempt(earlier)?.attempt ?? null,
      },
    };
  const problem = options.renderProblem?.(task);
  if (problem !== undefined) return { kind: "held", hold: { on: "render_failed", message: problem } };
  return READY;
}

/** A first attempt free to start (one object for all: decisions are never changed). */
const READY: TaskDecision = Object.freeze({ kind: "ready", retry: null, run: null });

/**
 * The limits a task free to start must fit in, in this order: its workflow's `maxActiveRuns`
 * (to start a run), a run that failed fast, the run's `maxActiveTasks`, its connection's
 * `maxParallelism`, and a free slot on a worker of its queue. Returns `ready` (with the run it joins) or `held`; anything else passes through.
 */
export function admitTask(
  view: TaskView,
  task: TaskState,
  standing: TaskDecision,
  slots: Slots,
): TaskDecision {
  if (standing.kind !== "ready") return standing;
  let run: RunAdmission | null = null;
  const wf = task.spec.workflow;
  if (wf !== undefined) {
    const spec = view.workflows.get(wf);
    const runId = runIdOf(wf, task.logicalDate);
    const state = view.runs.get(runId);
    let start: RunAdmission["start"] = null;
    if (state?.status !== "running") {
      if (!slots.runStarting(runId)) {
        const active = slots.activeRuns(wf);
        if (spec && active >= spec.maxActiveRuns)
          return {
            kind: "held",
            hold: { on: "active_runs", workflow: wf, active, limit: spec.maxActiveRuns },
          };
      }
      // A date that ran before, or one a backfill set the task back to, is a backfill's try.
      const requestedBy = task.backfill?.requestedBy;
      start =
        state || task.backfill
          ? {
              trigger: "backfill",
              revision: state ? state.revision : "no_stream",
              ...(requestedBy ? { requestedBy } : {}),
            }
          : { trigger: "schedule", revision: "no_stream" };
    }
    if (failedFast(spec, state)) return { kind: "held", hold: { on: "run_failed_fast", runId } };
    const limit = spec?.maxActiveTasks ?? Number.POSITIVE_INFINITY;
    const inUse = slots.runSlotsInUse(runId, state);
    if (inUse >= limit)
      return {
        kind: "held",
        hold: { on: "run_slots", runId, workflow: wf, logicalDate: task.logicalDate, inUse, limit },
      };
    run = { runId, workflow: wf, logicalDate: task.logicalDate, start };
  }
  const conn = task.spec.connection;
  if (conn) {
    const spec = view.connections.get(conn);
    if (!spec) return { kind: "held", hold: { on: "connection_undeclared", connection: conn } };
    const inUse = slots.connectionInUse(conn);
    if (inUse >= spec.maxParallelism)
      return {
        kind: "held",
        hold: { on: "connection", connection: conn, inUse, limit: spec.maxParallelism },
      };
  }
  const queue = task.spec.queue;
  if (queue !== undefined && slots.queueRoom) {
    const room = slots.queueRoom(queue);
    if (!queueHasRoom(room)) return { kind: "held", hold: { on: "queue", queue, ...room } };
  }
  return run === null ? standing : { kind: "ready", retry: standing.retry, run };
}

/** Slots in use as the projection shows them (what `why` reads). */
export function projectedSlots(
  view: TaskView & { readonly workers?: { load(queue: string): QueueRoom } },
): Slots {
  let inUse: Map<string, number> | null = null;
  const workers = view.workers;
  return {
    // The remote workers the log says are connected, and their attempts in flight.
    ...(workers ? { queueRoom: (queue: string) => workers.load(queue) } : {}),
    connectionInUse: (connection) => {
      // Counted once, on first use, for every connection.
      if (!inUse) {
        inUse = new Map();
        for (const inst of view.instances.values())
          if (holdsConnectionSlot(inst) && inst.connection !== null)
            inUse.set(inst.connection, (inUse.get(inst.connection) ?? 0) + 1);
      }
      return inUse.get(connection) ?? 0;
    },
    runSlotsInUse: (_runId, run) => runSlotsGoing(run),
    activeRuns: (workflow) => {
      let n = 0;
      for (const r of view.runs.values()) if (r.workflow === workflow && r.status === "running") n += 1;
      return n;
    },
    runStarting: () => false,
  };
}

/** The instances holding a slot of the connection: attempts queued or running on it. */
export function connectionHolders(view: Pick<TaskView, "instances">, connection: string): InstanceState[] {
  const out: InstanceState[] = [];
  for (const inst of view.instances.values())
    if (holdsConnectionSlot(inst) && inst.connection === connection) out.push(inst);
  return out;
}

/** Whether an instance holds a slot of its connection (an attempt queued or running). */
export function holdsConnectionSlot(inst: InstanceState | undefined): boolean {
  return !!inst && inst.connection !== null && (inst.status === "queued" || inst.status === "running");
}

/** Tasks of a running run with an attempt queued or running, but `except`'s. */
export function runSlotsGoing(run: RunState | undefined, except?: string): number {
  if (run?.status !== "running") return 0;
  let n = 0;
  for (const t in run.outcomes) {
    const o = run.outcomes[t];
    if (t !== except && (o === "queued" || o === "running")) n += 1;
  }
  return n;
}

/** Whether a fail_fast run has had a failure: nothing new starts in it. */
export function failedFast(spec: WorkflowSpec | undefined, run: RunState | undefined): boolean {
  return (
    spec?.failurePolicy === "fail_fast" &&
    run?.status === "running" &&
    Object.values(run.outcomes).some((o) => o === "failed" || o === "abandoned")
  );
}

/** With catch-up off, a task more than one interval behind jumps to the latest due interval. */
export function catchupJump(task: TaskState, now: number): DomainEventOf<"IntervalReset"> | null {
  const latest = lastSlotEndingBy(task.spec.cron, task.spec.timezone, new Date(now));
  if (latest.getTime() <= Date.parse(task.logicalDate)) return null;
  return {
    type: "IntervalReset",
    data: {
      key: task.key,
      logicalDate: toInstant(latest),
      nextRunDate: toInstant(nextCronTime(task.spec.cron, task.spec.timezone, latest)),
      prevIntervalStart:
        task.prevIntervalStart ?? toInstant(slotBefore(task.spec.cron, task.spec.timezone, latest)),
      reason: "catchup_disabled",
    },
  };
}

function paused(task: TaskState): TaskDecision {
  return { kind: "paused", reason: task.pausedReason ?? null };
}

/**
 * A step that computes schedule positions, as a decision: what it throws (a schedule the
 * arithmetic cannot move, a bug) becomes `stuck`, so that one task's trouble is said where it
 * stands and never stops the decisions of the others.
 */
function guarded<D extends TaskDecision | null>(
  step: "advance" | "fail" | "catchup",
  outcome: InstanceState["status"] | null,
  decide: () => D,
): D | TaskDecision {
  try {
    return decide();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { kind: "stuck", step, outcome, message };
  }
}
