import { ChronologError, ValidationError } from "../errors.js";
import type { DomainEvent } from "../events/catalog.js";
import { countsForTask, currentAttempt, type InstanceState, isTerminal } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import type { RunState } from "../run/state.js";
import { runIdOf } from "../run/state.js";
import { firstSlotAtOrAfter, nextCronTime, prevCronTime } from "../schedule/cron.js";
import { isExternal } from "../spec.js";
import { instanceStream, runStream, taskStream } from "../streams.js";
import type { TaskState } from "./state.js";

/**
 * The ways out of a halted interval, decided here: retry it (a new attempt, with a fresh retry
 * budget), or mark it succeeded or skipped by hand with a reason (it then counts as done for its
 * children). Either one reopens the descendants that had been closed as upstream_failed for it
 * (they wait for it again, then run), and reopens its workflow's run when that had finished.
 * Pure: the state read in, the events to write (or a refusal naming what to do instead) out.
 */
export type HaltedCommand =
  | { readonly kind: "retry"; readonly reason?: string }
  | { readonly kind: "mark"; readonly outcome: "success" | "skipped"; readonly reason: string };

/** An operation on an interval refused because of where the interval stands: nothing is written. */
export class IntervalRefusedError extends ChronologError {
  readonly type = "state" as const;
  constructor(message: string) {
    super(message);
    this.name = "IntervalRefusedError";
  }
}

/** An operation on an interval of a task that is not declared. */
export class UnknownTaskError extends ChronologError {
  readonly type = "not_found" as const;
  constructor(message: string) {
    super(message);
    this.name = "UnknownTaskError";
  }
}

export interface HaltedInput {
  /** Every task, by id (the projection's). */
  readonly tasks: ReadonlyMap<string, TaskState>;
  /** The ids of the tasks naming a task as a parent. */
  readonly childrenOf: (id: string) => Iterable<string>;
  /** The instance of each child's interval in play (the projection's). */
  readonly instances: ReadonlyMap<string, InstanceState>;
  readonly taskId: string;
  readonly logicalDate: string;
  /** The interval's attempt stream as the log holds it (undefined: none), and its revision. */
  readonly instance: InstanceState | undefined;
  /** The run of the task's workflow for the date, as its stream holds it (null: no workflow). */
  readonly run: { readonly state: RunState | undefined; readonly revision: bigint | "no_stream" } | null;
  readonly now: number;
  /** Who asks: recorded in the events. */
  readonly by: string;
}

export interface HaltedWrite {
  readonly streamId: string;
  readonly events: DomainEvent[];
  readonly expectedRevision: bigint | "no_stream";
}

export interface HaltedDecision {
  readonly task: string;
  readonly logicalDate: string;
  /** How the interval ended before (failed, abandoned, upstream_failed, cancelled, or waiting). */
  readonly was: string;
  /** The writes, in order: the run's reopening first, then the interval, then its descendants. */
  readonly writes: readonly HaltedWrite[];
  /** Descendants reopened: they had been closed as upstream_failed for this interval. */
  readonly reopened: readonly string[];
  /** The run reopened (a new try), or going already, or null when the task has no workflow. */
  readonly run: { readonly runId: string; readonly reopened: boolean; readonly try: number } | null;
  /** For a retry: the number of the attempt to come, and how many tries its fresh budget allows. */
  readonly attempt: number | null;
  readonly maxAttempts: number;
}

const HALTED = new Set(["failed", "abandoned", "upstream_failed", "cancelled"]);

/** The interval's stream, when it is the interval's current one (dispatched since the task last moved). */
function currentOf(task: TaskState, inst: InstanceState | undefined): InstanceState | undefined {
  return inst && inst.logicalDate === task.logicalDate && countsForTask(inst, task) ? inst : undefined;
}

/** `chronolog attempt abandon` for an interval, as printed in advice and refusals. */
export function abandonCommand(task: string, logicalDate: string): string {
  return `chronolog attempt abandon ${task} --interval ${logicalDate}`;
}

