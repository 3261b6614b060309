import { randomUUID } from "node:crypto";
import {
  currentAttempt,
  type DomainEvent,
  describeWindow,
  foldInstance,
  instanceStream,
  isTerminal,
  parseInstant,
  planWindow,
  prevCronTime,
  resetTo,
  type SchedulerProjection,
  slotsIn,
  type TaskState,
  taskStream,
  ValidationError,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { handleCommand } from "./command.js";
import { NotFoundError, StateError } from "./errors.js";
import { catchUp } from "./projection-loader.js";

/**
 * Moving a task's schedule while an attempt of its current interval is in flight (or has
 * succeeded without the task advancing yet) would let that interval run again when the task
 * comes back to it: refused, naming the attempt, before anything is written.
 */
export function requireSettled(projection: SchedulerProjection, tasks: readonly TaskState[]): void {
  const busy: string[] = [];
  for (const task of tasks) {
    const inst = projection.instances.get(instanceStream(task.key, task.logicalDate));
    if (inst && (!isTerminal(inst) || (inst.status === "success" && inst.dispatchedAt > task.movedAt))) {
      busy.push(`${task.id} ${task.logicalDate} is ${inst.status}`);
    }
  }
  if (busy.length > 0) {
    throw new StateError(`wait for the running intervals to finish first: ${busy.join("; ")}`);
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
    if (task.status !== "active") throw new StateError(`task ${id} is ${task.status}, not active`);
    return [{ type: "TaskPaused", data: { key: task.key, ...(reason ? { reason } : {}) } }];
  });
}

export function resumeTask(log: EventLog, projection: SchedulerProjection, id: string) {
  return taskCommand(log, projection, id, "resume", (task) => {
    if (task.status !== "paused") throw new StateError(`task ${id} is ${task.status}, not paused`);
    return [{ type: "TaskResumed", data: { key: task.key } }];
  });
}

export function retireTask(log: EventLog, projection: SchedulerProjection, id: string, reason?: string) {
  return taskCommand(log, projection, id, "retire", (task) => {
    if (task.status === "retired") throw new StateError(`task ${id} is already retired`);
    return [{ type: "TaskRetired", data: { key: task.key, ...(reason ? { reason } : {}) } }];
  });
}

/** The task and, with `downstream`, every task below it, parents before children. */
export function subtree(projection: SchedulerProjection, id: string, downstream: boolean): string[] {
  const order: string[] = [id];
  if (!downstream) return order;
  const seen = new Set(order);
  for (let i = 0; i < order.length; i++) {
    for (const child of projection.children.of(order[i] as string)) {
      if (!seen.has(child) && projection.tasks.has(child)) {
        seen.add(child);
        order.push(child);
      }
    }
  }
  return order;
}

export interface BackfillTarget {
  readonly task: string;
  readonly from: string;
  readonly until: string;
  readonly intervals: number;
  /** The backfill whose window walks the range: this one's, or the pending one it joined. */
  readonly backfillId: string;
  /** The pending window it joined, as it was, and the range walked now. */
  readonly merged?: { readonly was: string; readonly from: string; readonly until: string };
}

export interface BackfillPlan {
  readonly backfillId: string;
  /** Log position of the last reset written: progress counts only once the projection is past it. */
  readonly writtenUpTo: bigint;
  readonly targets: readonly BackfillTarget[];
  readonly skipped: ReadonlyArray<{ task: string; reason: string }>;
}

interface Decided {
  readonly targets: BackfillTarget[];
  readonly skipped: Array<{ task: string; reason: string }>;
  readonly writes: Array<{ streamId: string; events: DomainEvent[]; expectedRevision: bigint }>;
}

/**
 * The decision of one backfill on the projection as it stands: the resets of every target, or
 * a refusal before anything is written. A target with a backfill or rerun still pending joins
 * it when the ranges overlap or touch (see planWindow); if any target cannot, the whole
 * backfill is refused, naming the pending one, its range and how far it has come.
 */
