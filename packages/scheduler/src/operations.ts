import { randomUUID } from "node:crypto";
import {
  type BackfillSkip,
  type BackfillTarget,
  type CancelledRunTask,
  type CancelledTarget,
  currentAttempt,
  type DomainEvent,
  dateArg,
  decideWorkflowRetirement,
  foldInstance,
  instanceStream,
  isTerminal,
  markCommand,
  type PlanRefusal,
  parseInstant,
  planBackfill,
  planCancelBackfill,
  prioritySchema,
  resetTo,
  retryCommand,
  type SchedulerProjection,
  type TaskState,
  taskStream,
  ValidationError,
} from "@chronolog/core";
import type { EventLog, StreamCheck } from "@chronolog/log";
import { handleCommand } from "./command.js";
import { NotFoundError, StateError } from "./errors.js";
import { catchUp } from "./projection-loader.js";
import { heldRevision, standingChecks } from "./standing-checks.js";

/** A planner's refusal as the error the edges map to an exit code or status. */
export function refusalError(operation: string, r: PlanRefusal): Error {
  switch (r.error) {
    case "validation":
      return new ValidationError(operation, [{ path: r.field ?? "", message: r.message }]);
    case "not_found":
      return new NotFoundError(r.message);
    case "state":
      return new StateError(r.message);
  }
}

export function requireTask(projection: SchedulerProjection, id: string): TaskState {
  const task = projection.tasks.get(id);
  if (!task) throw new NotFoundError(`no task ${id} is declared`);
  return task;
}

/**
 * An operator's command on one task: decided on the projection, written with a compare-and-set
 * on the task stream; on a conflict (a scheduler wrote first) the projection is caught up and
 * the command decided again, so a refusal is always about the task as it is now.
 */