export function retryCommand(task: string, logicalDate: string): string {
  return `chronolog retry ${task} --interval ${logicalDate}`;
}

export function markCommand(task: string, logicalDate: string, outcome: "success" | "skipped"): string {
  return `chronolog mark ${task} --interval ${logicalDate} --${outcome === "success" ? "succeeded" : "skipped"} --reason "say why"`;
}

/** Retry, rerun or mark an interval: refuses with what to do instead, or decides the writes. */
export function decideHalted(input: HaltedInput, command: HaltedCommand): HaltedDecision {
  const { taskId: id, logicalDate: date } = input;
  const task = input.tasks.get(id);
  if (!task) throw new UnknownTaskError(`no task ${id} is declared`);
  const verb = command.kind === "retry" ? "retry" : "mark";
  if (task.status === "retired")
    throw new IntervalRefusedError(`${id} is retired: its intervals cannot be retried or marked`);
  if (command.kind === "retry" && isExternal(task.spec))
    throw new IntervalRefusedError(
      `${id} is an outside task: Chronolog never runs it, so there is nothing to retry; its producer reports it again (chronolog report ${id} --interval ${date}), or ${markCommand(id, date, "success")}`,
    );
  requireSlot(task, date);
  const at = Date.parse(date);
  if (at < Date.parse(task.spec.startDate))
    throw new UnknownTaskError(`${id} has no interval ${date}: its startDate is ${task.spec.startDate}`);
  const inst = input.instance;
  if (at < Date.parse(task.logicalDate)) {
    // The task has moved past it: done, or left behind by a reset.
    if (inst && (inst.status === "success" || inst.status === "skipped"))
      throw new IntervalRefusedError(
        `${id} ${date} is already done (${describeDone(inst)}): to run it again, chronolog backfill ${id} --from ${date} --to ${date}`,
      );
    throw new IntervalRefusedError(
      `${id} is past ${date} (it stands at ${task.logicalDate}): to run ${date} again, chronolog backfill ${id} --from ${date} --to ${date}`,
    );
  }
  if (at > Date.parse(task.logicalDate)) {
    const end = nextCronTime(task.spec.cron, task.spec.timezone, new Date(at));
    if (end.getTime() > input.now)
      throw new IntervalRefusedError(
        `${id} ${date} is not due yet: the interval ends at ${end.toISOString()}`,
      );
    throw new IntervalRefusedError(
      `${id} has not reached ${date} yet: it stands at ${task.logicalDate}${task.failure ? ` (${task.failure.state})` : ""}; ${verb} that interval first`,
    );
  }
  if (Date.parse(task.nextRunDate) > input.now)
    throw new IntervalRefusedError(`${id} ${date} is not due yet: the interval ends at ${task.nextRunDate}`);
  const current = currentOf(task, inst);
  if (current && !isTerminal(current)) {
    const a = currentAttempt(current);
    if (current.status === "retry_wait")
      throw new IntervalRefusedError(
        `${id} ${date} is waiting for its retry (attempt ${a?.attempt ?? "?"} ended: ${a?.endReason ?? "unknown"}${current.retryAt ? `; the next is due ${current.retryAt}` : ""}): abandon it first with ${abandonCommand(id, date)}`,
      );
    throw new IntervalRefusedError(
      `${id} ${date} is ${current.status} (attempt ${a?.attempt ?? "?"}): wait for it, or abandon it first with ${abandonCommand(id, date)}`,
    );
  }
  if (current && (current.status === "success" || current.status === "skipped"))
    throw new IntervalRefusedError(`${id} ${date} is already done (${describeDone(current)})`);
  const halted = (current !== undefined && HALTED.has(current.status)) || task.failure?.logicalDate === date;
  if (command.kind === "retry" && !halted)
    throw new IntervalRefusedError(
      `${id} ${date} has not ended: nothing to retry (it waits to run: see chronolog why ${id}; to skip it, ${markCommand(id, date, "skipped")})`,
    );

  if (command.kind === "retry") {
    // Retried while a parent still stands halted at or before it, it would only be closed again.
    for (const p of task.parents) {
      const parent = input.tasks.get(formatTaskKey(p));
      const f = parent?.failure;
      if (parent && f && f.logicalDate === parent.logicalDate && Date.parse(f.logicalDate) <= at)
        throw new IntervalRefusedError(
          `${id} ${date} waits for its parent ${parent.id}, halted at ${f.logicalDate} (${f.state}): retry the parent first, and ${id} goes on after it (${retryCommand(parent.id, f.logicalDate)}), or mark it (${markCommand(parent.id, f.logicalDate, "skipped")})`,
        );
    }
  }
  const writes: HaltedWrite[] = [];
  const reopened = reopenedBelow(input, task);
  const run = runOf(input, task, [task.id, ...reopened.map((t) => t.id)]);
  if (run?.write) writes.push(run.write);
  if (command.kind === "retry") {
    writes.push({
      streamId: taskStream(task.key),
      expectedRevision: task.revision,
      events: [
        {
          type: "IntervalRetried",
          data: {
            key: task.key,
            logicalDate: date,
            by: input.by,
            ...(command.reason ? { reason: command.reason } : {}),
          },
        },
      ],
    });
  } else {
    const runId = inst?.runId ?? (task.spec.workflow ? runIdOf(task.spec.workflow, date) : undefined);
    writes.push({
      streamId: inst?.stream ?? instanceStream(task.key, date),
      expectedRevision: inst ? inst.revision : "no_stream",
      events: [
        {
          type: "IntervalMarked",
          data: {
            key: task.key,
            logicalDate: date,
            outcome: command.outcome,
            reason: command.reason,
            by: input.by,
            ...(runId ? { runId } : {}),
          },
        },
      ],
    });
  }
  for (const child of reopened)
    writes.push({
      streamId: taskStream(child.key),
      expectedRevision: child.revision,
      events: [
        {
          type: "IntervalRetried",
          data: {
            key: child.key,
            logicalDate: date,
            by: input.by,
            reason: `reopened: its parent ${id} was ${command.kind === "retry" ? "retried" : `marked ${command.outcome === "success" ? "succeeded" : "skipped"}`}`,
            parent: task.key,
          },
        },
      ],
    });
  return {
    task: id,
    logicalDate: date,
    was: task.failure?.logicalDate === date ? task.failure.state : current ? current.status : "waiting",
    writes,
    reopened: reopened.map((t) => t.id),
    run: run ? { runId: run.runId, reopened: run.write !== null, try: run.try } : null,
    attempt: command.kind === "retry" ? (inst?.attempts.at(-1)?.attempt ?? 0) + 1 : null,
    maxAttempts: task.spec.retry.maxAttempts,
  };
}