function decideBackfill(
  projection: SchedulerProjection,
  id: string,
  from: Date,
  to: Date,
  downstream: boolean,
  force: boolean,
  backfillId: string,
  fromText: string,
): Decided {
  const named = requireTask(projection, id);
  const ids = subtree(projection, id, downstream);
  if (!force) {
    // What is most likely a mistake is refused with its reason; --force does it all the same.
    if (from.getTime() < Date.parse(named.spec.startDate))
      throw new ValidationError("backfill", [
        {
          path: "--from",
          message: `${fromText} is before ${id}'s startDate ${named.spec.startDate}: intervals it was never declared for (use --force to run them anyway)`,
        },
      ]);
    const paused = ids.filter((t) => projection.tasks.get(t)?.status === "paused");
    if (paused.length > 0)
      throw new StateError(
        `${paused.join(", ")} ${paused.length === 1 ? "is" : "are"} paused: a backfill would wait for the resume (resume first, or use --force)`,
      );
  }
  requireSettled(
    projection,
    ids.map((t) => projection.tasks.get(t) as TaskState),
  );
  const decided: Decided = { targets: [], skipped: [], writes: [] };
  const refused: string[] = [];
  for (const taskId of ids) {
    const task = projection.tasks.get(taskId) as TaskState;
    if (task.status === "retired") {
      decided.skipped.push({ task: taskId, reason: "retired" });
      continue;
    }
    const first = resetTo(task.spec.cron, task.spec.timezone, from).logicalDate;
    const last = prevCronTime(task.spec.cron, task.spec.timezone, to).toISOString();
    if (Date.parse(first) > Date.parse(last)) {
      decided.skipped.push({ task: taskId, reason: "no interval of its schedule falls in the range" });
      continue;
    }
    const plan = planWindow(task, first, last);
    if (plan.kind === "refused") {
      refused.push(plan.reason);
      continue;
    }
    const { joins, from: rangeFrom, until, resume, ...position } = plan.reset;
    const windowId = joins?.backfillId ?? backfillId;
    decided.targets.push({
      task: taskId,
      from: first,
      until: last,
      intervals: slotsIn(task, first, last),
      backfillId: windowId,
      ...(joins
        ? {
            merged: {
              was: describeWindow(task, joins),
              from: position.logicalDate,
              until,
            },
          }
        : {}),
    });
    decided.writes.push({
      streamId: taskStream(task.key),
      expectedRevision: task.revision,
      events: [
        {
          type: "IntervalReset",
          data: {
            key: task.key,
            ...position,
            reason: "backfill",
            until,
            ...(resume ? { resume } : {}),
            backfillId: windowId,
            ...(rangeFrom !== position.logicalDate ? { from: rangeFrom } : {}),
          },
        },
      ],
    });
  }
  if (refused.length > 0) throw new StateError(`backfill refused: ${refused.join("; ")}`);
  return decided;
}

/**
 * Sets each task's interval back to the first slot at or after `from` (an IntervalReset per
 * task); the tasks then walk forward through the range upstream-first, by the ordinary gate and
 * success path, and return to where they were once they have finished the slot at or before `to`.
 * The resets of all targets are one atomic compare-and-set write; on a conflict (a scheduler, or
 * another backfill, wrote first) the backfill is decided again on the log as it is now, so two
 * backfills racing end merged or one refused, never with a resume point lost.
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
    /** Sees the tasks the plan would reset, on the state it was decided on; throws to refuse it. */
    readonly permit?: (tasks: readonly string[]) => void;
  } = {},
): Promise<BackfillPlan> {
  const from = parseInstant(fromText, "--from");
  const to = parseInstant(toText, "--to");
  if (to < from)
    throw new ValidationError("backfill", [
      { path: "--to", message: `${toText} is before --from ${fromText}` },
    ]);
  const backfillId = randomUUID();
  const outcome = await handleCommand(log, {
    name: `backfill ${id}`,
    read: async (fresh) => {
      if (fresh) await catchUp(log, projection);
      return projection;
    },
    decide: (p) => {
      const decided = decideBackfill(p, id, from, to, downstream, !!options.force, backfillId, fromText);
      options.permit?.(decided.targets.map((t) => t.task));
      return { writes: decided.writes, result: decided };
    },
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const { targets, skipped } = outcome.result;
  const positions = outcome.kind === "written" ? outcome.results.map((r) => r.position) : [];
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const writtenUpTo = positions.reduce((a, b) => (b > a ? b : a), -1n);
  return { backfillId, writtenUpTo, targets, skipped };
}

/** How far a backfill has come: intervals done per target, from the projection. */
export function backfillProgress(projection: SchedulerProjection, plan: BackfillPlan) {
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
      if (isTerminal(inst)) throw new StateError(`${id} ${date} has already ended (${inst.status})`);
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