async function taskCommand(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
  name: string,
  decide: (task: TaskState) => DomainEvent[],
): Promise<bigint> {
  const outcome = await handleCommand(log, {
    name: `${name} ${id}`,
    read: async (fresh) => {
      if (fresh) await catchUp(log, projection);
      return requireTask(projection, id);
    },
    decide: (task) => ({
      writes: [{ streamId: taskStream(task.key), events: decide(task), expectedRevision: task.revision }],
      result: null,
    }),
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  return outcome.kind === "written"
    ? (outcome.results[0] as { position: bigint }).position
    : projection.position;
}

export function pauseTask(log: EventLog, projection: SchedulerProjection, id: string, reason?: string) {
  return taskCommand(log, projection, id, "pause", (task) => {
    if (task.status !== "active")
      throw new StateError(
        `task ${id} is ${task.status}, not active: ${
          task.status === "paused"
            ? `it is paused already (chronolog resume ${id} resumes it)`
            : "a retired task is scheduled no more"
        }`,
      );
    return [{ type: "TaskPaused", data: { key: task.key, ...(reason ? { reason } : {}) } }];
  });
}

export function resumeTask(log: EventLog, projection: SchedulerProjection, id: string) {
  return taskCommand(log, projection, id, "resume", (task) => {
    if (task.status !== "paused")
      throw new StateError(
        `task ${id} is ${task.status}, not paused: ${
          task.status === "active" ? "it is scheduled already" : "a retired task is scheduled no more"
        }`,
      );
    return [{ type: "TaskResumed", data: { key: task.key } }];
  });
}

export function retireTask(log: EventLog, projection: SchedulerProjection, id: string, reason?: string) {
  return taskCommand(log, projection, id, "retire", (task) => {
    if (task.status === "retired") throw new StateError(`task ${id} is already retired`);
    return [{ type: "TaskRetired", data: { key: task.key, ...(reason ? { reason } : {}) } }];
  });
}

export interface WorkflowRetirement {
  readonly workflow: string;
  /** The tasks retired with it, in key order (those retired before are not named). */
  readonly tasks: readonly string[];
  /** The log position of the append. */
  readonly position: bigint;
}

/**
 * Retires a workflow and every task of it in one atomic append (decideWorkflowRetirement), with
 * a compare-and-set on each stream: on a conflict the projection is caught up and it is decided
 * again. A workflow that is not declared is refused (NotFoundError), one retired already too
 * (StateError), with nothing written.
 */
export async function retireWorkflow(
  log: EventLog,
  projection: SchedulerProjection,
  name: string,
  reason?: string,
): Promise<WorkflowRetirement> {
  const outcome = await handleCommand(log, {
    name: `retire workflow ${name}`,
    read: async (fresh) => {
      if (fresh) await catchUp(log, projection);
      return projection;
    },
    decide: (state) => {
      const decision = decideWorkflowRetirement(state, name, reason);
      if (decision.kind === "retired") throw new StateError(`workflow ${name} is already retired`);
      if (decision.kind === "unknown")
        throw new NotFoundError(
          `no workflow ${name} is declared${decision.known.length > 0 ? ` (the workflows are ${decision.known.join(", ")})` : " (none is)"}`,
        );
      return { writes: decision.writes, result: decision.tasks };
    },
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const position =
    outcome.kind === "written"
      ? ((outcome.results.at(-1) as { position: bigint }).position ?? projection.position)
      : projection.position;
  return { workflow: name, tasks: outcome.result, position };
}

export interface BackfillPlan {
  /** The backfill started; absent from a dry run, which starts none. */
  readonly backfillId?: string;
  /** Log position of the last reset written: progress counts only once the projection is past it. */
  readonly writtenUpTo: bigint;
  /** In a dry run, a target's `backfillId` is only that of a pending backfill it would join. */
  readonly targets: ReadonlyArray<Omit<BackfillTarget, "backfillId"> & { readonly backfillId?: string }>;
  readonly skipped: ReadonlyArray<BackfillSkip>;
  /** A dry run: the plan as it would be carried out, and nothing written. */
  readonly dryRun?: boolean;
  /** The priority its intervals compete with (absent: below every scheduled interval). */
  readonly priority?: number;
  /** Cancelled (`backfill --cancel`): by whom, when, and why if said. */
  readonly cancelled?: { readonly by: string; readonly at: string; readonly reason?: string };
}

/**
 * Sets each task's interval back to the first slot at or after `from` (an IntervalReset per
 * task); the tasks then walk forward through the range upstream-first, by the ordinary gate and
 * success path, and return to where they were once they have finished the slot at or before `to`.
 * `from` and `to` are days or instants as typed (a day: the intervals that start on it in each
 * task's zone). What it does is planBackfill's decision, the same for a dry run (`dryRun`: decided
 * on the log as it is, nothing written) as for the real one. The resets of all targets are one
 * atomic compare-and-set write; on a conflict (a scheduler, or another backfill, wrote first) the
 * backfill is decided again on the log as it is now, so two backfills racing end merged or one
 * refused, never with a resume point lost.
 */
export async function backfill(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
  fromText: string,
  toText: string,
  downstream: boolean,
  options: {
    readonly force?: boolean;
    readonly dryRun?: boolean;
    /**
     * The priority its intervals compete for slots with, as a scheduled interval's would
     * (absent: below every scheduled interval).
     */
    readonly priority?: number;
    /** Sees the tasks the plan would reset, on the state it was decided on; throws to refuse it. */
    readonly permit?: (tasks: readonly string[]) => void;
  } = {},
): Promise<BackfillPlan> {
  if (options.priority !== undefined) {
    const checked = prioritySchema.safeParse(options.priority);
    if (!checked.success)
      throw new ValidationError("backfill", [
        { path: "--priority", message: `${options.priority}: ${checked.error.issues[0]?.message}` },
      ]);
  }
  const request = {
    task: id,
    from: dateArg(fromText, "--from"),
    to: dateArg(toText, "--to"),
    downstream,
    force: !!options.force,
    backfillId: randomUUID(),
    ...(options.priority !== undefined ? { priority: options.priority } : {}),
  };
  const ranked = options.priority !== undefined ? { priority: options.priority } : {};
  const decide = (p: SchedulerProjection) => {
    const decided = planBackfill(p, request);
    if (decided.kind === "refused") throw refusalError("backfill", decided);
    options.permit?.(decided.targets.map((t) => t.task));
    return decided;
  };
  if (options.dryRun) {
    await catchUp(log, projection);
    const { targets, skipped } = decide(projection);
    // No backfill is started: a target names one only if it would join it.
    const shown = targets.map(({ backfillId, ...t }) =>
      backfillId === request.backfillId ? t : { ...t, backfillId },
    );
    return { writtenUpTo: -1n, targets: shown, skipped, dryRun: true, ...ranked };
  }
  const outcome = await handleCommand(log, {
    name: `backfill ${id}`,
    read: async (fresh) => {
      if (fresh) await catchUp(log, projection);
      return projection;
    },
    decide: (p) => {
      const decided = decide(p);
      return { writes: decided.writes, result: decided };
    },
    append: async (writes) =>
      log.appendMany(writes, { checks: await standingChecks(log, projection, writes) }),
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const { targets, skipped } = outcome.result;
  const positions = outcome.kind === "written" ? outcome.results.map((r) => r.position) : [];
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const writtenUpTo = positions.reduce((a, b) => (b > a ? b : a), -1n);
  return { backfillId: request.backfillId, writtenUpTo, targets, skipped, ...ranked };
}

/**
 * How far a backfill has come: intervals done per target, from the projection. A cancelled one
 * says so and counts no intervals done (its tasks are back where they stood, which says nothing
 * of how far each had come).
 */
export function backfillProgress(
  projection: SchedulerProjection,
  plan: BackfillPlan,
): { done: number; total: number; failed: string[]; finished: boolean; cancelled?: true } {
  if (plan.cancelled) {
    const total = plan.targets.reduce((n, t) => n + t.intervals, 0);
    return { done: 0, total, failed: [], finished: false, cancelled: true };
  }
  let done = 0;
  let total = 0;
  const failed: string[] = [];
  const applied = projection.position >= plan.writtenUpTo;
  for (const t of plan.targets) {
    total += t.intervals;
    if (!applied) continue;
    const task = projection.tasks.get(t.task);
    if (!task) continue;
    if (task.failure)
      failed.push(`${t.task}: ${task.failure.logicalDate} ${task.failure.state}: ${task.failure.reason}`);
    if (task.backfill?.backfillId !== t.backfillId) {
      done += t.intervals; // the window closed: the range is done
      continue;
    }
    const finished = task.prevIntervalStart ? Date.parse(task.prevIntervalStart) : 0;
    let n = 0;
    let at = parseInstant(t.from);
    while (at.getTime() <= finished && at.getTime() <= Date.parse(t.until) && n < t.intervals) {
      n += 1;
      at = new Date(resetTo(task.spec.cron, task.spec.timezone, new Date(at.getTime() + 1)).logicalDate);
    }
    done += n;
  }
  return { done, total, failed, finished: done >= total };
}

/** What a backfill's cancel did: the tasks it returned (or cut short), and the runs' intervals closed. */
export interface BackfillCancel {
  readonly backfillId: string;
  readonly targets: readonly CancelledTarget[];
  readonly runTasks: ReadonlyArray<{
    readonly runId: string;
    readonly task: string;
    readonly logicalDate: string;
  }>;
  /** Log position of the last event written (-1 in a dry run). */
  readonly writtenUpTo: bigint;
  /** A dry run: what it would do, decided on the log as it is, and nothing written. */
  readonly dryRun?: boolean;
}

/**
 * Cancels a pending backfill (planCancelBackfill's decision): each task its window walks returns
 * to where it stood before, one finishing an interval under way after it; the intervals of its
 * runs that will not run now are closed as cancelled. One atomic write, each stream at the
 * revision decided on; on a conflict (the scheduler moved a task meanwhile) it is decided again
 * on the log as it is now. `permit` sees the tasks and runs' tasks it touches, to refuse it.
 */
export async function cancelBackfill(
  log: EventLog,
  projection: SchedulerProjection,
  backfillId: string,
  options: {
    readonly reason?: string;
    readonly dryRun?: boolean;
    readonly permit?: (tasks: readonly string[]) => void;
  } = {},
): Promise<BackfillCancel> {
  const request = { backfillId, ...(options.reason ? { reason: options.reason } : {}) };
  /** The checks of the decision being written (see standingChecks). */
  let standing: StreamCheck[] = [];
  const shown = (d: { targets: CancelledTarget[]; runTasks: readonly CancelledRunTask[] }) => ({
    targets: d.targets,
    runTasks: d.runTasks.map(({ runId, task, logicalDate }) => ({ runId, task, logicalDate })),
  });
  if (options.dryRun) {
    await catchUp(log, projection);
    const decided = planCancelBackfill(projection, request);
    if (decided.kind === "refused") throw refusalError("backfill cancel", decided);
    options.permit?.([...decided.targets.map((t) => t.task), ...decided.runTasks.map((r) => r.task)]);
    return { backfillId, ...shown(decided), writtenUpTo: -1n, dryRun: true };
  }
  const outcome = await handleCommand(log, {
    name: `cancel backfill ${backfillId}`,
    read: async (fresh) => {
      if (fresh) await catchUp(log, projection);
      const decided = planCancelBackfill(projection, request);
      if (decided.kind === "refused") throw refusalError("backfill cancel", decided);
      options.permit?.([...decided.targets.map((t) => t.task), ...decided.runTasks.map((r) => r.task)]);
      // Everything the decision read of the projection, read in this turn, at its position: each
      // closed interval's revision (one the projection no longer holds, an old date, is read
      // from the log as of the same position) and the intervals its tasks stood at.
      const runWrites = decided.runTasks.map((r) => ({ streamId: r.streamId, events: [r.event] }));
      const checks = standingChecks(log, projection, [...decided.writes, ...runWrites]);
      const revisions = decided.runTasks.map((r) => heldRevision(log, projection, r.streamId));
      // (Both awaited together: a read that fails leaves no other unheard.)
      const [read, checked] = await Promise.all([Promise.all(revisions), checks]);
      return { decided, revisions: read, checks: checked };
    },
    decide: ({ decided, revisions, checks }) => {
      standing = checks;
      return {
        writes: [
          ...decided.writes,
          ...decided.runTasks.map((r, i) => ({
            streamId: r.streamId,
            events: [r.event],
            expectedRevision: revisions[i] as bigint | "no_stream",
          })),
        ],
        result: decided,
      };
    },
    append: (writes) => log.appendMany(writes, { checks: standing }),
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const positions = outcome.kind === "written" ? outcome.results.map((r) => r.position) : [];
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const writtenUpTo = positions.reduce((a, b) => (b > a ? b : a), -1n);
  return { backfillId, ...shown(outcome.result), writtenUpTo };
}

/**
 * Abandons the current attempt of the task's interval (default: its current one): the
 * operator's word that it will not report, written with a compare-and-set on its stream.
 */
export async function abandonAttempt(
  log: EventLog,
  projection: SchedulerProjection,
  id: string,
  options: { interval?: string; token?: string; retry?: boolean; reason: string; by: string },
): Promise<{ stream: string; logicalDate: string; attempt: number; token: string; position: bigint }> {
  const task = requireTask(projection, id);
  const date = options.interval ?? task.logicalDate;
  const stream = instanceStream(task.key, date);
  const outcome = await handleCommand(log, {
    name: `abandon ${id} ${date}`,
    read: async () => foldInstance(await log.readStream(stream)),
    decide: (inst) => {
      const a = inst && currentAttempt(inst);
      if (!inst || !a) throw new NotFoundError(`${id} has no attempt for ${date}`);
      if (options.token !== undefined && a.token !== options.token)
        throw new StateError(`${id} ${date}: attempt ${options.token} is not the current one (${a.token})`);
      if (isTerminal(inst))
        throw new StateError(
          inst.status === "success" || inst.status === "skipped"
            ? `${id} ${date} has already ended (${inst.status}): nothing to abandon`
            : `${id} ${date} has already ended (${inst.status}): retry it with ${retryCommand(id, date)}, or mark it with ${markCommand(id, date, "success")} (or --skipped)`,
        );
      const abandoned: DomainEvent = {
        type: "AttemptAbandoned",
        data: {
          attempt: a.attempt,
          token: a.token,
          reason: options.reason,
          by: options.by,
          retry: !!options.retry,
        },
      };
      return {
        writes: [{ streamId: stream, events: [abandoned], expectedRevision: inst.revision }],
        result: { attempt: a.attempt, token: a.token },
      };
    },
  });
  // (Another writer ended or replaced the attempt meanwhile: said as the log's conflict.)
  if (outcome.kind === "conflict") throw outcome.error;
  const position = outcome.kind === "written" ? (outcome.results[0]?.position ?? -1n) : -1n;
  return { stream, logicalDate: date, ...outcome.result, position };
}