function describeDone(inst: InstanceState): string {
  if (inst.marked)
    return `marked ${inst.marked.outcome === "success" ? "succeeded" : "skipped"} by ${inst.marked.by}: ${inst.marked.reason}`;
  return inst.status === "success" ? "succeeded" : "skipped";
}

/** Refuses an instant that is not one of the task's slots, naming the nearest. */
export function requireSlot(task: TaskState, date: string): void {
  const at = new Date(date);
  const slot = prevCronTime(task.spec.cron, task.spec.timezone, at);
  if (slot.getTime() === at.getTime()) return;
  const next = firstSlotAtOrAfter(task.spec.cron, task.spec.timezone, at).toISOString();
  // (One before the task's start date is none of its intervals.)
  const first = firstSlotAtOrAfter(task.spec.cron, task.spec.timezone, new Date(task.spec.startDate));
  const nearest =
    slot.getTime() >= first.getTime()
      ? `the nearest are ${slot.toISOString()} and ${next}`
      : `it is before the task's start date ${task.spec.startDate}; its first interval is ${first.toISOString()}`;
  throw new ValidationError("--interval", [
    {
      path: "",
      message: `${date} is not an interval of ${task.id} (${task.spec.cron}, ${task.spec.timezone}); ${nearest}`,
    },
  ]);
}

/**
 * The descendants closed as upstream_failed at the same date, through this interval: each
 * stands at the date, halted upstream_failed (or its current instance is). Found breadth-first
 * through the children that are reopened.
 */
export function reopenedBelow(
  input: Pick<HaltedInput, "tasks" | "childrenOf" | "instances">,
  task: TaskState,
): TaskState[] {
  const out: TaskState[] = [];
  const seen = new Set<string>([task.id]);
  const queue = [task.id];
  while (queue.length > 0) {
    const parent = queue.shift() as string;
    for (const childId of input.childrenOf(parent)) {
      if (seen.has(childId)) continue;
      seen.add(childId);
      const child = input.tasks.get(childId);
      if (!child || child.status === "retired" || child.logicalDate !== task.logicalDate) continue;
      const inst = currentOf(child, input.instances.get(instanceStream(child.key, child.logicalDate)));
      const upstreamFailed =
        (child.failure?.logicalDate === child.logicalDate && child.failure.state === "upstream_failed") ||
        inst?.status === "upstream_failed";
      if (!upstreamFailed) continue;
      out.push(child);
      queue.push(childId);
    }
  }
  return out;
}

/**
 * The task's run for the date: reopened (a new try, `rerun`, for the tasks decided again) when it
 * has finished; going already, it waits for them without a write (the projection takes their
 * outcomes out of it).
 */
export function runOf(
  input: Pick<HaltedInput, "tasks" | "run" | "logicalDate" | "by">,
  task: TaskState,
  taskIds: readonly string[],
): { runId: string; write: HaltedWrite | null; try: number } | null {
  const wf = task.spec.workflow;
  if (wf === undefined || input.run === null) return null;
  const runId = runIdOf(wf, input.logicalDate);
  const state = input.run.state;
  if (!state) return null;
  if (state.status === "running") return { runId, write: null, try: state.try };
  const keys = taskIds.map((t) => (input.tasks.get(t) as TaskState).key);
  return {
    runId,
    try: state.try + 1,
    write: {
      streamId: runStream(runId),
      expectedRevision: input.run.revision,
      events: [
        {
          type: "RunStarted",
          data: {
            runId,
            workflow: wf,
            logicalDate: state.logicalDate,
            tasks: keys,
            trigger: "rerun",
            params: {},
            try: state.try + 1,
            requestedBy: input.by,
          },
        },
      ],
    },
  };
}

/** What a retry or a mark did, in words (the CLI prints it, the API returns it as `message`). */
export function describeHalted(d: HaltedDecision, command: HaltedCommand): string {
  const at = d.logicalDate;
  const head =
    command.kind === "retry"
      ? `retried ${d.task} ${at} (was ${d.was}): attempt ${d.attempt} will be dispatched once its parents are done, with a fresh retry budget of ${d.maxAttempts} attempt${d.maxAttempts === 1 ? "" : "s"} (maxAttempts); nothing else is reset`
      : `marked ${d.task} ${at} ${command.outcome === "success" ? "succeeded" : "skipped"} (was ${d.was}): ${command.reason}; it counts as done for its children`;
  const parts = [head];
  if (d.reopened.length > 0)
    parts.push(
      `reopened ${d.reopened.length} descendant${d.reopened.length === 1 ? "" : "s"} closed as upstream_failed for it: ${d.reopened.join(", ")}`,
    );
  if (d.run)
    parts.push(
      d.run.reopened
        ? `reopened run ${d.run.runId} (try ${d.run.try})`
        : `run ${d.run.runId} (try ${d.run.try}) is going and waits for it`,
    );
  return parts.join("; ");
}
